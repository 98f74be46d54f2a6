"""What allocations adds to the dashboards' image of the cloud
(providers.ledger): each tree's allocations with their consumers' owners,
and the owners' usage summed from them, kept in step as trees change.

Tree stamps (providers.ledger.stamps) step when an allocation is written
or a consumer changes owners (on every tree it holds), and the books'
change log (providers.change_log) sees allocations written without inventory
behind them too, so the image reads again exactly the trees whose
allocations changed.
"""
import array
import collections
import functools
import heapq
import typing

from providers import ledger
from providers.ledger import stamps
from providers.ledger.image import facet_data

# The tables whose writes step tree stamps, beside providers' own.
STAMPED = [
    stamps.through_provider('allocations'),
    stamps.Watched('consumers', 'rp.root_provider_id',
                   'allocations a JOIN resource_providers rp ON rp.id = a.resource_provider_id',
                   'a.consumer_id = {row}.id',
                   columns=('project_id', 'user_id', 'consumer_type_id')),
]
# ... and the books' change log (allocations on a provider without inventory
# of their class touch no inventory row).
CHANGES_WATCHED = {'allocations': None}


class Allocations:
    """The ledger facet: each tree's allocations as one flat array of
    (consumer, owner, provider, class, used) five at a time, an owner being
    an index into `owners` ((project id, user id, consumer type id or -1),
    each held once per process)."""
    key = 'allocations'
    FIELDS = 5
    # (project, user, type) -> index, and back: shared by every image of the process.
    owners: typing.ClassVar[dict] = {}
    owner_list: typing.ClassVar[list] = []

    @classmethod
    def owner(cls, project, user, consumer_type):
        """The owner's index (consumer_type None or -1: none)."""
        key = (project, user, -1 if consumer_type is None else consumer_type)
        index = cls.owners.get(key)
        if index is None:
            index = cls.owners[key] = len(cls.owner_list)
            cls.owner_list.append(key)
        return index

    @classmethod
    def claims(cls, tree):
        """(consumer, provider, class id, used) of each allocation on the
        tree: what a what-if (providers.what_if) takes away with a consumer
        whose host goes."""
        return ((consumer, provider, class_id, used)
                for consumer, _owner, provider, class_id, used in _allocations(tree))

    @classmethod
    def consumers(cls, tree):
        """The consumers holding allocations on the tree."""
        rows = facet_data(tree, cls.key)
        return set(rows[0::cls.FIELDS]) if rows else set()

    @classmethod
    def holds_any(cls, tree, consumers):
        """Whether one of the consumers (a set) holds an allocation on the
        tree: a what-if's pass over every tree, with no set made per tree."""
        rows = facet_data(tree, cls.key)
        return bool(rows) and not consumers.isdisjoint(rows[0::cls.FIELDS])

    @classmethod
    def read(cls, rows, roots, present):
        """{root: array} of the trees `roots` (None: all), rows:
        providers.ledger.image.streamed; `present`: the roots the image found."""
        where, params = '', []
        if roots is not None:
            where = f' WHERE rp.root_provider_id IN ({", ".join(["%s"] * len(roots))})'
            params = list(roots)
        allocations = {}
        # A share's tree holds thousands of allocations, read again after
        # each claim on it: the loop keeps to local names and dict lookups.
        known, owner_of, allocations_of = cls.owners, cls.owner, allocations.get
        for root, consumer, project, user, consumer_type, provider, class_id, used in rows(
                'SELECT rp.root_provider_id, a.consumer_id, c.project_id, c.user_id, '
                'COALESCE(c.consumer_type_id, -1), a.resource_provider_id, a.resource_class_id, '
                'a.used FROM allocations a JOIN consumers c ON c.id = a.consumer_id '
                f'JOIN resource_providers rp ON rp.id = a.resource_provider_id{where}', params):
            held = allocations_of(root)
            if held is None:
                if root not in present:
                    continue
                held = allocations[root] = array.array('q')
            owner = known.get((project, user, consumer_type))
            if owner is None:
                owner = owner_of(project, user, consumer_type)
            held.extend((consumer, owner, provider, class_id, used))
        return allocations


