"""The exports' rows (CSV and JSON downloads): providers, hosts, consumers,
usage, events and bindings, streamed a chunk at a time."""
import collections

from django.db.models import Exists
from django.db.models import OuterRef

from allocations.models import Allocation
from allocations.models import ConsumerType
from allocations.ui import exports
from allocations.ui.reports.trees import tree_usage_of
from placement_site.api import timestamp
from providers import books
from providers import rules
from providers.models import Inventory
from providers.models import ResourceClass
from providers.models import ResourceProvider


def classes_with_inventory():
    """The names of the classes some provider has inventory of, in class
    order (one query: an EXISTS per class)."""
    return list(ResourceClass.objects.filter(Exists(Inventory.objects.filter(
        resource_class=OuterRef('pk')))).order_by('id').values_list('name', flat=True))


def provider_rows(providers):
    """(columns, rows) of a providers export: each provider (annotated
    with max_utilization) with every class's used and capacity, a chunk of
    providers and one query at a time. Read as tuples, not models: building
    100,000 providers and their inventories as objects took most of a
    whole cloud's export."""
    classes = classes_with_inventory()
    columns = ['uuid', 'name', 'parent_provider_uuid', 'root_provider_uuid', 'generation',
               'max_utilization'] + [f'{c}_{what}' for c in classes for what in ('used',
                                                                                 'capacity')]
    listed = providers.values_list('pk', 'uuid', 'name', 'parent_provider__uuid',
                                   'root_provider__uuid', 'generation', 'max_utilization')

    def rows():
        for chunk in exports.chunks(listed):
            held = collections.defaultdict(dict)
            for provider_id, name, used, total, reserved, ratio in Inventory.objects.filter(
                    resource_provider_id__in=[row[0] for row in chunk]).values_list(
                    'resource_provider_id', 'resource_class__name', 'used', 'total',
                    'reserved', 'allocation_ratio'):
                held[provider_id][name] = (used, rules.capacity(total, reserved, ratio))
            for row in chunk:
                books = held[row[0]]
                yield [*row[1:]] + [value for c in classes
                                    for value in books.get(c, (None, None))]
    return columns, rows()


def host_rows(roots):
    """(columns, rows) of a hosts export: each tree (`roots`: a query of
    its roots' ids, or the ids in order) with its fullest class
    (books.fullest_class) and every class's used and capacity summed over
    the tree, a chunk of trees and two queries at a time."""
    classes = classes_with_inventory()
    columns = ['uuid', 'name', 'fullest_class', 'fullest_utilization'] + [
        f'{c}_{what}' for c in classes for what in ('used', 'capacity')]

    def rows():
        for chunk in exports.chunks(roots):
            named = {pk: (uuid, name) for pk, uuid, name in ResourceProvider.objects.filter(
                pk__in_ids=chunk).values_list('pk', 'uuid', 'name')}
            usage = tree_usage_of(chunk)
            for root in chunk:
                held = {u.name: u for u in usage.get(root, ())}
                fullest = books.fullest_class(held)
                yield [*named.get(root, (None, None)),
                       fullest and fullest.name, fullest and fullest.utilization] + [
                    value for c in classes
                    for value in ((held[c].used, held[c].capacity) if c in held else (None, None))]
    return columns, rows()


def consumer_rows(consumers, **within):
    """(columns, rows) of a consumers export: one row per allocation
    (narrowed by `within`), with its consumer's owner, a chunk of consumers
    and one query at a time, read as tuples (as provider_rows)."""
    columns = ['consumer_uuid', 'project_id', 'user_id', 'consumer_type', 'generation',
               'resource_provider_uuid', 'resource_provider_name', 'resource_class', 'used']
    listed = consumers.values_list('pk', 'uuid', 'project__external_id', 'user__external_id',
                                   'consumer_type__name', 'generation')

    def rows():
        for chunk in exports.chunks(listed):
            held = collections.defaultdict(list)
            for consumer_id, *allocation in Allocation.objects.filter(
                    consumer_id__in=[row[0] for row in chunk], **within).order_by(
                    'resource_provider__name', 'resource_class_id').values_list(
                    'consumer_id', 'resource_provider__uuid', 'resource_provider__name',
                    'resource_class__name', 'used'):
                held[consumer_id].append(allocation)
            for pk, uuid, project, user, kind, generation in chunk:
                owner = [uuid, project, user, kind or ConsumerType.UNKNOWN, generation]
                for allocation in held[pk]:
                    yield owner + allocation
    return columns, rows()


def usage_rows(rows, keys, classes):
    """(columns, rows) of a usage table's export (Usage.rows: one per owner)."""
    columns = [*keys, 'consumers', *classes]
    return columns, ([*row['key'], row['consumers'], *(row['usages'].get(c, 0) for c in classes)]
                     for row in rows)


def event_rows(events):
    """(columns, rows) of an event-log export, a chunk at a time."""
    columns = ['id', 'created_at', 'event_type', 'consumer_generation_before',
               'consumer_generation_after', 'request_id', 'user_id', 'project_id']
    return columns, ([e.pk, timestamp(e.created_at), e.event_type, e.consumer_generation_before,
                      e.consumer_generation_after, e.request_id, e.user_id, e.project_id]
                     for chunk in exports.chunks(events) for e in chunk)


def binding_rows(bindings):
    """(columns, rows) of a pod's binding history export."""
    columns = ['uuid', 'project_id', 'affinity', 'started_at', 'ended_at', 'end_reason']
    return columns, ([b.uuid, b.project_id, b.affinity, timestamp(b.started_at),
                      timestamp(b.ended_at), b.end_reason]
                     for chunk in exports.chunks(bindings) for b in chunk)
