"""Combining: the groups' allocation requests into candidates, in Python.

For one group its requests are the candidates (less the copies a sharing
provider makes for each tree it serves). For several groups, per anchor tree:
the product of the groups' requests, pruned as soon as a provider's capacity
or max_unit is exceeded, then group_policy=isolate, same_subtree, and
Placement's pre-check that a tree can hold the classes several groups ask
for. Then the rule before 1.29 (one provider per tree), and the limit.

Pure: a function of the groups' requests, the findings and the provider
summaries the selector read for them before combining; with lazy=True it
hands several groups' candidates on as it makes them, reading nothing.
Also the rule of how many candidates the answer takes (answer_stops_at),
which research reads no more trees than.
"""
import collections
import itertools
import random
from dataclasses import dataclass

from providers.candidates.findings import Stage
from providers.candidates.findings import StageRecord
from providers.candidates.matching import AllocationRequest


@dataclass(frozen=True)
class Combined:
    requests: object     # the candidates (AllocationRequests), limited: a list, or lazily
                         # made, an iterator
    summarized: set      # before 1.29: the providers candidates use (None: every one)
    records: list        # StageRecords: COMBINED


class Combination:
    """Combines the requests of a query's groups; no I/O."""

    def __init__(self, query, wide, settings):
        self.query = query
        self.params = query.params
        self.nested_aware = query.nested_aware
        self.wide = wide                   # the RequestFindings
        self.settings = settings
        self.class_totals = collections.Counter()
        self.multi_group_classes = set()
        for group in query.groups.values():
            for name, amount in group.resources.items():
                if name in self.class_totals:
                    self.multi_group_classes.add(name)
                self.class_totals[name] += amount

    def candidates(self, by_suffix, findings, summaries, lazy=False):
        """The Combined candidates of the groups' requests ({suffix:
        requests}), given the groups' findings ({suffix: GroupFindings})
        and, when several groups are combined, the summaries ({provider id:
        ProviderSummary}) of every tree their requests use. lazy=True, when
        streams(): several groups' candidates as an iterator that makes
        them as they are read (no COMBINED record: they are not counted)."""
        if lazy and len(by_suffix) > 1:
            return Combined(self.iter_combined(by_suffix, summaries), None, [])
        requests = self.merge(by_suffix, findings, summaries)
        record = StageRecord(Stage.COMBINED, '', len(requests))
        requests, summarized = self.exclude_nested(requests)
        return Combined(self.limit(requests), summarized, [record])

    def stop_at(self):
        """How many candidates to make at most (-1: all): answer_stops_at."""
        return answer_stops_at(self.query, self.settings, self.wide.has_trees)

    def sample_size(self):
        """How many to draw at random before building them: answer_sample_size."""
        return answer_sample_size(self.query, self.settings, self.wide.has_trees)

    def streams(self):
        """May the candidates be handed on as they are made (candidates(...,
        lazy=True))? answer_streams."""
        return answer_streams(self.query, self.settings, self.wide.has_trees)

    def _excluding(self):
        """Will candidates be dropped after they are made (exclude_nested)?"""
        return drops_nested(self.query, self.wide.has_trees)

    def merge(self, by_suffix, findings, summaries):
        if len(by_suffix) == 1:
            return self.one_group(by_suffix, findings)
        return list(self.iter_combined(by_suffix, summaries))

    def one_group(self, by_suffix, findings):
        """One group: its requests are the candidates (every provider in
        them passed the capacity check for its amount), less the copies a
        sharing provider makes for each tree it serves."""
        stop_at = self.stop_at()
        merged, seen = [], set()
        sharing = self.wide.sharing
        suffix, requests = next(iter(by_suffix.items()))
        # A tree group's requests come without those copies already.
        dedupe = bool(sharing) and not findings[suffix].tree_mode
        for request in requests:
            if dedupe and request.only_sharing(sharing):
                key = request.key()
                if key in seen:
                    continue
                seen.add(key)
            merged.append(request)
            if 0 <= stop_at <= len(merged):
                break
        return merged

    def iter_combined(self, by_suffix, summaries):
        """The candidates of several groups, as they are made: per anchor
        tree, the combinations that fit (checked with the summaries of
        every tree involved) and meet group_policy and same_subtree."""
        stop_at = self.stop_at()
        by_anchor = collections.defaultdict(lambda: collections.defaultdict(list))
        for suffix, requests in by_suffix.items():
            for request in requests:
                by_anchor[request.anchor][suffix].append(request)
        all_suffixes = set(by_suffix)
        granular = len(all_suffixes - {''})
        # Each tree is looked at only when combining reaches it: a limit
        # may be met in the first of a thousand.
        generators = [self.tree_combinations(lists, summaries)
                      for lists in by_anchor.values() if set(lists) == all_suffixes]
        sharing = self.wide.sharing
        if self.settings.strategy == 'breadth-first':
            combos = _roundrobin(generators)
        else:
            combos = itertools.chain(*generators)
        # Two combinations come out the same only when they use sharing
        # providers alone (once per tree they serve), or in a tree where a
        # group has several requests on the same providers: only those are
        # compared.
        coincide = {}   # anchor -> may two of its combinations coincide?
        seen, made = set(), 0
        for combo in combos:
            if not self.satisfies_group_policy(combo, granular):
                continue
            if not self.satisfies_same_subtree(combo, summaries):
                continue
            request = CombinedRequest(combo)
            anchor = combo[0].anchor
            may = coincide.get(anchor)
            if may is None:
                may = coincide[anchor] = _may_coincide(by_anchor[anchor])
            if may or (sharing and request.only_sharing(sharing)):
                key = request.key()
                if key in seen:
                    continue
                seen.add(key)
            yield request
            made += 1
            if 0 <= stop_at <= made:
                return

    def tree_combinations(self, lists, summaries):
        """The combinations of one anchor tree's requests ({suffix:
        requests}) that fit, unless the tree cannot hold what several
        groups ask of one class."""
        if self.tree_can_hold(lists, summaries):
            yield from self.products(list(lists.values()), summaries)

    def products(self, lists, summaries):
        """The cartesian product of the groups' requests, pruning prefixes
        that already exceed a provider's capacity or max_unit."""
        lists = [tuple(items) for items in lists]
        # (provider id, class) -> (room, max_unit): room as rules.room defines
        # it, capacity - used, below 0 when over capacity (rules imports
        # Django; this module does not).
        limits = {}
        for items in lists:
            for request in items:
                for provider_id, class_name, _ in request.resources:
                    capacity, used, max_unit = summaries[provider_id].resources[class_name]
                    limits[(provider_id, class_name)] = (capacity - used, max_unit)
        return _extend(lists, 0, [None] * len(lists), collections.Counter(), limits)

    def tree_can_hold(self, lists, summaries):
        """Placement's pre-check: a tree whose providers together lack the
        capacity asked of classes requested by several groups is skipped."""
        if not self.multi_group_classes:
            return True
        provider_ids = {p for requests in lists.values() for r in requests
                        for p, _, _ in r.resources}
        for name in self.multi_group_classes:
            available = sum(summaries[p].resources[name][0] for p in provider_ids
                            if name in summaries[p].resources)
            if self.class_totals[name] > available:
                return False
        return True

    def satisfies_group_policy(self, combo, granular):
        """isolate: each suffixed group on a provider of its own."""
        if self.params.group_policy != 'isolate':
            return True
        providers = set()
        for request in combo:
            if request.use_same_provider:
                providers |= next(iter(request.mappings.values()))
        return len(providers) == granular

    def satisfies_same_subtree(self, combo, summaries):
        for suffixes in self.params.same_subtrees:
            provider_ids = set()
            for request in combo:
                for suffix in suffixes:
                    provider_ids |= request.mappings.get(suffix, set())
            if not self.same_subtree(provider_ids, summaries):
                return False
        return True

    def same_subtree(self, provider_ids, summaries):
        """One of the providers is an ancestor of (or is) all the others."""
        if len(provider_ids) <= 1:
            return True
        common = None
        for provider_id in provider_ids:
            ancestors = set()
            current = provider_id
            while current is not None:
                ancestors.add(current)
                current = summaries[current].parent_id
            common = ancestors if common is None else common & ancestors
        return bool(common & provider_ids)

    def exclude_nested(self, requests):
        """(requests, summarized): before 1.29 a candidate may use only one
        provider per tree, and the summaries cover only providers some
        candidate uses (chosen, as in Placement, before any limit
        applies)."""
        if not self._excluding():
            return requests, None
        root_of = self.wide.root_of
        kept = []
        for request in requests:
            providers = {p for p, _, _ in request.resources}
            roots = {root_of(request, p) for p in providers}
            if len(providers) == len(roots):
                kept.append(request)
        return kept, {p for r in kept for p, _, _ in r.resources}

    def limit(self, requests):
        limit = self.params.limit
        if limit and limit < len(requests):
            if self.settings.randomize:
                requests = random.sample(requests, limit)
            else:
                requests = requests[:limit]
        elif self.settings.randomize:
            random.shuffle(requests)
        return requests


