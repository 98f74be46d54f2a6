"""Pools (aggregates): their books, flavor fits and stranded capacity, listed
and sorted."""
import collections

from django.db.models import Count
from django.db.models import F

from allocations.ui import exports
from allocations.ui.reports.cloud import flavor_fits
from allocations.ui.reports.rows import classes_with_inventory
from placement_site.queries import count_of
from providers import books
from providers import capacity
from providers import stranded
from providers.flavors import configured_flavors
from providers.models import Aggregate
from providers.models import ProviderAggregate


def pools(aggregates):
    """For each aggregate: member count and the pool's combined ClassUsage
    per class (its members and the trees of member roots, see
    providers.books). Three queries for any number of pools."""
    aggregate_ids = [a.pk for a in aggregates]
    members = collections.Counter(dict(ProviderAggregate.objects.filter(
        aggregate_id__in=aggregate_ids).values('aggregate_id').annotate(
        n=Count('resource_provider')).values_list('aggregate_id', 'n')))
    pool_books = books.pool_books(aggregate_ids)
    return {agg: {'members': members.get(agg, 0), 'classes': list(pool_books[agg].values())}
            for agg in aggregate_ids}


def pool_flavor_fits(aggregates):
    """{aggregate id: [FlavorFit]} in each pool (members and the trees of
    member roots, as member_of reads it)."""
    aggregates = list(aggregates)
    by_uuid = flavor_fits(*capacity.pools(aggregates))
    return {a.pk: by_uuid[a.uuid] for a in aggregates}


def pool_stranded(aggregate):
    """[stranded.ClassStranded] of one pool (an Aggregate)."""
    return list(stranded.stranded_in(*capacity.pools([aggregate]))[0].classes.values())


# The pools list's sorts: its columns (the names with_names annotates).
POOL_SORTS = {'name': 'name', 'zone': 'zone', 'members': 'member_count', 'uuid': 'uuid'}


def pools_sorted(sort):
    """The pools (aggregates) with their names, pods and zones
    (AggregateQuerySet.with_names) and `member_count`, in the order of
    `sort` ('-' descending; unknown: by name); pools without a zone last.
    One query, sorted in the database."""
    field = POOL_SORTS.get(sort.lstrip('-'), 'name')
    order = (F(field).desc(nulls_last=True) if sort.startswith('-')
             else F(field).asc(nulls_last=True))
    return Aggregate.objects.with_names().annotate(
        member_count=count_of(ProviderAggregate, 'aggregate')).order_by(order, 'uuid')


def pool_rows(listed):
    """(columns, rows) of the pools list's export: each pool's name, zone,
    pod and members, every class's used and capacity (books.pool_books, as
    the page shows them) and how many more of each configured flavor fit;
    a chunk of pools and a few queries at a time."""
    classes = classes_with_inventory()
    flavor_names = [f.name for f in configured_flavors()]
    columns = (['uuid', 'name', 'zone', 'pod', 'members']
               + [f'{c}_{what}' for c in classes for what in ('used', 'capacity')]
               + [f'{name}_fit' for name in flavor_names])

    def rows():
        for chunk in exports.chunks(listed):
            booked, fits = pools(chunk), pool_flavor_fits(chunk)
            for pool in chunk:
                held = {c.name: (c.used, c.capacity) for c in booked[pool.pk]['classes']}
                yield ([pool.uuid, pool.name, pool.zone, pool.pod_name, pool.member_count]
                       + [value for c in classes for value in held.get(c, (None, None))]
                       + [f.fit.count for f in fits[pool.pk]])
    return columns, rows()
