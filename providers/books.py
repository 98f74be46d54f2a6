"""The books of capacity and use per resource class: what providers have
(total, reserved, capacity = (total - reserved) * allocation_ratio), what
consumers hold (`used`, kept on each inventory) and what is free.

Every group's books are summed in the database over its scope
(providers.scopes): the dashboards, GET /capacity, the metrics, the trends,
the pods and the pod selection read a pool's with pool_books, the same
numbers everywhere; a pool's providers are those of querysets.in_pools.
"""
import collections
from dataclasses import dataclass

from django.db.models import Count
from django.db.models import Sum

from providers import ledger
from providers import remembered
from providers import rules
from providers import scopes
from providers.rules import capacity_sql


class Sums:
    """What the rule book says of books with `capacity` and `used`."""

    @property
    def free(self):
        return rules.free(self.capacity, self.used)

    @property
    def utilization(self):
        """used / capacity; None without capacity."""
        return rules.utilization(self.used, self.capacity)

    @property
    def percent(self):
        """utilization in percent, for answers and pages; None without capacity."""
        return rules.percent(self.used, self.capacity)


@dataclass(frozen=True)
class ClassUsage(Sums):
    """One resource class's books: capacity = (total - reserved) * ratio."""
    name: str
    total: int = 0
    reserved: int = 0
    capacity: float = 0.0
    used: int = 0
    providers: int = 0
    class_id: int = None


def fullest_class(classes):
    """How full a host is: of its books ({class name: ClassUsage}, in class
    order) the class used the most for its capacity, the first of equals;
    None when no class has capacity."""
    best = None
    for usage in classes.values():
        if usage.capacity > 0 and (best is None or usage.utilization > best.utilization):
            best = usage
    return best


def scope_books(scope):
    """{grp: {class name: ClassUsage}} in resource class order for every
    group of a scope (providers.scopes) that has inventory: from the
    ledger's image (providers.ledger) outside a writing transaction, else
    one query, whatever the number of groups and providers."""
    if _from_ledger(scope):
        return ledger.books(scope.db, scope.grouping, scope.classes)
    return remembered.remembered(scope.db, ('books', scope.key()), lambda: _summed_books(scope))


def _from_ledger(scope):
    """Whether the ledger answers for the scope: it knows its grouping (a
    scope narrowed to some trees has none: the database answers those
    faster) and may serve here. Every tree's books (GET /capacity?group_by=root)
    come from the ledger too: summed in SQL, each export of them was seconds
    of the database's time beside the claims."""
    return scope.grouping is not None and ledger.serves(scope.db)


def _summed_books(scope):
    parts = [part.values('grp', 'resource_class_id', 'resource_class__name').annotate(
        total_sum=Sum('total'), reserved_sum=Sum('reserved'),
        capacity_sum=Sum(capacity_sql()), used_sum=Sum('used'),
        provider_count=Count('resource_provider', distinct=True)).order_by()
        for part in scope.parts]
    union = scopes.union_sql(parts)
    books = collections.defaultdict(dict)
    if union is None:
        return {}
    sql, params = union
    # A group's inventories are in one part or several, never twice: the
    # parts' sums (provider counts too) add up.
    for grp, class_id, name, total, reserved, capacity, used, providers in scopes.fetch(
            scope, 'SELECT grp, resource_class_id, resource_class__name, SUM(total_sum), '
                   'SUM(reserved_sum), SUM(capacity_sum), SUM(used_sum), SUM(provider_count) '
                   f'FROM ({sql}) per_part GROUP BY grp, resource_class_id, resource_class__name '
                   'ORDER BY resource_class_id', params):
        books[grp][name] = ClassUsage(name, int(total), int(reserved), float(capacity or 0.0),
                                      int(used or 0), int(providers), class_id)
    return dict(books)


def tree_books(root_id):
    """{class name: ClassUsage} of one provider tree: every provider of it
    (NUMA nodes, NICs and devices with the root), one query."""
    scope = scopes.trees().narrowed(resource_provider__root_provider_id=root_id)
    return scope_books(scope).get(root_id, {})


def hosts_by_fullness(wanted, *, fullest=True, roots=None):
    """The hosts (provider trees) ranked by their fullest class
    (fullest_class): ([(root id, its fullest class id)] of at least `wanted`
    trees with capacity, fullest (or emptiest) first, then by root; whether
    that is all of them). Every tree's rank comes from the ledger outside a
    writing transaction (a claim moves its tree, no sort of the cloud);
    else, or for the trees `roots` (ids, or a query of them), their books
    are summed in one query."""
    ranked, complete, _ = _ranked_hosts(wanted, fullest, roots)
    return ranked, complete


def fullest_hosts(limit):
    """[(root id, ClassUsage of its fullest class summed over the tree)] of
    the `limit` fullest hosts (hosts_by_fullness): from the ledger's image,
    or one query."""
    ranked, _, books = _ranked_hosts(limit, True, None)
    ranked = ranked[:limit]
    if books is None:
        books = ledger.tree_books(scopes.trees().db, [root for root, _ in ranked])
    by_id = {root: {usage.class_id: usage for usage in books.get(root, {}).values()}
             for root, _ in ranked}
    return [(root, by_id[root][class_id]) for root, class_id in ranked
            if class_id in by_id[root]]


def _ranked_hosts(wanted, fullest, roots):
    """hosts_by_fullness's answer, and the trees' books where they were
    summed here (None from the ledger)."""
    scope = scopes.trees()
    if roots is None and _from_ledger(scope):
        ranked, complete, _ = ledger.fullest_trees(scope.db, wanted, fullest)
        return ranked, complete, None
    if roots is not None:
        scope = scope.narrowed(resource_provider__root_provider_id__in=roots)
    books, ranked = scope_books(scope), []
    for root, classes in books.items():
        usage = fullest_class(classes)
        if usage is not None:
            ranked.append((-usage.utilization if fullest else usage.utilization, root,
                           usage.class_id))
    return [(root, class_id) for _, root, class_id in sorted(ranked)], True, books


def pool_books(aggregate_ids):
    """{aggregate id: {class name: ClassUsage}} in resource class order for
    every pool (aggregate) given, empty for a pool without inventory. One
    query, whatever the number of pools and providers."""
    aggregate_ids = list(aggregate_ids)
    books_by_pool = scope_books(scopes.pools(aggregate_ids)) if aggregate_ids else {}
    return {aggregate_id: books_by_pool.get(aggregate_id, {}) for aggregate_id in aggregate_ids}
