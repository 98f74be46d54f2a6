"""What allocations adds to the dashboards' image of the cloud
(providers.ledger): each tree's allocations with their consumers' owners,
and the owners' usage summed from them, kept in step as trees change.

Tree stamps (providers.ledger.stamps) step when an allocation is written
or a consumer changes owners (on every tree it holds), and the books'
change log (providers.changes) sees allocations written without inventory
behind them too, so the image reads again exactly the trees whose
allocations changed.
"""
import array
import collections
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
                   'a.consumer_id = {row}.id', columns=('project_id', 'user_id', 'consumer_type_id')),
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
        key = (project, user, -1 if consumer_type is None else consumer_type)
        index = cls.owners.get(key)
        if index is None:
            index = cls.owners[key] = len(cls.owner_list)
            cls.owner_list.append(key)
        return index

    @classmethod
    def read(cls, rows, roots, present):
        """{root: array} of the trees `roots` (None: all), rows:
        providers.ledger.image.streamed; `present`: the roots the image found."""
        where, params = '', []
        if roots is not None:
            where = f' WHERE rp.root_provider_id IN ({", ".join(["%s"] * len(roots))})'
            params = list(roots)
        found = {}
        for root, consumer, project, user, consumer_type, provider, class_id, used in rows(
                'SELECT rp.root_provider_id, a.consumer_id, c.project_id, c.user_id, '
                'c.consumer_type_id, a.resource_provider_id, a.resource_class_id, a.used '
                'FROM allocations a JOIN consumers c ON c.id = a.consumer_id '
                f'JOIN resource_providers rp ON rp.id = a.resource_provider_id{where}', params):
            if root in present:
                rows = found.get(root)
                if rows is None:
                    rows = found[root] = array.array('q')
                rows.extend((consumer, cls.owner(project, user, consumer_type), provider,
                             class_id, used))
        return found


def _allocations(tree):
    """(consumer, owner, provider, class, used) of each allocation on the tree."""
    rows = facet_data(tree, Allocations.key)
    if not rows:
        return
    step = Allocations.FIELDS
    for start in range(0, len(rows), step):
        yield rows[start:start + step]


class _TreeFold:
    """A fold over the trees' allocations: add(tree, sign) each tree's part."""

    def build(self, image):
        for tree in image.trees.values():
            self.add(image, tree, 1)

    def update(self, old, new, roots):
        for root in roots:
            if root in old.trees:
                self.add(old, old.trees[root], -1)
        for root in roots:
            if root in new.trees:
                self.add(new, new.trees[root], 1)
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

    def add(self, image, tree, sign):
        seen = {}
        for consumer, owner, _provider, class_id, used in _allocations(tree):
            sums = self.sums[owner]
            sums[class_id] += sign * used
            if not sums[class_id]:
                del sums[class_id]
                if not sums:
                    del self.sums[owner]
            seen[consumer] = owner
        for consumer, owner in seen.items():
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

    def add(self, image, tree, sign):
        for consumer, owner, _provider, class_id, used in _allocations(tree):
            if class_id != self.class_id:
                continue
            found = self.held.get(consumer)
            if found is None:
                found = self.held[consumer] = [0, owner]
            else:
                self._unfile(consumer, found[0])
            found[0] += sign * used
            found[1] = owner
            if found[0]:
                self.by_amount.setdefault(found[0], set()).add(consumer)
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
        found = []
        for used in sorted(self.by_amount, reverse=True):
            for consumer in sorted(self.by_amount[used]):
                if self.held[consumer][1] in accepted:
                    found.append((-used, consumer))
                    if len(found) == limit:
                        return found
        return found


class ProjectTrees(_TreeFold):
    """Where one project's consumers sit: per tree, how many of them hold
    allocations there; per pool (member_of's: a provider holding them or
    its root is a member), how many of their allocations."""

    def __init__(self, project_id):
        self.project_id = project_id
        self.consumers = {}                  # root -> consumers of the project
        self.pools = collections.Counter()   # aggregate -> allocations

    def add(self, image, tree, sign):
        owners = Allocations.owner_list
        consumers = set()
        for consumer, owner, provider, _class, _used in _allocations(tree):
            if owners[owner][0] != self.project_id:
                continue
            consumers.add(consumer)
            found = tree.provider(provider)
            for aggregate_id in tree.aggregates_of(found) if found is not None else ():
                self.pools[aggregate_id] += sign
                if not self.pools[aggregate_id]:
                    del self.pools[aggregate_id]
        if consumers:
            if sign > 0:
                self.consumers[tree.root] = len(consumers)
            else:
                self.consumers.pop(tree.root, None)

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