def _allocations(tree):
    """(consumer, owner, provider, class, used) of each allocation on the tree."""
    rows = facet_data(tree, Allocations.key)
    if not rows:
        return iter(())
    step = Allocations.FIELDS
    return zip(*(rows[field::step] for field in range(step)))


def _holders(rows):
    """{(consumer, owner)} of the rows: a consumer has one owner in a tree."""
    return {(row[0], row[1]) for row in rows}


@functools.lru_cache(maxsize=32)
def _changed(before, after):
    """What changed between two versions of a tree: (rows gone, rows come,
    holders gone, holders come). A claim on a share's tree of 6,000
    allocations changes one row of it; the folds move by that row, not by
    taking the whole tree out and in (which cost 90 ms a share's tree on
    every read after such a claim, at 100,000 providers). Kept for the last
    pairs of trees, so every fold moves along the same change without
    finding it again (few: a pair keeps both trees alive, a share's are
    hundreds of kB)."""
    old, new = collections.Counter(_allocations(before)), collections.Counter(_allocations(after))
    gone, come = old - new, new - old
    if not gone and not come:
        return (), (), (), ()
    old_holders, new_holders = _holders(old), _holders(new)
    return (list(gone.elements()), list(come.elements()),
            old_holders - new_holders, new_holders - old_holders)


class _TreeFold:
    """A fold over the trees' allocations: apply(tree, rows, holders, sign)
    takes the allocation rows out of (-1) or into (+1) the tree's part, and
    the consumers (with their owners) that stop or start holding there."""

    def build(self, image):
        for tree in image.trees.values():
            rows = list(_allocations(tree))
            self.apply(tree, rows, _holders(rows), 1)

    def update(self, old, new, roots):
        # Every tree's part out before any goes in: a consumer given to
        # another owner leaves its old owner on each of its trees first.
        going = []
        for root in roots:
            before, after = old.trees.get(root), new.trees.get(root)
            # Its providers as they were (ProjectTrees files rows under their pools): by the rows.
            if before is not None and after is not None and before.providers == after.providers:
                gone, come, left, joined = _changed(before, after)
                self.apply(before, gone, left, -1)
                going.append((after, come, joined))
                continue
            if before is not None:
                rows = list(_allocations(before))
                self.apply(before, rows, _holders(rows), -1)
            if after is not None:
                rows = list(_allocations(after))
                going.append((after, rows, _holders(rows)))
        for tree, rows, holders in going:
            self.apply(tree, rows, holders, 1)
        return True


class OwnerUsage(_TreeFold):
    """Per owner (an Allocations owner index): used per class, and how many
    consumers hold allocations. A consumer counts once however many trees
    it holds allocations on (a diskless node's instance holds its disk on a
    share's tree): `trees` counts them per consumer."""

    def __init__(self):
        self.sums = collections.defaultdict(collections.Counter)
        self.holders = collections.Counter()
        self.trees = {}   # consumer -> trees holding its allocations

    def apply(self, tree, rows, holders, sign):
        for _consumer, owner, _provider, class_id, used in rows:
            sums = self.sums[owner]
            sums[class_id] += sign * used
            if not sums[class_id]:
                del sums[class_id]
                if not sums:
                    del self.sums[owner]
        for consumer, owner in holders:
            held = self.trees.get(consumer, 0) + sign
            if held:
                self.trees[consumer] = held
            else:
                del self.trees[consumer]
            if (held, sign) in ((1, 1), (0, -1)):   # its first tree, or its last gone
                self.holders[owner] += sign
                if not self.holders[owner]:
                    del self.holders[owner]

    def estimated_size(self):
        return 2000 + 300 * len(self.sums) + 100 * len(self.trees)

    def value(self, wanted):
        """({owner: {class id: used}}, {owner: consumers}) of the owners
        (project id, user id, type id or -1) `wanted` accepts."""
        owners = Allocations.owner_list
        accepted = {index for index, owner in enumerate(owners) if wanted(owner)}
        return ({owners[o]: dict(sums) for o, sums in self.sums.items() if o in accepted},
                {owners[o]: n for o, n in self.holders.items() if o in accepted})


