"""The books of capacity and use per resource class: what providers have
(total, reserved, capacity = (total - reserved) * allocation_ratio), what
consumers hold (`used`, kept on each inventory) and what is free.

The dashboards' pool pages, the pods and the pod selection all read a pool
with pool_books, so a pod's numbers are its pool page's; a pool's providers
are those of querysets.in_pools.
"""
import collections
from dataclasses import dataclass

from django.db.models import Count, Sum

from providers.models import Inventory
from providers.querysets import capacity_expression, in_pools


@dataclass
class ClassUsage:
    """One resource class's books: capacity = (total - reserved) * ratio."""
    name: str
    total: int = 0
    reserved: int = 0
    capacity: float = 0.0
    used: int = 0
    providers: int = 0
    class_id: int = None

    @property
    def free(self):
        return max(self.capacity - self.used, 0)

    @property
    def fraction(self):
        """used / capacity; 0 without capacity."""
        return self.used / self.capacity if self.capacity else 0.0

    def add(self, other):
        self.total += other.total
        self.reserved += other.reserved
        self.capacity += other.capacity
        self.used += other.used
        self.providers += other.providers


def grouped_books(inventories, *keys):
    """{group key: {class name: ClassUsage}} in resource class order, the
    inventories grouped by the fields `keys` (none: one group, ()). One
    query."""
    books = collections.defaultdict(dict)
    for row in inventories.values(*keys, 'resource_class_id', 'resource_class__name').annotate(
            total_sum=Sum('total'), reserved_sum=Sum('reserved'),
            capacity_sum=Sum(capacity_expression()), used_sum=Sum('used'),
            provider_count=Count('resource_provider', distinct=True),
    ).order_by('resource_class_id'):
        name = row['resource_class__name']
        books[tuple(row[k] for k in keys)][name] = ClassUsage(
            name, row['total_sum'], row['reserved_sum'], row['capacity_sum'] or 0.0,
            row['used_sum'] or 0, row['provider_count'], row['resource_class_id'])
    return books


def pool_books(aggregate_ids):
    """{aggregate id: {class name: ClassUsage}} in resource class order for
    every pool (aggregate) given, empty for a pool without inventory. Two
    queries, whatever the number of pools and providers."""
    aggregate_ids = list(aggregate_ids)
    books = {aggregate_id: {} for aggregate_id in aggregate_ids}
    for part in in_pools(Inventory.objects.all(), aggregate_ids):
        for (aggregate_id,), classes in grouped_books(part, 'pool').items():
            pool = books[aggregate_id]
            for name, usage in classes.items():
                if name in pool:
                    pool[name].add(usage)
                else:
                    pool[name] = usage
    return {aggregate_id: dict(sorted(pool.items(), key=lambda item: item[1].class_id))
            for aggregate_id, pool in books.items()}
