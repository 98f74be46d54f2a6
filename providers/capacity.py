"""Capacity per group of providers, and how many more of a request shape
fit in each group: what GET /capacity answers and the dashboards show.

A group is a set of providers: the whole cloud, a pool (an aggregate's
members and the trees of member roots, as providers.querysets.in_pools and
a candidate search's member_of read it), the providers with a trait, one
tree, or an availability zone (the union of the pools of the zone's pods,
a provider counted once). Its books are the sums of its providers'
inventories (providers.books.ClassUsage).

"How many more fit" is the largest number of successive claims of the
request shape (`resources=VCPU:4,MEMORY_MB:8192,...`, Placement's
unsuffixed group) that GET /allocation_candidates would grant one after
another using only the group's providers; providers.fits.count_fits says
how it is counted. tree_fit_counts counts it for each tree alone too, with
the sharing providers serving it (a hypervisor's count on GET /metrics).

The database does the sums: each group's books, and for every tree no
sharing provider reaches, min over the classes of the slots its providers
offer (a tree holds as many claims as its scarcest class allows). Only the
trees sharing providers serve come to Python, as sums per tree, for the max
flows. A fixed number of queries, whatever the number of providers or
groups (providers.scopes).
"""
import collections
import dataclasses
from dataclasses import dataclass
from dataclasses import field

from django.db.models import Case
from django.db.models import CharField
from django.db.models import Count
from django.db.models import Exists
from django.db.models import F
from django.db.models import FloatField
from django.db.models import Max
from django.db.models import Min
from django.db.models import OuterRef
from django.db.models import Q
from django.db.models import Sum
from django.db.models import Value
from django.db.models import When
from django.db.models.lookups import GreaterThanOrEqual

from providers import books
from providers import ledger
from providers import remembered
from providers import scopes
from providers.fits import Fit
from providers.fits import count_fits
from providers.fits import count_lone_tree
from providers.flavors import configured_flavors
from providers.models import Aggregate
from providers.models import ProviderTrait
from providers.models import ResourceClass
from providers.models import ResourceProvider
from providers.models import Trait
from providers.pods.models import Pod
from providers.rules import slots_sql
from providers.rules import takes_sql

CLOUD = 'cloud'
AGGREGATE = 'aggregate'
TRAIT = 'trait'
ROOT = 'root'
AVAILABILITY_ZONE = 'availability_zone'
GROUPINGS = (CLOUD, AGGREGATE, TRAIT, ROOT, AVAILABILITY_ZONE)


# ---- groups --------------------------------------------------------------------------

@dataclass
class Group:
    """A group as the answer names it (key: 'cloud', an aggregate's uuid, a
    trait's name, a root's uuid, a zone; name: a root's), and grp, its key
    in the grouping's scope (providers.scopes)."""
    key: str
    name: str = None
    grp: object = CLOUD


def grouping(group_by):
    """(scope, [Group]) of a grouping, the groups in a stable order: one
    or two queries."""
    if group_by == CLOUD:
        return scopes.cloud(), [Group(CLOUD)]
    if group_by == AVAILABILITY_ZONE:
        zones = _zones()
        return scopes.unions_of_pools(zones), [Group(zone, grp=zone) for zone in sorted(zones)]
    return _SCOPES[group_by](), [Group(key, name, grp) for grp, key, name in _listed(group_by)]


def _zones():
    """{availability zone: ids of its pods' aggregates}: one query."""
    zones = collections.defaultdict(set)
    for zone, aggregate in Pod.objects.values_list('availability_zone', 'aggregate_id'):
        zones[zone].add(aggregate)
    return zones


def _listed(group_by):
    """The groups of a grouping with many (trees, traits, pools) as a
    queryset of (grp, key, name) rows in their stable order, to count or
    slice."""
    if group_by == ROOT:
        return ResourceProvider.objects.roots().values_list('id', 'uuid', 'name').order_by(
            'name', 'id')
    if group_by == TRAIT:
        held = Trait.objects.filter(Exists(ProviderTrait.objects.filter(trait=OuterRef('pk'))))
        return held.values_list('id', 'name', Value(None, CharField())).order_by('name')
    if group_by == AGGREGATE:
        return Aggregate.objects.with_names().values_list('id', 'uuid', 'name').order_by('uuid')
    raise ValueError(group_by)


