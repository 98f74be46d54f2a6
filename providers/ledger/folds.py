"""Roll-ups over the trees of the image, kept in step with it: when trees
change, each fold takes their part out as the old image has it and puts it
back as the new one does, touching nothing else.

A fold is built once from a whole image (build), moved from one image to
the next with the trees that changed (update), and answers from its state
(value). BooksFold sums a grouping's books; FitsFold counts how many more
of request shapes fit each group, exactly as providers.capacity counts
them from the database (tests/ledger/ holds the two to the same answers).

How FitsFold counts. A tree no sharing provider reaches holds min over the
shape's classes of its providers' slots (providers.rules.slots), summed per
group. A tree sharing providers reach is where providers.fits.count_fits
solves max flows; when at most one of the shape's classes is offered by
the group's sharing providers (the common case: DISK_GB from a shared
filesystem), that count has a closed form which sums tree by tree: with o
the tree's own slots of the shared class and u the minimum of its own
slots of the other classes, the count is the sum of min(u, o) plus the max
flow that carries, from each set R of sharing providers reaching trees,
the sum over its trees of min(max(u - o, 0), P_R) (P_R: the slots R's
providers have) to those providers (fits.count_one_shared_class). The fold
keeps min(u, o) summed and the demands max(u - o, 0) counted per set R;
the sharing providers' slots are read from the image when asked. With two
or more shared classes the fold keeps each reached tree's own slots and
solves count_fits when asked.
"""
import bisect
import collections
import math

from providers import books as the_books
from providers import fits as fitting
from providers import rules
from providers.fits import Fit
from providers.ledger import groupings
from providers.ledger.image import scaled_capacity
from providers.ledger.image import unscaled

INF = math.inf
GENERAL = 'general'   # two or more of the shape's classes shared: count_fits


class _TreeByTree:
    """A fold whose part of each tree is _add(image, tree, sign): a change
    takes the old trees' parts out, then puts the new ones' in."""

    def update(self, old, new, roots):
        for root in roots:
            if root in old.trees:
                self._add(old, old.trees[root], -1)
        for root in roots:
            if root in new.trees:
                self._add(new, new.trees[root], 1)
        return True


class BooksFold(_TreeByTree):
    """{group: {class id: [total, reserved, scaled capacity, used, providers]}}
    of a grouping (providers.ledger.groupings)."""

    def __init__(self, grouping):
        self.grouping = grouping
        self.sums = {}

    def build(self, image):
        self.sums = {}
        for tree in image.trees.values():
            self._add(image, tree, 1)

    def add(self, image, tree):
        self._add(image, tree, 1)

    def _add(self, image, tree, sign):
        for groups, providers in self.grouping.parts(image, tree):
            part = collections.defaultdict(lambda: [0, 0, 0, 0, 0])
            for inventory in tree.inventories:
                if providers is None or inventory.provider in providers:
                    sums = part[inventory.resource_class]
                    sums[0] += inventory.total
                    sums[1] += inventory.reserved
                    sums[2] += scaled_capacity(inventory.total, inventory.reserved,
                                               inventory.allocation_ratio)
                    sums[3] += inventory.used
                    sums[4] += 1
            for group in groups:
                held = self.sums.setdefault(group, {})
                for class_id, values in part.items():
                    sums = held.setdefault(class_id, [0, 0, 0, 0, 0])
                    for index, value in enumerate(values):
                        sums[index] += sign * value
                    if not sums[4]:
                        del held[class_id]
                if not held:
                    del self.sums[group]

    def estimated_size(self):
        return 1000 + sum(300 + 250 * len(held) for held in self.sums.values())

    def value(self, image, groups=None, classes=None):
        """{group: {class name: ClassUsage}} in class order, as
        books.scope_books: of the groups `groups` (None: all) with
        inventory of the classes `classes` (None: any)."""
        books_by_group = {}
        for group, held in (self.sums.items() if groups is None else (
                (group, self.sums[group]) for group in groups if group in self.sums)):
            books = {image.class_name(class_id): the_books.ClassUsage(
                image.class_name(class_id), total, reserved, unscaled(capacity), used, providers,
                class_id) for class_id, (total, reserved, capacity, used, providers) in sorted(
                    held.items()) if classes is None or class_id in classes}
            if books:
                books_by_group[group] = books
        return books_by_group


