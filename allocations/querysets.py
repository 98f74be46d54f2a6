"""Reads of allocations and usages: a fixed number of queries each,
whatever the number of providers or consumers."""
import collections

from django.db.models import Count, Sum
from django.db.models.functions import Coalesce

from allocations.models import Allocation, Consumer, ConsumerType
from providers.models import Inventory
from providers.querysets import usage_subquery
from providers.services import storable


def allocations_of_consumer(consumer_uuid):
    """The consumer's allocations with provider, class and owner (1 query)."""
    if not storable(consumer_uuid):
        return []
    return list(Allocation.objects.filter(consumer__uuid=consumer_uuid).select_related(
        'resource_provider', 'resource_class', 'consumer__project', 'consumer__user',
        'consumer__consumer_type').only(
        'used', 'created_at', 'updated_at',
        'resource_provider__uuid', 'resource_provider__generation',
        'resource_class__name',
        'consumer__uuid', 'consumer__generation', 'consumer__consumer_type__name',
        'consumer__project__external_id', 'consumer__user__external_id'))


def allocations_on_provider(provider):
    """Allocations against one provider with their consumers (1 query)."""
    return list(Allocation.objects.filter(resource_provider_id=provider.pk).select_related(
        'resource_class', 'consumer').only(
        'used', 'created_at', 'updated_at', 'resource_class__name',
        'consumer__uuid', 'consumer__generation'))


def provider_usages(provider):
    """{resource class: used} for every class the provider has inventory of."""
    rows = Inventory.objects.filter(resource_provider_id=provider.pk).annotate(
        used=usage_subquery()).values_list('resource_class__name', 'used')
    return {name: used for name, used in rows}


def project_usages(project_id, user_id=None):
    """{resource class: used} over a project's (and user's) consumers."""
    rows = _owned(project_id, user_id).values('resource_class__name').annotate(
        used=Coalesce(Sum('used'), 0))
    return {row['resource_class__name']: row['used'] for row in rows}


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
    by_class = allocations.values(*group, 'resource_class__name').annotate(used=Sum('used'))
    for row in by_class:
        key = _type_key(row, group, consumer_type)
        usages.setdefault(key, {})[row['resource_class__name']] = row['used']
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


def _owned(project_id, user_id):
    if not storable(project_id) or (user_id and not storable(user_id)):
        return Allocation.objects.none()
    allocations = Allocation.objects.filter(consumer__project__external_id=project_id)
    if user_id:
        allocations = allocations.filter(consumer__user__external_id=user_id)
    return allocations


# ---- dashboards ---------------------------------------------------------------

OWNER_FIELDS = {
    'project': 'consumer__project__external_id',
    'user': 'consumer__user__external_id',
    'consumer_type': 'consumer__consumer_type__name',
}


def owned_allocations(project=None, user=None, consumer_type=None):
    """Allocations of the consumers matching the owner filters."""
    allocations = Allocation.objects.all()
    if project:
        allocations = allocations.filter(consumer__project__external_id=project)
    if user:
        allocations = allocations.filter(consumer__user__external_id=user)
    if consumer_type == ConsumerType.UNKNOWN:
        allocations = allocations.filter(consumer__consumer_type__isnull=True)
    elif consumer_type:
        allocations = allocations.filter(consumer__consumer_type__name=consumer_type)
    return allocations


def usage_by(allocations, keys):
    """Rows of usage grouped by owner keys ('project', 'user',
    'consumer_type'): {'key': (...), 'usages': {class: used},
    'consumers': n}, largest first. Two queries."""
    fields = [OWNER_FIELDS[k] for k in keys]
    rows = collections.OrderedDict()
    for row in allocations.values(*fields, 'resource_class__name').annotate(
            used=Sum('used')).order_by(*fields, 'resource_class_id'):
        key = tuple(row[f] or ConsumerType.UNKNOWN if f.endswith('type__name') else row[f]
                    for f in fields)
        rows.setdefault(key, {'key': key, 'usages': {}, 'consumers': 0})['usages'][
            row['resource_class__name']] = row['used']
    for row in allocations.values(*fields).annotate(n=Count('consumer', distinct=True)):
        key = tuple(row[f] or ConsumerType.UNKNOWN if f.endswith('type__name') else row[f]
                    for f in fields)
        if key in rows:
            rows[key]['consumers'] = row['n']
    return sorted(rows.values(), key=lambda r: (-r['consumers'], r['key']))


def top_consumers(allocations, resource_class, limit=20):
    """The consumers holding the most of a class (ties by uuid), with all
    they hold (two queries)."""
    top = list(allocations.filter(resource_class__name=resource_class).values(
        'consumer_id').annotate(amount=Sum('used')).order_by('-amount', 'consumer__uuid')[:limit])
    consumers = {c.pk: c for c in Consumer.objects.filter(
        pk__in=[t['consumer_id'] for t in top]).select_related(
        'project', 'user', 'consumer_type')}
    holdings = collections.defaultdict(dict)
    for consumer_id, class_name, used in Allocation.objects.filter(
            consumer_id__in=list(consumers)).values_list(
            'consumer_id', 'resource_class__name').annotate(total=Sum('used')).order_by(
            'consumer_id', 'resource_class_id'):
        holdings[consumer_id][class_name] = used
    return [(consumers[t['consumer_id']], t['amount'], holdings[t['consumer_id']]) for t in top]
