"""What several of the catalogue's views share: finding the provider a path
names (or Placement's 404), and the answers to a failed deletion of a
resource class or trait or a lookup that failed deep down. The allocations
app's views find providers with find_provider too.
"""
import contextlib

from placement_site import errors, exceptions
from placement_site.queries import storable
from providers.models import ResourceProvider


def find_provider(uuid, detail='{error}', vary=False):
    """The provider with its parent and root uuids, or 404.

    `detail` words the 404 for the handler ({uuid}, {error}); vary=False
    mirrors Placement's generic not-found answer.
    """
    provider = None
    if storable(uuid):
        provider = ResourceProvider.objects.with_tree_uuids().filter(uuid=uuid).first()
    if provider is None:
        error = f'No resource provider with uuid {uuid} found'
        raise errors.not_found(detail.format(uuid=uuid, error=error), vary=vary)
    return provider


@contextlib.contextmanager
def custom_name_deletion(prefix=''):
    """Deleting a resource class or trait: a standard name is 400, one in
    use 409."""
    try:
        yield
    except (exceptions.ResourceClassCannotDeleteStandard,
            exceptions.TraitCannotDeleteStandard) as exc:
        raise errors.bad_request(f'{prefix}{exc}')
    except (exceptions.ResourceClassInUse, exceptions.TraitInUse) as exc:
        raise errors.conflict(f'{prefix}{exc}')


def domain_not_found(exc):
    """Placement's generic 404 for a lookup that failed deep down."""
    return errors.not_found(str(exc), vary=False)
