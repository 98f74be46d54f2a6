"""GET /explain/allocation_candidates: how many providers each constraint
eliminates, and in plain words why nothing fits."""
import uuid

import pytest

from tests.conftest import assert_error, error_of

AGG = str(uuid.uuid4())
OTHER_AGG = str(uuid.uuid4())


@pytest.fixture
def ten_nodes(api):
    """10 flat compute nodes: 4 too small for 2 VCPU, 3 more without AVX2,
    2 more outside the aggregate, leaving exactly 1 that fits."""
    nodes = []
    for i in range(10):
        rp = api.create_provider(f'cn{i}')['uuid']
        api.set_inventory(rp, {'VCPU': {'total': 1 if i < 4 else 8}})
        if i >= 7:
            api.set_traits(rp, ['HW_CPU_X86_AVX2'])
        api.set_aggregates(rp, [AGG] if i >= 9 else [OTHER_AGG])
        nodes.append(rp)
    return nodes


def explain(api, query, **kwargs):
    response = api.get(f'/explain/allocation_candidates?{query}', **kwargs)
    assert response.status_code == 200, response.content
    return response.body


def funnel_of(body, suffix=''):
    group = next(g for g in body['groups'] if g['suffix'] == suffix)
    return [(s['constraint'], s['remaining'], s['eliminated']) for s in group['funnel']]


def test_each_constraint_eliminates_a_known_number(api, ten_nodes):
    body = explain(api, f'resources=VCPU:2&required=HW_CPU_X86_AVX2&member_of={AGG}')
    assert body['allocation_candidates'] == 1
    assert funnel_of(body) == [
        ('2 VCPU', 6, 4),
        ('trait HW_CPU_X86_AVX2', 3, 3),
        (f'in aggregate {AGG}', 1, 2),
    ]
    group = body['groups'][0]
    assert (group['unit'], group['total']) == ('providers', 10)
    assert body['explanation'] == []  # something fits: nothing to explain


def test_an_empty_answer_names_what_eliminated_the_providers(api, ten_nodes):
    body = explain(api, 'resources=VCPU:2&required=HW_CPU_X86_AVX2,STORAGE_DISK_SSD')
    assert body['allocation_candidates'] == 0
    assert funnel_of(body) == [
        ('2 VCPU', 6, 4),
        ('trait HW_CPU_X86_AVX2', 3, 3),
        ('trait STORAGE_DISK_SSD', 0, 3),
    ]
    assert body['explanation'] == [
        'unsuffixed group: 4 providers lack 2 VCPU; 3 more providers lack trait '
        'HW_CPU_X86_AVX2; 3 more providers lack trait STORAGE_DISK_SSD']


def test_forbidden_traits_and_aggregates(api, ten_nodes):
    body = explain(api, f'resources=VCPU:2&required=!HW_CPU_X86_AVX2&member_of=!{OTHER_AGG}')
    assert funnel_of(body) == [
        ('2 VCPU', 6, 4),
        ('without trait HW_CPU_X86_AVX2', 3, 3),
        (f'not in aggregate {OTHER_AGG}', 0, 3),
    ]
    assert body['allocation_candidates'] == 0


def test_the_unsuffixed_group_counts_trees_that_share(api):
    """Two trees: one with VCPU on a NUMA child, one diskless using an NFS
    pool through an aggregate; a third tree has nothing."""
    pool = api.create_provider('nfs')['uuid']
    api.set_inventory(pool, {'DISK_GB': {'total': 1000}})
    api.set_traits(pool, ['MISC_SHARES_VIA_AGGREGATE'])
    api.set_aggregates(pool, [AGG])
    with_numa = api.create_provider('cn-numa')['uuid']
    numa = api.create_provider('cn-numa-0', parent=with_numa)['uuid']
    api.set_inventory(numa, {'VCPU': {'total': 8}})
    api.set_aggregates(with_numa, [AGG])
    diskless = api.create_provider('cn-diskless')['uuid']
    api.set_inventory(diskless, {'VCPU': {'total': 8}})
    api.create_provider('empty')
    body = explain(api, 'resources=VCPU:2,DISK_GB:100')
    group = body['groups'][0]
    assert (group['unit'], group['total']) == ('trees', 4)  # nfs, cn-numa, cn-diskless, empty
    assert funnel_of(body) == [('2 VCPU', 2, 2), ('100 DISK_GB', 1, 1)]
    assert body['allocation_candidates'] == 1
    stages = [(s['group'], s['stage'], s['detail'], s['remaining'])
              for s in body['search_stages']]
    assert stages == [
        ('', 'capacity', '2 VCPU', 2),               # two providers hold VCPU
        ('', 'capacity', '100 DISK_GB', 1),
        ('', 'sharing providers', 'DISK_GB', 1),
        ('', 'trees with every class so far', 'VCPU', 2),
        ('', 'trees with every class so far', 'DISK_GB', 1),
        ('', 'candidates for the group', '', 1),
        ('', 'combined candidates', '', 1),
    ]