class _Shape:
    """One request shape's count in one group: the part summed tree by
    tree (`n`), and for the reached trees the demands per set of sharing
    providers ({R: Counter{demand: trees}}) or, GENERAL, their own slots."""
    __slots__ = ('demands', 'n', 'trees')

    def __init__(self):
        self.n = 0
        self.demands = collections.defaultdict(collections.Counter)
        self.trees = {}   # root -> ({class id: own slots}, R), GENERAL only


class FitsFold(_TreeByTree):
    """How many more of each shape ([{class id: amount}]) fit each group of
    a grouping, as providers.capacity.fit_counts counts it. per_tree: also
    each tree's count alone with the sharing providers serving it, as
    capacity.tree_fit_counts counts it."""

    def __init__(self, grouping, shapes, per_tree=False):
        # Per tree, a tree is its own group: the cloud's parts are whole trees.
        assert not per_tree or grouping.kind == 'cloud'
        self.grouping = grouping
        self.shapes = [dict(shape) for shape in shapes]
        self.classes = frozenset(c for shape in self.shapes for c in shape)
        self.per_tree = per_tree

    # ---- which class each group's sharing providers offer ------------------------------

    def _shared(self, image):
        """({group: sharing providers}, {group: [c* per shape]}): c* is the
        one class of the shape the group's sharing providers have
        inventory of, None for none, GENERAL for several."""
        sharing = self.grouping.sharing(image)
        offered = {}
        for group, providers in sharing.items():
            classes = set()
            for provider in providers:
                tree = image.trees[image.sharing[provider]]
                classes.update(i.resource_class for i in tree.inventories
                               if i.provider == provider)
            shared_classes = []
            for shape in self.shapes:
                shared = [c for c in shape if c in classes]
                shared_classes.append(None if not shared
                                      else shared[0] if len(shared) == 1 else GENERAL)
            offered[group] = shared_classes
        return sharing, offered

    def build(self, image):
        self.sharing, self.offered = self._shared(image)
        self.groups = {}
        self.parts = collections.Counter()   # group -> tree parts with rows in it
        self.trees = {}   # root -> [count per shape] or ('reached', [own per shape])
        for tree in image.trees.values():
            self._add(image, tree, 1)

    def update(self, old, new, roots):
        """False when the change moved what the groups' sharing providers
        share (a rebuild is needed); else the fold follows it."""
        sharing_roots = set(old.sharing.values()) | set(new.sharing.values())
        if not sharing_roots.isdisjoint(roots) and self._shared(new) != (self.sharing,
                                                                          self.offered):
            return False
        return super().update(old, new, roots)

    def _own_slots(self, tree, providers, excluded):
        """[{class id: slots}] per shape of the providers' inventories
        (those of `excluded` left out)."""
        own_slots = [collections.Counter() for _ in self.shapes]
        for inventory in tree.inventories:
            if ((providers is None or inventory.provider in providers)
                    and inventory.provider not in excluded
                    and inventory.resource_class in self.classes):
                for index, shape in enumerate(self.shapes):
                    amount = shape.get(inventory.resource_class)
                    if amount is not None:
                        own_slots[index][inventory.resource_class] += inventory.slots(amount)
        return own_slots

    def _add(self, image, tree, sign):
        reach = image.reach.get(tree.root)
        if self.per_tree:
            self.trees.pop(tree.root, None)
        for groups, providers in self.grouping.parts(image, tree):
            if not any((providers is None or i.provider in providers)
                       and i.resource_class in self.classes for i in tree.inventories):
                continue   # no rows of the shapes' classes in these groups
            for group in groups:
                self.parts[group] += sign
            if reach is None:
                own = self._own_slots(tree, providers, ())
                counts = [min((slots.get(c, 0) for c in shape), default=0)
                          for shape, slots in zip(self.shapes, own)]
                for group in groups:
                    shapes = self._shapes(group)
                    for index, count in enumerate(counts):
                        shapes[index].n += sign * count
                    self._drop_if_empty(group)
                if self.per_tree and sign > 0:
                    self.trees[tree.root] = counts
                continue
            for group in groups:
                sharing = self.sharing.get(group, frozenset())
                own = self._own_slots(tree, providers, sharing)
                reached = reach & sharing
                shapes = self._shapes(group)
                for index, shape in enumerate(self.shapes):
                    self._add_reached(shapes[index], shape, self.offered.get(group, [None] * len(
                        self.shapes))[index], own[index], reached, tree.root, sign)
                self._drop_if_empty(group)
            if self.per_tree and sign > 0:
                every = frozenset(image.sharing)
                self.trees[tree.root] = ('reached', self._own_slots(tree, providers, every))

    @staticmethod
    def _add_reached(counted, shape, shared, own, reached, root, sign):
        if shared == GENERAL:
            if sign > 0:
                counted.trees[root] = (dict(own), reached)
            else:
                counted.trees.pop(root, None)
            return
        if shared is None or not reached:
            counted.n += sign * min((own.get(c, 0) for c in shape), default=0)
            return
        others = min((own.get(c, 0) for c in shape if c != shared), default=INF)
        mine = own.get(shared, 0)
        counted.n += sign * min(others, mine)
        demand = max(others - mine, 0)
        if demand:
            demands = counted.demands[reached]
            demands[demand] += sign
            if not demands[demand]:
                del demands[demand]
                if not demands:
                    del counted.demands[reached]

    def _shapes(self, group):
        shapes = self.groups.get(group)
        if shapes is None:
            shapes = self.groups[group] = [_Shape() for _ in self.shapes]
        return shapes

    def _drop_if_empty(self, group):
        """A group stays while some tree has rows in it (a group with rows
        of the classes and no room is answered, with 0)."""
        if self.parts[group] <= 0:
            del self.parts[group]
            del self.groups[group]

    # ---- answers ------------------------------------------------------------------

    def _supply(self, image, providers, class_ids, amount_of):
        """{provider: {class id: slots}} of sharing providers, as the image has them."""
        supply = {}
        for provider in providers:
            slots = collections.Counter()
            for inventory in image.trees[image.sharing[provider]].inventories:
                if inventory.provider == provider and inventory.resource_class in class_ids:
                    slots[inventory.resource_class] += inventory.slots(
                        amount_of[inventory.resource_class])
            supply[provider] = slots
        return supply

    def _count(self, image, group, index, counted):
        shape = self.shapes[index]
        shared = self.offered.get(group, [None] * len(self.shapes))[index]
        if shared is None:
            return Fit(counted.n)
        sharing = self.sharing.get(group, frozenset())
        supply = self._supply(image, sharing, set(shape), shape)
        if shared == GENERAL:
            own = collections.defaultdict(collections.Counter, {
                root: collections.Counter(slots) for root, (slots, _) in counted.trees.items()})
            reach = {root: providers for root, (_, providers) in counted.trees.items()}
            pools = {p: slots for p, slots in supply.items() if any(slots.values())}
            for provider in pools:
                for root in image.served.get(provider, ()):
                    reach[root] = reach.get(root, frozenset()) | {provider}
            fit = fitting.count_fits(own, collections.defaultdict(collections.Counter, pools),
                                     {root: {p for p in providers if p in pools}
                                      for root, providers in reach.items()}, list(shape))
            return Fit(counted.n + fit.count, fit.exact)
        offered = {provider: slots[shared] for provider, slots in supply.items()}
        return Fit(counted.n + fitting.count_one_shared_class(counted.demands, offered))

    def estimated_size(self):
        size = 1000 + 200 * len(self.trees)
        for shapes in self.groups.values():
            for counted in shapes:
                size += 300 + 150 * len(counted.trees) + sum(
                    200 + 100 * len(demands) for demands in counted.demands.values())
        return size

    def value(self, image, groups=None):
        """{group: [Fit per shape]}, as capacity.fit_counts counts them, of
        the groups `groups` (None: all)."""
        return {group: [self._count(image, group, index, counted)
                        for index, counted in enumerate(shapes)]
                for group, shapes in self.groups.items() if groups is None or group in groups}

    def tree_counts(self, image):
        """{root: [count per shape]}: each tree alone, with the sharing
        providers serving it (fits.count_lone_tree), as capacity.tree_fit_counts."""
        every = frozenset(p for providers in self.sharing.values() for p in providers)
        supply = [self._supply(image, every, set(shape), shape) for shape in self.shapes]
        pooled = {}   # (sharing providers, shape) -> what they offer together
        counts_by_root = {}
        for root, counts in self.trees.items():
            if counts and counts[0] == 'reached':
                reached = image.reach.get(root, frozenset()) & every
                counts_by_root[root] = []
                for index, shape in enumerate(self.shapes):
                    offered = pooled.get((reached, index))
                    if offered is None:
                        offered = pooled[reached, index] = collections.Counter()
                        for provider in reached:
                            offered.update(supply[index][provider])
                    counts_by_root[root].append(fitting.count_lone_tree(
                        counts[1][index], offered, list(shape)))
            else:
                counts_by_root[root] = counts
        return counts_by_root


