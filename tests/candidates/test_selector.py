"""select_candidates() and explain_candidates() called directly, without
HTTP: parsing a QueryDict, the candidates and summaries for the small
cloud, the stages in the order they ran, and the funnels explain reads from
the same research."""
import dataclasses
import random

import pytest
from django.db import connection
from django.http import QueryDict
from django.test.utils import CaptureQueriesContext

from placement_site import errors
from placement_site import exceptions
from placement_site import microversion
from providers.candidates import explain_candidates
from providers.candidates import parse
from providers.candidates import select_candidates
from providers.candidates import summaries
from providers.candidates.findings import Stage
from providers.candidates.matching import matched_trees
from providers.candidates.matching import samplable
from providers.candidates.matching import sample_tree_requests
from providers.candidates.query import SearchSettings
from providers.candidates.research import research
from tests.support.factories import ROW

LATEST = microversion.parse(microversion.MAX_VERSION)


@pytest.fixture
def cloud(small_cloud):
    return small_cloud


def query(text, version=LATEST):
    return parse(QueryDict(text), version)


def candidates(cloud, result):
    """Each candidate as {provider name: {class: amount}}, sorted."""
    names = {rp.pk: name for name, rp in cloud.items()}
    listed = []
    for request in result.allocation_requests:
        by_provider = {}
        for provider_id, class_name, amount in request.resources:
            by_provider.setdefault(names[provider_id], {})[class_name] = amount
        listed.append(by_provider)
    return sorted(listed, key=repr)


def test_parse_reads_groups_and_request_wide_parameters():
    parsed = query('resources=VCPU:2&resources_NET=SRIOV_NET_VF:1&required_NET=HW_NIC_SRIOV'
                   '&group_policy=isolate&limit=3&root_required=COMPUTE_NODE')
    assert list(parsed.groups) == ['', '_NET']
    assert parsed.groups['_NET'].resources == {'SRIOV_NET_VF': 1}
    assert parsed.groups['_NET'].required_traits == [{'HW_NIC_SRIOV'}]
    assert (parsed.params.group_policy, parsed.params.limit) == ('isolate', 3)
    assert parsed.params.root_required == {'COMPUTE_NODE'}
    assert parsed.nested_aware is True
    assert query('resources=VCPU:1', microversion.parse('1.28')).nested_aware is False


def test_parse_refuses_bad_input_with_placements_400():
    with pytest.raises(errors.PlacementError) as refused:
        query('resources1=VCPU:1&resources2=VCPU:1')
    assert refused.value.status == 400
    assert 'The "group_policy" parameter is required' in refused.value.detail


def test_a_tree_gathers_classes_from_its_providers_and_sharing_ones(cloud):
    result = select_candidates(query('resources=VCPU:2,DISK_GB:10'))
    assert candidates(cloud, result) == [
        {'cn1': {'VCPU': 2, 'DISK_GB': 10}},
        {'cn2-numa0': {'VCPU': 2}, 'nfs': {'DISK_GB': 10}},
    ]
    summarized = {summary.uuid for summary in result.summaries}
    assert summarized == {cloud[n].uuid for n in ('cn1', 'cn2', 'cn2-numa0', 'nfs')}
    assert [r.stage for r in result.stages] == [
        Stage.CAPACITY, Stage.CAPACITY, Stage.SHARING, Stage.TREES_WITH_CLASSES,
        Stage.TREES_WITH_CLASSES, Stage.GROUP_CANDIDATES, Stage.COMBINED]


def capacity_roots(text, bounded_by=None):
    findings = research(query(text), bounded_by=bounded_by).groups['']
    return {root for pairs in findings.capacity.values() for _, root in pairs}


def test_a_limited_lone_group_reads_only_the_trees_the_limit_takes(cloud):
    """cn1 and cn2 (its NUMA child) have room for 2 VCPU; with a limit of 1
    the capacity query stops at one of them, unless every candidate is to
    be made (to be counted)."""
    text = 'resources=VCPU:2&limit=1'
    assert capacity_roots(text) == {cloud['cn1'].pk, cloud['cn2'].pk}
    assert len(capacity_roots(text, bounded_by=SearchSettings())) == 1
    assert len(capacity_roots(text, bounded_by=SearchSettings(randomize=True))) == 2
    assert len(select_candidates(query(text)).allocation_requests) == 1


