"""GET /allocation_candidates: every query feature on small fixtures whose
candidates are known exactly, the answer's shape per microversion, and the
400s for bad input. Expected answers were checked against OpenStack
Placement 16.0.0 with the same fixtures. The order of allocation_requests is
undefined, so candidates are compared as sorted lists."""
import uuid as uuid_lib

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from allocations.api import candidates as candidates_api
from placement_site import api as placement_api
from providers.candidates import summaries
from tests.support.api import LATEST
from tests.support.api import UNDEFINED
from tests.support.api import assert_error
from tests.support.api import lasting_headers
from tests.support.state import unchanged

AGG_A = str(uuid_lib.uuid4())
AGG_B = str(uuid_lib.uuid4())
AGG_C = str(uuid_lib.uuid4())   # no provider is in it
SHARED = str(uuid_lib.uuid4())
OTHER = str(uuid_lib.uuid4())


# ---- helpers ------------------------------------------------------------------

class Cloud(dict):
    """{provider name: uuid} of a fixture, with the tree of each provider."""

    def __init__(self):
        super().__init__()
        self.root = {}

    def name(self, uuid):
        return next(n for n, u in self.items() if u == uuid)

    def tree(self, name):
        return {n for n in self if self.root[n] == self.root[name]}


def build(api, *providers):
    """providers: (name, parent name, inventories, traits, aggregates)."""
    cloud = Cloud()
    for name, parent, inventories, traits, aggregates in providers:
        cloud[name] = api.create_provider(name, parent=cloud.get(parent))['uuid']
        cloud.root[name] = cloud.root[parent] if parent else name
        if inventories:
            api.set_inventory(cloud[name], inventories)
        if traits:
            api.set_traits(cloud[name], traits)
        if aggregates:
            api.set_aggregates(cloud[name], aggregates)
    return cloud


def get(api, query, version=LATEST, **kwargs):
    response = api.get(f'/allocation_candidates?{query}', version=version, **kwargs)
    assert response.status_code == 200, response.content
    return response.body


def candidates(body, cloud):
    """allocation_requests (either form) as a sorted list of
    ((provider name, class, amount), ...)."""
    result = []
    for request in body['allocation_requests']:
        allocations = request['allocations']
        if isinstance(allocations, list):
            allocations = {a['resource_provider']['uuid']: a for a in allocations}
        result.append(tuple(sorted(
            (cloud.name(uuid), rc, amount)
            for uuid, entry in allocations.items()
            for rc, amount in entry['resources'].items())))
    return sorted(result)


def want(*requests):
    """{name: {class: amount}} per candidate, in the form candidates() gives."""
    return sorted(tuple(sorted((name, rc, amount) for name, resources in request.items()
                               for rc, amount in resources.items()))
                  for request in requests)


def mappings(body, cloud):
    return sorted(tuple(sorted((suffix, tuple(sorted(cloud.name(u) for u in uuids)))
                               for suffix, uuids in request['mappings'].items()))
                  for request in body['allocation_requests'])


def providers(body, cloud):
    """Names of the providers any candidate uses."""
    return {name for request in candidates(body, cloud) for name, _, _ in request}


def summarized(body, cloud):
    return {cloud.name(uuid) for uuid in body['provider_summaries']}


def refused_unchanged(api, query, version, detail):
    """A VCPU:1 request with `query` is refused at `version` and writes nothing."""
    code = UNDEFINED if tuple(map(int, version.split('.'))) >= (1, 23) else None
    with unchanged():
        assert_error(api.get(f'/allocation_candidates?resources=VCPU:1&{query}', version=version),
                     400, detail, code)


# ---- resources: capacity, min_unit, max_unit, step_size -------------------------

@pytest.fixture
def capacity_nodes(api):
    """Flat nodes, each limited by one inventory field; 'used' holds 5 VCPU."""
    cloud = build(
        api,
        ('ok', None, {'VCPU': {'total': 8}}, [], []),
        ('reserved', None, {'VCPU': {'total': 8, 'reserved': 5}}, [], []),
        ('ratio', None, {'VCPU': {'total': 2, 'allocation_ratio': 2.0}}, [], []),
        ('used', None, {'VCPU': {'total': 8}}, [], []),
        ('min_unit', None, {'VCPU': {'total': 8, 'min_unit': 6}}, [], []),
        ('max_unit', None, {'VCPU': {'total': 8, 'max_unit': 2}}, [], []),
        ('step_size', None, {'VCPU': {'total': 8, 'step_size': 3}}, [], []),
    )
    assert api.allocate(str(uuid_lib.uuid4()), {cloud['used']: {'VCPU': 5}}).status_code == 204
    return cloud


def test_each_inventory_limit_excludes_its_provider(api, capacity_nodes):
    body = get(api, 'resources=VCPU:4')
    assert candidates(body, capacity_nodes) == want({'ok': {'VCPU': 4}}, {'ratio': {'VCPU': 4}})
    assert summarized(body, capacity_nodes) == {'ok', 'ratio'}


# The VCPU amounts each of capacity_nodes can take.
AMOUNTS = {
    'ok': range(1, 9),
    'reserved': range(1, 4),     # (8 - 5) * 1.0
    'ratio': range(1, 5),        # (2 - 0) * 2.0
    'used': range(1, 4),         # 8 - 5 used
    'min_unit': range(6, 9),
    'max_unit': range(1, 3),
    'step_size': (3, 6),
}


def fitting(amount):
    return {name for name, amounts in AMOUNTS.items() if amount in amounts}


@pytest.mark.parametrize('name, fits, excluded', [
    ('reserved', 3, 4),
    ('ratio', 4, 5),
    ('used', 3, 4),
    ('min_unit', 6, 5),
    ('max_unit', 2, 3),
    ('step_size', 6, 4),
])
def test_an_amount_fits_or_not(api, capacity_nodes, name, fits, excluded):
    assert name in fitting(fits) and name not in fitting(excluded)
    for amount in (fits, excluded):
        body = get(api, f'resources=VCPU:{amount}')
        assert candidates(body, capacity_nodes) == want(
            *({n: {'VCPU': amount}} for n in fitting(amount)))
        assert summarized(body, capacity_nodes) == fitting(amount)