class TopHolders(_TreeFold):
    """What each consumer holds of one class, and the consumers by amount,
    for the largest holders."""

    def __init__(self, class_id):
        self.class_id = class_id
        self.held = {}        # consumer -> [used, owner]
        self.by_amount = {}   # used -> consumers holding that much

    def apply(self, tree, rows, holders, sign):
        for consumer, owner, _provider, class_id, used in rows:
            if class_id != self.class_id:
                continue
            holding = self.held.get(consumer)
            if holding is None:
                holding = self.held[consumer] = [0, owner]
            else:
                self._unfile(consumer, holding[0])
            holding[0] += sign * used
            holding[1] = owner
            if holding[0]:
                self.by_amount.setdefault(holding[0], set()).add(consumer)
            else:
                del self.held[consumer]

    def _unfile(self, consumer, used):
        holders = self.by_amount[used]
        holders.discard(consumer)
        if not holders:
            del self.by_amount[used]

    def estimated_size(self):
        return 1000 + 200 * len(self.held)

    def value(self, wanted, limit):
        """[(-used, consumer id)]: the `limit` largest holders among the
        owners `wanted` accepts, the older consumer first on a tie."""
        owners = Allocations.owner_list
        accepted = {index for index, owner in enumerate(owners) if wanted(owner)}
        holders = []
        for used in sorted(self.by_amount, reverse=True):
            for consumer in sorted(self.by_amount[used]):
                if self.held[consumer][1] in accepted:
                    holders.append((-used, consumer))
                    if len(holders) == limit:
                        return holders
        return holders


class ProjectTrees(_TreeFold):
    """Where one project's consumers sit: per tree, how many of them hold
    allocations there; per pool (member_of's: a provider holding them or
    its root is a member), how many of their allocations."""

    def __init__(self, project_id):
        self.project_id = project_id
        self.consumers = {}                  # root -> consumers of the project
        self.pools = collections.Counter()   # aggregate -> allocations

    def apply(self, tree, rows, holders, sign):
        owners = Allocations.owner_list
        for _consumer, owner, provider, _class, _used in rows:
            if owners[owner][0] != self.project_id:
                continue
            holding_provider = tree.provider(provider)
            for aggregate_id in (tree.aggregates_of(holding_provider)
                                 if holding_provider is not None else ()):
                self.pools[aggregate_id] += sign
                if not self.pools[aggregate_id]:
                    del self.pools[aggregate_id]
        # A consumer has one owner in a tree: each of the project's counts once.
        moved = sum(1 for _consumer, owner in holders if owners[owner][0] == self.project_id)
        if moved:
            held = self.consumers.get(tree.root, 0) + sign * moved
            if held:
                self.consumers[tree.root] = held
            else:
                del self.consumers[tree.root]

    def estimated_size(self):
        return 1000 + 120 * len(self.consumers) + 100 * len(self.pools)

    def hosts(self, image, limit):
        """([(root id, name, uuid, consumers)], how many trees): the trees
        with most of the project's consumers, by name on a tie."""
        top = heapq.nsmallest(limit, (
            (-n, image.trees[root].name or '', root) for root, n in self.consumers.items()))
        return ([(root, name, image.trees[root].uuid, -n) for n, name, root in top],
                len(self.consumers))


# ---- reads ------------------------------------------------------------------------

def serves(using):
    return ledger.serves(using)


def owner_usage(using, wanted):
    """OwnerUsage.value over the ledger's image."""
    return ledger.ledger(using).read(('owner usage',), OwnerUsage,
                                     lambda fold, image: fold.value(wanted))


def top_holders(using, class_id, wanted, limit):
    """TopHolders.value over the ledger's image."""
    return ledger.ledger(using).read(('top holders', class_id), lambda: TopHolders(class_id),
                                     lambda fold, image: fold.value(wanted, limit))


def project_trees(using, project_id, host_limit):
    """(ProjectTrees.hosts, the ids of the project's pools)."""
    return ledger.ledger(using).read(
        ('project trees', project_id), lambda: ProjectTrees(project_id),
        lambda fold, image: (fold.hosts(image, host_limit), set(fold.pools)))
