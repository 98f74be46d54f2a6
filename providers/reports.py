"""Reads for the dashboards: capacity, usage and utilization across the
cloud, per provider, per tree and per pool. Each function issues a fixed
number of queries, whatever the number of providers."""
import collections
from dataclasses import dataclass, field

import os_traits
from django.db.models import Count, F, FloatField, OuterRef, Q, Subquery, Sum
from django.db.models.functions import Cast, NullIf

from providers.models import (Aggregate, Inventory, ProviderAggregate, ProviderTrait,
                              ResourceProvider)
from providers.querysets import capacity_expression, usage_subquery


@dataclass
class ClassUsage:
    """One resource class's books: capacity = (total - reserved) * ratio."""
    name: str
    total: int = 0
    reserved: int = 0
    capacity: float = 0.0
    used: int = 0
    providers: int = 0

    @property
    def free(self):
        return max(self.capacity - self.used, 0)

    @property
    def fraction(self):
        return self.used / self.capacity if self.capacity else 0.0


def class_summary(inventories=None):
    """ClassUsage per resource class over the given inventories (default:
    the whole cloud), in resource class order. Two queries."""
    inventories = Inventory.objects.all() if inventories is None else inventories
    rows = inventories.values('resource_class_id', 'resource_class__name').annotate(
        total_sum=Sum('total'), reserved_sum=Sum('reserved'),
        capacity_sum=Sum(capacity_expression()),
        provider_count=Count('resource_provider', distinct=True),
    ).order_by('resource_class_id')
    summary = {r['resource_class__name']: ClassUsage(
        r['resource_class__name'], r['total_sum'], r['reserved_sum'], r['capacity_sum'] or 0.0,
        providers=r['provider_count']) for r in rows}
    from allocations.models import Allocation
    used = Allocation.objects.filter(
        resource_provider_id__in=inventories.values('resource_provider_id'),
    ).values('resource_class__name').annotate(used_sum=Sum('used'))
    for row in used:
        if row['resource_class__name'] in summary:
            summary[row['resource_class__name']].used = row['used_sum']
    return list(summary.values())


def with_utilization(inventories):
    """Annotate used and utilization (used / capacity)."""
    # (capacity itself is Inventory.capacity.) No capacity (reserved ==
    # total, or a zero ratio): utilization unknown.
    return inventories.annotate(used=usage_subquery()).annotate(
        utilization=Cast(F('used'), FloatField()) / NullIf(capacity_expression(), 0.0))


def fullest_inventories(limit=10):
    """The inventories closest to full, with their providers (one query)."""
    return list(with_utilization(Inventory.objects.filter(total__gt=F('reserved')))
                .select_related('resource_provider', 'resource_class')
                .order_by(F('utilization').desc(nulls_last=True), 'resource_provider__name')[:limit])


def cloud_counts():
    from allocations.models import Consumer, Project
    providers = ResourceProvider.objects.aggregate(
        all=Count('id'), roots=Count('id', filter=Q(parent_provider__isnull=True)))
    return {
        'providers': providers['all'],
        'roots': providers['roots'],
        'consumers': Consumer.objects.count(),
        'projects': Project.objects.filter(consumers__isnull=False).distinct().count(),
    }


def utilization_of(provider_ids):
    """{provider id: [inventory with used/capacity/utilization]} (one query)."""
    by_provider = collections.defaultdict(list)
    for inventory in with_utilization(Inventory.objects.filter(
            resource_provider_id__in=list(provider_ids))).select_related(
            'resource_class').order_by('resource_class_id'):
        by_provider[inventory.resource_provider_id].append(inventory)
    return by_provider


def max_utilization_subquery():
    """The fullest inventory's utilization of each provider, for sorting."""
    fullest = with_utilization(Inventory.objects.filter(
        resource_provider=OuterRef('pk'), total__gt=F('reserved'))).order_by(
        F('utilization').desc(nulls_last=True))
    return Subquery(fullest.values('utilization')[:1], output_field=FloatField())


@dataclass
class TreeNode:
    provider: ResourceProvider
    children: list = field(default_factory=list)


def provider_tree(provider):
    """The provider's whole tree as nested TreeNodes, root first (one query)."""
    nodes = {p.pk: TreeNode(p) for p in ResourceProvider.objects.filter(
        root_provider_id=provider.root_provider_id).order_by('name')}
    root = None
    for node in nodes.values():
        parent = nodes.get(node.provider.parent_provider_id)
        if parent is None:
            root = node
        else:
            parent.children.append(node)
    return root


def is_sharing(provider):
    return ProviderTrait.objects.filter(
        resource_provider=provider, trait__name=os_traits.MISC_SHARES_VIA_AGGREGATE).exists()


def sharing_relations(provider, sharing=None):
    """A sharing provider: the trees it serves through its aggregates.
    Any other provider: the sharing providers serving its tree."""
    if sharing is None:
        sharing = is_sharing(provider)
    if sharing:
        aggregates = ProviderAggregate.objects.filter(
            resource_provider=provider).values('aggregate_id')
        return list(ResourceProvider.objects.filter(
            provideraggregate__aggregate_id__in=aggregates, parent_provider__isnull=True,
        ).exclude(pk=provider.pk).distinct().order_by('name'))
    tree_aggregates = ProviderAggregate.objects.filter(
        resource_provider__root_provider_id=provider.root_provider_id).values('aggregate_id')
    return list(ResourceProvider.objects.filter(
        provideraggregate__aggregate_id__in=tree_aggregates,
        providertrait__trait__name=os_traits.MISC_SHARES_VIA_AGGREGATE,
    ).exclude(root_provider_id=provider.root_provider_id).distinct().order_by('name'))


def pools(aggregates):
    """For each aggregate: member count, sharing members and the pool's
    combined ClassUsage per class. Three queries for any number of pools."""
    aggregate_ids = [a.pk for a in aggregates]
    members = collections.Counter(dict(ProviderAggregate.objects.filter(
        aggregate_id__in=aggregate_ids).values('aggregate_id').annotate(
        n=Count('resource_provider')).values_list('aggregate_id', 'n')))
    books = collections.defaultdict(dict)
    rows = Inventory.objects.filter(
        resource_provider__provideraggregate__aggregate_id__in=aggregate_ids,
    ).values('resource_provider__provideraggregate__aggregate_id', 'resource_class__name',
             'resource_class_id').annotate(
        total_sum=Sum('total'), reserved_sum=Sum('reserved'),
        capacity_sum=Sum(capacity_expression()),
        provider_count=Count('resource_provider', distinct=True)).order_by('resource_class_id')
    for row in rows:
        agg = row['resource_provider__provideraggregate__aggregate_id']
        books[agg][row['resource_class__name']] = ClassUsage(
            row['resource_class__name'], row['total_sum'], row['reserved_sum'],
            row['capacity_sum'] or 0.0, providers=row['provider_count'])
    from allocations.models import Allocation
    for row in Allocation.objects.filter(
            resource_provider__provideraggregate__aggregate_id__in=aggregate_ids,
    ).values('resource_provider__provideraggregate__aggregate_id', 'resource_class__name').annotate(
            used_sum=Sum('used')):
        usage = books[row['resource_provider__provideraggregate__aggregate_id']].get(
            row['resource_class__name'])
        if usage is not None:
            usage.used = row['used_sum']
    return {agg: {'members': members.get(agg, 0), 'classes': list(books[agg].values())}
            for agg in aggregate_ids}


def aggregates_with_counts():
    return Aggregate.objects.annotate(members=Count('provideraggregate')).order_by('uuid')
