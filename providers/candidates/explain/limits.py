"""Which limit stops a tree (or a provider) from taking a class's amount.

A unit the funnel counts (a tree, for the unsuffixed group in a cloud of
trees or sharing providers; else a provider) takes a class when one
provider it can draw on passes every limit of providers.rules for the
amount: in a tree, one of the tree's providers or a sharing provider
serving the tree. When none does, the binding limit is the one whose change
alone would let the unit take it:
- a provider refused by one limit only names it; an inventory's own
  settings (max_unit, min_unit, step_size) before capacity, since they
  refuse whatever is free;
- capacity alone is a split when the tree's own providers that would take
  the amount together have it free (a NUMA-modelled host whose two halves
  each have less);
- every provider refused by two limits or more: 'limits';
- no provider of the class at all: 'none', or 'unreached' when sharing
  providers the group may use offer the class but none serves the tree.
From the inventories research read for the explanation; no I/O.
"""
import collections
from dataclasses import dataclass
from dataclasses import field
from typing import NamedTuple

from providers import rules

UNREACHED, NONE, LIMITS, SPLIT = 'unreached', 'none', 'limits', 'split'


class Offer(NamedTuple):
    """A provider's inventory of a class, as a claim of `amount` meets it
    (a tuple: an empty answer's explanation makes one per inventory, 60,000
    at 40,000 nodes)."""
    provider_id: int
    own: bool            # the unit's own (not a sharing provider serving it)
    room: float          # capacity - used: below 0 when over capacity (what a claim
                         # lacks counts from it; rules.free never goes below 0)
    refused: tuple       # rules.refusals for the amount
    min_unit: int
    max_unit: int
    step_size: int


@dataclass
class Binding:
    """Why a unit cannot take a class's amount."""
    limit: str           # a rules.LIMITS name, SPLIT, LIMITS, NONE or UNREACHED
    offer: Offer = None  # the provider that came closest (None for NONE, UNREACHED)
    lacking: float = 0   # how far that provider is from taking the amount, in the limit's terms
    free: float = 0      # SPLIT: what the tree's providers have free together
    providers: int = 0   # SPLIT: how many


def binding_of(amount, offers, *, tree):
    """The Binding of a unit offered `offers`, or None when one of them
    takes the amount."""
    if not offers:
        return Binding(NONE)
    singles = {}
    for offer in offers:
        if not offer.refused:
            return None
        if len(offer.refused) == 1:
            limit = offer.refused[0]
            if limit not in singles or _closer(limit, amount, offer, singles[limit]):
                singles[limit] = offer
    for limit in rules.LIMITS:
        if limit not in singles:
            continue
        offer = singles[limit]
        if limit == 'capacity' and tree:
            split = [o for o in offers if o.own and o.refused == ('capacity',) and o.room > 0]
            together = sum(o.room for o in split)
            if len(split) > 1 and together >= amount:
                return Binding(SPLIT, offer, amount - offer.room, together, len(split))
        return Binding(limit, offer, _lacking(limit, amount, offer))
    return Binding(LIMITS, min(offers, key=lambda o: (len(o.refused), -o.room)))


def _lacking(limit, amount, offer):
    if limit == 'max_unit':
        return amount - offer.max_unit
    if limit == 'min_unit':
        return offer.min_unit - amount
    if limit == 'step_size':
        return min(amount % offer.step_size, offer.step_size - amount % offer.step_size)
    return amount - offer.room


def _closer(limit, amount, offer, than):
    return (_lacking(limit, amount, offer), offer.provider_id) < (
        _lacking(limit, amount, than), than.provider_id)


@dataclass
class Causes:
    """The bindings of the units a resource step eliminated, counted by
    limit, with what the wording needs of each."""
    name: str
    amount: int
    counts: collections.Counter = field(default_factory=collections.Counter)
    max_units: set = field(default_factory=set)   # the max_units refusing (max_unit)
    min_units: set = field(default_factory=set)   # the min_units refusing (min_unit)
    steps: set = field(default_factory=set)       # the step sizes refusing (step_size)
    split_free: float = 0        # the most a split tree has free together
    split_largest: float = 0     # ... and on its largest provider

    def add(self, binding):
        self.counts[binding.limit] += 1
        offer = binding.offer
        if binding.limit == 'max_unit':
            self.max_units.add(offer.max_unit)
        elif binding.limit == 'min_unit':
            self.min_units.add(offer.min_unit)
        elif binding.limit == 'step_size':
            self.steps.add(offer.step_size)
        elif binding.limit == SPLIT and binding.free > self.split_free:
            self.split_free, self.split_largest = binding.free, offer.room


