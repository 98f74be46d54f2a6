"""A provider's traits, and the custom traits themselves."""

from django.db import IntegrityError
from django.db import transaction

from placement_site import exceptions
from placement_site.retries import retried_write
from providers import events
from providers import querysets
from providers.models import ProviderTrait
from providers.models import Trait
from providers.services.custom_names import delete_custom
from providers.services.generations import claim_generation
from providers.services.generations import lock_as_read


@retried_write
def traits_replace(*, provider, trait_names, as_read=False):
    """Make the provider's traits exactly `trait_names` (all must exist).
    Unchanged traits leave the generation alone; as_read: even then, only
    while the provider is as `provider` was read (lock_as_read)."""
    wanted_names = querysets.trait_ids(trait_names)
    wanted = set(wanted_names.values())
    existing_names = dict(ProviderTrait.objects.filter(
        resource_provider_id=provider.pk).values_list('trait__name', 'trait_id'))
    existing = set(existing_names.values())
    if wanted == existing:
        if as_read:
            with transaction.atomic():
                lock_as_read(provider)
        return
    with transaction.atomic():
        claim_generation(provider)
        ProviderTrait.objects.filter(resource_provider_id=provider.pk,
                                     trait_id__in=existing - wanted).delete()
        ProviderTrait.objects.bulk_create(
            [ProviderTrait(resource_provider_id=provider.pk, trait_id=trait_id)
             for trait_id in wanted - existing])
        added = sorted(name for name, i in wanted_names.items() if i not in existing)
        removed = sorted(name for name, i in existing_names.items() if i not in wanted)
        events.provider_changed(events.TRAIT_UPDATE, provider, before=provider.generation - 1,
                                payload={'added': added, 'removed': removed})


@retried_write
def trait_ensure(*, name):
    """Create a custom trait unless it exists. Returns (trait, created)."""
    trait = Trait.objects.filter(name=name).first()
    if trait is not None:
        return trait, False
    try:
        with transaction.atomic():
            return Trait.objects.create(name=name), True
    except IntegrityError:  # created concurrently
        return Trait.objects.get(name=name), False


@retried_write
def trait_delete(*, trait):
    """Delete a custom trait no provider carries."""
    delete_custom(trait, ProviderTrait.objects.filter(trait_id=trait.pk),
                   standard=exceptions.TraitCannotDeleteStandard, in_use=exceptions.TraitInUse)