def test_groups_asking_the_same_are_researched_once(cloud):
    def read(text):
        with CaptureQueriesContext(connection) as captured:
            researched = research(query(text + '&group_policy=none'))
        return researched, len(captured)

    researched, reads = read('resources1=VCPU:2&resources2=VCPU:2&resources3=DISK_GB:10')
    _, without_the_twin = read('resources1=VCPU:2&resources3=DISK_GB:10')
    assert reads == without_the_twin
    first, twin = researched.groups['1'], researched.groups['2']
    assert twin == dataclasses.replace(first, group=twin.group, records=twin.records)
    assert [(r.group, r.stage) for r in researched.records if r.group != '3'] == [
        ('1', Stage.CAPACITY), ('2', Stage.CAPACITY)]
    assert [(r.group, r.stage) for r in twin.records] == [('2', Stage.CAPACITY)]


def test_too_few_trees_holding_every_class_read_the_sharing_ones_too(cloud):
    """Only cn1 has VCPU and disk itself; cn2's NUMA node takes its disk
    from nfs: a limit of 2 still finds both."""
    assert candidates(cloud, select_candidates(query('resources=VCPU:2,DISK_GB:10&limit=2'))) == [
        {'cn1': {'VCPU': 2, 'DISK_GB': 10}},
        {'cn2-numa0': {'VCPU': 2}, 'nfs': {'DISK_GB': 10}},
    ]


@pytest.mark.parametrize('text', [
    'resources=VCPU:2,DISK_GB:10',
    'resources=VCPU:1&limit=1',
    'resources_A=VCPU:1&resources_B=DISK_GB:10&group_policy=none',
    'resources=DISK_GB:10&resources_A=VCPU:1&group_policy=none&limit=1',
])
def test_later_stages_leave_the_findings_as_the_research_made_them(cloud, text):
    parsed = query(text)
    fresh = research(parsed, bounded_by=SearchSettings())
    result = select_candidates(parsed, settings=SearchSettings())
    assert result.allocation_requests
    assert result.researched == fresh


def test_granular_groups_with_isolate(cloud):
    result = select_candidates(query(
        'resources_A=VCPU:1&resources_B=DISK_GB:10&required_B=!MISC_SHARES_VIA_AGGREGATE'
        '&group_policy=isolate'))
    # cn3 has no disk and cn1 would hold both groups on one provider.
    assert candidates(cloud, result) == []
    result = select_candidates(query('resources_A=VCPU:1&resources_B=DISK_GB:10'
                                     '&group_policy=none'))
    assert candidates(cloud, result) == [{'cn1': {'VCPU': 1, 'DISK_GB': 10}}]


def test_settings_are_passed_not_read_from_the_request(cloud):
    few = select_candidates(query('resources=VCPU:2,DISK_GB:10'),
                            settings=SearchSettings(max_candidates=1))
    assert len(few.allocation_requests) == 1


def test_unknown_names_raise_domain_errors(cloud):
    with pytest.raises(exceptions.ResourceClassNotFound):
        select_candidates(query('resources=CUSTOM_NOPE:1'))
    with pytest.raises(exceptions.TraitNotFound):
        select_candidates(query('resources=VCPU:1&required=CUSTOM_NOPE'))


def test_a_name_refused_is_raised_unless_an_earlier_group_fits_nothing(cloud):
    """Placement's order: it matches a group before it resolves the next
    group's names, so an unknown trait after a group that fits nothing is an
    empty answer (here group 1: VCPU on cn1 and cn3 in ROW, HW_NUMA_ROOT on
    cn2's NUMA node alone)."""
    unknown = '&resources2=DISK_GB:1&required2=CUSTOM_NOPE&group_policy=none'
    nothing = f'resources1=VCPU:1&required1=HW_NUMA_ROOT&member_of1={ROW}' + unknown
    assert select_candidates(query(nothing)).allocation_requests == []
    explanation = explain_candidates(query(nothing))
    assert [f.group for f in explanation.funnels] == ['1', '2']
    with pytest.raises(exceptions.TraitNotFound):
        select_candidates(query('resources1=VCPU:1' + unknown))
    with pytest.raises(exceptions.TraitNotFound):
        explain_candidates(query('resources1=VCPU:1' + unknown))


def test_streamed_candidates_are_written_without_reads(cloud):
    """Several groups' candidates handed on as they are made: the summaries
    of the trees they use, with their traits, are read before."""
    text = 'resources=VCPU:1&resources_S=DISK_GB:10&group_policy=none'
    listed = select_candidates(query(text))
    streamed = select_candidates(query(text), lazy=True)
    assert streamed.streamed and not listed.streamed
    with CaptureQueriesContext(connection) as reads:
        requests = list(streamed.allocation_requests)
        roots = {streamed.wide.root_of(r, p) for r in requests for p, _, _ in r.resources}
        answered = streamed.summaries_of(roots)
    assert len(reads) == 0
    assert [r.key() for r in requests] == [r.key() for r in listed.allocation_requests]
    assert [(s.uuid, s.resources, s.traits) for s in answered] == [
        (s.uuid, s.resources, s.traits) for s in listed.summaries]


