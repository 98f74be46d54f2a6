"""A provider's aggregates (the pools it is in)."""

from django.db import IntegrityError
from django.db import transaction

from placement_site.retries import retried_write
from providers import events
from providers.models import Aggregate
from providers.models import ProviderAggregate
from providers.services.generations import claim_generation


@retried_write
def aggregates_replace(*, provider, aggregate_uuids, bump_generation=True):
    """Make the provider's aggregates exactly `aggregate_uuids`, creating
    unknown aggregates. Before microversion 1.19 OpenStack Placement did not
    bump the generation for this, and neither do we then."""
    wanted_uuids = set(aggregate_uuids)
    with transaction.atomic():
        if bump_generation:
            claim_generation(provider)
        known = dict(Aggregate.objects.filter(uuid__in=wanted_uuids).values_list('uuid', 'id'))
        for agg_uuid in wanted_uuids - set(known):
            known[agg_uuid] = aggregate_ensure(agg_uuid)
        wanted = {known[u] for u in wanted_uuids}
        existing_uuids = dict(ProviderAggregate.objects.filter(
            resource_provider_id=provider.pk).values_list('aggregate__uuid', 'aggregate_id'))
        existing = set(existing_uuids.values())
        ProviderAggregate.objects.filter(resource_provider_id=provider.pk,
                                         aggregate_id__in=existing - wanted).delete()
        ProviderAggregate.objects.bulk_create(
            [ProviderAggregate(resource_provider_id=provider.pk, aggregate_id=agg_id)
             for agg_id in wanted - existing], ignore_conflicts=True)
        added = sorted(u for u in wanted_uuids if known[u] not in existing)
        removed = sorted(u for u, i in existing_uuids.items() if i not in wanted)
        if not (bump_generation or added or removed):
            return  # the same set again before 1.19: nothing changed
        # One event per change: an add, a remove, or (both, or neither, as
        # when the same set is written again at a new generation) an update.
        event_type = (events.AGGREGATE_ADD if added and not removed else
                      events.AGGREGATE_REMOVE if removed and not added else
                      events.AGGREGATE_UPDATE)
        events.provider_changed(
            event_type, provider,
            before=provider.generation - 1 if bump_generation else provider.generation,
            payload={'added': added, 'removed': removed})


@retried_write
def aggregate_ensure(agg_uuid):
    """The id of the aggregate, created if it is new (a concurrent creator
    may win: then theirs)."""
    try:
        with transaction.atomic():
            return Aggregate.objects.create(uuid=agg_uuid).pk
    except IntegrityError:
        return Aggregate.objects.get(uuid=agg_uuid).pk