def test_several_classes_must_all_fit_on_one_flat_provider(api):
    cloud = build(api,
                  ('both', None, {'VCPU': {'total': 8}, 'MEMORY_MB': {'total': 1024}}, [], []),
                  ('cpu_only', None, {'VCPU': {'total': 8}}, [], []),
                  ('small', None, {'VCPU': {'total': 8}, 'MEMORY_MB': {'total': 256}}, [], []))
    body = get(api, 'resources=VCPU:2,MEMORY_MB:512')
    assert candidates(body, cloud) == want({'both': {'VCPU': 2, 'MEMORY_MB': 512}})


def test_nothing_fits_is_an_empty_answer(api, capacity_nodes):
    assert get(api, 'resources=VCPU:9') == {'allocation_requests': [], 'provider_summaries': {}}


# ---- limit (1.16) ------------------------------------------------------------------

@pytest.fixture
def limit_nodes(api):
    """Three flat VCPU nodes and a tree t (MEMORY_MB) with two VCPU children."""
    return build(api,
                 ('a', None, {'VCPU': {'total': 8}}, [], []),
                 ('b', None, {'VCPU': {'total': 8}}, [], []),
                 ('c', None, {'VCPU': {'total': 8}}, [], []),
                 ('t', None, {'MEMORY_MB': {'total': 1024}}, [], []),
                 ('t0', 't', {'VCPU': {'total': 8}}, [], []),
                 ('t1', 't', {'VCPU': {'total': 8}}, [], []))


@pytest.mark.parametrize('version', ['1.16', LATEST])
def test_limit_returns_that_many_and_summarizes_only_their_trees(api, limit_nodes, version):
    body = get(api, 'resources=VCPU:1&limit=2', version=version)
    # Any two of the five candidates are a correct answer (their order is
    # undefined), so which two stays open; each takes 1 VCPU of one provider.
    used = providers(body, limit_nodes)
    assert len(used) == 2 and used <= {'a', 'b', 'c', 't0', 't1'}
    assert candidates(body, limit_nodes) == want(*({name: {'VCPU': 1}} for name in used))
    trees = set().union(*(limit_nodes.tree(name) for name in used))
    if version == '1.16':
        # Before 1.29 only providers some candidate uses are summarized, so not 't'.
        trees -= {'t'}
    assert summarized(body, limit_nodes) == trees


@pytest.mark.parametrize('version, expected', [
    ('1.16', {'t0', 't1'}),
    ('1.28', {'t0', 't1'}),
    (LATEST, {'t', 't0', 't1'}),
])
def test_limit_keeps_summaries_of_the_candidate_s_tree(api, version, expected):
    """One candidate of two in one tree: the other child is still summarized
    (before 1.29 as after), as Placement keeps every summary of the kept trees."""
    cloud = build(api,
                  ('t', None, {'MEMORY_MB': {'total': 1024}}, [], []),
                  ('t0', 't', {'VCPU': {'total': 8}}, [], []),
                  ('t1', 't', {'VCPU': {'total': 8}}, [], []))
    body = get(api, 'resources=VCPU:1&limit=1', version=version)
    # Either candidate is a correct answer: their order is undefined.
    assert candidates(body, cloud) in (want({'t0': {'VCPU': 1}}), want({'t1': {'VCPU': 1}}))
    assert summarized(body, cloud) == expected


def test_limit_keeps_the_whole_tree_of_a_candidate(api, limit_nodes):
    body = get(api, 'resources=VCPU:1,MEMORY_MB:1&limit=1')
    # Either candidate is a correct answer: their order is undefined.
    assert candidates(body, limit_nodes) in (want({'t': {'MEMORY_MB': 1}, 't0': {'VCPU': 1}}),
                                             want({'t': {'MEMORY_MB': 1}, 't1': {'VCPU': 1}}))
    assert summarized(body, limit_nodes) == {'t', 't0', 't1'}


def test_limit_larger_than_the_result_returns_everything(api, limit_nodes):
    body = get(api, 'resources=VCPU:1&limit=10')
    assert candidates(body, limit_nodes) == want(
        *({name: {'VCPU': 1}} for name in ('a', 'b', 'c', 't0', 't1')))
    assert summarized(body, limit_nodes) == {'a', 'b', 'c', 't', 't0', 't1'}


# ---- traits: required (1.17), forbidden (1.22), any-of and repeated (1.39) ------------

@pytest.fixture
def trait_nodes(api):
    return build(
        api,
        ('avx', None, {'VCPU': {'total': 8}}, ['HW_CPU_X86_AVX2'], []),
        ('sse', None, {'VCPU': {'total': 8}}, ['HW_CPU_X86_SSE'], []),
        ('both', None, {'VCPU': {'total': 8}}, ['HW_CPU_X86_AVX2', 'HW_CPU_X86_SSE'], []),
        ('none', None, {'VCPU': {'total': 8}}, [], []))


