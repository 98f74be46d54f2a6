"""The image: every provider tree's facts, as the database holds them at
one moment, read again tree by tree as the tree stamps
(providers.ledger.stamps) say trees changed.

A tree's facts are its providers (parent, traits, aggregates), their
inventories with `used`, and what other apps add (settings.
PLACEMENT_LEDGER_FACETS: allocations adds each tree's allocations with
their consumers' owners). An Image is never changed: a refresh builds the
next one, sharing every tree that did not change, so the roll-ups
(providers.ledger.folds) can take a changed tree's part out as the old
image has it and put it back as the new one does.

Derived from the trees, and kept with each image: which trees each
aggregate holds, the sharing providers, and which trees each sharing
provider serves (its own and those of the providers sharing an aggregate
with it, as the candidate search reads them).
"""
import collections
import functools
from dataclasses import dataclass
from typing import NamedTuple

import os_traits
from django.utils.module_loading import import_string

from providers import rules
from providers.ledger import stamps

# Capacity sums are kept exact: (total - reserved) * allocation_ratio as an
# integer count of 2**-CAPACITY_BITS, whatever the ratio (a double's exact
# value is a multiple of 2**-1074).
CAPACITY_BITS = 1074


def scaled_capacity(total, reserved, allocation_ratio):
    """rules.capacity, exactly, in units of 2**-CAPACITY_BITS."""
    numerator, denominator = float(allocation_ratio).as_integer_ratio()
    return ((total - reserved) * numerator) << (CAPACITY_BITS - denominator.bit_length() + 1)


def unscaled(capacity):
    """A scaled capacity (or a sum of them) as the nearest float."""
    return capacity / (1 << CAPACITY_BITS)


class Inventory(NamedTuple):
    provider: int
    resource_class: int
    total: int
    reserved: int
    allocation_ratio: float
    min_unit: int
    max_unit: int
    step_size: int
    used: int

    @property
    def capacity(self):
        return rules.capacity(self.total, self.reserved, self.allocation_ratio)

    def slots(self, amount):
        """rules.slots of this inventory for claims of `amount`."""
        return rules.slots(amount, total=self.total, reserved=self.reserved,
                           allocation_ratio=self.allocation_ratio, used=self.used,
                           min_unit=self.min_unit, max_unit=self.max_unit,
                           step_size=self.step_size)


class Provider(NamedTuple):
    id: int
    parent: int
    traits: int             # a bit per trait (Image.trait_bit)
    aggregates: frozenset   # aggregate ids
    name: str


class Tree:
    """One provider tree: its root's id, name and uuid, its providers (the
    root first, then by id), their inventories (by provider and class), and
    the facets' data (in the order of facets())."""
    __slots__ = ('facets', 'inventories', 'name', 'providers', 'root', 'uuid')

    def __init__(self, root, providers, inventories, facets=(), name=None, uuid=None):
        self.root = root
        self.providers = providers
        self.inventories = inventories
        self.facets = facets
        self.name = name
        self.uuid = uuid

    @property
    def root_provider(self):
        return self.providers[0] if self.providers and self.providers[0].id == self.root else None

    def provider(self, pk):
        for provider in self.providers:
            if provider.id == pk:
                return provider
        return None

    def placement(self):
        """The tree's providers with their parents, traits and aggregates:
        what candidates and their searches see of it beyond its inventories."""
        return self.providers

    def fitting(self, wanted):
        """{(provider, class id)} of the inventories able to take one more
        claim of their class's amount in `wanted` ({class id: amount}), by
        rules.fits as the candidate search reads them."""
        return frozenset(
            (i.provider, i.resource_class) for i in self.inventories
            if i.resource_class in wanted and rules.fits(
                wanted[i.resource_class], total=i.total, reserved=i.reserved,
                allocation_ratio=i.allocation_ratio, used=i.used, min_unit=i.min_unit,
                max_unit=i.max_unit, step_size=i.step_size))

    def aggregates_of(self, provider):
        """The pools a provider (Provider) of this tree is in (rules.pools_of)."""
        root = self.root_provider
        return rules.pools_of(provider.aggregates, root.aggregates if root is not None else ())


