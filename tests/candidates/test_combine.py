"""Combining the groups' requests into candidates, in Python alone: no
database, provider summaries and requests written out by hand."""
import copy

import pytest

from providers.candidates.combine import Combination
from providers.candidates.combine import consolidate
from providers.candidates.findings import GroupFindings
from providers.candidates.findings import RequestFindings
from providers.candidates.findings import Stage
from providers.candidates.matching import AllocationRequest
from providers.candidates.query import CandidateQuery
from providers.candidates.query import RequestGroup
from providers.candidates.query import RequestWideParams
from providers.candidates.query import SearchSettings
from providers.candidates.summaries import ProviderSummary

pytestmark = pytest.mark.any_database  # and no database at all

# One tree: 1 is the root; 2 and 4 are NUMA nodes under it; 3 is a NIC under 2.
TREE = {1: None, 2: 1, 3: 2, 4: 1}
VCPU = 'VCPU'


def summaries(vcpu=None):
    """Summaries of the tree; vcpu: {provider: (capacity, used, max_unit)}."""
    loaded = {}
    for provider_id, parent_id in TREE.items():
        summary = ProviderSummary(provider_id, f'uuid-{provider_id}', parent_id, 1)
        if vcpu and provider_id in vcpu:
            summary.resources[VCPU] = vcpu[provider_id]
        loaded[provider_id] = summary
    return loaded


def combination(groups, *, settings=None, nested_aware=True, **params):
    query = CandidateQuery({g.suffix: g for g in groups}, RequestWideParams(**params),
                           nested_aware=nested_aware)
    return Combination(query, RequestFindings(has_trees=True), settings or SearchSettings())


def findings(*suffixes):
    return {s: GroupFindings(RequestGroup(suffix=s), tree_mode=not s) for s in suffixes}


def request(provider_id, suffix, amount=1, anchor=1):
    return AllocationRequest(anchor, [(provider_id, VCPU, amount)], {suffix: {provider_id}},
                             use_same_provider=bool(suffix))


def groups(*suffixes):
    return [RequestGroup(suffix=s, resources={VCPU: 1}) for s in suffixes]


def keys(requests):
    return sorted(tuple(sorted(r.resources)) for r in requests)


@pytest.mark.parametrize('providers, expected', [
    ({2, 3}, True),      # 2 is 3's parent
    ({3, 4}, False),     # only the root is above both, and it is not among them
    ({1, 3, 4}, True),   # the root is above every other one
    ({3}, True),
])
def test_same_subtree(providers, expected):
    assert combination(groups('_A')).same_subtree(providers, summaries()) is expected


def test_isolate_puts_each_suffixed_group_on_its_own_provider():
    combine = combination(groups('1', '2'), group_policy='isolate')
    together = (request(2, '1'), request(2, '2'))
    apart = (request(2, '1'), request(4, '2'))
    assert combine.satisfies_group_policy(together, granular=2) is False
    assert combine.satisfies_group_policy(apart, granular=2) is True
    assert combination(groups('1', '2'), group_policy='none').satisfies_group_policy(
        together, granular=2) is True


def test_products_stop_where_a_provider_would_be_over_capacity():
    # Provider 2 has room for 3 more VCPU; provider 4 for plenty.
    loaded = summaries({2: (4, 1, 10), 4: (100, 0, 10)})
    combine = combination(groups('1', '2'), group_policy='none')
    first = [request(2, '1', 2), request(4, '1', 2)]
    second = [request(2, '2', 2), request(4, '2', 2)]
    combos = [tuple(r.resources[0][0] for r in combo)
              for combo in combine.products([first, second], loaded)]
    assert combos == [(2, 4), (4, 2), (4, 4)]   # (2, 2) would put 5 on 4


def test_products_respect_max_unit_of_the_summed_amount():
    loaded = summaries({2: (100, 0, 3)})
    combine = combination(groups('1', '2'), group_policy='none')
    combos = list(combine.products([[request(2, '1', 2)], [request(2, '2', 2)]], loaded))
    assert combos == []


