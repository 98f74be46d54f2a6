"""Stranded capacity: per resource class, how much of a group's free
capacity no configured flavor (PLACEMENT_CAPACITY_FLAVORS) can use, because
another class on the same host ran out first (free VCPU on a host whose
memory is full) or because what is left is smaller than any flavor asks.

The rule, per tree (a host: its root and every provider below it, the NUMA
nodes with them), is the host page's (providers.host_fits.unusable):

    stranded(c) = max(free(c) - max over the flavors f asking for c of
                      n(f) * amount_f(c), 0)

where free(c) is the tree's capacity minus used of c, at least 0, summed
over the tree's providers in the group, and n(f) is how many more of f fit
the tree alone: min over f's classes of the tree's slots
(providers.rules.slots) plus those of the group's sharing providers
serving it (providers.fits.count_lone_tree, what the host page counts).

A sharing provider S (MISC_SHARES_VIA_AGGREGATE) sharing within the group
is counted once, on its own, not in its tree: its free of a class c is
stranded beyond the most any one flavor f could still take of it,

    take_S(f, c) = min(slots_S(f, c), sum over the group's trees S serves
                       of u_T(f, c))

where u_T(f, c) is how many claims of f the tree T could make without c:
min over f's other classes of T's slots plus those of the sharing providers
serving T (unbounded when f asks for c alone). That is exactly the most
claims of f that could take c from S if every tree it serves drew c from S
alone; stranded_S(c) = max(free_S(c) - max_f take_S(f, c) * amount_f(c), 0).

A group's figure is the sum over its trees and sharing providers, for the
classes some flavor asks for (a class no flavor asks for is not counted as
stranded: nothing configured could use it anyway). `free` is the same sum
of the free capacity (the books' free, unless a tree is over capacity);
`usable` is free - stranded.

Two ways to the same numbers: outside a writing transaction, a fold over
the ledger's image (providers.ledger): each tree no sharing provider of the
group serves is summed as it changes; the trees sharing providers serve
(a few thousand at 40,000 nodes) are kept by their own slots and counted
with the sharing providers' slots when asked. Inside one, the database:
one query of the slots and free per tree, class and sharing provider (the
capacity rule's SQL, providers.rules.slots_sql), the trees the sharing
providers serve, then Python. tests/providers/test_stranded.py holds both to a
claim-by-claim recount.
"""
import collections
import math
from dataclasses import dataclass
from dataclasses import field

from django.db.models import Case
from django.db.models import F
from django.db.models import Sum
from django.db.models import When

from providers import capacity
from providers import ledger
from providers import remembered
from providers import rules
from providers import scopes
from providers.fits import count_lone_tree
from providers.flavors import configured_flavors
from providers.ledger.folds import _TreeByTree
from providers.ledger.image import CAPACITY_BITS
from providers.ledger.image import scaled_capacity
from providers.ledger.image import unscaled
from providers.rules import capacity_sql

INF = math.inf


@dataclass
class ClassStranded:
    """One class's stranded capacity in a group."""
    name: str
    free: float = 0
    stranded: float = 0

    @property
    def usable(self):
        return self.free - self.stranded


@dataclass
class GroupStranded:
    group: capacity.Group
    classes: dict = field(default_factory=dict)   # class name -> ClassStranded


def stranded(group_by=capacity.CLOUD, *, class_ids=None, flavors=None):
    """[GroupStranded] of every group of the grouping, for the flavors (the
    configured ones by default), classes `class_ids` only (None: all)."""
    scope, groups = capacity.grouping(group_by)
    return stranded_in(scope, groups, class_ids=class_ids, flavors=flavors)


def stranded_in(scope, groups, *, class_ids=None, flavors=None):
    """[GroupStranded] of the groups ([capacity.Group]) of a scope."""
    flavors = configured_flavors() if flavors is None else flavors
    counted, shapes = capacity.flavor_shapes(flavors)
    names = {shape_id: name for flavor, shape in zip(counted, shapes)
             for name, shape_id in zip(flavor.resources, shape)}
    sums_by_group = stranded_sums(scope, shapes) if shapes else {}
    answer = []
    for group in groups:
        sums = sums_by_group.get(group.grp, {})
        answer.append(GroupStranded(group, {
            names[class_id]: ClassStranded(names[class_id], _number(free), _number(lost))
            for class_id, (free, lost) in sorted(sums.items())
            if class_ids is None or class_id in class_ids}))
    return answer


def _number(value):
    return int(value) if value == int(value) else value