class Catalogue(NamedTuple):
    class_names: dict   # class id -> name
    trait_names: dict   # trait id -> name


class Interned:
    """Trait masks, aggregate sets and numbers, each value kept once, and a
    bit position per trait id: what many providers share is held once."""

    def __init__(self):
        self.bits = {}      # trait id -> bit
        self.trait_of_bit = []
        self.values = {}
        self.numbers = {}   # by type too: 1 and 1.0 are equal keys

    def number(self, value):
        return self.numbers.setdefault((type(value), value), value)

    def bit(self, trait_id):
        bit = self.bits.get(trait_id)
        if bit is None:
            bit = self.bits[trait_id] = len(self.trait_of_bit)
            self.trait_of_bit.append(trait_id)
        return bit

    def trait_ids(self, mask):
        """The trait ids of a mask."""
        trait_ids = []
        while mask:
            low = mask & -mask
            trait_ids.append(self.trait_of_bit[low.bit_length() - 1])
            mask ^= low
        return trait_ids

    def traits(self, trait_ids):
        mask = 0
        for trait_id in trait_ids:
            mask |= 1 << self.bit(trait_id)
        return self.values.setdefault(('t', mask), mask)

    def aggregates(self, aggregate_ids):
        aggregates = frozenset(aggregate_ids)
        return self.values.setdefault(('a', aggregates), aggregates)


def facets():
    """The facets other apps add (settings.PLACEMENT_LEDGER_FACETS), by
    key, in the order Tree.facets holds their data (not to be changed)."""
    from django.conf import settings
    return _facets(tuple(settings.PLACEMENT_LEDGER_FACETS))[0]


@functools.lru_cache(maxsize=4)
def _facets(paths):
    """({key: facet}, {key: its place in Tree.facets}): imported once, not
    at each of the thousands of trees a fold or a what-if reads."""
    by_key = {}
    for path in paths:
        facet = import_string(path)
        by_key[facet.key] = facet
    return by_key, {key: place for place, key in enumerate(by_key)}


def facet_data(tree, key):
    """What the facet `key` read for the tree (None: nothing)."""
    from django.conf import settings
    return tree.facets[_facets(tuple(settings.PLACEMENT_LEDGER_FACETS))[1][key]]


# ---- reading trees -------------------------------------------------------------------

def _roots_filter(roots, column):
    """(SQL condition, params) narrowing rows to the trees `roots` (None: all)."""
    if roots is None:
        return '', []
    return f' WHERE {column} IN ({", ".join(["%s"] * len(roots))})', list(roots)


def streamed(connection):
    """rows(sql, params): the rows of a query read a batch at a time (a
    server-side cursor where the database has them), not all at once: a
    cloud's are millions."""
    def rows(sql, params):
        with connection.chunked_cursor() as cursor:
            if hasattr(cursor.cursor, 'itersize'):   # psycopg2's server-side cursor
                cursor.cursor.itersize = 20000
            cursor.execute(sql, params)
            yield from cursor
    return rows


