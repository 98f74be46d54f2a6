"""select_candidates() and explain_candidates() called directly, without
HTTP: parsing a QueryDict, the candidates and summaries for the small
cloud, the stages in the order they ran, and the funnels explain reads from
the same research."""
import pytest
from django.db import connection
from django.http import QueryDict
from django.test.utils import CaptureQueriesContext

from allocations.candidates import explain_candidates, parse, select_candidates
from allocations.candidates.research import Stage
from allocations.candidates.selector import SearchSettings
from placement_site import errors, exceptions, microversion

LATEST = microversion.parse(microversion.MAX_VERSION)


@pytest.fixture
def cloud(small_cloud):
    return small_cloud


def query(text, version=LATEST):
    return parse(QueryDict(text), version)


def candidates(cloud, result):
    """Each candidate as {provider name: {class: amount}}, sorted."""
    names = {rp.pk: name for name, rp in cloud.items()}
    found = []
    for request in result.allocation_requests:
        by_provider = {}
        for provider_id, class_name, amount in request.resources:
            by_provider.setdefault(names[provider_id], {})[class_name] = amount
        found.append(by_provider)
    return sorted(found, key=repr)


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


def test_explain_reads_the_funnels_from_the_searchs_research(cloud):
    text = 'resources=VCPU:2,DISK_GB:10&required=HW_CPU_X86_AVX2'
    with CaptureQueriesContext(connection) as search_queries:
        select_candidates(query(text))
    with CaptureQueriesContext(connection) as explain_queries:
        explanation = explain_candidates(query(text))
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


def test_explain_says_why_nothing_fits(cloud):
    explanation = explain_candidates(query('resources_X=VCPU:20&resources_Y=DISK_GB:1'
                                           '&group_policy=none'))
    assert explanation.result.allocation_requests == []
    assert [(f.group, f.unit, f.total) for f in explanation.funnels] == [
        ('_X', 'providers', 5), ('_Y', 'providers', 5)]
    assert explanation.sentences == ['group _X: 5 providers lack 20 VCPU']
