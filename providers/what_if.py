"""What-if: how many more of each flavor (or a given request shape) fit,
cloud-wide and per pool, before and after a change to the cloud, without
writing anything (POST /capacity/what-if, /ui/what-if/).

The changes: hosts added (K trees of one shape: the root's inventories,
perhaps children such as NUMA nodes with theirs, traits, the aggregates
the root joins); hosts removed, by aggregate, by a pattern on the root's
name or by a list of names or uuids, their consumers going with them (a
consumer's allocations elsewhere, on a sharing provider say, vanish too, as
DELETE /allocations/{consumer} removes them); allocation_ratio or reserved
of a class set on every provider or on a pool's providers.

How it counts. The cloud is the ledger's image (providers.ledger.image:
every tree's providers and inventories with `used`, and the allocations
facet), the ledger's own when it serves this read, else read whole in a
fixed number of queries. The change makes a second image in memory
(Image.replaced: only the trees it touches are new), and "how many more
fit" is counted on both by the folds GET /capacity's answers come from
(providers.ledger.folds.FitsFold: providers.rules.slots and
providers.fits' max flows): before is the fold as it stands, after a copy
of it moved along by the changed trees, as the ledger moves it when the
change is really made. So "after" is what GET /capacity (and the claims a
candidate search grants one after another) answers once the change is
made: tests/providers/test_what_if.py makes it for real to check.
"""
import collections
import contextlib
import fnmatch
import re
from dataclasses import dataclass
from dataclasses import field

from django.db import connections

from placement_site import exceptions
from placement_site import snapshots
from providers import capacity
from providers import ledger
from providers import rules
from providers.fits import Fit
from providers.flavors import configured_flavors
from providers.ledger import groupings
from providers.ledger.folds import FitsFold
from providers.ledger.folds import _Shape
from providers.ledger.image import Image
from providers.ledger.image import Inventory
from providers.ledger.image import Provider
from providers.ledger.image import Tree
from providers.ledger.image import facets
from providers.ledger.image import streamed
from providers.models import INVENTORY_DEFAULTS
from providers.models import Aggregate

CLOUD = groupings.Grouping(groupings.CLOUD)
POOLS = groupings.Grouping(groupings.POOLS)


class Refused(exceptions.PlacementDomainError):
    """A change that names what the cloud does not have, or that the real
    write would refuse (the API's 400)."""


# ---- the change --------------------------------------------------------------------------

@dataclass(frozen=True)
class NewHosts:
    """`count` trees alike: the root's inventories ({class name: record,
    INVENTORY_DEFAULTS filled in}), its traits and the aggregates (uuids)
    it joins; children ((inventories, traits) each) under the root."""
    count: int
    inventories: dict
    traits: tuple = ()
    aggregates: tuple = ()
    children: tuple = ()
    name: str = 'what-if'


@dataclass(frozen=True)
class Removal:
    """Hosts removed: the trees whose root is in one of `aggregates`
    (uuids) or whose root's name matches one of `patterns` (fnmatch), a
    sharing provider's tree excepted (a shared store is not a host); and
    the trees named in `hosts` (root names or uuids), whatever they are."""
    aggregates: tuple = ()
    patterns: tuple = ()
    hosts: tuple = ()


@dataclass(frozen=True)
class Setting:
    """allocation_ratio and/or reserved of a class set on every provider
    having it (aggregate None) or on a pool's providers (as member_of
    reads the pool: its members and the trees of member roots)."""
    resource_class: str
    aggregate: str = None
    allocation_ratio: float = None
    reserved: int = None


@dataclass(frozen=True)
class Change:
    """Removals first, then the settings (on the providers the cloud
    has), then the hosts added (described whole: settings leave them)."""
    add: tuple = ()
    remove: Removal = Removal()
    settings: tuple = ()


# ---- the answer ----------------------------------------------------------------------------

@dataclass(frozen=True)
class GroupOutcome:
    """A group (the cloud, or a pool: its aggregate's uuid and name) and
    [Fit] per shape before and after."""
    key: str
    name: str
    before: list
    after: list


@dataclass(frozen=True)
class Outcome:
    shapes: list            # [(name, {class name: amount})]
    groups: list            # [GroupOutcome]: the cloud first, then the pools by uuid
    hosts_added: int = 0
    hosts_removed: list = field(default_factory=list)   # root names
    consumers_removed: int = 0
    inventories_changed: int = 0