def stranded_sums(scope, shapes):
    """{grp: {class id: (free, stranded)}} for the shapes ([{class id:
    amount}]): from the ledger outside a writing transaction, else two or
    three queries (remembered while nothing changes)."""
    if scope.grouping is not None and ledger.serves(scope.db):
        return ledger.folded(scope.db, ('stranded', _shapes_key(shapes)), scope.grouping,
                             lambda grouping: StrandedFold(grouping, shapes),
                             lambda fold, image, groups: fold.value(image, groups))
    return remembered.remembered(
        scope.db, ('stranded', scope.key(), _shapes_key(shapes)), lambda: _counted(scope, shapes))


def _shapes_key(shapes):
    return tuple(tuple(sorted(shape.items())) for shape in shapes)


# ---- the rule, on a group's trees and sharing providers ----------------------------------

def tree_stranded(free, own, pooled, shapes):
    """{class id: stranded} of one tree: free {class id: free}, own and
    pooled [{class id: slots} per shape] of its providers and of the
    sharing providers serving it."""
    counts = [count_lone_tree(own[index], pooled[index], shape)
              for index, shape in enumerate(shapes)]
    lost = {}
    for class_id, amount in free.items():
        takes = [count * shape[class_id] for count, shape in zip(counts, shapes)
                 if class_id in shape]
        if takes:
            lost[class_id] = max(amount - max(takes), 0)
    return lost


def group_stranded(sums, trees, pools, shapes):
    """Add to sums ({class id: [free, stranded, parts]}) the trees sharing
    providers serve ({root: (free, own, sharing providers serving it)})
    and the sharing providers ({provider: (free, [{class id: slots}])})."""
    by_reach = collections.defaultdict(list)
    for free, own, reach in trees.values():
        by_reach[frozenset(reach)].append((free, own))
    served = {}
    for reach, held in by_reach.items():
        served[reach] = Served(pooled_slots(reach, pools, shapes))
        for free, own in held:
            served[reach].add(free, own, shapes)
    return pools_stranded(sums, served, pools, shapes)


def pooled_slots(reach, pools, shapes):
    """[{class id: slots} per shape] the sharing providers `reach` offer together."""
    pooled = [collections.Counter() for _ in shapes]
    for provider in reach & pools.keys():
        for index, slots in enumerate(pools[provider][1]):
            pooled[index].update(slots)
    return pooled


class Served:
    """The trees one set of sharing providers serves in a group, counted
    with what those offer (`pooled`): their free and stranded per class
    (`sums`), and per (shape index, class) the claims of the shape they
    could make without that class, summed (`without`: what they could
    take of it from the sharing providers); `high`, per shape, the most
    slots any of its trees' own providers have of one of the shape's
    classes (a bound: trees leaving do not lower it)."""
    __slots__ = ('high', 'pooled', 'sums', 'without')

    def __init__(self, pooled):
        self.pooled = pooled
        self.sums = {}
        self.without = collections.Counter()
        self.high = [0] * len(pooled)

    def add(self, free, own, shapes, times=1):
        pooled = self.pooled
        _add(self.sums, free, tree_stranded(free, own, pooled, shapes), times)
        for index, shape in enumerate(shapes):
            self.high[index] = max(self.high[index], *own[index].values(), 0)
            if len(shape) > 1:
                for class_id in shape:
                    self.without[index, class_id] += times * min(
                        own[index].get(c, 0) + pooled[index].get(c, 0)
                        for c in shape if c != class_id)

    def still_counts(self, pooled, shapes):
        """Whether every count stays as it is with the sharing providers
        offering `pooled` instead: per shape, the classes whose pooled
        slots moved (V) stay, before and after, at or above what any tree
        holds of a class that did not move (U: at least two), own slots
        plus pooled; then every minimum over classes (how many fit, how
        many without one class) is taken in U and does not move."""
        for index, shape in enumerate(shapes):
            before, after = self.pooled[index], pooled[index]
            moved = [c for c in shape if before.get(c, 0) != after.get(c, 0)]
            if not moved:
                continue
            kept = [c for c in shape if c not in moved]
            if len(kept) < 2:
                return False
            bound = self.high[index] + max(after.get(c, 0) for c in kept)
            if any(min(before.get(c, 0), after.get(c, 0)) < bound for c in moved):
                return False
        return True