@pytest.mark.parametrize('query, version, expected', [
    ('required=HW_CPU_X86_AVX2', '1.17', {'avx', 'both'}),
    ('required=HW_CPU_X86_AVX2,HW_CPU_X86_SSE', '1.17', {'both'}),
    ('required=!HW_CPU_X86_AVX2', '1.22', {'sse', 'none'}),
    ('required=HW_CPU_X86_SSE,!HW_CPU_X86_AVX2', '1.22', {'sse'}),
    ('required=in:HW_CPU_X86_AVX2,HW_CPU_X86_SSE', '1.39', {'avx', 'sse', 'both'}),
    ('required=in:HW_CPU_X86_AVX2,HW_CPU_X86_SSE&required=!HW_CPU_X86_AVX2', '1.39', {'sse'}),
    ('required=HW_CPU_X86_AVX2&required=HW_CPU_X86_SSE', '1.39', {'both'}),
    # Before 1.39 only the last 'required' counts.
    ('required=HW_CPU_X86_AVX2&required=HW_CPU_X86_SSE', '1.38', {'sse', 'both'}),
])
def test_required_traits(api, trait_nodes, query, version, expected):
    body = get(api, f'resources=VCPU:1&{query}', version=version)
    assert candidates(body, trait_nodes) == want(*({n: {'VCPU': 1}} for n in expected))
    assert summarized(body, trait_nodes) == expected


# ---- member_of (1.21), repeated (1.24), forbidden (1.32) ---------------------------------

@pytest.fixture
def aggregate_nodes(api):
    return build(api,
                 ('a', None, {'VCPU': {'total': 8}}, [], [AGG_A]),
                 ('b', None, {'VCPU': {'total': 8}}, [], [AGG_B]),
                 ('ab', None, {'VCPU': {'total': 8}}, [], [AGG_A, AGG_B]),
                 ('none', None, {'VCPU': {'total': 8}}, [], []))


@pytest.mark.parametrize('query, version, expected', [
    (f'member_of={AGG_A}', '1.21', {'a', 'ab'}),
    (f'member_of=in:{AGG_A},{AGG_B}', '1.21', {'a', 'b', 'ab'}),
    (f'member_of={AGG_A}&member_of={AGG_B}', '1.24', {'ab'}),
    (f'member_of=!{AGG_A}', '1.32', {'b', 'none'}),
    (f'member_of=!in:{AGG_A},{AGG_B}', '1.32', {'none'}),
    (f'member_of=in:{AGG_A},{AGG_B}&member_of=!{AGG_B}', '1.32', {'a'}),
    (f'member_of={AGG_C}', '1.21', set()),
])
def test_member_of(api, aggregate_nodes, query, version, expected):
    body = get(api, f'resources=VCPU:1&{query}', version=version)
    assert candidates(body, aggregate_nodes) == want(*({n: {'VCPU': 1}} for n in expected))
    assert summarized(body, aggregate_nodes) == expected


# ---- required and member_of syntax before its microversion ----------------------------

@pytest.mark.parametrize('nodes, query, version, detail', [
    ('trait_nodes', 'required=HW_CPU_X86_AVX2', '1.16',
     "Additional properties are not allowed ('required' was unexpected)"),
    ('trait_nodes', 'required=!HW_CPU_X86_AVX2', '1.21',
     "Expected 'required' parameter value of the form: HW_CPU_X86_VMX,CUSTOM_MAGIC. "
     'Got: !HW_CPU_X86_AVX2'),
    ('trait_nodes', 'required=in:HW_CPU_X86_AVX2,HW_CPU_X86_SSE', '1.38',
     "The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' only supported since microversion 1.39. "
     'Got: in:HW_CPU_X86_AVX2,HW_CPU_X86_SSE'),
    ('aggregate_nodes', f'member_of={AGG_A}', '1.20',
     "Additional properties are not allowed ('member_of' was unexpected)"),
    ('aggregate_nodes', f'member_of={AGG_A}&member_of={AGG_B}', '1.23',
     'Multiple member_of parameters are not supported'),
    ('aggregate_nodes', f'member_of=!{AGG_A}', '1.31',
     'Forbidden member_of parameters are not supported in the specified microversion'),
    ('aggregate_nodes', f'member_of=!in:{AGG_A},{AGG_B}', '1.31',
     'Forbidden member_of parameters are not supported in the specified microversion'),
    ('aggregate_nodes', f'member_of={AGG_A},{AGG_B}', '1.24',
     "Multiple values for 'member_of' must be prefixed with the 'in:' or '!in:' keyword"),
])
def test_syntax_before_its_microversion_is_refused(api, request, nodes, query, version, detail):
    """`nodes`: the cloud the parameter's other tests run against."""
    request.getfixturevalue(nodes)
    refused_unchanged(api, query, version, detail)


# ---- nested providers (1.29), in_tree (1.31), root_required (1.35), same_subtree (1.36) -------

@pytest.fixture
def nested(api):
    """cn (MEMORY_MB, root trait AVX2) with NUMA children numa0 and numa1 (VCPU,
    HW_NUMA_ROOT), a VF provider pf0 under numa0, and a flat node (SSE)."""
    return build(
        api,
        ('cn', None, {'MEMORY_MB': {'total': 2048}}, ['HW_CPU_X86_AVX2'], []),
        ('numa0', 'cn', {'VCPU': {'total': 4}}, ['HW_NUMA_ROOT'], []),
        ('numa1', 'cn', {'VCPU': {'total': 4}}, ['HW_NUMA_ROOT'], []),
        ('pf0', 'numa0', {'SRIOV_NET_VF': {'total': 8}}, [], []),
        ('flat', None, {'VCPU': {'total': 8}, 'MEMORY_MB': {'total': 2048}},
         ['HW_CPU_X86_SSE'], []))


NESTED_QUERY = 'resources=VCPU:1,MEMORY_MB:512'
IN_CN = [{'cn': {'MEMORY_MB': 512}, 'numa0': {'VCPU': 1}},
         {'cn': {'MEMORY_MB': 512}, 'numa1': {'VCPU': 1}}]
ON_FLAT = {'flat': {'VCPU': 1, 'MEMORY_MB': 512}}


def test_a_tree_combines_its_providers_from_1_29(api, nested):
    body = get(api, NESTED_QUERY, version='1.29')
    assert candidates(body, nested) == want(*IN_CN, ON_FLAT)
    assert summarized(body, nested) == {'cn', 'numa0', 'numa1', 'pf0', 'flat'}


