"""How many more claims of a request shape fit a group of providers, from
the slots its inventories offer: count_fits() and its max flows. Pure
Python on per-tree sums; providers.capacity reads those sums from the
database (providers.rules.slots is the slot rule).
"""
import collections
import math
from dataclasses import dataclass

# How many max flows count_fits() may spend adding claims one at a time after its
# first pass, when several classes come from sharing providers.
AUGMENT_BUDGET = 2000


@dataclass(frozen=True)
class Fit:
    """How many more claims of a shape fit a group; exact False when the
    count is a lower bound (see count_fits())."""
    count: int
    exact: bool = True


def count_fits(own, pools, reach, classes):
    """How many claims of a request shape (wanted classes `classes`) GET
    /allocation_candidates would grant one after another from a group's
    providers, given what they offer: own[root][class], the slots of the
    tree's own providers; pools[sharing provider][class], a sharing
    provider's slots; reach[root], the sharing providers serving the tree.

    What a claim may take. Within the unsuffixed group each class's amount
    comes from ONE provider: a provider of the claim's tree, or a sharing
    provider that serves the tree through an aggregate (its own tree
    included). A provider passes for a class when the amount is within
    min_unit..max_unit, a multiple of step_size, and used + amount <=
    (total - reserved) * allocation_ratio. Classes are independent and a
    provider's capacity check for one class does not move with another's
    use, so repeated claims of `amount` on an inventory fit exactly
    slots = the largest k with used + k * amount <= capacity
    (providers.rules.slots),
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
    (providers.scopes: the members of the group); others are providers of
    their own tree, in `own`.
    """
    if not classes:
        return Fit(0)
    total, exact = 0, True
    for trees, providers in _components(set(own) | set(reach), reach):
        fit = _ComponentFit(trees, providers, own, pools, reach, list(classes)).solve()
        total += fit.count
        exact = exact and fit.exact
    return Fit(total, exact)


def count_lone_tree(own, pooled, classes):
    """How many claims fit one tree when no other tree draws on the sharing
    providers serving it: own[class], the slots of the tree's providers;
    pooled[class], those of the sharing providers serving it. Each claim
    takes a class's amount from any one of them and classes do not move
    each other, so the scarcest class decides: min over the classes of own
    + pooled (0 for a class neither offers). Exact; count_fits() starts
    from it as each tree's bound."""
    return min((own.get(c, 0) + pooled.get(c, 0) for c in classes), default=0)


def count_one_shared_class(demands, offered):
    """count_fits' count beyond the trees' own, where one class of the
    shape (c) comes from sharing providers and the others from each tree's
    own providers: a tree whose own providers hold u claims of the other
    classes and o of c makes min(u, o) claims alone (counted by the caller)
    and asks the sharing providers reaching it (R) for min(max(u - o, 0),
    P_R) more, P_R being what R offers in all; the answer is the max flow
    carrying those asks to the providers. demands: {R (frozenset of
    sharing providers): Counter{max(u - o, 0) (math.inf when the shape is c
    alone): trees}}; offered: {sharing provider: slots of c}. Equal to
    count_fits (tests/providers/test_fits.py), with sums the caller keeps tree by tree."""
    asks = {}
    for reached, counted in demands.items():
        pool = sum(offered.get(provider, 0) for provider in reached)
        ask = sum(trees * min(demand, pool) for demand, trees in counted.items())
        if ask:
            asks[reached] = ask
    if not asks:
        return 0
    supplies = {provider: offered.get(provider, 0) for reached in asks for provider in reached}
    return sum(_transport(asks, supplies).values())


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
    """count_fits() for one connected set of trees and sharing providers."""

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
        bound = {tree: count_lone_tree(
            self.own[tree], {c: sum(self.pools[p][c] for p in self._pooled(tree, c))
                             for c in self.classes}, self.classes)
            for tree in self.trees}
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