def pools_stranded(sums, served, pools, shapes):
    """Add to sums the Served ({reach: Served}) and the sharing providers
    ({provider: (free, [{class id: slots}])}), each counted once: its free
    beyond the most one flavor could take of it across the trees it serves."""
    for reached_trees in served.values():
        for class_id, (free, lost, parts) in reached_trees.sums.items():
            held = sums.setdefault(class_id, [0, 0, 0])
            held[0] += free
            held[1] += lost
            held[2] += parts
    for provider, (free, slots) in pools.items():
        without = collections.Counter()
        for reach, reached_trees in served.items():
            if provider in reach:
                without.update(reached_trees.without)
        lost = {}
        for class_id, amount in free.items():
            takes = [min(slots[index].get(class_id, 0),
                         INF if len(shape) == 1 else without[index, class_id])
                     * shape[class_id] for index, shape in enumerate(shapes) if class_id in shape]
            if takes:
                lost[class_id] = max(amount - max(takes), 0)
        _add(sums, free, lost)
    return sums


def _add(sums, free, lost, sign=1):
    """sums[class id]: [free, stranded, parts counted]; a class no part
    counts any more is dropped."""
    for class_id, amount in lost.items():
        held = sums.setdefault(class_id, [0, 0, 0])
        held[0] += sign * free[class_id]
        held[1] += sign * amount
        held[2] += sign
        if not held[2]:
            del sums[class_id]


# ---- from the database --------------------------------------------------------------------

def _counted(scope, shapes):
    classes = sorted({class_id for shape in shapes for class_id in shape})
    scope = scope.narrowed(resource_class_id__in=classes).annotated(
        sp=Case(When(resource_provider_id__in=scopes.sharing_ids(),
                     then=F('resource_provider_id'))))
    parts = [part.annotate(room=Sum(capacity_sql()), taken=Sum('used'))
             for part in capacity._slot_sums(scope, shapes, 'grp', 'root', 'sp',
                                             'resource_class_id')]
    per_class = scopes.union_sql(parts)
    if per_class is None:
        return {}
    sql, params = per_class
    rows = scopes.fetch(scope, f'SELECT * FROM ({sql}) per_class', params)
    shared = any(row[2] is not None for row in rows)
    served = scopes.served_trees() if shared else {}
    sharing = scope.sharing if shared else {}
    by_group = collections.defaultdict(list)
    for grp, *row in rows:
        by_group[grp].append(row)
    return {grp: _group_of_rows(rows, sharing.get(grp, set()), served, shapes)
            for grp, rows in by_group.items()}


def _group_of_rows(rows, sharing, served, shapes):
    """{class id: (free, stranded)} of one group's rows (root, sharing
    provider or None, class id, slots per shape..., capacity, used)."""
    room = collections.defaultdict(lambda: collections.defaultdict(float))  # who -> c -> sum
    taken = collections.defaultdict(collections.Counter)
    slots = collections.defaultdict(lambda: [collections.Counter() for _ in shapes])
    roots, root_of = set(), {}
    for root, provider, class_id, *sums, capacity_sum, used in rows:
        # A tree's own providers, and the group's sharing providers apart.
        if provider in sharing:
            who = ('pool', provider)
            root_of[provider] = root
        else:
            who = ('tree', root)
            roots.add(root)
        room[who][class_id] += float(capacity_sum or 0)
        taken[who][class_id] += int(used or 0)   # a Decimal on PostgreSQL
        for index, count in enumerate(sums):
            if count:
                slots[who][index][class_id] += int(count)

    def free(who):
        return {c: rules.free(room[who][c], taken[who][c]) for c in room[who]}
    reach = collections.defaultdict(set)
    for provider, own_root in root_of.items():
        for root in served.get(provider, set()) | {own_root}:
            reach[root].add(provider)
    sums, trees = {}, {}
    for root in roots:
        who = ('tree', root)
        if reach.get(root):
            trees[root] = (free(who), slots[who], reach[root])
        else:
            _add(sums, free(who), tree_stranded(free(who), slots[who], [{} for _ in shapes],
                                                shapes))
    group_stranded(sums, trees, {p: (free(('pool', p)), slots['pool', p]) for p in root_of},
                   shapes)
    return {c: (free, lost) for c, (free, lost, _) in sums.items()}


# ---- from the ledger's image ----------------------------------------------------------------