_SCOPES = {ROOT: scopes.trees, TRAIT: scopes.traits, AGGREGATE: scopes.pools}


def _scope_of_some(group_by, groups):
    """The scope a page of groups ([Group]) of a grouping reads: theirs
    alone, summed over their providers only (a trait's excepted)."""
    grps = [group.grp for group in groups]
    if group_by == ROOT:
        return scopes.trees().narrowed_to_trees(grps)
    if group_by == TRAIT:
        # Every trait's, as GET /capacity reads them (from the ledger's
        # folds): a page's traits summed in SQL are COMPUTE_NODE's 40,000
        # trees' fits, seconds of the database's time.
        return scopes.traits()
    if group_by == AGGREGATE:
        return scopes.pools(grps)
    if group_by == AVAILABILITY_ZONE:
        zones = _zones()
        return scopes.unions_of_pools({grp: zones[grp] for grp in grps})
    return scopes.cloud()


def pools(aggregates):
    """(scope, [Group]) of these pools (Aggregates), in their order."""
    aggregates = list(aggregates)
    return (scopes.pools([a.pk for a in aggregates]),
            [Group(a.uuid, grp=a.pk) for a in aggregates])


# ---- how many more fit ------------------------------------------------------------------

def fit_counts(scope, shapes):
    """{grp: [Fit per shape]} for the request shapes ([{class id:
    amount}]) in every group of the scope that has inventory of their
    classes. Three queries: the per-tree minimum summed in the database for
    the trees no sharing provider reaches, the per-tree sums of the others,
    and (when sharing providers offer slots) the trees they serve; none
    but the books' version while nothing has changed (providers.change_log).
    A group without them fits none."""
    if books._from_ledger(scope):
        counted = ledger.fits(scope.db, scope.grouping, shapes)
    else:
        counted = remembered.remembered(
            scope.db, ('fits', scope.key(), tuple(tuple(sorted(s.items())) for s in shapes)),
            lambda: _counted_fits(scope, shapes))
    fits_by_group = collections.defaultdict(lambda: [Fit(0) for _ in shapes])
    fits_by_group.update(counted)
    return fits_by_group


def _counted_fits(scope, shapes):
    classes = sorted({class_id for shape in shapes for class_id in shape})
    fits_by_group = collections.defaultdict(lambda: [Fit(0) for _ in shapes])
    if not classes:
        return {}
    scope = scope.narrowed(resource_class_id__in=classes)
    for grp, *counts in _per_tree_minimum_sums(
            scope.excluding_trees(*scopes.reached_roots()), shapes):
        fits_by_group[grp] = [Fit(int(count or 0)) for count in counts]
    reached = reached_tree_sums(scope.narrowed_to_trees(*scopes.reached_roots()), shapes)
    served = scopes.served_trees() if any(row[2] is not None for row in reached) else {}
    by_group = collections.defaultdict(list)
    for row in reached:
        by_group[row[0]].append(row[1:])
    for grp, rows in by_group.items():
        sharing = scope.sharing.get(grp, set())
        for index, shape in enumerate(shapes):
            fit = _count_reached(rows, index, shape, sharing, served)
            fits_by_group[grp][index] = Fit(fits_by_group[grp][index].count + fit.count,
                                            fits_by_group[grp][index].exact and fit.exact)
    return dict(fits_by_group)


def _slot_sums(scope, shapes, *keys):
    """Each part's rows grouped by `keys`, with s0, s1, ...: the sum of the
    slots for each shape's amount of the row's class (NULL for a class the
    shape does not ask for)."""
    sums = {f's{index}': Sum(Case(*[When(resource_class_id=class_id, then=slots_sql(amount))
                                    for class_id, amount in shape.items()],
                                  output_field=FloatField()))
            for index, shape in enumerate(shapes)}
    return [part.annotate(root=F('resource_provider__root_provider_id')).values(*keys)
            .annotate(**sums).order_by() for part in scope.parts]