class _Levels(_TreeByTree):
    """A fold keeping entries by a value: the distinct values held in
    order, each with its entries, and those without a value apart, so the
    first (or last) few are read from an end without sorting."""

    def __init__(self):
        self.levels = []        # the distinct values held, ascending
        self.at = {}            # value -> {entry}
        self.unknown = set()    # entries without a value

    def _place(self, value, entry, sign):
        if value is None:
            (self.unknown.add if sign > 0 else self.unknown.discard)(entry)
            return
        held = self.at.get(value)
        if sign > 0:
            if held is None:
                held = self.at[value] = set()
                bisect.insort(self.levels, value)
            held.add(entry)
        elif held is not None:
            held.discard(entry)
            if not held:
                del self.at[value]
                del self.levels[bisect.bisect_left(self.levels, value)]


class FullestFold(_Levels):
    """The inventories by utilization: used / capacity as
    InventoryQuerySet.with_utilization computes it (a float of the same
    operations, so ties fall as they do in SQL), for inventories with
    total above reserved; none when the capacity is zero. Kept as the
    distinct utilizations in order, each with its inventories, so the
    fullest few are read from the top without sorting the cloud."""

    def __init__(self):
        super().__init__()      # entries: (provider name, provider, class id)
        self.count = 0          # inventories held

    def build(self, image):
        for tree in image.trees.values():
            for utilization, entry in self._entries(tree):
                (self.unknown if utilization is None
                 else self.at.setdefault(utilization, set())).add(entry)
                self.count += 1
        self.levels = sorted(self.at)

    @staticmethod
    def _entries(tree):
        names = {provider.id: provider.name for provider in tree.providers}
        for i in tree.inventories:
            if i.total > i.reserved:
                yield (rules.utilization(i.used, i.capacity),
                       (names[i.provider], i.provider, i.resource_class))

    def _add(self, image, tree, sign):
        for utilization, entry in self._entries(tree):
            self.count += sign
            self._place(utilization, entry, sign)

    def estimated_size(self):
        return 1000 + 150 * self.count

    def providers(self, wanted):
        """([provider] by their fullest inventory's utilization, then id, at
        least `wanted` of them; whether that is every provider with a
        utilization): the distinct providers of the inventories read from
        the fullest, each where its fullest one comes."""
        providers = {}
        for utilization in reversed(self.levels):
            for _name, provider, _class in sorted(self.at[utilization], key=_by_provider):
                providers.setdefault(provider)
            if len(providers) >= wanted:
                return list(providers), False
        return list(providers), True


