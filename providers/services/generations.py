"""Providers' generations: a write to a provider's inventories, traits or
aggregates claims its generation first, and a stale one is refused."""

from django.db.models import F
from django.utils import timezone

from placement_site import exceptions
from providers.models import ResourceProvider


def claim_generation(provider):
    """Bump the provider's generation from the value we read, or fail.

    Must run inside a transaction; the row lock it takes lasts until commit.
    """
    now = timezone.now()
    updated = ResourceProvider.objects.filter(
        pk=provider.pk, generation=provider.generation,
    ).update(generation=F('generation') + 1, updated_at=now)
    if updated != 1:
        raise exceptions.ProviderConcurrentUpdate()
    provider.generation += 1
    provider.updated_at = now


def lock_as_read(provider):
    """Lock the provider's row while it is still as the caller read it (its
    generation, name and place in a tree: what its ETag names), or fail.

    Renaming, moving and deleting a provider do not claim its generation;
    a request with If-Match still must not write over a change it never saw.
    """
    # An UPDATE that changes nothing, not SELECT ... FOR UPDATE: SQLite
    # takes its write lock only for a write.
    if not ResourceProvider.objects.filter(
            pk=provider.pk, generation=provider.generation, name=provider.name,
            parent_provider_id=provider.parent_provider_id,
            root_provider_id=provider.root_provider_id).update(generation=F('generation')):
        raise exceptions.ProviderConcurrentUpdate()