def _per_tree_minimum_sums(scope, shapes):
    """[(grp, count per shape)]: the sum over the group's trees of min over
    the shape's classes of the tree's slots (0 for a tree lacking a class)."""
    per_class = scopes.union_sql(_slot_sums(scope, shapes, 'grp', 'root', 'resource_class_id'))
    if per_class is None:
        return []
    sql, params = per_class
    per_tree = ', '.join(
        f'CASE WHEN SUM(CASE WHEN resource_class_id IN ({", ".join(str(int(c)) for c in shape)}) '
        f'THEN 1 ELSE 0 END) = {len(shape)} THEN MIN(s{index}) ELSE 0 END AS n{index}'
        for index, shape in enumerate(shapes))
    totals = ', '.join(f'SUM(n{index})' for index in range(len(shapes)))
    return scopes.fetch(scope, f'SELECT grp, {totals} FROM (SELECT grp, root, {per_tree} '
                               f'FROM ({sql}) per_class GROUP BY grp, root) per_tree GROUP BY grp',
                        params)


def reached_tree_sums(scope, shapes):
    """[(grp, root, sharing provider or None, class id, s0, s1, ...)]: the
    slots per tree and class of the trees sharing providers reach, a
    sharing provider's apart."""
    sharing = scopes.sharing_ids()
    scope = scope.annotated(sp=Case(When(resource_provider_id__in=sharing,
                                          then=F('resource_provider_id'))))
    per_class = scopes.union_sql(_slot_sums(scope, shapes, 'grp', 'root', 'sp',
                                            'resource_class_id'))
    if per_class is None:
        return []
    sql, params = per_class
    return scopes.fetch(scope, f'SELECT * FROM ({sql}) per_class', params)


def _count_reached(rows, index, shape, sharing, served):
    """count_fits over the rows of one group (see reached_tree_sums) for
    shape `index`: a sharing provider of the group offers its slots to the
    trees it serves, any other provider to its own tree."""
    own = collections.defaultdict(collections.Counter)     # root -> class -> slots
    pools = collections.defaultdict(collections.Counter)   # sharing id -> class -> slots
    roots = {}
    for root, provider, class_id, *sums in rows:
        slots = int(sums[index] or 0)
        if not slots:
            continue
        if provider in sharing:
            pools[provider][class_id] += slots
            roots[provider] = root
        else:
            own[root][class_id] += slots
    reach = collections.defaultdict(set)   # root -> sharing providers serving it
    for provider in pools:
        for served_root in served.get(provider, set()) | {roots[provider]}:
            reach[served_root].add(provider)
    return count_fits(own, pools, reach, list(shape))


@dataclass(frozen=True)
class TreeFits:
    """How many more of each shape fit a per-tree scope's trees: `total`,
    [Fit per shape] in all of them together, each shared slot counted once
    (what fit_counts answers for the group of them); `trees`, {root id:
    [count per shape]} in each tree alone, on its own providers and the
    sharing providers serving it (fits.count_lone_tree), for the trees
    holding some of the shapes' classes. Each tree is offered a sharing
    provider whole, so the trees' counts may add up to more than the
    total."""
    total: list
    trees: dict


def tree_fit_counts(scope, shapes):
    """TreeFits of the shapes ([{class id: amount}]) in a per-tree scope
    (scopes.trees(), perhaps without_trees_whose_root_has): from the
    ledger's image (providers.ledger) outside a writing transaction, else
    three queries."""
    grouping = scope.grouping
    if (grouping is not None and grouping.kind == ledger.groupings.TREES and scope.classes is None
            and ledger.serves(scope.db)):
        total, trees = ledger.tree_fits(
            scope.db, dataclasses.replace(grouping, kind=ledger.groupings.CLOUD), shapes)
        return TreeFits(total, trees)
    return remembered.remembered(
        scope.db, ('tree fits', scope.key(), tuple(tuple(sorted(s.items())) for s in shapes)),
        lambda: _counted_tree_fits(scope, shapes))