def test_merging_sums_amounts_and_keeps_each_distinct_candidate_once():
    loaded = summaries({2: (10, 0, 10), 4: (10, 0, 10)})
    combine = combination(groups('1', '2'), group_policy='none')
    handed_on, wide = findings('1', '2'), combine.wide
    before = copy.deepcopy((handed_on, wide))
    combined = combine.candidates({'1': [request(2, '1'), request(4, '1')],
                                   '2': [request(2, '2'), request(4, '2')]},
                                  handed_on, loaded)
    assert (handed_on, wide) == before   # combining reads the findings, never changes them
    merged = combined.requests
    assert keys(merged) == [((2, VCPU, 1), (4, VCPU, 1)), ((2, VCPU, 1), (4, VCPU, 1)),
                            ((2, VCPU, 2),), ((4, VCPU, 2),)]
    assert [m.mappings for m in merged if len(m.resources) == 1] == [
        {'1': {2}, '2': {2}}, {'1': {4}, '2': {4}}]
    assert [(r.stage, r.remaining) for r in combined.records] == [(Stage.COMBINED, 4)]


def test_a_limit_without_randomisation_stops_generating_early():
    loaded = summaries({2: (10, 0, 10), 4: (10, 0, 10)})
    combine = combination(groups('1', '2'), group_policy='none', limit=1)
    merged = combine.merge({'1': [request(2, '1'), request(4, '1')],
                            '2': [request(2, '2'), request(4, '2')]}, findings('1', '2'), loaded)
    assert len(merged) == 1
    randomized = combination(groups('1', '2'), group_policy='none', limit=1,
                             settings=SearchSettings(randomize=True))
    assert len(randomized.merge({'1': [request(2, '1'), request(4, '1')],
                                 '2': [request(2, '2'), request(4, '2')]},
                                findings('1', '2'), loaded)) == 4


def test_a_tree_lacking_the_capacity_several_groups_ask_for_is_skipped():
    """Three groups ask 1 VCPU each: a tree whose providers have 2 in all
    cannot hold them; one with 3 can."""
    lists = {'1': [request(2, '1')], '2': [request(4, '2')], '3': [request(2, '3')]}
    combine = combination(groups('1', '2', '3'), group_policy='none')
    assert combine.tree_can_hold(lists, summaries({2: (1, 0, 10), 4: (1, 0, 10)})) is False
    assert combine.tree_can_hold(lists, summaries({2: (2, 0, 10), 4: (1, 0, 10)})) is True


def test_before_1_29_a_candidate_uses_one_provider_per_tree():
    combine = combination(groups(''), nested_aware=False)
    one = AllocationRequest(1, [(2, VCPU, 1)], {'': {2}})
    two = AllocationRequest(1, [(2, VCPU, 1), (4, 'MEMORY_MB', 1)], {'': {2, 4}})
    assert combine.exclude_nested([one, two]) == ([one], {2})


def test_consolidate():
    combined = consolidate((request(2, '1', 1), request(2, '2', 3), request(4, '', 2)))
    assert sorted(combined.resources) == [(2, VCPU, 4), (4, VCPU, 2)]
    assert combined.mappings == {'1': {2}, '2': {2}, '': {4}}


def test_lazy_candidates_are_the_listed_ones_made_as_they_are_read():
    loaded = summaries({2: (10, 0, 10), 4: (10, 0, 10)})
    by_suffix = {'1': [request(2, '1'), request(4, '1')], '2': [request(2, '2'), request(4, '2')]}
    combine = combination(groups('1', '2'), group_policy='none', limit=3)
    listed = combine.candidates(by_suffix, findings('1', '2'), loaded).requests
    lazy = combine.candidates(by_suffix, findings('1', '2'), loaded, lazy=True).requests
    assert not isinstance(lazy, list)
    made = list(lazy)
    assert [r.key() for r in made] == [r.key() for r in listed] and len(made) == 3
    # Each is its groups' requests, summed only when read.
    assert [tuple(p.mappings for p in r.parts) for r in made][0] == ({'1': {2}}, {'2': {2}})


def test_a_combination_that_comes_out_twice_is_kept_once():
    """Two of the unsuffixed group's requests on the same providers with
    the same amounts: their combinations with the other group coincide."""
    loaded = summaries({2: (10, 0, 10), 4: (10, 0, 10)})
    twice = [AllocationRequest(1, [(2, VCPU, 1), (4, VCPU, 1)], {'': {2, 4}}) for _ in range(2)]
    combine = combination([RequestGroup(suffix='', resources={VCPU: 2}), *groups('1')])
    made = combine.merge({'': twice, '1': [request(2, '1')]}, findings('', '1'), loaded)
    assert keys(made) == [((2, VCPU, 2), (4, VCPU, 1))]