def what_if(change, shapes=None, using='default'):
    """Outcome of the change for the shapes ([(name, {class name:
    amount})]; None: the configured flavors). Refused for a change naming
    an unknown class, trait, aggregate or host, or one the API would refuse
    once made (a capacity below zero)."""
    if shapes is None:
        shapes = [(f.name, dict(f.resources)) for f in configured_flavors()]
    flavors = [_Named(name, resources) for name, resources in shapes]
    counted, shape_ids = capacity.flavor_shapes(flavors)
    aggregates = _aggregate_ids(change)
    memo = {}
    image, before_folds, lock = _read(using, shape_ids, memo)
    edit = _Edit(image, aggregates, lock)
    trees = edit.apply(change)
    after = image.replaced(trees) if trees else image
    affected = set(trees)
    if (image.sharing or after.sharing) and after is not image:
        old_reach, new_reach = image.reach, after.reach
        affected.update(root for root in old_reach.keys() | new_reach.keys()
                        if old_reach.get(root) != new_reach.get(root))
    # Moving a fold costs each changed tree twice (its old part out, its
    # new one in); counting afresh, each tree of the cloud once.
    afresh = 2 * len(affected) > len(after.trees)
    fits_by_kind = {}
    for grouping, fold in before_folds.items():
        before = fold.value(image)
        if affected and (afresh or not fold.update(image, after, affected)):
            fold = _MovedFits.built(grouping, shape_ids, memo, after)
        fits_by_kind[grouping.kind] = (before, fold.value(after))
    return _outcome(shapes, counted, fits_by_kind, edit)


@dataclass(frozen=True)
class _Named:
    name: str
    resources: dict


def _outcome(shapes, counted, fits_by_kind, edit):
    index = {flavor.name: position for position, flavor in enumerate(counted)}

    def per_shape(fits):
        return [fits[index[name]] if name in index and fits else Fit(0)
                for name, _ in shapes]

    cloud_before, cloud_after = fits_by_kind[groupings.CLOUD]
    groups = [GroupOutcome(capacity.CLOUD, None, per_shape(cloud_before.get(groupings.CLOUD)),
                           per_shape(cloud_after.get(groupings.CLOUD)))]
    pools_before, pools_after = fits_by_kind[groupings.POOLS]
    ids = set(pools_before) | set(pools_after)
    named = {pk: (uuid, name) for pk, uuid, name in Aggregate.objects.with_names().filter(
        pk__in=[pk for pk in ids if pk > 0]).values_list('pk', 'uuid', 'name')}
    named.update({pk: (uuid, None) for uuid, pk in edit.new_aggregates.items()})
    for pk in sorted(ids, key=lambda pk: named.get(pk, (str(pk),))[0]):
        key, name = named.get(pk, (str(pk), None))
        groups.append(GroupOutcome(key, name, per_shape(pools_before.get(pk)),
                                   per_shape(pools_after.get(pk))))
    return Outcome(shapes, groups, edit.hosts_added, sorted(edit.removed_names),
                   len(edit.consumers), edit.inventories_changed)


def _aggregate_ids(change):
    """{uuid: id} of the aggregates the change names that exist: one query."""
    uuids = set(change.remove.aggregates) | {s.aggregate for s in change.settings if s.aggregate}
    for hosts in change.add:
        uuids.update(hosts.aggregates)
    if not uuids:
        return {}
    return dict(Aggregate.objects.filter(uuid__in=sorted(uuids)).values_list('uuid', 'pk'))


# ---- reading the cloud and the folds -----------------------------------------------------

def _read(using, shapes, memo):
    """(image, {grouping: FitsFold of the shapes on it, its own to move
    along}, lock) of the cloud and of every pool: the ledger's (copied: its
    folds move on with the writes) when it serves, else read whole and
    counted here; the lock
    to hold while adding to the image's interned values (the ledger's,
    shared with its refreshes)."""
    if ledger.serves(using):
        held = ledger.live.ledger(using)
        key = tuple(tuple(sorted(shape.items())) for shape in shapes)   # as ledger.fits keys it
        for _attempt in range(5):
            with held.lock:
                read = {grouping: held.read(('fits', grouping, key),
                                            lambda g=grouping: FitsFold(g, shapes),
                                            lambda fold, image: (_copied(fold, memo), image))
                        for grouping in (CLOUD, POOLS)}
            images = {id(image) for _, image in read.values()}
            if len(images) == 1:   # no write moved the image between the two
                image = next(iter(read.values()))[1]
                return (image, {grouping: fold for grouping, (fold, _) in read.items()},
                        held.lock)
    with snapshots.read_snapshot(using):
        image = Image.read(streamed(connections[using]), None, frozenset())
    folds = {grouping: _MovedFits.built(grouping, shapes, memo, image)
             for grouping in (CLOUD, POOLS)}
    return image, folds, contextlib.nullcontext()