def _counted_tree_fits(scope, shapes):
    classes = sorted({class_id for shape in shapes for class_id in shape})
    if not classes:
        return TreeFits([Fit(0) for _ in shapes], {})
    scope = scope.narrowed(resource_class_id__in=classes)
    # A tree no sharing provider reaches: its per-tree minimum, in SQL (its
    # group is the tree alone); they add up to the total.
    trees = {root: [int(count or 0) for count in counts] for root, *counts in
             _per_tree_minimum_sums(scope.excluding_trees(*scopes.reached_roots()), shapes)}
    total = [Fit(sum(counts[index] for counts in trees.values())) for index in range(len(shapes))]
    reached = reached_tree_sums(scope.narrowed_to_trees(*scopes.reached_roots()), shapes)
    if not reached:
        return TreeFits(total, trees)
    rows = [row[1:] for row in reached]   # (root, sharing provider or None, class id, sums...)
    sharing = {provider for _, provider, *_ in rows if provider is not None}
    served = scopes.served_trees() if sharing else {}
    own = collections.defaultdict(collections.Counter)     # (root, shape) -> class -> slots
    pools = collections.defaultdict(collections.Counter)   # (sharing id, shape) -> ...
    seen, root_of = {root for root, *_ in rows}, {}
    for root, provider, class_id, *sums in rows:
        if provider is not None:
            root_of[provider] = root
        for index, slots in enumerate(sums):
            offered = own[root, index] if provider is None else pools[provider, index]
            offered[class_id] += int(slots or 0)
    pooled = collections.defaultdict(collections.Counter)  # (root, shape) -> class -> slots
    for (provider, index), slots in pools.items():
        # Trees of the scope only: a served tree left out of it counts none.
        for root in (served.get(provider, set()) | {root_of[provider]}) & seen:
            pooled[root, index].update(slots)
    for root in seen:
        trees[root] = [count_lone_tree(own[root, index], pooled[root, index], shape)
                       for index, shape in enumerate(shapes)]
    for index, shape in enumerate(shapes):
        fit = _count_reached(rows, index, shape, sharing, served)
        total[index] = Fit(total[index].count + fit.count, fit.exact)
    return TreeFits(total, trees)


# ---- the answer ---------------------------------------------------------------------------

@dataclass
class GroupCapacity:
    """A group's books per class and, for a request shape, how many more fit."""
    group: Group
    classes: dict = field(default_factory=dict)   # class name -> ClassUsage
    fit: Fit = None


def capacity(group_by=CLOUD, *, wanted=None, class_ids=None):
    """[GroupCapacity] of every group of the grouping: books of the classes
    `class_ids` (None: all) and, with `wanted` ({class id: amount}), how
    many more of that shape fit. A fixed number of queries."""
    scope, groups = grouping(group_by)
    return _capacity_of(scope, groups, wanted, class_ids)


class CapacityPages:
    """capacity()'s answer as a sequence a Paginator pages (len, slices):
    counting the groups is one query, and a slice reads only its groups'
    names, books and fits (a page of the 40,000 trees of group_by=root
    sums 50 trees' inventories; traits, a few hundred, are every trait's
    books and fits as capacity() reads them, from the ledger), with the
    same numbers as capacity()."""

    def __init__(self, group_by=CLOUD, *, wanted=None, class_ids=None):
        self.group_by, self.wanted, self.class_ids = group_by, wanted, class_ids
        self._count = None

    def count(self):
        if self._count is None:
            self._count = (len(_zones()) if self.group_by == AVAILABILITY_ZONE
                           else 1 if self.group_by == CLOUD else _listed(self.group_by).count())
        return self._count

    __len__ = count

    def __getitem__(self, key):
        if not isinstance(key, slice):
            raise TypeError('CapacityPages is sliced, a page at a time')
        if self.group_by == CLOUD:
            groups = [Group(CLOUD)][key]
        elif self.group_by == AVAILABILITY_ZONE:
            groups = [Group(zone, grp=zone) for zone in sorted(_zones())][key]
        else:
            groups = [Group(k, name, grp) for grp, k, name in _listed(self.group_by)[key]]
        if not groups:
            return []
        return _capacity_of(_scope_of_some(self.group_by, groups), groups, self.wanted,
                            self.class_ids)


def _capacity_of(scope, groups, wanted, class_ids):
    books_by_group = books.scope_books(
        scope if class_ids is None else scope.narrowed(resource_class_id__in=list(class_ids)))
    fits = fit_counts(scope, [wanted]) if wanted is not None else {}
    return [GroupCapacity(group, books_by_group.get(group.grp, {}),
                          fits[group.grp][0] if wanted is not None else None)
            for group in groups]