def test_explain_reads_the_funnels_from_the_searchs_research(cloud):
    text = 'resources=VCPU:2,DISK_GB:10&required=HW_CPU_X86_AVX2'
    with CaptureQueriesContext(connection) as search_queries:
        select_candidates(query(text))
    summaries.forget_traits()  # each reads the answer's traits
    with CaptureQueriesContext(connection) as explain_queries:
        explanation = explain_candidates(query(text))
    # The research reads the inventories of the classes, since a resource
    # step eliminates trees (cn3 lacks 2 VCPU; no near miss here: cn2 lacks
    # the trait, so no names to read). The funnels' roots, every
    # provider's, serve the research too, where the search reads those of
    # the providers below a root.
    assert len(explain_queries) == len(search_queries) + 1
    assert candidates(cloud, explanation.result) == [{'cn1': {'VCPU': 2, 'DISK_GB': 10}}]
    funnel, = explanation.funnels
    assert (funnel.unit, funnel.total) == ('trees', 4)
    assert [(s.constraint, s.remaining, s.eliminated) for s in funnel.steps] == [
        ('2 VCPU', 2, 2),              # cn1, and cn2 through its NUMA node
        ('10 DISK_GB', 2, 0),          # cn1's own disk, the nfs share for cn2
        ('trait HW_CPU_X86_AVX2', 1, 1),
    ]
    assert explanation.sentences == []


def test_explain_uncounted_builds_only_what_the_limit_takes_with_the_same_funnels(numa_cloud):
    text = 'resources=VCPU:1,MEMORY_MB:1&limit=1'
    counted, uncounted = (explain_candidates(query(text), counted=c) for c in (True, False))
    # Counted (the explain endpoint): every group's candidates built and
    # counted; uncounted (the explorer): only the one the limit takes.
    assert [r.remaining for r in counted.result.stages
            if r.stage == Stage.GROUP_CANDIDATES] == [6]
    assert [r for r in uncounted.result.stages if r.stage == Stage.GROUP_CANDIDATES] == []
    assert len(counted.result.allocation_requests) == 1
    assert len(uncounted.result.allocation_requests) == 1
    assert [(f.total, [(s.constraint, s.remaining) for s in f.steps])
            for f in uncounted.funnels] == [
        (f.total, [(s.constraint, s.remaining) for s in f.steps]) for f in counted.funnels]
    assert uncounted.funnels[0].steps[-1].remaining == 3


def test_explain_says_why_nothing_fits(cloud):
    explanation = explain_candidates(query('resources_X=VCPU:20&resources_Y=DISK_GB:1'
                                           '&group_policy=none'))
    assert explanation.result.allocation_requests == []
    assert [(f.group, f.unit, f.total) for f in explanation.funnels] == [
        ('_X', 'providers', 5), ('_Y', 'providers', 5)]
    assert explanation.sentences == [
        # cn2-numa0 has neither 20 VCPU free nor a max_unit above 2; the
        # NUMA node cn2-numa1 and the storage pool have no VCPU.
        'group _X: 5 providers cannot take 20 VCPU: 2 lack it free, 1 has no provider both '
        'with it free and allowing it (max_unit, min_unit, step_size), 2 have none',
        # cn1: (8 * 2.0) - 3 used = 13 free. cn2-numa0 would need two
        # changes: it comes after those one change away.
        'group _X, closest: cn1 lacks 7 VCPU; cn3 lacks 19 VCPU; cn2-numa0 takes at most 2 '
        'VCPU at once (max_unit) and lacks 16 VCPU']


# ---- a random `limit`, drawn before the candidates are built ------------------------

@pytest.fixture
def numa_cloud(db):
    """Three nodes with MEMORY_MB and two NUMA children with VCPU each: six
    candidates for VCPU:1,MEMORY_MB:1, two per tree. cn0 has AVX2."""
    from tests.support.factories import add_provider
    rps = {}
    for n in range(3):
        node = rps[f'cn{n}'] = add_provider(f'cn{n}', inventories={'MEMORY_MB': {'total': 64}},
                                            traits=['HW_CPU_X86_AVX2'] if n == 0 else ())
        for k in range(2):
            rps[f'cn{n}-numa{k}'] = add_provider(f'cn{n}-numa{k}', parent=node,
                                                 inventories={'VCPU': {'total': 4}})
    return rps