def test_before_1_29_a_candidate_never_uses_two_providers_of_one_tree(api, nested):
    body = get(api, NESTED_QUERY, version='1.28')
    assert candidates(body, nested) == want(ON_FLAT)
    assert summarized(body, nested) == {'flat'}
    # Each NUMA node alone is still a candidate.
    body = get(api, 'resources=VCPU:1', version='1.28')
    assert candidates(body, nested) == want(*({n: {'VCPU': 1}} for n in ('numa0', 'numa1', 'flat')))


@pytest.mark.parametrize('member', ['cn', 'numa1', 'pf0'])
def test_in_tree_takes_any_provider_of_the_tree(api, nested, member):
    body = get(api, f'{NESTED_QUERY}&in_tree={nested[member]}', version='1.31')
    assert candidates(body, nested) == want(*IN_CN)
    assert summarized(body, nested) == {'cn', 'numa0', 'numa1', 'pf0'}


def test_in_tree_of_an_unknown_provider_is_empty(api, nested):
    body = get(api, f'{NESTED_QUERY}&in_tree={uuid_lib.uuid4()}')
    assert body == {'allocation_requests': [], 'provider_summaries': {}}


@pytest.mark.parametrize('root_required, expected', [
    ('HW_CPU_X86_AVX2', IN_CN),
    ('!HW_CPU_X86_AVX2', [ON_FLAT]),
    ('HW_CPU_X86_SSE,!HW_CPU_X86_AVX2', [ON_FLAT]),
    ('HW_NUMA_ROOT', []),        # a child's trait is not a root trait
])
def test_root_required(api, nested, root_required, expected):
    body = get(api, f'{NESTED_QUERY}&root_required={root_required}', version='1.35')
    assert candidates(body, nested) == want(*expected)


def test_same_subtree_keeps_groups_under_one_ancestor(api, nested):
    query = 'resources_VF=SRIOV_NET_VF:1&resources_CPU=VCPU:1&group_policy=none'
    body = get(api, query, version='1.36')
    assert candidates(body, nested) == want({'pf0': {'SRIOV_NET_VF': 1}, 'numa0': {'VCPU': 1}},
                                            {'pf0': {'SRIOV_NET_VF': 1}, 'numa1': {'VCPU': 1}})
    body = get(api, query + '&same_subtree=_VF,_CPU', version='1.36')
    assert candidates(body, nested) == want({'pf0': {'SRIOV_NET_VF': 1}, 'numa0': {'VCPU': 1}})
    assert mappings(body, nested) == [(('_CPU', ('numa0',)), ('_VF', ('pf0',)))]


@pytest.mark.parametrize('group_policy', ['none', 'isolate'])
def test_a_resourceless_group_in_same_subtree_maps_to_its_provider(api, nested, group_policy):
    body = get(api, 'resources_VF=SRIOV_NET_VF:1&required_NUMA=HW_NUMA_ROOT'
                    f'&same_subtree=_VF,_NUMA&group_policy={group_policy}', version='1.36')
    assert candidates(body, nested) == want({'pf0': {'SRIOV_NET_VF': 1}})
    assert mappings(body, nested) == [(('_NUMA', ('numa0',)), ('_VF', ('pf0',)))]
    assert summarized(body, nested) == {'cn', 'numa0', 'numa1', 'pf0'}


@pytest.mark.parametrize('query, version, detail, code', [
    (f'{NESTED_QUERY}&in_tree={uuid_lib.uuid4()}', '1.30',
     "'in_tree' does not match any of the regexes", UNDEFINED),
    (f'{NESTED_QUERY}&root_required=HW_CPU_X86_AVX2', '1.34',
     "'root_required' does not match any of the regexes", UNDEFINED),
    ('resources_VF=SRIOV_NET_VF:1&resources_CPU=VCPU:1&group_policy=none'
     '&same_subtree=_VF,_CPU', '1.35', "'same_subtree' does not match any of the regexes",
     UNDEFINED),
    ('resources_VF=SRIOV_NET_VF:1&required_NUMA=HW_NUMA_ROOT', '1.36',
     "Resourceless suffixed group request should be specified in `same_subtree` query param: "
     "bad group(s) - ['_NUMA'].", 'placement.query.bad_value'),
    ('required=HW_NUMA_ROOT', '1.36',
     'There must be at least one resources or resources[$S] parameter.',
     'placement.query.missing_value'),
    ('resources_VF=SRIOV_NET_VF:1&required_NUMA=HW_NUMA_ROOT&same_subtree=_VF,_NUMA', '1.36',
     'The "group_policy" parameter is required when specifying more than one '
     '"resources{N}" parameter.', UNDEFINED),
    ('resources_VF=SRIOV_NET_VF:1&same_subtree=_VF,_NOPE', '1.36',
     "Real suffixes should be specified in `same_subtree`: ['_NOPE'] not found in ['_VF'].",
     'placement.query.bad_value'),
    (f'{NESTED_QUERY}&root_required=HW_CPU_X86_AVX2,!HW_CPU_X86_AVX2', '1.35',
     'Conflicting required and forbidden traits found in root_required: HW_CPU_X86_AVX2',
     'placement.query.bad_value'),
])
def test_tree_parameters_refused(api, nested, query, version, detail, code):
    with unchanged():
        assert_error(api.get(f'/allocation_candidates?{query}', version=version), 400, detail, code)


# ---- request groups and group_policy (1.25), named suffixes (1.33) ---------------------------

TWO_NUMA = {'numa0': {'VCPU': 1}, 'numa1': {'VCPU': 1}}


def test_group_policy_none_lets_groups_share_a_provider(api, nested):
    body = get(api, 'resources1=VCPU:1&resources2=VCPU:1&group_policy=none', version='1.34')
    assert candidates(body, nested) == want(
        {'flat': {'VCPU': 2}}, {'numa0': {'VCPU': 2}}, {'numa1': {'VCPU': 2}}, TWO_NUMA, TWO_NUMA)
    assert mappings(body, nested) == sorted([
        (('1', ('flat',)), ('2', ('flat',))),
        (('1', ('numa0',)), ('2', ('numa0',))),
        (('1', ('numa1',)), ('2', ('numa1',))),
        (('1', ('numa0',)), ('2', ('numa1',))),
        (('1', ('numa1',)), ('2', ('numa0',)))])