# ---- how many candidates the answer takes (research reads no more trees than that) ----

def drops_nested(query, has_trees):
    """Are candidates dropped once made? Before microversion 1.29, in a
    cloud of trees, a candidate may use one provider per tree."""
    return not query.nested_aware and has_trees


def answer_stops_at(query, settings, has_trees):
    """How many candidates to make at most (-1: all)."""
    most = settings.max_candidates
    limit = query.params.limit
    if limit and not settings.randomize and not drops_nested(query, has_trees):
        # Any `limit` of the candidates is a correct answer (their order
        # is undefined), so stop as soon as there are enough.
        most = limit if most < 0 else min(most, limit)
    return most


def answer_sample_size(query, settings, has_trees):
    """How many candidates to draw at random before building them (None:
    build them all, then draw): a `limit` with randomization, when nothing
    caps or drops candidates once made."""
    limit = query.params.limit
    if (limit and settings.randomize and settings.max_candidates < 0
            and not drops_nested(query, has_trees)):
        return limit
    return None


def answer_streams(query, settings, has_trees):
    """May several groups' candidates be handed on as they are made? Not
    when all of them are needed first (to draw some at random or to drop
    nested ones), nor when the answer takes a bounded number (then a list
    of them is small, and the trees they use are known before the answer
    is written)."""
    return (not settings.randomize and not drops_nested(query, has_trees)
            and answer_stops_at(query, settings, has_trees) < 0)