def draw(text, seed=None):
    import random
    if seed is not None:
        random.seed(seed)
    return select_candidates(query(text), settings=SearchSettings(randomize=True))


def test_a_random_limit_draws_from_every_candidate_alike(numa_cloud):
    every = candidates(numa_cloud, draw('resources=VCPU:1,MEMORY_MB:1'))
    assert len(every) == 6
    seen = {}
    for attempt in range(300):
        result = draw('resources=VCPU:1,MEMORY_MB:1&limit=2', seed=attempt)
        drawn = candidates(numa_cloud, result)
        assert len(drawn) == 2 and drawn[0] != drawn[1]
        for candidate in drawn:
            assert candidate in every
            seen[repr(candidate)] = seen.get(repr(candidate), 0) + 1
        assert [r.remaining for r in result.stages if r.stage == Stage.GROUP_CANDIDATES] == [6]
    # 600 draws of 6 candidates: 100 each expected (binomial sd ~9).
    assert len(seen) == 6 and all(60 <= n <= 140 for n in seen.values()), seen


def researched(parsed):
    """The RequestFindings and the unsuffixed group's GroupFindings."""
    researched = research(parsed)
    return researched.wide, researched.groups['']


def test_a_random_limit_builds_only_the_requests_drawn(numa_cloud):
    wide, findings = researched(query('resources=VCPU:1,MEMORY_MB:1'))
    trees, _ = matched_trees(wide, findings, one_group=True)
    requests, total = sample_tree_requests(wide, findings, trees, 4, random.Random(1))
    assert (len(requests), total) == (4, 6)
    assert len({r.key() for r in requests}) == 4
    # Traits are checked per combination: no drawing before building.
    assert samplable(findings) is True
    _, findings = researched(query('resources=VCPU:1,MEMORY_MB:1&required=HW_CPU_X86_AVX2'))
    assert samplable(findings) is False


def test_a_random_limit_with_sharing_only_requests_builds_them_all(cloud):
    # DISK_GB alone comes from nfs for cn2's tree: requests that repeat per tree.
    result = draw('resources=DISK_GB:10&limit=1', seed=3)
    assert len(result.allocation_requests) == 1
    assert [r.remaining for r in result.stages if r.stage == Stage.GROUP_CANDIDATES] == [2]


@pytest.mark.parametrize('text', ['resources=VCPU:1', 'resources=DISK_GB:10&limit=1',
                                  'resources=VCPU:1&resources_S=DISK_GB:10',
                                  'resources=VCPU:1,DISK_GB:10&required=COMPUTE_NODE'])
def test_summaries_read_by_ids_roots_or_whole_tables_are_the_same(cloud, monkeypatch, text):
    def read():
        result = select_candidates(query(text))
        return [(s.uuid, s.parent_id, s.root_id, s.resources, s.traits) for s in result.summaries]

    expected = read()
    assert expected
    ways = {'by ids': (1000, 1000, 1000), 'by roots': (1000, 0, 1000),
            'most of the trees: whole tables': (1000, 1000, 0), 'whole tables': (0, 1000, 1000)}
    with CaptureQueriesContext(connection) as queries:
        read()
    result = select_candidates(query(text))
    most = 2 * len({s.root_id for s in result.summaries}) >= result.wide.trees
    for way, (whole_above, by_id_up_to, listed_anyway) in ways.items():
        monkeypatch.setattr(summaries, 'WHOLE_TABLE_THRESHOLD', whole_above)
        monkeypatch.setattr(summaries, 'BY_ID_THRESHOLD', by_id_up_to)
        monkeypatch.setattr(summaries, 'LISTED_ANYWAY', listed_anyway)
        with CaptureQueriesContext(connection) as read_now:
            assert read() == expected, way
        # As many queries, each of its own kind: by ids, roots or neither.
        assert len(read_now) == len(queries), way
        if way != 'by ids' and (most or way != 'most of the trees: whole tables'):
            assert [q['sql'] for q in read_now] != [q['sql'] for q in queries], way


def test_the_stages_stay_in_order_when_a_later_group_fits_nothing(cloud):
    result = select_candidates(query(
        'resources1=VCPU:1&resources2=DISK_GB:100000&group_policy=none'))
    assert result.allocation_requests == []
    # Group 1's research and matching, then group 2's research, stopped.
    assert [(r.stage, r.group, r.remaining) for r in result.stages] == [
        (Stage.CAPACITY, '1', 2), (Stage.PROVIDERS_MATCHING, '1', 2),
        (Stage.GROUP_CANDIDATES, '1', 2), (Stage.CAPACITY, '2', 0)]
