"""When every request group fits on its own but no combination of them
does: which rule of combining stops each tree, counted.

The combining stage (combine.Combination) is pure, so its checks are asked
again here tree by tree, over the groups' requests the search kept
(CandidateResult.group_requests) and the summaries it read:
- 'apart': the tree has requests for some groups only;
- 'tree_capacity': Placement's pre-check, the tree's providers together
  lack what several groups ask of one class;
- 'provider_capacity': every combination puts more on a provider than its
  capacity or max_unit allows (groups that would share a provider);
- 'isolate', 'same_subtree', 'isolate_and_same_subtree',
  'isolate_with_same_subtree': combinations fit, but none meets
  group_policy=isolate, none same_subtree, none either, or none both at
  once (a rule the request does not use is always met, so never named);
- 'one_provider_per_tree': before microversion 1.29 a candidate may use
  one provider per tree only.
A tree's combinations are looked at up to COMBINATIONS_SEEN.
"""
import collections
import itertools

from providers.candidates.combine import Combination
from providers.candidates.query import SearchSettings

COMBINATIONS_SEEN = 5000


def blocked_trees(query, result, settings=None):
    """collections.Counter {cause: trees} for a request of several groups
    whose answer is empty although each group has requests; empty
    otherwise."""
    by_suffix = result.group_requests
    if (len(query.groups) < 2 or result.allocation_requests or not by_suffix
            or set(by_suffix) != set(query.groups)):
        return collections.Counter()
    combination = Combination(query, result.wide, settings or SearchSettings.from_django())
    summaries = result.summaries_by_id
    by_anchor = collections.defaultdict(lambda: collections.defaultdict(list))
    for suffix, requests in by_suffix.items():
        for request in requests:
            by_anchor[request.anchor][suffix].append(request)
    granular = len(set(by_suffix) - {''})
    counted = collections.Counter()
    for lists in by_anchor.values():
        if len(lists) < len(by_suffix):
            counted['apart'] += 1
        elif not combination.tree_can_hold(lists, summaries):
            counted['tree_capacity'] += 1
        else:
            counted[_tree_cause(combination, lists, summaries, granular)] += 1
    return counted


def _tree_cause(combination, lists, summaries, granular):
    isolated = subtree = both = combined = False
    for combo in itertools.islice(combination.products(list(lists.values()), summaries),
                                  COMBINATIONS_SEEN):
        combined = True
        apart = combination.satisfies_group_policy(combo, granular)
        within = combination.satisfies_same_subtree(combo, summaries)
        isolated, subtree, both = isolated or apart, subtree or within, both or (apart and within)
    if not combined:
        return 'provider_capacity'
    if both:    # dropped after combining: before 1.29, one provider per tree
        return 'one_provider_per_tree'
    if not isolated and not subtree:
        return 'isolate_and_same_subtree'
    if not isolated:
        return 'isolate'
    if not subtree:
        return 'same_subtree'
    return 'isolate_with_same_subtree'