class _MovedFits(FitsFold):
    """A FitsFold moved along privately; the folds of one what-if share
    `memo`, each tree's slots per set of its providers, so the cloud's and
    the pools' folds read a changed tree's inventories once."""

    @classmethod
    def built(cls, grouping, shapes, memo, image):
        fold = cls(grouping, shapes)
        fold.memo = memo
        fold.build(image)
        return fold

    def _own_slots(self, tree, providers, excluded):
        if providers is not None and len(providers) == len(tree.providers):
            providers = None   # the whole tree, as the cloud's fold asks it
        key = (tree, providers, excluded)   # the tree itself: kept while remembered
        own_slots = self.memo.get(key)
        if own_slots is None:
            own_slots = self.memo[key] = super()._own_slots(tree, providers, excluded)
        return own_slots


def _copied(fold, memo):
    """A FitsFold to move along privately: its groups' counts copied."""
    moved = _MovedFits.__new__(_MovedFits)
    moved.__dict__.update(fold.__dict__)
    moved.groups = {group: [_copied_shape(counted) for counted in shapes]
                    for group, shapes in fold.groups.items()}
    moved.parts = collections.Counter(fold.parts)
    moved.trees = dict(fold.trees) if hasattr(fold, 'trees') else {}
    moved.memo = memo
    return moved


def _copied_shape(counted):
    shape_count = _Shape()
    shape_count.n = counted.n
    for reached, demands in counted.demands.items():
        shape_count.demands[reached] = collections.Counter(demands)
    shape_count.trees = dict(counted.trees)
    return shape_count


# ---- making the change in memory ----------------------------------------------------------