class Offers:
    """What each unit can draw on, from what research read for the
    explanation (findings.Researched: the inventories of the groups'
    classes, the trees served by their sharing providers without room).
    No I/O."""

    def __init__(self, researched):
        self.rows = researched.inventories or {}  # {class id: {provider id: row}}
        self.served = researched.served or {}
        self.roots_of = researched.provider_roots
        self._reach = {}
        self._offers = {}
        self._bindings = {}

    def of_class(self, findings, name):
        """{unit: [Offer]} for the group's class `name` (absent: none)."""
        key = (findings.suffix, name)
        if key not in self._offers:
            self._offers[key] = self._of_class(findings, name)
        return self._offers[key]

    def bindings(self, findings, name):
        """{unit: Binding} of the units offered the class that cannot take
        the group's amount of it (a unit absent takes it, or has no offer)."""
        key = (findings.suffix, name)
        if key not in self._bindings:
            amount, tree = findings.resources[name], findings.tree_mode
            self._bindings[key] = {
                unit: binding for unit, offers in self.of_class(findings, name).items()
                if (binding := binding_of(amount, offers, tree=tree)) is not None}
        return self._bindings[key]

    def _of_class(self, findings, name):
        rows = self.rows.get(findings.class_ids.get(name), {})
        amount = findings.resources[name]
        offers = collections.defaultdict(list)
        reach = self.sharing_reach(findings)
        met = {}    # row -> (room, refusals): a cloud's inventories repeat a few shapes
        for provider_id, row in rows.items():
            if row not in met:
                total, reserved, ratio, used, min_unit, max_unit, step = row
                capacity = rules.capacity(total, reserved, ratio)
                met[row] = (rules.room(capacity, used or 0), rules.refusals(
                    amount, total=total, reserved=reserved, allocation_ratio=ratio,
                    used=used or 0, min_unit=min_unit, max_unit=max_unit, step_size=step))
            room, refused = met[row]
            _, _, _, _, min_unit, max_unit, step = row
            unit = self.roots_of[provider_id] if findings.tree_mode else provider_id
            offers[unit].append(Offer(provider_id, True, room, refused, min_unit, max_unit, step))
            for served in reach.get(provider_id, ()):
                if served != unit:
                    offers[served].append(
                        Offer(provider_id, False, room, refused, min_unit, max_unit, step))
        return offers

    def sharing_reach(self, findings):
        """{sharing provider: the trees it serves} for a group that may draw
        on sharing providers outside its trees ({} otherwise)."""
        if not (findings.tree_mode and findings.sharing and not findings.group.in_tree):
            return {}
        if findings.suffix not in self._reach:
            self._reach[findings.suffix] = {
                p: findings.served.get(p, set()) | self.served.get(p, set())
                for p in findings.sharing}
        return self._reach[findings.suffix]

    def offered_by_sharing(self, findings, name):
        """Do sharing providers the group may use offer the class at all?"""
        rows = self.rows.get(findings.class_ids.get(name), {})
        return bool(self.sharing_reach(findings)) and any(p in rows for p in findings.sharing)


def causes(findings, name, inventories, units):
    """The Causes of the units the step of class `name` eliminated
    (inventories: the Offers read for the explanation)."""
    unreached = inventories.offered_by_sharing(findings, name)
    offered = inventories.of_class(findings, name)
    bindings = inventories.bindings(findings, name)
    counted = Causes(name, findings.resources[name])
    for unit in units:
        binding = bindings.get(unit)
        if binding is None:
            if unit in offered:     # it takes the class: eliminated by another after all
                continue
            binding = Binding(UNREACHED if unreached else NONE)
        counted.add(binding)
    return counted
