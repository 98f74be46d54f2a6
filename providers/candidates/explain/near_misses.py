"""Near misses: for a group that fits (nearly) nothing, the trees or
providers closest to fitting it, and by how much they fall short."""
import collections
import math
from dataclasses import dataclass

from providers import rules
from providers.candidates.explain.funnel import universe
from providers.candidates.research import trees_served
from providers.models import Inventory, ResourceProvider

# A group that fits fewer trees (providers) than this is nearly empty, and
# its closest misses are named: this many at most.
NEARLY_EMPTY = 3
NEAR_MISSES = 3


@dataclass
class NearMiss:
    """A tree (or provider) that meets every constraint of its group but
    one resource class, with what it lacks of it."""
    group: str
    unit: str           # 'trees' or 'providers', as the group's funnel counts
    tree_id: int
    provider_id: int    # the provider of the tree that came closest
    resource_class: str
    requested: int
    lacking: int
    limit: str          # 'capacity' (free capacity) or 'max_unit'
    tree: str = ''      # names and uuids, read for the closest only
    tree_uuid: str = ''
    provider: str = ''
    provider_uuid: str = ''

    @property
    def name(self):
        return self.tree if self.unit == 'trees' else self.provider

    @property
    def shortfall(self):
        if self.limit == 'max_unit':
            return (f'takes at most {self.requested - self.lacking:,} {self.resource_class} '
                    'at once (max_unit)')
        return f'lacks {self.lacking:,} {self.resource_class}'

    @property
    def text(self):
        return f'{self.name} {self.shortfall}'



def near_misses(explained, roots_of):
    """The closest misses of every nearly empty group (see
    _group_near_misses), named. At most three queries: the inventories of
    the groups' classes, the trees their sharing providers serve, the
    names of the closest."""
    wanted = [(found, constraints, funnel) for found, constraints, funnel in explained
              if found.resources and len(funnel.passed) < NEARLY_EMPTY]
    class_ids = {class_id for found, _, _ in wanted for class_id in found.class_ids.values()
                 if class_id is not None}
    if not class_ids:
        return []
    inventories = list(Inventory.objects.filter(resource_class_id__in=class_ids).values_list(
        'resource_provider_id', 'resource_class_id', 'total', 'reserved', 'allocation_ratio',
        'used', 'min_unit', 'max_unit', 'step_size').order_by())
    # The trees that sharing providers without room enough serve (those
    # with room are known from the research).
    unserved = {row[0] for row in inventories for found, _, _ in wanted
                if _sharing_scope(found) and row[0] in found.sharing
                and row[0] not in found.served}
    served = trees_served(unserved)
    misses = []
    for found, constraints, funnel in wanted:
        misses += _group_near_misses(found, constraints, funnel, inventories, served, roots_of)
    if misses:
        named = {pk: (name, uuid) for pk, name, uuid in ResourceProvider.objects.filter(
            pk__in={m.tree_id for m in misses} | {m.provider_id for m in misses}).values_list(
            'pk', 'name', 'uuid')}
        for miss in misses:
            miss.tree, miss.tree_uuid = named[miss.tree_id]
            miss.provider, miss.provider_uuid = named[miss.provider_id]
    return misses


def _sharing_scope(found):
    """Does the group take classes from sharing providers? (Not within
    one tree, see Research._sharing.)"""
    return found.tree_mode and bool(found.sharing) and not found.group.in_tree


def _group_near_misses(found, constraints, funnel, inventories, served, roots_of):
    """The NEAR_MISSES trees (providers) closest to fitting the group among
    those it eliminated: they meet every constraint of the group but one
    resource class, which one of their providers (or a sharing provider
    serving the tree) has but cannot take as much of as asked. Closest:
    lacking the smallest share of the amount asked, then the smallest
    amount, then the oldest tree (provider).

    How much a provider lacks honours its allocation ratio, reserved and
    used amounts (what the capacity check compares) and its max_unit; a
    provider whose min_unit or step size refuses the amount is not close.
    In a tree a required trait counts on any provider with an inventory
    of a requested class that could take it, had it room enough."""
    trees, resources = found.tree_mode, found.resources
    names = {class_id: name for name, class_id in found.class_ids.items() if class_id is not None}
    others = universe(found, roots_of) - funnel.passed
    for constraint in constraints:
        if constraint.kind == 'resources' or (trees and constraint.kind == 'required'):
            continue
        others = constraint.keep(others)
    if not others:
        return []
    sharing = found.sharing if _sharing_scope(found) else frozenset()
    best = {}                                  # (unit, class name) -> (lacking, provider, limit)
    supplying = collections.defaultdict(set)   # unit -> providers that could take a class
    for provider_id, class_id, total, reserved, ratio, used, min_unit, max_unit, step in \
            inventories:
        name = names.get(class_id)
        if name is None or provider_id not in roots_of:
            continue
        amount = resources[name]
        if amount < min_unit or amount % step:
            continue
        lacking, limit = _shortfall(amount, total, reserved, ratio, used or 0, max_unit)
        units = {roots_of[provider_id]} if trees else {provider_id}
        if provider_id in sharing:
            units |= found.served.get(provider_id, set()) | served.get(provider_id, set())
        for unit in units & others:
            supplying[unit].add(provider_id)
            key = (unit, name)
            if key not in best or (lacking, provider_id) < best[key][:2]:
                best[key] = (lacking, provider_id, limit)
    if trees:
        for having in found.required_sets:
            others = {unit for unit in others if not having.isdisjoint(supplying[unit])}
    closest = []
    for unit in others:
        short = [(name, best.get((unit, name))) for name in resources]
        if not all(b for _, b in short):
            continue  # it has no inventory of a class at all: not close
        short = [(name, b) for name, b in short if b[0] > 0]
        if len(short) != 1:
            continue
        (name, (lacking, provider_id, limit)), = short
        amount = resources[name]
        closest.append(((lacking / amount, lacking, unit), NearMiss(
            found.suffix, funnel.unit, roots_of[unit] if trees else roots_of[provider_id],
            provider_id, name, amount, lacking, limit)))
    closest.sort(key=lambda pair: pair[0])
    return [miss for _, miss in closest[:NEAR_MISSES]]


def _shortfall(amount, total, reserved, ratio, used, max_unit):
    """(how much more an inventory would need to take `amount`, and what
    limits it: 'capacity' or 'max_unit'); at most 0 when it fits. The
    capacity check is used + amount <= capacity (providers.rules)."""
    by_capacity = math.ceil(used + amount - rules.capacity(total, reserved, ratio))
    by_max_unit = amount - max_unit
    if by_max_unit > by_capacity:
        return by_max_unit, 'max_unit'
    return by_capacity, 'capacity'