def test_group_policy_isolate_needs_a_provider_per_group(api, nested):
    body = get(api, 'resources1=VCPU:1&resources2=VCPU:1&group_policy=isolate', version='1.34')
    assert candidates(body, nested) == want(TWO_NUMA, TWO_NUMA)
    assert mappings(body, nested) == sorted([(('1', ('numa0',)), ('2', ('numa1',))),
                                             (('1', ('numa1',)), ('2', ('numa0',)))])
    assert summarized(body, nested) == {'cn', 'numa0', 'numa1', 'pf0'}


def test_numbered_groups_from_1_25_use_one_provider_each(api, nested):
    # Before 1.29 (not nested-aware) the two NUMA nodes are not combined.
    body = get(api, 'resources1=VCPU:1&resources2=VCPU:1&group_policy=none', version='1.25')
    assert candidates(body, nested) == want(
        {'flat': {'VCPU': 2}}, {'numa0': {'VCPU': 2}}, {'numa1': {'VCPU': 2}})


def test_named_suffixes_from_1_33(api, nested):
    body = get(api, 'resources_A=VCPU:1&resources_B=VCPU:1&group_policy=isolate', version='1.33')
    assert candidates(body, nested) == want(TWO_NUMA, TWO_NUMA)
    assert [sorted(request) for request in body['allocation_requests']] == [['allocations']] * 2


@pytest.mark.parametrize('query, version, detail', [
    ('resources1=VCPU:1&resources2=VCPU:1', '1.25',
     'The "group_policy" parameter is required when specifying more than one "resources{N}" '
     'parameter.'),
    ('resources1=VCPU:1&resources2=VCPU:1&group_policy=bogus', '1.25',
     "'bogus' is not one of ['none', 'isolate']"),
    ('resources1=VCPU:1&resources2=VCPU:1&group_policy=none', '1.24',
     "'resources' is a required property"),
    ('resources_A=VCPU:1&resources_B=VCPU:1&group_policy=isolate', '1.32',
     "'resources_A', 'resources_B' do not match any of the regexes"),
    ('resources=MEMORY_MB:1&required1=HW_NUMA_ROOT', '1.25',
     'All traits parameters must be associated with resources.  Found the following orphaned '
     'traits keys: required1'),
    ('resources_VF=SRIOV_NET_VF:1&required_NUMA=HW_NUMA_ROOT', '1.35',
     'All traits parameters must be associated with resources.  Found the following orphaned '
     'traits keys: required_NUMA'),
    (f'resources=MEMORY_MB:1&member_of1={AGG_A}', '1.25',
     'All member_of parameters must be associated with resources. Found the following orphaned '
     'member_of keys: member_of1'),
])
def test_group_parameters_refused(api, nested, query, version, detail):
    with unchanged():
        assert_error(api.get(f'/allocation_candidates?{query}', version=version), 400, detail)


# ---- sharing providers ------------------------------------------------------------------

@pytest.fixture
def sharing(api):
    """A diskless node sharing an NFS pool's DISK_GB through aggregate SHARED, a
    pool in another aggregate, and a node with its own disk."""
    return build(
        api,
        ('diskless', None, {'VCPU': {'total': 8}}, [], [SHARED]),
        ('nfs', None, {'DISK_GB': {'total': 1000}}, ['MISC_SHARES_VIA_AGGREGATE'], [SHARED]),
        ('nfs_out', None, {'DISK_GB': {'total': 1000}}, ['MISC_SHARES_VIA_AGGREGATE'], [OTHER]),
        ('disk', None, {'VCPU': {'total': 8}, 'DISK_GB': {'total': 100}}, [], []))


SHARED_DISK = {'diskless': {'VCPU': 1}, 'nfs': {'DISK_GB': 10}}
LOCAL_DISK = {'disk': {'VCPU': 1, 'DISK_GB': 10}}


@pytest.mark.parametrize('version', ['1.10', '1.28', LATEST])
def test_a_candidate_combines_a_node_and_its_sharing_provider(api, sharing, version):
    body = get(api, 'resources=VCPU:1,DISK_GB:10', version=version)
    assert candidates(body, sharing) == want(SHARED_DISK, LOCAL_DISK)
    assert summarized(body, sharing) == {'diskless', 'nfs', 'disk'}   # never nfs_out


def test_the_sharing_provider_s_capacity_counts(api, sharing):
    body = get(api, 'resources=VCPU:1,DISK_GB:200')
    assert candidates(body, sharing) == want({'diskless': {'VCPU': 1}, 'nfs': {'DISK_GB': 200}})
    assert mappings(body, sharing) == [(('', ('diskless', 'nfs')),)]


@pytest.mark.parametrize('member_of, expected', [
    (SHARED, [SHARED_DISK]),
    (OTHER, []),
    (f'!{SHARED}', [LOCAL_DISK]),
    (f'!{OTHER}', [SHARED_DISK, LOCAL_DISK]),
])
def test_member_of_filters_shared_candidates(api, sharing, member_of, expected):
    body = get(api, f'resources=VCPU:1,DISK_GB:10&member_of={member_of}')
    assert candidates(body, sharing) == want(*expected)


def test_isolated_groups_may_use_the_sharing_provider(api, sharing):
    body = get(api, 'resources1=VCPU:1&resources2=DISK_GB:10&group_policy=isolate')
    assert candidates(body, sharing) == want(SHARED_DISK)
    assert mappings(body, sharing) == [(('1', ('diskless',)), ('2', ('nfs',)))]


# ---- streamed answers -------------------------------------------------------------