def read_trees(rows, roots, interned, with_facets=True):
    """{root: Tree} of the trees `roots` (None: every tree) as the
    database holds them now (rows: streamed()): a fixed number of queries
    (the facets' left out without `with_facets`)."""
    where, params = _roots_filter(roots, 'rp.root_provider_id')
    members, names = {}, {}
    for pk, parent, root, name, uuid in rows(
            f'SELECT rp.id, rp.parent_provider_id, rp.root_provider_id, rp.name, rp.uuid '
            f'FROM resource_providers rp{where}', params):
        if root is not None:
            members[pk] = (parent, root, name)
            if pk == root:
                names[pk] = (name, uuid)
    traits = collections.defaultdict(list)
    for pk, trait_id in rows(
            f'SELECT t.resource_provider_id, t.trait_id FROM resource_provider_traits t '
            f'JOIN resource_providers rp ON rp.id = t.resource_provider_id{where}', params):
        traits[pk].append(trait_id)
    aggregates = collections.defaultdict(list)
    for pk, aggregate_id in rows(
            f'SELECT a.resource_provider_id, a.aggregate_id FROM resource_provider_aggregates a '
            f'JOIN resource_providers rp ON rp.id = a.resource_provider_id{where}', params):
        aggregates[pk].append(aggregate_id)
    providers = collections.defaultdict(list)
    for pk, (parent, root, name) in members.items():
        providers[root].append(Provider(pk, parent, interned.traits(traits.pop(pk, ())),
                                        interned.aggregates(aggregates.pop(pk, ())), name))
    del traits, aggregates, members
    inventories = collections.defaultdict(list)
    number = interned.number
    for root, provider, class_id, total, reserved, ratio, min_unit, max_unit, step, used in rows(
            f'SELECT rp.root_provider_id, i.resource_provider_id, i.resource_class_id, '
            f'i.total, i.reserved, i.allocation_ratio, i.min_unit, i.max_unit, i.step_size, '
            f'i.used FROM inventories i JOIN resource_providers rp '
            f'ON rp.id = i.resource_provider_id{where} '
            f'ORDER BY i.resource_provider_id, i.resource_class_id', params):
        if root in providers:
            inventories[root].append(Inventory(
                provider, number(class_id), number(total), number(reserved),
                number(float(ratio)), number(min_unit), number(max_unit), number(step), used))
    loaded = [facet.read(rows, roots, providers) if with_facets else {}
              for facet in facets().values()]
    trees = {}
    for root, tree_providers in providers.items():
        tree_providers.sort(key=lambda p: (p.id != root, p.id))   # the root first
        trees[root] = Tree(root, tuple(tree_providers), tuple(inventories.pop(root, ())),
                           tuple(data.get(root) for data in loaded), *names.get(root, (None, None)))
    return trees


def read_catalogue(rows):
    return Catalogue(dict(rows('SELECT id, name FROM resource_classes', [])),
                     dict(rows('SELECT id, name FROM traits', [])))


# ---- the image ------------------------------------------------------------------------