def test_suffixed_groups_each_get_a_funnel(api, ten_nodes):
    body = explain(api, 'resources1=VCPU:4&resources2=VCPU:100&group_policy=none')
    assert funnel_of(body, '1') == [('4 VCPU', 6, 4)]
    assert funnel_of(body, '2') == [('100 VCPU', 0, 10)]
    assert body['allocation_candidates'] == 0
    assert body['explanation'] == ['group 2: 10 providers lack 100 VCPU']


def test_a_combination_that_fails_is_named_as_such(api, ten_nodes):
    # Each group alone fits on node 9, but isolate needs two providers with AVX2
    # and 8 VCPU... node 7, 8, 9 have AVX2 and 8 VCPU: ask for more than fits twice.
    body = explain(api, 'resources1=VCPU:5&required1=HW_CPU_X86_AVX2'
                        f'&resources2=VCPU:5&member_of2={AGG}&group_policy=none')
    assert body['allocation_candidates'] == 0
    assert funnel_of(body, '1') == [('5 VCPU', 6, 4), ('trait HW_CPU_X86_AVX2', 3, 3)]
    assert funnel_of(body, '2') == [('5 VCPU', 6, 4), (f'in aggregate {AGG}', 1, 5)]
    assert body['explanation'] == [
        'Every request group fits on its own (group 1 3 providers, group 2 1 providers), but '
        'no combination of them does: group_policy, same_subtree, root_required or the capacity '
        'left when the groups share providers rules them out.']


def test_root_required_is_part_of_the_funnel(api, ten_nodes):
    body = explain(api, 'resources=VCPU:2&root_required=HW_CPU_X86_AVX2')
    assert funnel_of(body) == [('2 VCPU', 6, 4), ('root trait HW_CPU_X86_AVX2', 3, 3)]
    assert body['allocation_candidates'] == 3


def test_the_request_is_validated_like_allocation_candidates(api, ten_nodes):
    assert_error(api.get('/explain/allocation_candidates?resources=VCPU:x'), 400,
                 'Requested resource VCPU expected positive integer amount. Got: x.')
    response = api.get('/explain/allocation_candidates?resources=CUSTOM_NOPE:1')
    assert_error(response, 400, 'Invalid resource class in resources parameter: No such '
                                'resource class CUSTOM_NOPE.')
    response = api.get('/explain/allocation_candidates?resources=VCPU:1', version='1.9')
    assert_error(response, 404, code=None)
    assert error_of(response)['detail'] == 'The resource could not be found.\n\n   '


def test_without_a_microversion_the_latest_rules_apply(api, ten_nodes):
    body = explain(api, 'resources_COMPUTE=VCPU:2', version=False)
    assert body['microversion'] == '1.39'
    assert funnel_of(body, '_COMPUTE') == [('2 VCPU', 6, 4)]


def test_explaining_needs_the_candidates_policy(make_api, ten_nodes):
    response = make_api(token='user').get('/explain/allocation_candidates?resources=VCPU:1')
    error = assert_error(response, 403)
    assert error['detail'] == ('Access was denied to this resource.\n\n Policy does not allow '
                               'placement:allocation_candidates:list to be performed.  ')