SEVERAL_GROUPS = 'resources=MEMORY_MB:512&resources1=VCPU:1&resources2=VCPU:1&group_policy=none'


@pytest.mark.parametrize('query, version', [
    ('resources=VCPU:1', '1.10'),                  # one group, the list form
    (SEVERAL_GROUPS, '1.25'),                      # combined, without mappings
    (SEVERAL_GROUPS, LATEST),                      # combined, with mappings
    (SEVERAL_GROUPS + '&limit=2', LATEST),
])
def test_a_streamed_answer_is_the_answer_sent_whole(api, nested, monkeypatch, query, version):
    whole = api.get(f'/allocation_candidates?{query}', version=version)
    assert not whole.streaming
    monkeypatch.setattr(placement_api, 'STREAM_AFTER', 1)
    monkeypatch.setattr(candidates_api, 'CHUNK_CANDIDATES', 1)
    streamed = api.get(f'/allocation_candidates?{query}', version=version)
    assert streamed.streaming and streamed.status_code == 200
    assert streamed.bytes == whole.bytes
    whole_headers = lasting_headers(whole)
    assert lasting_headers(streamed) == whole_headers | {'Content-Length': None}


def test_a_streamed_answer_summarizes_the_trees_it_used(api, nested, sharing, monkeypatch):
    cloud = Cloud()
    for fixture in (nested, sharing):
        cloud.update(fixture)
        cloud.root.update(fixture.root)
    monkeypatch.setattr(placement_api, 'STREAM_AFTER', 1)
    query = 'resources1=VCPU:1&resources2=VCPU:1&group_policy=none'
    every = get(api, query)
    assert summarized(every, cloud) == cloud.tree('cn') | {'flat', 'diskless', 'disk'}
    (candidate,) = candidates(get(api, query + '&limit=1'), cloud)
    (tree,) = {cloud.root[name] for name, _, _ in candidate}
    assert summarized(get(api, query + '&limit=1'), cloud) == cloud.tree(tree)


# ---- the answer's shape per microversion -------------------------------------------------

@pytest.fixture
def shaped(api):
    """cn: VCPU (8, reserved 1, ratio 1.5), MEMORY_MB (1024, reserved 24, ratio 1.25),
    two traits, 3 VCPU and 100 MEMORY_MB used; numa: a VCPU child."""
    cloud = build(
        api,
        ('cn', None, {'VCPU': {'total': 8, 'reserved': 1, 'allocation_ratio': 1.5},
                      'MEMORY_MB': {'total': 1024, 'reserved': 24, 'allocation_ratio': 1.25}},
         ['HW_CPU_X86_SSE', 'HW_CPU_X86_AVX2'], []),
        ('numa', 'cn', {'VCPU': {'total': 4}}, [], []))
    assert api.allocate(str(uuid_lib.uuid4()),
                        {cloud['cn']: {'VCPU': 3, 'MEMORY_MB': 100}}).status_code == 204
    return cloud


def test_allocation_requests_are_lists_before_1_12(api, shaped):
    body = get(api, 'resources=VCPU:1', version='1.11')
    assert sorted(body['allocation_requests'], key=repr) == sorted([
        {'allocations': [{'resource_provider': {'uuid': shaped[name]},
                          'resources': {'VCPU': 1}}]}
        for name in ('cn', 'numa')], key=repr)


@pytest.mark.parametrize('version', ['1.12', '1.33'])
def test_allocation_requests_are_dicts_from_1_12(api, shaped, version):
    body = get(api, 'resources=VCPU:1', version=version)
    assert sorted(body['allocation_requests'], key=repr) == sorted([
        {'allocations': {shaped[name]: {'resources': {'VCPU': 1}}}}
        for name in ('cn', 'numa')], key=repr)


def test_mappings_from_1_34(api, shaped):
    body = get(api, 'resources=VCPU:1', version='1.34')
    assert sorted(body['allocation_requests'], key=repr) == sorted([
        {'allocations': {shaped[name]: {'resources': {'VCPU': 1}}},
         'mappings': {'': [shaped[name]]}}
        for name in ('cn', 'numa')], key=repr)


CN_VCPU = {'capacity': 10, 'used': 3}          # int((8 - 1) * 1.5)
CN_MEMORY = {'capacity': 1250, 'used': 100}    # int((1024 - 24) * 1.25)
NUMA_VCPU = {'capacity': 4, 'used': 0}


@pytest.mark.parametrize('version, cn_resources, keys', [
    ('1.10', {'VCPU': CN_VCPU}, {'resources'}),
    ('1.16', {'VCPU': CN_VCPU}, {'resources'}),
    ('1.17', {'VCPU': CN_VCPU}, {'resources', 'traits'}),
    ('1.26', {'VCPU': CN_VCPU}, {'resources', 'traits'}),
    ('1.27', {'VCPU': CN_VCPU, 'MEMORY_MB': CN_MEMORY}, {'resources', 'traits'}),
    ('1.28', {'VCPU': CN_VCPU, 'MEMORY_MB': CN_MEMORY}, {'resources', 'traits'}),
    ('1.29', {'VCPU': CN_VCPU, 'MEMORY_MB': CN_MEMORY},
     {'resources', 'traits', 'parent_provider_uuid', 'root_provider_uuid'}),
    (LATEST, {'VCPU': CN_VCPU, 'MEMORY_MB': CN_MEMORY},
     {'resources', 'traits', 'parent_provider_uuid', 'root_provider_uuid'}),
])
def test_provider_summaries_per_microversion(api, shaped, version, cn_resources, keys):
    summaries = get(api, 'resources=VCPU:1', version=version)['provider_summaries']
    cn, numa = summaries[shaped['cn']], summaries[shaped['numa']]
    assert set(summaries) == {shaped['cn'], shaped['numa']}
    assert set(cn) == set(numa) == keys
    assert cn['resources'] == cn_resources
    assert numa['resources'] == {'VCPU': NUMA_VCPU}
    if 'traits' in keys:
        assert sorted(cn['traits']) == ['HW_CPU_X86_AVX2', 'HW_CPU_X86_SSE']
        assert numa['traits'] == []
    if 'root_provider_uuid' in keys:
        assert (cn['parent_provider_uuid'], cn['root_provider_uuid']) == (None, shaped['cn'])
        assert (numa['parent_provider_uuid'], numa['root_provider_uuid']) == (
            shaped['cn'], shaped['cn'])