@dataclass(frozen=True)
class Image:
    """The cloud at one moment: its trees, the tree stamps and the books'
    version (providers.change_log) they were read at, the catalogue."""
    version: tuple
    stamps: frozenset   # stamps.read's lines
    trees: dict
    catalogue: Catalogue
    interned: Interned
    # {aggregate id: {root: how many of the tree's providers are members}}
    members: dict
    # {sharing provider id: its root}
    sharing: dict

    @classmethod
    def read(cls, rows, version, tree_stamps, interned=None, with_facets=True):
        """The whole cloud, read now (rows: streamed())."""
        interned = interned or Interned()
        trees = read_trees(rows, None, interned, with_facets)
        image = cls(version, tree_stamps, trees, read_catalogue(rows), interned, {}, {})
        image._index(trees.values(), add=True, owned=set())
        return image

    def changed_roots(self, tree_stamps):
        """The roots whose stamps differ from this image's (new, changed or
        gone; the catalogue's aside)."""
        changed = stamps.roots_of(tree_stamps ^ self.stamps)
        changed.discard(stamps.CATALOGUE)
        return changed

    def succeeded(self, rows, version, tree_stamps, changed):
        """The next image: this one with the trees `changed` read again
        (those gone removed), at `version`."""
        interned = self.interned
        catalogue = self.catalogue
        moved = stamps.roots_of(tree_stamps - self.stamps)   # new or stepped, not gone
        if stamps.CATALOGUE in moved:
            catalogue = read_catalogue(rows)
        present = sorted(moved & changed)
        fresh = {}
        for start in range(0, len(present), 1000):
            fresh.update(read_trees(rows, present[start:start + 1000], interned))
        trees = dict(self.trees)
        old = [trees.pop(root) for root in changed if root in trees]
        trees.update(fresh)
        if self._placed(old) == self._placed(fresh.values()):
            # Only what the trees hold changed (a claim): the aggregates'
            # trees, the sharing providers and whom they serve stay.
            image = Image(version, tree_stamps, trees, catalogue, interned, self.members,
                          self.sharing)
            for name in ('served', 'reach'):
                if name in self.__dict__:
                    image.__dict__[name] = self.__dict__[name]
        else:
            image = Image(version, tree_stamps, trees, catalogue, interned,
                          dict(self.members), dict(self.sharing))
            owned = set()
            image._index(old, add=False, owned=owned)
            image._index(fresh.values(), add=True, owned=owned)
        if 'provider_count' in self.__dict__:
            # Moved by the changed trees alone, not summed over every tree.
            image.__dict__['provider_count'] = (
                self.provider_count - sum(len(tree.providers) for tree in old)
                + sum(len(tree.providers) for tree in fresh.values()))
        return image

    def replaced(self, trees):
        """This image with trees replaced in memory ({root: Tree, or None
        for a tree gone}), nothing read, its version and stamps kept: a
        what-if's cloud (providers.what_if). The aggregate and sharing
        indexes follow the trees, as in succeeded()."""
        kept = dict(self.trees)
        old = [kept.pop(root) for root in trees if root in kept]
        fresh = {root: tree for root, tree in trees.items() if tree is not None}
        kept.update(fresh)
        image = Image(self.version, self.stamps, kept, self.catalogue, self.interned,
                      dict(self.members), dict(self.sharing))
        owned = set()
        image._index(old, add=False, owned=owned)
        image._index(fresh.values(), add=True, owned=owned)
        return image

    def _placed(self, trees):
        """Where the trees' providers sit: (root, provider, aggregates,
        sharing) of each, what the indexes are made of."""
        bit = self.trait_bit(os_traits.MISC_SHARES_VIA_AGGREGATE)
        return {(tree.root, p.id, p.aggregates, bit is not None and bool(p.traits >> bit & 1))
                for tree in trees for p in tree.providers}

    def _index(self, trees, add, owned):
        """Count the trees in (or out of) the aggregate and sharing indexes.
        Only called on an image being built; `owned`: the aggregates whose
        root counts this image already copied from the last one's."""
        sharing_bit = self.trait_bit(os_traits.MISC_SHARES_VIA_AGGREGATE)
        for tree in trees:
            for provider in tree.providers:
                for aggregate_id in provider.aggregates:
                    roots = self.members.get(aggregate_id)
                    if aggregate_id not in owned:
                        roots = dict(roots or {})
                        owned.add(aggregate_id)
                    elif roots is None:
                        roots = {}
                    roots[tree.root] = roots.get(tree.root, 0) + (1 if add else -1)
                    if not roots[tree.root]:
                        del roots[tree.root]
                    if roots:
                        self.members[aggregate_id] = roots
                    else:
                        self.members.pop(aggregate_id, None)
                if sharing_bit is not None and provider.traits >> sharing_bit & 1:
                    if add:
                        self.sharing[provider.id] = tree.root
                    else:
                        self.sharing.pop(provider.id, None)

    # ---- what the catalogue and the trees say ---------------------------------------

    @functools.cached_property
    def trait_ids(self):
        return {name: pk for pk, name in self.catalogue.trait_names.items()}

    def trait_bit(self, name):
        """The bit of the trait named `name` in provider masks (None: unknown)."""
        pk = self.trait_ids.get(name)
        return None if pk is None else self.interned.bit(pk)

    @functools.cached_property
    def provider_count(self):
        return sum(len(tree.providers) for tree in self.trees.values())

    def trait_ids_of(self, mask):
        return self.interned.trait_ids(mask)

    def class_name(self, class_id):
        return self.catalogue.class_names.get(class_id, str(class_id))

    @functools.cached_property
    def served(self):
        """{sharing provider id: roots of the trees it serves}: those of
        the providers sharing an aggregate with it, and its own."""
        served = {}
        for provider, root in self.sharing.items():
            tree = self.trees.get(root)
            roots = {root}
            sharing_provider = tree.provider(provider) if tree is not None else None
            for aggregate_id in sharing_provider.aggregates if sharing_provider is not None else ():
                roots.update(self.members.get(aggregate_id, ()))
            served[provider] = frozenset(roots)
        return served

    @functools.cached_property
    def reach(self):
        """{root: frozenset of the sharing providers serving the tree}, for
        the trees some sharing provider serves (scopes.reached_roots)."""
        reach = collections.defaultdict(set)
        for provider, roots in self.served.items():
            for root in roots:
                reach[root].add(provider)
        return {root: frozenset(providers) for root, providers in reach.items()}