def flavor_fits(flavors, scope, groups):
    """{group key: {flavor name: Fit}} for the flavors ([Flavor]) in the
    groups ([Group] of the scope): four queries. A flavor naming a class
    nobody has fits nowhere."""
    counted, shapes = flavor_shapes(flavors)
    fits = fit_counts(scope, shapes)
    fits_by_group = {}
    for group in groups:
        counts = dict(zip((f.name for f in counted), fits[group.grp]))
        fits_by_group[group.key] = {f.name: counts.get(f.name, Fit(0)) for f in flavors}
    return fits_by_group


def flavor_shapes(flavors):
    """([Flavor], [{class id: amount}]): the flavors whose classes all
    exist, and their shapes (one query)."""
    class_ids = dict(_class_ids({name for flavor in flavors for name in flavor.resources}))
    counted = [f for f in flavors if all(name in class_ids for name in f.resources)]
    return counted, [{class_ids[name]: amount for name, amount in f.resources.items()}
                     for f in counted]


def why_none_fit(flavors, scope, groups, fits):
    """{group key: {flavor name: why}} for each flavor that fits none of a
    group ({group key: {flavor name: Fit}} of flavor_fits): per class of
    the flavor, the limit no provider of the group passes (the class is
    missing, the amount is outside every min_unit..max_unit or off every
    step_size, or no inventory has it free); or, when each class alone
    fits somewhere, that no tree has them all. One query, and none when
    every flavor fits."""
    zero = [(group, flavor) for group in groups for flavor in flavors
            if not fits[group.key][flavor.name].count]
    if not zero:
        return {}
    pairs = sorted({pair for _, flavor in zero for pair in flavor.resources.items()})
    limits = {}
    for index, (name, amount) in enumerate(pairs):
        has = Q(resource_class__name=name)
        limits.update({
            f'has{index}': Count('id', filter=has),
            f'max{index}': Max('max_unit', filter=has),
            f'min{index}': Min('min_unit', filter=has),
            f'takes{index}': Count('id', filter=has & takes_sql(amount)),
            f'room{index}': Count('id', filter=has & Q(
                GreaterThanOrEqual(slots_sql(amount), 1.0))),
        })
    # A group's inventories may be in several parts: their rows combine.
    limit_values = collections.defaultdict(lambda: collections.defaultdict(list))
    sql, params = scopes.union_sql(
        [part.values('grp').annotate(**limits).order_by() for part in scope.parts]) or ('', ())
    for grp, *values in scopes.fetch(scope, sql, params) if sql else []:
        for key, value in zip(limits, values):
            if value is not None:
                limit_values[grp][key].append(value)
    totals = {'has': sum, 'takes': sum, 'room': sum, 'max': max, 'min': min}
    why = collections.defaultdict(dict)
    for group, flavor in zero:
        group_limits = limit_values[group.grp]

        def limit(kind, index):
            values = group_limits.get(f'{kind}{index}')
            return totals[kind](values) if values else 0
        reasons = []
        for name, amount in flavor.resources.items():
            index = pairs.index((name, amount))
            if not limit('has', index):
                reasons.append(f'no provider here has {name}')
            elif not limit('takes', index):
                if amount > limit('max', index):
                    reasons.append(f'{amount} {name} is above every max_unit '
                                   f'(the largest is {limit("max", index)})')
                elif amount < limit('min', index):
                    reasons.append(f'{amount} {name} is below every min_unit '
                                   f'(the smallest is {limit("min", index)})')
                else:
                    reasons.append(f'no {name} inventory takes {amount} within its min_unit, '
                                   'max_unit and step_size')
            elif not limit('room', index):
                reasons.append(f'no {name} inventory has {amount} free')
        why[group.key][flavor.name] = '; '.join(reasons) or (
            'each class fits somewhere, but no tree has them all (with the sharing providers '
            'that serve it)')
    return why


def _class_ids(names):
    return ResourceClass.objects.filter(name__in=list(names)).values_list('name', 'id')


def prewarm(using='default'):
    """Read the ledger's image and build the folds the overview and the
    pools read (the books and the configured flavors' fits of the cloud
    and of every pool): what a large cloud's first page would wait for."""
    _, shapes = flavor_shapes(configured_flavors())
    for scope in (scopes.cloud(), scopes.pools()):
        ledger.books(using, scope.grouping)
        ledger.fits(using, scope.grouping, shapes)