def _roundrobin(generators):
    pending = collections.deque(generators)
    while pending:
        generator = pending.popleft()
        try:
            item = next(generator)
        except StopIteration:
            continue
        yield item
        pending.append(generator)


def _extend(lists, index, chosen, added, limits):
    """products(), from the index-th group on: `chosen` the requests taken
    so far, `added` what they take of each (provider, class). (A function
    of the module: a generator closing over itself would be a reference
    cycle per tree, left for the cycle collector.)"""
    last = len(lists) - 1
    for request in lists[index]:
        taken = []
        for provider_id, class_name, amount in request.resources:
            key = (provider_id, class_name)
            total = added[key] + amount
            room, max_unit = limits[key]
            if total > room or total > max_unit:
                break
            added[key] = total
            taken.append((key, amount))
        else:
            chosen[index] = request
            if index == last:
                yield tuple(chosen)
            else:
                yield from _extend(lists, index + 1, chosen, added, limits)
        for key, amount in taken:
            added[key] -= amount


def _may_coincide(lists):
    """Can two combinations of this tree come out the same? Only when one
    of its groups has two requests on the same providers (the same
    mappings), which may sum to the same amounts."""
    for requests in lists.values():
        mapped = {tuple(sorted(p for ids in r.mappings.values() for p in ids)) for r in requests}
        if len(mapped) < len(requests):
            return True
    return False


class CombinedRequest(AllocationRequest):
    """Several groups' requests in one tree taken together. Its resources
    and mappings are summed when first read: an answer written from its
    parts never needs them."""
    __slots__ = ('parts', '_summed')

    def __init__(self, parts):
        self.parts = parts
        self._summed = None

    def _whole(self):
        if self._summed is None:
            self._summed = consolidate(self.parts)
        return self._summed

    anchor = property(lambda self: self.parts[0].anchor)
    resources = property(lambda self: self._whole().resources)
    mappings = property(lambda self: self._whole().mappings)
    use_same_provider = property(lambda self: self._whole().use_same_provider)

    def only_sharing(self, sharing):
        return all(part.only_sharing(sharing) for part in self.parts)


def consolidate(combo):
    """Requests of several groups -> one, summing amounts per provider/class."""
    amounts = {}
    mappings = {}
    for request in combo:
        for provider_id, class_name, amount in request.resources:
            key = (provider_id, class_name)
            amounts[key] = amounts.get(key, 0) + amount
        # Each group maps only its own suffix: no two parts share one.
        mappings.update(request.mappings)
    return AllocationRequest(combo[0].anchor,
                             [(p, c, a) for (p, c), a in amounts.items()], mappings)