class _Edit:
    """The trees a change replaces ({root: Tree or None}) on an image."""

    def __init__(self, image, aggregates, lock):
        self.image = image
        self.lock = lock
        self.aggregates = aggregates        # uuid -> id, the existing ones
        self.new_aggregates = {}            # uuid -> a made-up id (below 0)
        self.trees = {}
        self.removed_names = []
        self.consumers = set()
        self.hosts_added = 0
        self.inventories_changed = 0
        self.next_id = -1
        self.class_ids = {name: pk for pk, name in image.catalogue.class_names.items()}

    def apply(self, change):
        self._remove(change.remove)
        for setting in change.settings:
            self._set(setting)
        for hosts in change.add:
            self._add(hosts)
        return self.trees

    def tree(self, root):
        """The tree as the change has it so far (None: gone)."""
        return self.trees[root] if root in self.trees else self.image.trees.get(root)

    # -- removing ------------------------------------------------------------------

    def _existing_aggregate(self, uuid):
        pk = self.aggregates.get(uuid)
        if pk is None:
            raise Refused(f'No aggregate {uuid} exists.')
        return pk

    def _remove(self, removal):
        image = self.image
        sharing_roots = set(image.sharing.values())
        chosen = set()
        for uuid in removal.aggregates:
            pk = self._existing_aggregate(uuid)
            for root in image.members.get(pk, ()):
                tree = image.trees[root]
                provider = tree.root_provider
                if provider is not None and pk in provider.aggregates and root not in sharing_roots:
                    chosen.add(root)
        if removal.patterns:
            matches = re.compile('|'.join(f'(?:{fnmatch.translate(p)})' for p in removal.patterns))
            chosen.update(root for root, tree in image.trees.items()
                          if tree.name is not None and matches.match(tree.name)
                          and root not in sharing_roots)
        if removal.hosts:
            by_name = {}
            for root, tree in image.trees.items():
                by_name.setdefault(tree.name, root)
                by_name[tree.uuid] = root
            unknown = [host for host in removal.hosts if host not in by_name]
            if unknown:
                raise Refused(f'No root provider named {", ".join(unknown)} (a host is named '
                              'by its root provider\'s name or uuid).')
            chosen.update(by_name[host] for host in removal.hosts)
        if not chosen:
            return
        for root in chosen:
            self.trees[root] = None
            self.removed_names.append(image.trees[root].name)
        self._consumers_gone(chosen)

    def _consumers_gone(self, removed):
        """The consumers holding allocations on the removed trees go with
        them: their allocations on other trees are taken off those trees'
        `used` (the amounts as the image has them)."""
        claimers = [facet for facet in facets().values() if hasattr(facet, 'claims')]
        if not claimers:
            return
        for root in removed:
            for facet in claimers:
                self.consumers.update(facet.consumers(self.image.trees[root]))
        if not self.consumers:
            return
        # The other trees where they hold some, from the image whose
        # amounts are taken off (not the database, which may have moved on):
        # a pass over every tree's consumers.
        gone = self.consumers
        elsewhere = {root for root, tree in self.image.trees.items() if root not in removed
                     and any(facet.holds_any(tree, gone) for facet in claimers)}
        for root in elsewhere:
            tree = self.tree(root)
            if tree is None:
                continue
            freed = collections.Counter()
            for facet in claimers:
                for consumer, provider, class_id, used in facet.claims(self.image.trees[root]):
                    if consumer in self.consumers:
                        freed[provider, class_id] += used
            if freed:
                self.trees[root] = _with_inventories(tree, [
                    i._replace(used=i.used - freed[i.provider, i.resource_class])
                    if (i.provider, i.resource_class) in freed else i for i in tree.inventories])

    # -- settings ------------------------------------------------------------------

    def _set(self, setting):
        class_id = self._class(setting.resource_class)
        if setting.aggregate is None:
            roots, pool = list(self.image.trees), None
        else:
            pool = self._existing_aggregate(setting.aggregate)
            roots = list(self.image.members.get(pool, ()))
        for root in roots:
            tree = self.tree(root)
            if tree is None:
                continue
            in_pool = None if pool is None else {
                p.id for p in tree.providers if pool in tree.aggregates_of(p)}
            changed, inventories = 0, []
            for inventory in tree.inventories:
                if inventory.resource_class == class_id and (
                        in_pool is None or inventory.provider in in_pool):
                    inventory = self._changed_inventory(inventory, setting, tree)
                    changed += 1
                inventories.append(inventory)
            if changed:
                self.trees[root] = _with_inventories(tree, inventories)
                self.inventories_changed += changed

    def _changed_inventory(self, inventory, setting, tree):
        changes = {}
        if setting.allocation_ratio is not None:
            changes['allocation_ratio'] = float(setting.allocation_ratio)
        if setting.reserved is not None:
            changes['reserved'] = setting.reserved
        changed = inventory._replace(**changes)
        if not rules.valid_capacity(changed.total, changed.reserved, changed.allocation_ratio):
            provider = tree.provider(inventory.provider)
            raise Refused(
                f'{setting.resource_class} on {provider.name if provider else tree.name}: '
                f'reserved {changed.reserved} and allocation_ratio {changed.allocation_ratio} '
                f'leave a capacity below zero (total {changed.total}); the inventory update '
                'would be refused.')
        return changed

    # -- adding ----------------------------------------------------------------------

    def _class(self, name):
        class_id = self.class_ids.get(name)
        if class_id is None:
            raise Refused(f'No such resource class {name}.')
        return class_id

    def _traits(self, names):
        ids = []
        for name in names:
            trait_id = self.image.trait_ids.get(name)
            if trait_id is None:
                raise Refused(f'No such trait {name}.')
            ids.append(trait_id)
        with self.lock:
            return self.image.interned.traits(ids)

    def _aggregate(self, uuid):
        pk = self.aggregates.get(uuid)
        if pk is None:
            pk = self.new_aggregates.get(uuid)
            if pk is None:
                pk = self.new_aggregates[uuid] = self._new_id()
        return pk

    def _new_id(self):
        self.next_id -= 1
        return self.next_id

    def _records(self, inventories, name):
        records = {}
        for class_name, record in inventories.items():
            record = {**INVENTORY_DEFAULTS, **record}
            if not rules.valid_capacity(record['total'], record['reserved'],
                                        record['allocation_ratio']):
                raise Refused(f'{class_name} of {name}: reserved {record["reserved"]} and '
                              f'allocation_ratio {record["allocation_ratio"]} leave a capacity '
                              f'below zero (total {record["total"]}).')
            records[self._class(class_name)] = record
        return records

    def _add(self, hosts):
        root_records = self._records(hosts.inventories, hosts.name)
        root_traits = self._traits(hosts.traits)
        aggregates = frozenset(self._aggregate(uuid) for uuid in hosts.aggregates)
        children = [(self._records(inventories, hosts.name), self._traits(traits))
                    for inventories, traits in hosts.children]
        empty = tuple(None for _ in facets())
        for number in range(1, hosts.count + 1):
            root = self._new_id()
            name = f'{hosts.name}-{number}'
            providers = [Provider(root, None, root_traits, aggregates, name)]
            inventories = _inventories(root, root_records)
            for index, (records, traits) in enumerate(children):
                child = self._new_id()
                providers.append(Provider(child, root, traits, frozenset(), f'{name}-{index}'))
                inventories += _inventories(child, records)
            self.trees[root] = Tree(root, tuple(providers), tuple(inventories), empty, name, None)
        self.hosts_added += hosts.count


def _inventories(provider, records):
    return [Inventory(provider, class_id, r['total'], r['reserved'], float(r['allocation_ratio']),
                      r['min_unit'], r['max_unit'], r['step_size'], 0)
            for class_id, r in sorted(records.items())]


def _with_inventories(tree, inventories):
    return Tree(tree.root, tree.providers, tuple(inventories), tree.facets, tree.name, tree.uuid)
