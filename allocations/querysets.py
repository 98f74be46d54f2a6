"""Reads of allocations and usages: a fixed number of queries each,
whatever the number of providers or consumers."""
from datetime import datetime
from typing import NamedTuple

from django.db.models import Count
from django.db.models import OuterRef
from django.db.models import Subquery
from django.db.models import Sum
from django.db.models.functions import Coalesce

from allocations.models import Allocation
from allocations.models import Consumer
from allocations.models import ConsumerType
from placement_site.prepared import Prepared
from placement_site.queries import storable
from providers.models import Inventory
from providers.models import ResourceClass


class Held(NamedTuple):
    """One allocation a consumer holds, with what its answer shows."""
    provider_uuid: str
    provider_generation: int
    resource_class: str
    used: int
    changed: datetime            # updated_at, else created_at
    consumer_generation: int
    project_id: str
    user_id: str
    consumer_type: str


# Prepared on the server too: nova reads a consumer's allocations on every
# move, confirm and heal, and planning the six-table join cost ten times
# running it (placement_site.prepared).
_HELD = Prepared(Allocation, lambda uuid: Allocation.objects.filter(
    consumer__uuid=uuid).values_list(
    'resource_provider__uuid', 'resource_provider__generation', 'resource_class__name',
    'used', 'updated_at', 'created_at', 'consumer__generation',
    'consumer__project__external_id', 'consumer__user__external_id',
    'consumer__consumer_type__name').order_by('id'), on_server=True)


def allocations_of_consumer(consumer_uuid):
    """[Held] of the consumer, in the order they were written (1 query)."""
    if not storable(consumer_uuid):
        return []
    return [Held(provider, generation, name, used, updated or created, consumer_generation,
                 project, user, ConsumerType.reported(kind))
            for (provider, generation, name, used, updated, created, consumer_generation,
                 project, user, kind) in _HELD.rows(consumer_uuid)]


def consumer_generation(consumer_uuid):
    """The consumer's generation, None when it does not exist (1 query)."""
    if not storable(consumer_uuid):
        return None
    return Consumer.objects.filter(uuid=consumer_uuid).values_list(
        'generation', flat=True).first()


def allocations_on_provider(provider):
    """Allocations against one provider with their consumers (1 query)."""
    return list(Allocation.objects.filter(resource_provider_id=provider.pk).select_related(
        'resource_class', 'consumer').only(
        'used', 'created_at', 'updated_at', 'resource_class__name',
        'consumer__uuid', 'consumer__generation'))


def provider_usages(provider):
    """{resource class: used} for every class the provider has inventory of."""
    rows = Inventory.objects.filter(resource_provider_id=provider.pk).values_list(
        'resource_class__name', 'used').order_by('resource_class_id')   # as Placement groups
    return {name: used for name, used in rows}


def _usages(project_id, user_id):
    return _by_class(_owned(project_id, user_id)).values_list('name', 'used')


def _by_class(allocations, *group):
    """The allocations' sums by class (and `group`), in class order as
    Placement groups them, each class named after summing: a project's
    thousands of allocations are not joined to their class's name first and
    sorted by it (2.7 -> 1.7 ms for 3,000)."""
    # (The name annotated after the sum, so Django does not group by it.)
    return allocations.values(*group, 'resource_class_id').annotate(
        used=Coalesce(Sum('used'), 0)).annotate(name=Subquery(ResourceClass.objects.filter(
            id=OuterRef('resource_class_id')).values('name'))).order_by(*group, 'resource_class_id')


# Prepared on the server too: every quota check with unified limits asks.
_USAGES = Prepared(Allocation, _usages, on_server=True)


def project_usages(project_id, user_id=None):
    """{resource class: used} over a project's (and user's) consumers."""
    # (Asked before the prepared read: its shape is compiled from storable ids.)
    if not _storable_owner(project_id, user_id):
        return {}
    return dict(_USAGES.rows(project_id, user_id or None))


def project_usages_by_consumer_type(project_id, user_id=None, consumer_type=None):
    """Usages grouped by consumer type, each with its consumer_count.

    consumer_type: None for every type separately, 'all' for everything
    under one 'all' key, 'unknown' for consumers without a type, or a name.
    Consumers written before 1.38 have no type and count as 'unknown'.
    """
    allocations = _owned(project_id, user_id)
    if consumer_type == ConsumerType.UNKNOWN:
        allocations = allocations.filter(consumer__consumer_type__isnull=True)
    elif consumer_type not in (None, 'all'):
        allocations = allocations.filter(consumer__consumer_type__name=consumer_type)
    if consumer_type in ('all', ConsumerType.UNKNOWN):
        group = []
    else:
        group = ['consumer__consumer_type__name']
    usages = {}
    for row in _by_class(allocations, *group):
        key = _type_key(row, group, consumer_type)
        usages.setdefault(key, {})[row['name']] = row['used']
    if group:
        counts = allocations.values(*group).annotate(consumers=Count('consumer', distinct=True))
    else:
        counts = [allocations.aggregate(consumers=Count('consumer', distinct=True))]
    for row in counts:
        key = _type_key(row, group, consumer_type)
        if key in usages:
            usages[key]['consumer_count'] = row['consumers']
    return usages


def _type_key(row, group, consumer_type):
    if not group:
        return consumer_type
    return row['consumer__consumer_type__name'] or ConsumerType.UNKNOWN


def _storable_owner(project_id, user_id):
    """Whether the ids could be stored: no owner of longer ids exists."""
    return storable(project_id) and (not user_id or storable(user_id))


def _owned(project_id, user_id):
    if not _storable_owner(project_id, user_id):
        return Allocation.objects.none()
    allocations = Allocation.objects.filter(consumer__project__external_id=project_id)
    if user_id:
        allocations = allocations.filter(consumer__user__external_id=user_id)
    return allocations
