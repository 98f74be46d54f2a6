"""What several of the catalogue's views share: finding the provider a path
names (or Placement's 404), and the words their descriptions share. The
allocations app's views find providers with find_provider too.
"""
from placement_site import errors
from placement_site import exceptions
from placement_site.queries import storable
from providers.models import ResourceProvider

NO_PROVIDER = 'No provider has this uuid.'
STALE_GENERATION = 'The generation is stale (placement.concurrent_update).'


def find_provider(uuid, detail='{error}', vary=False):
    """The provider with its parent and root uuids, or 404.

    `detail` words the 404 for the handler ({uuid}, {error}); vary=False
    mirrors Placement's generic not-found answer.
    """
    provider = None
    if storable(uuid):
        provider = ResourceProvider.objects.with_tree_uuids().filter(uuid=uuid).first()
    if provider is None:
        errors.raise_worded(exceptions.ResourceProviderNotFound(uuid=uuid), detail,
                            {'uuid': uuid}, vary=vary)
    return provider