class FullestTreesFold(_Levels):
    """The trees by how full they are as hosts: each tree's books summed
    over its providers (as BooksFold sums them per tree) and the fraction
    used of its fullest class (books.fullest_class). Kept as the distinct
    fractions in order, each with its trees, so the fullest (or emptiest)
    hosts are read from the end without sorting the cloud."""

    # Entries: (root, fullest class id); the roots of trees without capacity apart.

    def build(self, image):
        for tree in image.trees.values():
            self._add(image, tree, 1)

    @staticmethod
    def _entry(image, tree):
        part = BooksFold(groupings.Grouping(groupings.TREES))
        part.add(image, tree)
        fullest = the_books.fullest_class(part.value(image).get(tree.root, {}))
        if fullest is None:
            return None, tree.root
        return fullest.utilization, (tree.root, fullest.class_id)

    def _add(self, image, tree, sign):
        self._place(*self._entry(image, tree), sign)

    def estimated_size(self):
        return 1000 + 150 * (len(self.unknown) + sum(len(held) for held in self.at.values()))

    def value(self, wanted, fullest=True):
        """([(root, fullest class id)] of at least `wanted` trees, fullest
        (or emptiest) first, then by root; whether that is every tree with
        capacity)."""
        trees = []
        for fraction in (reversed(self.levels) if fullest else self.levels):
            trees += sorted(self.at[fraction])
            if len(trees) >= wanted:
                return trees, False
        return trees, True

    def without_capacity(self):
        return sorted(self.unknown)


def _by_provider(entry):
    return entry[1]


class GuardedAnswer:
    """An answer read from the database (the explorer's), held while the
    trees that change leave it as it is: `spoiled(old tree, new tree)` says
    when one does not (either None: a tree added or gone). `size`: the
    answer's, in bytes (its pickle's, say)."""

    def __init__(self, value, spoiled, size):
        self.value = value
        self.spoiled = spoiled
        self.size = size

    def build(self, image):
        pass   # made whole, held by Ledger.keep

    def update(self, old, new, roots):
        return not any(self.spoiled(old.trees.get(root), new.trees.get(root)) for root in roots)

    def estimated_size(self):
        return self.size