def test_a_provider_without_requested_classes_is_summarized_from_1_27(api, shaped):
    """Before 1.27 a summary needs a requested class; numa has no MEMORY_MB."""
    assert set(get(api, 'resources=MEMORY_MB:1', version='1.26')['provider_summaries']) == {
        shaped['cn']}
    summaries = get(api, 'resources=MEMORY_MB:1', version='1.29')['provider_summaries']
    assert set(summaries) == {shaped['cn'], shaped['numa']}
    assert summaries[shaped['cn']]['resources'] == {'VCPU': CN_VCPU, 'MEMORY_MB': CN_MEMORY}
    assert summaries[shaped['numa']]['resources'] == {'VCPU': NUMA_VCPU}


# ---- a candidate is a valid allocation body -------------------------------------------

@pytest.mark.parametrize('version, extra', [
    ('1.34', {}),
    ('1.36', {}),
    (LATEST, {'consumer_type': 'INSTANCE'}),
])
def test_a_candidate_can_be_put_unchanged(api, version, extra):
    cloud = build(api,
                  ('cn', None, {'DISK_GB': {'total': 100}}, [], [SHARED]),
                  ('numa', 'cn', {'VCPU': {'total': 8}}, [], []),
                  ('nfs', None, {'DISK_GB': {'total': 1000}}, ['MISC_SHARES_VIA_AGGREGATE'],
                   [SHARED]))
    body = get(api, 'resources=VCPU:1,DISK_GB:10', version=version)
    assert candidates(body, cloud) == want({'numa': {'VCPU': 1}, 'cn': {'DISK_GB': 10}},
                                           {'numa': {'VCPU': 1}, 'nfs': {'DISK_GB': 10}})
    for request in body['allocation_requests']:
        consumer = str(uuid_lib.uuid4())
        response = api.put(f'/allocations/{consumer}', dict(
            request, project_id='proj', user_id='user', consumer_generation=None, **extra),
            version=version)
        assert response.status_code == 204, response.content
        held = api.get(f'/allocations/{consumer}', version=version).body['allocations']
        assert {rp: entry['resources'] for rp, entry in held.items()} == {
            rp: entry['resources'] for rp, entry in request['allocations'].items()}

    def usage(name):
        return api.get(f'/resource_providers/{cloud[name]}/usages').body['usages']
    assert usage('numa') == {'VCPU': 2}
    assert usage('cn') == {'DISK_GB': 10}
    assert usage('nfs') == {'DISK_GB': 10}


def test_summaries_report_the_current_usage(api, capacity_nodes):
    response = api.allocate(str(uuid_lib.uuid4()), {capacity_nodes['ok']: {'VCPU': 2}})
    assert response.status_code == 204
    summaries = get(api, 'resources=VCPU:1&in_tree=' + capacity_nodes['ok'])['provider_summaries']
    assert list(summaries) == [capacity_nodes['ok']]
    assert summaries[capacity_nodes['ok']]['resources'] == {'VCPU': {'capacity': 8, 'used': 2}}


# ---- bad input ---------------------------------------------------------------------------

