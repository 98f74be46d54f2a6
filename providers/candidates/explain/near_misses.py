"""Near misses: for a group that fits (nearly) nothing, the trees or
providers closest to fitting it, and by how much they fall short, from the
funnels and the inventories research read (limits.Offers); named once
chosen (named)."""
import dataclasses
import heapq
import math
from dataclasses import dataclass
from dataclasses import field

from providers.candidates.explain import limits
from providers.candidates.explain import wording

# A group that fits fewer trees (providers) than this is nearly empty, and
# its closest misses are named: this many at most.
NEARLY_EMPTY = 3
NEAR_MISSES = 3


@dataclass
class NearMiss:
    """A tree (or provider) that meets every constraint of its group but
    one resource class, with the limit that stops it and by how much."""
    group: str
    unit: str           # 'trees' or 'providers', as the group's funnel counts
    tree_id: int
    provider_id: int    # the provider of the tree that came closest
    resource_class: str
    requested: int
    lacking: int        # in the limit's terms: what is missing free (capacity,
                        # split), above max_unit, below min_unit, off the step
    limit: str          # a providers.rules.LIMITS name, 'split', or 'limits' (several
                        # at once: binding.offer.refused names them)
    binding: object = field(default=None, repr=False)   # its limits.Binding
    tree: str = ''      # names and uuids, read for the closest only
    tree_uuid: str = ''
    provider: str = ''
    provider_uuid: str = ''

    @property
    def name(self):
        return self.tree if self.unit == 'trees' else self.provider

    @property
    def shortfall(self):
        binding, name = self.binding, self.resource_class
        if self.limit == 'split':
            return wording.refused_by_one(
                'split', asked=f'{int(binding.free):,} {name}',
                across=f'{binding.providers} providers', largest=f'{int(binding.offer.room):,}')
        if self.limit == 'capacity':
            return wording.refused_by_one('capacity', lacking=f'{self.lacking:,} {name}')
        return ' and '.join(self._said(limit)[0] for limit in binding.offer.refused)

    @property
    def change(self):
        """The least change that would let it fit."""
        if self.limit in ('split', 'capacity'):
            return wording.change(self.limit, name=self.resource_class, where=self.provider,
                                  amount=self.requested, lacking=self.lacking)
        return ' and '.join(self._said(limit)[1] for limit in self.binding.offer.refused)

    def _said(self, limit):
        """(what the closest provider's `limit` refuses, the change that
        lifts it)."""
        offer, name, amount = self.binding.offer, self.resource_class, self.requested
        lacking = math.ceil(amount - offer.room)
        value = f'{getattr(offer, limit):,}' if limit in wording.UNIT_LIMITS else ''
        return (wording.refused_by_one(limit, name=name, values=value,
                                       lacking=f'{lacking:,} {name}'),
                wording.change(limit, name=name, where=self.provider, amount=amount,
                               lacking=lacking))

    @property
    def text(self):
        return f'{self.name} {self.shortfall}'


def near_misses(explained, roots_of, inventories, asked=None):
    """The closest misses of every group that fits fewer trees (providers)
    than NEARLY_EMPTY or than the `asked` limit (see _group_near_misses),
    not named yet ({(group findings, its constraints, its funnel)}:
    `explained`; inventories: the limits.Offers the funnels read)."""
    fewer = max(NEARLY_EMPTY, asked or 0)
    misses = []
    for findings, constraints, funnel in explained:
        if findings.resources and len(funnel.passed) < fewer:
            misses += _group_near_misses(findings, constraints, funnel, inventories, roots_of)
    return misses


def named(misses, names):
    """The misses with the names and uuids of their trees and providers
    (names: {provider id: (name, uuid)})."""
    return [dataclasses.replace(miss, tree=names[miss.tree_id][0],
                                tree_uuid=names[miss.tree_id][1],
                                provider=names[miss.provider_id][0],
                                provider_uuid=names[miss.provider_id][1]) for miss in misses]


def _group_near_misses(findings, constraints, funnel, inventories, roots_of):
    """The NEAR_MISSES trees (providers) closest to fitting the group among
    those it eliminated: they meet every constraint of the group but one
    resource class, which one limit alone stops (limits.binding_of: capacity,
    max_unit, min_unit, step_size, or a split of what a tree has free), or,
    after those, several limits of its closest provider at once. Closest:
    lacking the smallest share of the amount asked, then the smallest
    amount, then the oldest tree (provider). In a tree a required
    trait counts on any provider with an inventory of a requested class."""
    trees, resources = findings.tree_mode, findings.resources
    others = findings.units(roots_of) - funnel.passed
    for constraint in constraints:
        if constraint.kind == 'resources' or (trees and constraint.kind == 'required'):
            continue
        others = constraint.keep(others)
    if not others:
        return []
    offers = {name: inventories.of_class(findings, name) for name in resources}
    bindings = {name: inventories.bindings(findings, name) for name in resources}
    closest = []   # (key, unit, class name, its binding): named for the closest alone
    for unit in others:
        if not all(unit in offers[name] for name in resources):
            continue    # it has no inventory of a class at all: not close
        short = [(name, bindings[name][unit]) for name in resources if unit in bindings[name]]
        if len(short) != 1:
            continue
        if trees and findings.required_sets:
            supplying = {offer.provider_id for name in resources
                         for offer in offers[name][unit]}
            if any(having.isdisjoint(supplying) for having in findings.required_sets):
                continue
        (name, binding), = short
        several = binding.limit == limits.LIMITS
        amount = resources[name]
        lacking = math.ceil(max(amount - binding.offer.room, 0) if several
                            else binding.lacking)
        # One limit away first, then those several limits stop.
        closest.append(((several, lacking / amount, lacking, unit), name, lacking,
                        binding))
    misses = []
    for (_, _, _, unit), name, lacking, binding in heapq.nsmallest(
            NEAR_MISSES, closest, key=lambda entry: entry[0]):
        provider_id = binding.offer.provider_id
        misses.append(NearMiss(
            findings.suffix, funnel.unit, roots_of[unit] if trees else roots_of[provider_id],
            provider_id, name, resources[name], lacking, binding.limit, binding))
    return misses