class StrandedFold(_TreeByTree):
    """{group: {class id: [free, stranded]}} of a grouping
    (providers.ledger.groupings), moved tree by tree: a tree none of the
    group's sharing providers serves is summed; one they serve is kept by
    its free and own slots, counted with the sharing providers' slots (read
    from the image) when asked."""

    def __init__(self, grouping, shapes):
        self.grouping = grouping
        self.shapes = [dict(shape) for shape in shapes]
        self.classes = frozenset(c for shape in self.shapes for c in shape)

    def build(self, image):
        self.sharing = self.grouping.sharing(image)
        self.sums = collections.defaultdict(dict)      # group -> class id -> [free, stranded, n]
        # group -> sharing providers serving -> Counter{(free, own slots) as tuples: trees}
        self.reached = collections.defaultdict(dict)
        self.served = {}   # (group, reach) -> Served, as last counted
        for tree in image.trees.values():
            self._add(image, tree, 1)

    def update(self, old, new, roots):
        sharing_roots = set(old.sharing.values()) | set(new.sharing.values())
        if not sharing_roots.isdisjoint(roots) and self.grouping.sharing(new) != self.sharing:
            return False   # built afresh when next asked for
        return super().update(old, new, roots)

    def _own(self, tree, providers, excluded):
        """(free {class id: scaled capacity - used}, [{class id: slots}] per shape)."""
        room = collections.Counter()
        slots = [collections.Counter() for _ in self.shapes]
        for inventory in tree.inventories:
            if ((providers is None or inventory.provider in providers)
                    and inventory.provider not in excluded
                    and inventory.resource_class in self.classes):
                room[inventory.resource_class] += (
                    scaled_capacity(inventory.total, inventory.reserved,
                                    inventory.allocation_ratio)
                    - (inventory.used << CAPACITY_BITS))
                for index, shape in enumerate(self.shapes):
                    amount = shape.get(inventory.resource_class)
                    if amount is not None:
                        slots[index][inventory.resource_class] += inventory.slots(amount)
        return {c: max(unscaled(scaled), 0) for c, scaled in room.items()}, slots

    def _add(self, image, tree, sign):
        reach = image.reach.get(tree.root, frozenset())
        here = {provider.id for provider in tree.providers}
        for groups, providers in self.grouping.parts(image, tree):
            # Groups of the same providers (a provider's traits) count them
            # once per set of this tree's sharing providers left out.
            counted = {}
            for group in groups:
                sharing = self.sharing.get(group, frozenset())
                excluded = frozenset(here & sharing)
                if excluded not in counted:
                    free, own = self._own(tree, providers, excluded)
                    counted[excluded] = (free, own, None)
                free, own, lost = counted[excluded]
                if not free:
                    continue
                reached = reach & sharing
                if reached:
                    self._add_reached(group, reached, free, own, sign)
                    continue
                if lost is None:
                    lost = tree_stranded(free, own, [{} for _ in self.shapes], self.shapes)
                    counted[excluded] = (free, own, lost)
                _add(self.sums[group], free, lost, sign)

    def _add_reached(self, group, reached, free, own, sign):
        """Trees alike (the same free and own slots) are counted once, times
        how many; the Served last counted follows while what the sharing
        providers offer stays as it was."""
        key = (tuple(sorted(free.items())), tuple(tuple(sorted(slots.items())) for slots in own))
        trees = self.reached[group].setdefault(reached, collections.Counter())
        trees[key] += sign
        if not trees[key]:
            del trees[key]
            if not trees:
                del self.reached[group][reached]
                self.served.pop((group, reached), None)
        reached_trees = self.served.get((group, reached))
        if reached_trees is not None:
            reached_trees.add(free, own, self.shapes, sign)

    def _served(self, group, reached, trees, pools):
        pooled = pooled_slots(reached, pools, self.shapes)
        reached_trees = self.served.get((group, reached))
        if (reached_trees is not None and reached_trees.pooled != pooled
                and reached_trees.still_counts(pooled, self.shapes)):
            reached_trees.pooled = pooled   # every tree's count as it was (a share's claim)
        if reached_trees is None or reached_trees.pooled != pooled:
            reached_trees = self.served[group, reached] = Served(pooled)
            for (free, own), times in trees.items():
                reached_trees.add(dict(free), [dict(slots) for slots in own], self.shapes, times)
        return reached_trees

    def _pool(self, image, provider):
        tree = image.trees[image.sharing[provider]]
        return self._own(tree, {provider}, ())

    def estimated_size(self):
        return 1000 + sum(300 + 120 * len(held) for held in self.sums.values()) + sum(
            400 * len(trees) for held in self.reached.values() for trees in held.values())

    def value(self, image, groups=None):
        sums_by_group = {}
        for group in set(self.sums) | set(self.reached) | set(self.sharing):
            if groups is not None and group not in groups:
                continue
            sums = {c: list(held) for c, held in self.sums.get(group, {}).items()}
            pools = {p: self._pool(image, p) for p in self.sharing.get(group, ())}
            pools = {p: pool for p, pool in pools.items() if pool[0]}
            served = {reached: self._served(group, reached, trees, pools)
                      for reached, trees in self.reached.get(group, {}).items()}
            pools_stranded(sums, served, pools, self.shapes)
            if sums:
                sums_by_group[group] = {c: (free, lost) for c, (free, lost, _) in sums.items()}
        return sums_by_group
