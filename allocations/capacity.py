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
another using only the group's providers; see fits() for the reasoning.

Everything is read in a fixed number of queries (CloudStock.read and the
grouping's own one or two), then computed in Python: the number of queries
never grows with the number of providers or groups.
"""
import collections
import functools
import math
from dataclasses import dataclass, field

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db.models import Q

from allocations.pods.models import Pod
from placement_site import errors, querystring
from providers.books import ClassUsage
from providers.models import (Aggregate, Inventory, ProviderAggregate, ProviderTrait,
                              ResourceClass, ResourceProvider)
from providers.querysets import SHARING_TRAIT, trees_served_by

CLOUD = 'cloud'
AGGREGATE = 'aggregate'
TRAIT = 'trait'
ROOT = 'root'
AVAILABILITY_ZONE = 'availability_zone'
GROUPINGS = (CLOUD, AGGREGATE, TRAIT, ROOT, AVAILABILITY_ZONE)

# Past this many slots float division is no longer exact to the unit, and
# the correction below would walk for ever; such an inventory is unlimited
# for any practical request anyway.
_EXACT_SLOTS = 2 ** 52


# ---- flavors: the request shapes the dashboards count --------------------------------

@dataclass(frozen=True)
class Flavor:
    name: str
    resources: dict   # class name -> amount

    @property
    def query(self):
        """The shape as `resources=` writes it."""
        return ','.join(f'{name}:{amount}' for name, amount in self.resources.items())


def parse_flavors(text):
    """'small=VCPU:1,MEMORY_MB:2048;medium=...' -> [Flavor]; ValueError
    naming the bad part. Amounts follow `resources=`'s grammar."""
    flavors = []
    for part in (p.strip() for p in text.split(';')):
        if not part:
            continue
        name, sep, shape = (s.strip() for s in part.partition('='))
        if not sep or not name or not shape:
            raise ValueError(f'{part!r} is not name=RESOURCE_CLASS:amount,...')
        if name in {f.name for f in flavors}:
            raise ValueError(f'flavor {name!r} is named twice')
        try:
            resources = querystring.parse_resources(shape)
        except errors.PlacementError as exc:
            raise ValueError(f'flavor {name!r}: {exc.detail}') from None
        flavors.append(Flavor(name, resources))
    return flavors


@functools.lru_cache(maxsize=4)
def _flavors_of(text):
    try:
        return tuple(parse_flavors(text))
    except ValueError as exc:
        raise ImproperlyConfigured(
            f'PLACEMENT_CAPACITY_FLAVORS: {exc} (expected name=RC:amount,RC:amount;name=...)')


def configured_flavors():
    """settings.PLACEMENT_CAPACITY_FLAVORS, parsed once per value."""
    return _flavors_of(settings.PLACEMENT_CAPACITY_FLAVORS)


# A bad value stops the server at start, not at the first dashboard visit.
configured_flavors()


# ---- what the computation reads ----------------------------------------------------

@dataclass(frozen=True, slots=True)
class Stock:
    """One inventory as the computation reads it."""
    provider: int
    root: int
    class_id: int
    class_name: str
    total: int
    reserved: int
    ratio: float
    used: int
    min_unit: int
    max_unit: int
    step_size: int

    @property
    def capacity(self):
        return (self.total - self.reserved) * self.ratio

    def slots(self, amount):
        """How many claims of `amount` this inventory takes one after
        another: none if a claim of `amount` is outside min_unit..max_unit
        or not a multiple of step_size; else the largest k with
        used + k * amount <= capacity, the check every claim passes."""
        if not (self.min_unit <= amount <= self.max_unit) or amount % self.step_size:
            return 0
        capacity = self.capacity
        room = (capacity - self.used) / amount
        if room < 1:
            return 0
        if room >= _EXACT_SLOTS:
            return int(room)
        k = int(room)
        # Float division may round across a whole number: check as a claim does.
        while k > 0 and self.used + k * amount > capacity:
            k -= 1
        while self.used + (k + 1) * amount <= capacity:
            k += 1
        return k


class CloudStock:
    """Every inventory of the classes asked for, the sharing providers and
    the trees they serve: three queries."""

    def __init__(self, stocks, sharing, served):
        self.stocks = stocks
        self.sharing = sharing    # ids of providers with MISC_SHARES_VIA_AGGREGATE
        self.served = served      # sharing id -> roots of the trees it serves
        self.by_provider = collections.defaultdict(list)
        self.by_root = collections.defaultdict(list)
        for stock in stocks:
            self.by_provider[stock.provider].append(stock)
            self.by_root[stock.root].append(stock)

    @classmethod
    def read(cls, class_ids=None, aggregate_ids=None):
        """class_ids: only these classes (None: all); aggregate_ids: only
        the providers of these pools (None: all), for a pool's page."""
        inventories = Inventory.objects.all()
        if class_ids is not None:
            inventories = inventories.filter(resource_class_id__in=list(class_ids))
        if aggregate_ids is not None:
            members = ProviderAggregate.objects.filter(
                aggregate_id__in=list(aggregate_ids)).values('resource_provider_id')
            inventories = inventories.filter(Q(resource_provider_id__in=members) | Q(
                resource_provider__root_provider_id__in=members))
        stocks = [Stock(*row) for row in inventories.values_list(
            'resource_provider_id', 'resource_provider__root_provider_id', 'resource_class_id',
            'resource_class__name', 'total', 'reserved', 'allocation_ratio', 'used', 'min_unit',
            'max_unit', 'step_size').order_by('resource_class_id', 'resource_provider_id')]
        sharing = set(ResourceProvider.objects.sharing().values_list('id', flat=True))
        served = collections.defaultdict(set)
        if sharing:
            for sharing_id, root_id in trees_served_by(
                    ResourceProvider.objects.sharing().values('id')):
                served[sharing_id].add(root_id)
        return cls(stocks, sharing, served)


# ---- groups --------------------------------------------------------------------------

@dataclass
class Group:
    """A set of providers: `members`, and with whole_trees every provider
    of a tree whose root is a member (None: every provider). Sharing
    providers among the members share as they do in a candidate search
    (with member_of, Placement shares only from members themselves)."""
    key: str
    name: str = None
    members: set = None
    whole_trees: bool = False

    def stocks(self, cloud):
        """The group's inventories (each once)."""
        if self.members is None:
            return cloud.stocks
        found = []
        for provider in self.members:
            for stock in cloud.by_provider.get(provider, ()):
                if not (self.whole_trees and stock.root in self.members):
                    found.append(stock)
            if self.whole_trees:
                found.extend(cloud.by_root.get(provider, ()))
        return found

    def sharing(self, cloud):
        return cloud.sharing if self.members is None else cloud.sharing & self.members


def groups(group_by, cloud):
    """The groups of a grouping, in a stable order: one or two queries."""
    if group_by == CLOUD:
        return [Group(CLOUD)]
    if group_by == ROOT:
        return [Group(uuid, name, {pk}, whole_trees=True) for pk, uuid, name in
                ResourceProvider.objects.roots().values_list('id', 'uuid', 'name').order_by('name')]
    if group_by == TRAIT:
        members = collections.defaultdict(set)
        for provider, trait in ProviderTrait.objects.values_list(
                'resource_provider_id', 'trait__name').order_by():
            members[trait].add(provider)
        return [Group(trait, members=members[trait]) for trait in sorted(members)]
    if group_by == AGGREGATE:
        members = _aggregate_members()
        return [Group(uuid, members=members[pk], whole_trees=True)
                for pk, uuid in Aggregate.objects.values_list('id', 'uuid').order_by('uuid')]
    if group_by == AVAILABILITY_ZONE:
        zones = collections.defaultdict(set)
        for zone, aggregate in Pod.objects.values_list('availability_zone', 'aggregate_id'):
            zones[zone].add(aggregate)
        members = _aggregate_members(set().union(*zones.values()))
        return [Group(zone, members=set().union(*(members[a] for a in zones[zone])),
                      whole_trees=True) for zone in sorted(zones)]
    raise ValueError(group_by)


def pools(aggregates):
    """The groups of these pools (Aggregates), in their order: one query."""
    members = _aggregate_members([a.pk for a in aggregates])
    return [Group(a.uuid, members=members[a.pk], whole_trees=True) for a in aggregates]


def _aggregate_members(aggregate_ids=None):
    links = ProviderAggregate.objects.all()
    if aggregate_ids is not None:
        links = links.filter(aggregate_id__in=list(aggregate_ids))
    members = collections.defaultdict(set)
    for aggregate, provider in links.values_list('aggregate_id', 'resource_provider_id').order_by():
        members[aggregate].add(provider)
    return members


# ---- how many more fit ------------------------------------------------------------------

# How many max flows fits() may spend adding claims one at a time after its
# first pass, when several classes come from sharing providers.
AUGMENT_BUDGET = 2000

@dataclass
class Fit:
    """How many more claims of a shape fit a group; exact False when the
    count is a lower bound (see fits())."""
    count: int
    exact: bool = True


def fits(cloud, group, wanted):
    """How many claims of `wanted` ({class id: amount}) GET
    /allocation_candidates would grant one after another from the group's
    providers.

    What a claim may take. Within the unsuffixed group each class's amount
    comes from ONE provider: a provider of the claim's tree, or a sharing
    provider that serves the tree through an aggregate (its own tree
    included). A provider passes for a class when the amount is within
    min_unit..max_unit, a multiple of step_size, and used + amount <=
    (total - reserved) * allocation_ratio. Classes are independent and a
    provider's capacity check for one class does not move with another's
    use, so repeated claims of `amount` on an inventory fit exactly
    slots = the largest k with used + k * amount <= capacity (Stock.slots),
    whichever claims they belong to. A tree's own providers therefore offer
    a[T][c] = the sum of their slots for c, and a sharing provider s offers
    b[s][c] slots to every tree it serves, a pool for all of them.

    The count. Let n[T] be the claims made in tree T. They fit iff for each
    class c, the n[T] - a[T][c] claims T cannot hold itself (when positive)
    can be served by the sharing providers reaching T without exceeding any
    b[s][c]: a transportation problem per class (source -> tree, demand
    max(0, n[T] - a[T][c]); tree -> each sharing provider reaching it;
    sharing provider -> sink, b[s][c]), feasible iff its max flow carries
    every demand. Counting a pool once per tree would overstate it; the
    flow counts each slot once. Using a tree's own slots first never hurts
    (they serve no one else), and trees reached by the same sharing
    providers are interchangeable for that class, so each flow runs on
    (sets of sharing providers) x (sharing providers): a few nodes.

    - A class no sharing provider offers is a per-tree bound n[T] <= a[T][c].
    - With at most one class drawn from sharing providers (in a connected
      set of trees and sharing providers; the common case: DISK_GB from a
      shared filesystem), the bounds and that class's flow are all there
      is: n[T] <= u[T] = min over the other classes of a[T][c], and the
      maximum is the max flow with source -> T capacities u[T] whose
      tree -> sink edge is a[T][c] (taken first) and the rest through the
      sharing providers. Exact.
    - With several such classes the feasible n are the intersection of one
      polymatroid per class; the maximum over three or more is NP-hard in
      general (3-dimensional matching reduces to it: one sharing provider
      of one unit per class and coordinate). We then take a feasible n:
      start from the per-tree bounds, and for each shared class cut n down
      to what its flow carries (cutting never breaks a class already
      checked: each class's feasible set is closed downwards), then add
      claims one tree at a time wherever every class's flow still carries
      them (a bounded number of flows). That many claims surely fit; when
      it equals the smallest single-class maximum (an upper bound) it is
      exact, otherwise exact=False.

    Sharing providers count only where they share in a candidate search
    (Group.sharing); others are providers of their own tree.
    """
    if not wanted:
        return Fit(0)
    sharing = group.sharing(cloud)
    own = collections.defaultdict(collections.Counter)     # root -> class -> slots
    pools = collections.defaultdict(collections.Counter)   # sharing id -> class -> slots
    for stock in group.stocks(cloud):
        amount = wanted.get(stock.class_id)
        if amount is None:
            continue
        slots = stock.slots(amount)
        if not slots:
            continue
        if stock.provider in sharing:
            pools[stock.provider][stock.class_id] += slots
        else:
            own[stock.root][stock.class_id] += slots
    reach = collections.defaultdict(set)   # root -> sharing providers serving it
    for provider, root in ((s.provider, s.root) for s in group.stocks(cloud)
                           if s.provider in pools):
        for served_root in cloud.served.get(provider, ()) | {root}:
            reach[served_root].add(provider)
    total, exact = 0, True
    for trees, providers in _components(set(own) | set(reach), reach):
        found = _ComponentFit(trees, providers, own, pools, reach, list(wanted)).solve()
        total += found.count
        exact = exact and found.exact
    return Fit(total, exact)


def _components(trees, reach):
    """[(trees, sharing providers)] connected through sharing."""
    parent = {}

    def find(node):
        while parent.setdefault(node, node) != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    for tree in trees:
        find(('tree', tree))
        for provider in reach.get(tree, ()):
            parent[find(('tree', tree))] = find(('sharing', provider))
    parts = collections.defaultdict(lambda: (set(), set()))
    for node in list(parent):
        kind, pk = node
        parts[find(node)][0 if kind == 'tree' else 1].add(pk)
    return [part for part in parts.values() if part[0]]


class _ComponentFit:
    """fits() for one connected set of trees and sharing providers."""

    def __init__(self, trees, providers, own, pools, reach, classes):
        self.trees = sorted(trees)
        self.providers = providers
        self.own = own
        self.pools = pools
        self.reach = reach
        self.classes = sorted(classes)

    def _pooled(self, tree, class_id):
        return [p for p in self.reach.get(tree, ()) if self.pools[p][class_id]]

    def solve(self):
        shared = [c for c in self.classes
                  if any(self.pools[p][c] for p in self.providers)]
        bound = {}
        for tree in self.trees:
            bound[tree] = min(self.own[tree][c] + sum(self.pools[p][c]
                                                      for p in self._pooled(tree, c))
                              for c in self.classes)
        claims = {t: n for t, n in bound.items() if n}
        for class_id in shared:
            claims = self._carried(claims, class_id, shared)
        if len(shared) <= 1:
            return Fit(sum(claims.values()))
        ceiling = min(sum(self._carried(bound, c, shared).values()) for c in shared)
        claims = self._augmented(claims, bound, shared, ceiling)
        count = sum(claims.values())
        return Fit(count, count == ceiling)

    def _augmented(self, claims, bound, shared, ceiling, budget=AUGMENT_BUDGET):
        """`claims` with one more claim added in a tree wherever every
        shared class can still carry it, until none can or the ceiling is
        reached (at most `budget` flows: the count stays a lower bound)."""
        claims = dict(claims)
        grown = True
        while grown and sum(claims.values()) < ceiling and budget > 0:
            grown = False
            for tree in self.trees:
                if claims.get(tree, 0) >= bound[tree] or budget <= 0:
                    continue
                trial = {**claims, tree: claims.get(tree, 0) + 1}
                budget -= len(shared)
                if all(self._carried(trial, c, shared) == trial for c in shared):
                    claims, grown = trial, True
        return claims

    def _carried(self, claims, class_id, shared):
        """`claims` per tree cut down to what class_id can serve: each
        tree's own slots first, the rest through a max flow over the
        sharing providers reaching it. Trees reached by the same providers
        are taken together; what their flow carries goes first to the trees
        that need sharing providers for the fewest other classes (they
        leave more of those pools to others), then in tree order."""
        kept, short = {}, collections.defaultdict(list)
        for tree, wanted in claims.items():
            ownslots = min(wanted, self.own[tree][class_id])
            kept[tree] = ownslots
            if wanted > ownslots:
                reached = frozenset(self._pooled(tree, class_id))
                if reached:
                    short[reached].append((tree, wanted - ownslots))
        if short:
            demands = {reached: sum(n for _, n in trees) for reached, trees in short.items()}
            supplies = {p: self.pools[p][class_id] for reached in short for p in reached}
            carried = _transport(demands, supplies)
            for reached, trees in short.items():
                left = carried[reached]
                for _, tree, missing in sorted(
                        (self._pooled_needs(tree, claims[tree], class_id, shared), tree, missing)
                        for tree, missing in trees):
                    taken = min(missing, left)
                    kept[tree] += taken
                    left -= taken
        return {t: n for t, n in kept.items() if n}

    def _pooled_needs(self, tree, claims, class_id, shared):
        """For how many other shared classes `claims` in the tree exceed
        its own slots."""
        return sum(1 for c in shared if c != class_id and claims > self.own[tree][c])


def _transport(demands, supplies):
    """Max flow from demand nodes ({frozenset of supply keys: demand}) to
    supply nodes ({key: capacity}), each demand node reaching its keys:
    {demand node: units carried}. Dinic's algorithm on a small graph."""
    source, sink = ('source',), ('sink',)
    graph = collections.defaultdict(dict)   # node -> {neighbour: residual capacity}
    unlimited = sum(demands.values())
    for node, demand in demands.items():
        graph[source][('d', node)] = demand
        graph[('d', node)].setdefault(source, 0)
        for key in node:
            graph[('d', node)][('s', key)] = unlimited
            graph[('s', key)].setdefault(('d', node), 0)
    for key, supply in supplies.items():
        graph[('s', key)][sink] = supply
        graph[sink].setdefault(('s', key), 0)
    while True:
        level = {source: 0}
        queue = collections.deque([source])
        while queue:
            node = queue.popleft()
            for nxt, room in graph[node].items():
                if room > 0 and nxt not in level:
                    level[nxt] = level[node] + 1
                    queue.append(nxt)
        if sink not in level:
            break
        edges = {node: list(graph[node]) for node in level}

        def push(node, limit):
            if node == sink:
                return limit
            neighbours = edges[node]
            while neighbours:
                nxt = neighbours[-1]
                room = graph[node][nxt]
                if room > 0 and level.get(nxt) == level[node] + 1:
                    pushed = push(nxt, min(limit, room))
                    if pushed:
                        graph[node][nxt] -= pushed
                        graph[nxt][node] += pushed
                        return pushed
                neighbours.pop()
            return 0

        while push(source, math.inf):
            pass
    return {node: demand - graph[source][('d', node)] for node, demand in demands.items()}


# ---- the answer ---------------------------------------------------------------------------

@dataclass
class GroupCapacity:
    """A group's books per class and, for a request shape, how many more fit."""
    group: Group
    classes: dict = field(default_factory=dict)   # class name -> ClassUsage
    fit: Fit = None


def books(group, cloud, class_ids=None):
    """{class name: ClassUsage} of the group, in class order."""
    classes = {}
    for stock in sorted(group.stocks(cloud), key=lambda s: s.class_id):
        if class_ids is not None and stock.class_id not in class_ids:
            continue
        usage = classes.get(stock.class_name)
        if usage is None:
            usage = classes[stock.class_name] = ClassUsage(stock.class_name,
                                                            class_id=stock.class_id)
        usage.add(ClassUsage(stock.class_name, stock.total, stock.reserved, stock.capacity,
                             stock.used, 1))
    return classes


def capacity(group_by=CLOUD, *, wanted=None, class_ids=None):
    """[GroupCapacity] of every group of the grouping: books of the classes
    `class_ids` (None: all) and, with `wanted` ({class id: amount}), how
    many more of that shape fit. A fixed number of queries."""
    cloud = CloudStock.read(None if class_ids is None else set(class_ids) | set(wanted or ()))
    return [GroupCapacity(group, books(group, cloud, class_ids),
                          fits(cloud, group, wanted) if wanted is not None else None)
            for group in groups(group_by, cloud)]


def flavor_fits(flavors, groups_of, aggregate_ids=None):
    """{group key: {flavor name: Fit}} for the flavors ([Flavor]) in the
    groups `groups_of(cloud)` gives, read once (only the providers of the
    pools `aggregate_ids` when the groups are those pools): four queries
    and the grouping's. A flavor naming a class nobody has fits nowhere."""
    names = {name for flavor in flavors for name in flavor.resources}
    class_ids = dict(_class_ids(names))
    cloud = CloudStock.read(set(class_ids.values()), aggregate_ids)
    found = {}
    for group in groups_of(cloud):
        found[group.key] = {}
        for flavor in flavors:
            if all(name in class_ids for name in flavor.resources):
                wanted = {class_ids[name]: amount for name, amount in flavor.resources.items()}
                found[group.key][flavor.name] = fits(cloud, group, wanted)
            else:
                found[group.key][flavor.name] = Fit(0)
    return found


def _class_ids(names):
    return ResourceClass.objects.filter(name__in=list(names)).values_list('name', 'id')