@pytest.mark.parametrize('query, version, detail, code', [
    ('resources=VCPU', LATEST, 'Badly formed resources parameter. Expected resources query '
     'string parameter in form: ?resources=VCPU:2,MEMORY_MB:1024. Got: VCPU.', UNDEFINED),
    ('resources=VCPU:x', LATEST, 'Requested resource VCPU expected positive integer amount. '
     'Got: x.', UNDEFINED),
    ('resources=VCPU:0', LATEST, 'Requested resource VCPU requires amount >= 1. Got: 0.',
     UNDEFINED),
    ('resources=VCPU:-1', LATEST, 'Requested resource VCPU requires amount >= 1. Got: -1.',
     UNDEFINED),
    ('resources=', LATEST, 'Badly formed resources parameter. Expected resources query string '
     'parameter in form: ?resources=VCPU:2,MEMORY_MB:1024. Got: empty string.', UNDEFINED),
    ('resources=', '1.10', 'Got: empty string.', None),
    ('resources=VCPU:1,', LATEST, 'Got: .', UNDEFINED),
    ('resources=VCPU:1,CUSTOM_NOPE:1', LATEST,
     'Invalid resource class in resources parameter: No such resource class CUSTOM_NOPE.',
     UNDEFINED),
    ('resources=CUSTOM_NOPE:1', '1.10',
     'Invalid resource class in resources parameter: No such resource class CUSTOM_NOPE.', None),
    ('resources=VCPU:1&required=HW_CPU_X86_AVX2,CUSTOM_NOPE', '1.17',
     'No such trait(s): CUSTOM_NOPE.', None),
    ('resources=VCPU:1&required=!CUSTOM_NOPE', LATEST, 'No such trait(s): CUSTOM_NOPE.',
     UNDEFINED),
    ('resources=VCPU:1&root_required=CUSTOM_NOPE', LATEST, 'No such trait(s): CUSTOM_NOPE.',
     UNDEFINED),
    ('resources=VCPU:1&limit=0', '1.16', "'0' does not match '^[1-9][0-9]*$'", None),
    ('resources=VCPU:1&limit=-1', LATEST, "'-1' does not match '^[1-9][0-9]*$'", UNDEFINED),
    ('resources=VCPU:1&limit=x', LATEST, "'x' does not match '^[1-9][0-9]*$'", UNDEFINED),
    ('resources=VCPU:1&limit=1', '1.15',
     "Additional properties are not allowed ('limit' was unexpected)", None),
    ('resources1=VCPU:1&resources2=VCPU:1&group_policy=all', LATEST,
     "'all' is not one of ['none', 'isolate']", UNDEFINED),
    ('resources=VCPU:1&bogus=1', LATEST, "'bogus' does not match any of the regexes",
     UNDEFINED),
    ('resources=VCPU:1&bogus=1', '1.10',
     "Additional properties are not allowed ('bogus' was unexpected)", None),
    ('', LATEST, 'There must be at least one resources or resources[$S] parameter.',
     'placement.query.missing_value'),
    ('', '1.10', "'resources' is a required property", None),
    ('resources=VCPU:1&member_of=not-a-uuid', LATEST,
     "Expected 'member_of' parameter to contain valid UUID(s). Got: not-a-uuid", UNDEFINED),
    (f'resources=VCPU:1&member_of=in:{AGG_A},not-a-uuid', LATEST,
     "Expected 'member_of' parameter to contain valid UUID(s). Got: not-a-uuid", UNDEFINED),
    ('resources=VCPU:1&in_tree=not-a-uuid', LATEST,
     "Expected 'in_tree' parameter to be a format of uuid. Got: not-a-uuid", UNDEFINED),
    ('resources=VCPU:1&required=HW_CPU_X86_AVX2,!HW_CPU_X86_AVX2', LATEST,
     'Conflicting required and forbidden traits found in the following traits keys: '
     'required: (HW_CPU_X86_AVX2)', UNDEFINED),
    ('resources=VCPU:1&required=HW_CPU_X86_AVX2&required=!HW_CPU_X86_AVX2', LATEST,
     'Conflicting required and forbidden traits found in the following traits keys: '
     'required: (HW_CPU_X86_AVX2)', UNDEFINED),
    ('resources=VCPU:1&required=in:HW_CPU_X86_AVX2,HW_CPU_X86_SSE'
     '&required=!HW_CPU_X86_AVX2,!HW_CPU_X86_SSE', LATEST,
     'Conflicting required and forbidden traits found in the following traits keys: '
     'required: (HW_CPU_X86_AVX2, HW_CPU_X86_SSE)', UNDEFINED),
    ('resources=VCPU:1&required=', LATEST, "Expected 'required' parameter value of the form: "
     'HW_CPU_X86_VMX,!CUSTOM_MAGIC. Got an empty trait in: ', UNDEFINED),
    ('resources=VCPU:1&root_required=HW_CPU_X86_AVX2&root_required=!HW_CPU_X86_SSE', LATEST,
     "Query parameter 'root_required' may be specified only once.",
     'placement.query.duplicate_key'),
    ('resources=VCPU:1&required1=HW_CPU_X86_AVX2', '1.25',
     'All traits parameters must be associated with resources.  Found the following orphaned '
     'traits keys: required1', UNDEFINED),
])
def test_bad_input_is_refused_and_changes_nothing(api, query, version, detail, code):
    build(api, ('cn', None, {'VCPU': {'total': 8}}, ['HW_CPU_X86_AVX2'], [AGG_A]))
    with unchanged():
        assert_error(api.get(f'/allocation_candidates?{query}', version=version), 400, detail, code)


def test_only_json_is_offered(api):
    build(api, ('cn', None, {'VCPU': {'total': 8}}, [], []))
    with unchanged():
        response = api.get('/allocation_candidates?resources=VCPU:1',
                           headers={'Accept': 'text/plain'})
        assert response.status_code == 406
        assert response['Content-Type'] == 'text/plain; charset=UTF-8'
        assert response.content.decode() == (
            '406 Not Acceptable\n\nThe resource could not be generated that was acceptable to your '
            'browser (content of type text/plain. \n\n Only application/json is provided')


def test_before_1_10_there_are_no_candidates(api):
    build(api, ('cn', None, {'VCPU': {'total': 8}}, [], []))
    with unchanged():
        response = api.get('/allocation_candidates?resources=VCPU:1', version='1.9')
        assert_error(response, 404, 'The resource could not be found.', code=None)


# ---- SQL queries do not grow with the number of providers --------------------------------

def add_compute_nodes(api, start, count):
    """Diskless nodes with a NUMA child, in the aggregate of a shared pool."""
    for i in range(start, start + count):
        root = api.create_provider(f'cn{i}')['uuid']
        api.set_inventory(root, {'MEMORY_MB': {'total': 4096}})
        api.set_traits(root, ['HW_CPU_X86_AVX2'])
        api.set_aggregates(root, [SHARED])
        numa = api.create_provider(f'cn{i}-numa0', parent=root)['uuid']
        api.set_inventory(numa, {'VCPU': {'total': 8}})


def count_queries(api, query):
    summaries.forget_traits()  # the worst case: no traits remembered
    with CaptureQueriesContext(connection) as captured:
        body = get(api, query)
    return len(captured), body


def test_queries_do_not_depend_on_how_many_providers_match(api):
    pool = api.create_provider('nfs')['uuid']
    api.set_inventory(pool, {'DISK_GB': {'total': 100000}})
    api.set_traits(pool, ['MISC_SHARES_VIA_AGGREGATE'])
    api.set_aggregates(pool, [SHARED])
    query = ('resources=VCPU:1,MEMORY_MB:64,DISK_GB:10&required=HW_CPU_X86_AVX2'
             f'&member_of={SHARED}&root_required=!COMPUTE_STATUS_DISABLED')
    add_compute_nodes(api, 0, 5)
    get(api, query)  # warm any per-process caches
    few, body = count_queries(api, query)
    assert len(body['allocation_requests']) == 5
    add_compute_nodes(api, 5, 55)
    many, body = count_queries(api, query)
    assert len(body['allocation_requests']) == 60
    assert many == few
