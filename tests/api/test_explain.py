"""GET /explain/allocation_candidates: how many providers each constraint
eliminates, and in plain words why nothing fits."""
import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from providers.candidates import explain as explain_module
from tests.support.api import assert_error
from tests.support.api import error_of
from tests.support.factories import add_allocation
from tests.support.factories import add_provider

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
    assert body['explanation'] == [
        'group 2: 10 providers lack 100 VCPU',
        # the closest of the providers group 2 eliminated: 8 VCPU of 100 (oldest first)
        'group 2, closest: cn4 lacks 92 VCPU; cn5 lacks 92 VCPU; cn6 lacks 92 VCPU']


def test_a_combination_that_fails_is_named_as_such(api, ten_nodes):
    # Each group alone fits on node 9, but isolate needs two providers with AVX2
    # and 8 VCPU... node 7, 8, 9 have AVX2 and 8 VCPU: ask for more than fits twice.
    body = explain(api, 'resources1=VCPU:5&required1=HW_CPU_X86_AVX2'
                        f'&resources2=VCPU:5&member_of2={AGG}&group_policy=none')
    assert body['allocation_candidates'] == 0
    assert funnel_of(body, '1') == [('5 VCPU', 6, 4), ('trait HW_CPU_X86_AVX2', 3, 3)]
    assert funnel_of(body, '2') == [('5 VCPU', 6, 4), (f'in aggregate {AGG}', 1, 5)]
    assert body['explanation'] == [
        # cn9 has 8 VCPU for the 10 both groups ask; cn7 and cn8 fit group 1 only.
        'Every request group fits on its own (group 1 3 providers, group 2 1 provider), but '
        "no combination of them does: in 1 tree the groups together ask for more of a class "
        "than the tree's providers have; only some of the groups fit in 2 trees."]


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


# ---- a required trait only on the root: root_required ------------------------------

ROOT_TRAIT_QUERY = 'resources=VCPU:2,MEMORY_MB:1024&required=HW_CPU_X86_AVX2'


def numa_tree(name, *, root_traits=('HW_CPU_X86_AVX2',), numa_traits=(), numa=2,
              root_inventories=None, aggregates=()):
    """A NUMA-modelled compute node: a root with the host's traits and no
    inventory, NUMA children with 8 VCPU and 4096 MEMORY_MB each."""
    root = add_provider(name, inventories=root_inventories, traits=root_traits,
                        aggregates=aggregates)
    for i in range(numa):
        add_provider(f'{name}-numa{i}', parent=root, traits=numa_traits,
                     inventories={'VCPU': {'total': 8}, 'MEMORY_MB': {'total': 4096}})
    return root


def candidate_trees(api, query):
    """The roots of the trees GET /allocation_candidates answers with."""
    body = api.get(f'/allocation_candidates?{query}').body
    return {body['provider_summaries'][uuid]['root_provider_uuid']
            for request in body['allocation_requests'] for uuid in request['allocations']}


def test_a_trait_only_on_the_root_suggests_root_required(api, db):
    roots = [numa_tree(f'r1-rack05-cn0{i}') for i in range(1, 4)]
    body = explain(api, ROOT_TRAIT_QUERY)
    assert body['allocation_candidates'] == 0
    # Placement looks for `required` on the providers of the resources: the NUMA nodes.
    assert funnel_of(body) == [('2 VCPU', 3, 0), ('1,024 MEMORY_MB', 3, 0),
                               ('trait HW_CPU_X86_AVX2', 0, 3)]
    text = ('3 trees have HW_CPU_X86_AVX2 only on their root provider while their VCPU and '
            'MEMORY_MB come from child providers; ask root_required=HW_CPU_X86_AVX2 instead '
            '(then 3 trees fit the unsuffixed group, not 0)')
    assert body['explanation'] == [
        'unsuffixed group: 3 trees lack trait HW_CPU_X86_AVX2 on a provider of their resources',
        text]
    assert body['suggestions'] == [{
        'text': text, 'traits': ['HW_CPU_X86_AVX2'], 'from': 'required', 'to': 'root_required',
        'query': 'resources=VCPU:2,MEMORY_MB:1024&root_required=HW_CPU_X86_AVX2',
        'trees': 3, 'trees_now': 0}]
    assert body['near_misses'] == []  # no tree would fit with more room
    # Following the suggestion finds every tree.
    assert candidate_trees(api, body['suggestions'][0]['query']) == {r.uuid for r in roots}
    assert explain(api, body['suggestions'][0]['query'])['suggestions'] == []


def test_the_suggestion_keeps_the_rest_of_the_request(api, db):
    """Other traits stay required, an existing root_required is extended,
    and only the trees the rest of the request allows are counted."""
    numa_tree('cn1', root_traits=['HW_CPU_X86_AVX2', 'COMPUTE_NODE'], numa_traits=['HW_NUMA_ROOT'])
    numa_tree('cn2', root_traits=['HW_CPU_X86_AVX2', 'COMPUTE_NODE'], numa_traits=['HW_NUMA_ROOT'])
    numa_tree('cn3', root_traits=['HW_CPU_X86_AVX2'], numa_traits=['HW_NUMA_ROOT'])
    numa_tree('cn4', root_traits=['COMPUTE_NODE'], numa_traits=['HW_NUMA_ROOT'])
    body = explain(api, 'resources=VCPU:2&required=HW_NUMA_ROOT,HW_CPU_X86_AVX2'
                        ',!COMPUTE_STATUS_DISABLED&root_required=COMPUTE_NODE&limit=5')
    assert body['allocation_candidates'] == 0
    (suggestion,) = body['suggestions']
    assert suggestion['query'] == ('resources=VCPU:2'
                                   '&required=HW_NUMA_ROOT,!COMPUTE_STATUS_DISABLED'
                                   '&root_required=COMPUTE_NODE,HW_CPU_X86_AVX2&limit=5')
    assert (suggestion['trees'], suggestion['trees_now']) == (2, 0)
    assert suggestion['text'].startswith(
        '2 trees have HW_CPU_X86_AVX2 only on their root provider while their VCPU comes from '
        'child providers; ask root_required=COMPUTE_NODE,HW_CPU_X86_AVX2 instead')
    assert {t for t in candidate_trees(api, suggestion['query'])} == {
        api.get('/resource_providers?name=cn1').body['resource_providers'][0]['uuid'],
        api.get('/resource_providers?name=cn2').body['resource_providers'][0]['uuid']}


def test_no_suggestion_when_the_trait_is_where_the_resources_are(api, db):
    numa_tree('cn1', root_traits=['HW_CPU_X86_AVX2'], numa_traits=['HW_CPU_X86_AVX2'])
    numa_tree('cn2', root_traits=[], numa_traits=['HW_CPU_X86_AVX2'])
    body = explain(api, ROOT_TRAIT_QUERY)
    assert body['allocation_candidates'] == 8  # (2 NUMA x 2 NUMA) per tree
    assert body['suggestions'] == []
    assert body['explanation'] == []


def test_no_suggestion_when_the_root_supplies_resources(api, db):
    """A root with disk is a provider of the request's resources: its trait counts."""
    numa_tree('cn1', root_inventories={'DISK_GB': {'total': 100}})
    body = explain(api, 'resources=VCPU:2,DISK_GB:10&required=HW_CPU_X86_AVX2')
    assert body['allocation_candidates'] == 2
    assert body['suggestions'] == []


def test_no_suggestion_when_root_required_would_not_help(api, db):
    # The trees with the trait on the root cannot take the amount anyway.
    numa_tree('cn1')
    body = explain(api, 'resources=VCPU:20&required=HW_CPU_X86_AVX2')
    assert body['suggestions'] == []
    # One tree has it only on its root, two on their NUMA nodes only: moving
    # the trait would fit 1 tree instead of 2.
    numa_tree('cn2', root_traits=[], numa_traits=['HW_CPU_X86_AVX2'])
    numa_tree('cn3', root_traits=[], numa_traits=['HW_CPU_X86_AVX2'])
    body = explain(api, ROOT_TRAIT_QUERY)
    assert body['suggestions'] == []
    assert len(candidate_trees(api, ROOT_TRAIT_QUERY)) == 2
    # Any-of sets cannot move (root_required takes single traits), suffixed
    # groups are single providers; before 1.35 there is no root_required.
    assert explain(api, 'resources=VCPU:2&required=in:HW_CPU_X86_AVX2,HW_CPU_X86_SSE42')[
        'suggestions'] == []
    assert explain(api, 'resources_C=VCPU:2&required_C=HW_CPU_X86_AVX2')['suggestions'] == []
    numa_tree('cn4')
    numa_tree('cn5')
    numa_tree('cn6')
    assert explain(api, ROOT_TRAIT_QUERY)['suggestions'][0]['trees'] == 4  # 4 roots, not 2
    assert explain(api, ROOT_TRAIT_QUERY, version='1.34')['suggestions'] == []


# ---- near misses -------------------------------------------------------------------

@pytest.fixture
def nearly_full(db):
    """Trees for resources=VCPU:4,MEMORY_MB:8192, none of which fits:
    cn01 lacks 1,024 MEMORY_MB (reserved and used), cn02 6,144 MEMORY_MB,
    cn03 1 VCPU (a ratio of 1.5 on 2), cn05 a max_unit of 4,096 MEMORY_MB;
    cn04 lacks both classes, cn06 has no memory at all."""
    def tree(name, **numa):
        root = add_provider(name)
        children = [add_provider(f'{name}-numa{i}', parent=root, inventories=inventories)
                    for i, inventories in numa.items()]
        return root, children

    _, (cn01_0, cn01_1) = tree('r1-rack05-cn01', **{
        '0': {'VCPU': {'total': 8}, 'MEMORY_MB': {'total': 8192, 'reserved': 512}},
        '1': {'VCPU': {'total': 8}, 'MEMORY_MB': {'total': 3072}}})
    add_allocation(cn01_0, MEMORY_MB=512)
    add_allocation(cn01_1, VCPU=8)
    _, (cn02_0,) = tree('r1-rack05-cn02', **{
        '0': {'VCPU': {'total': 8}, 'MEMORY_MB': {'total': 16384}}})
    add_allocation(cn02_0, MEMORY_MB=14336)
    tree('r1-rack05-cn03', **{
        '0': {'VCPU': {'total': 2, 'allocation_ratio': 1.5}, 'MEMORY_MB': {'total': 16384}}})
    tree('r1-rack05-cn04', **{'0': {'VCPU': {'total': 2}, 'MEMORY_MB': {'total': 1024}}})
    tree('r1-rack05-cn05', **{'0': {'VCPU': {'total': 8},
                                    'MEMORY_MB': {'total': 65536, 'max_unit': 4096}}})
    tree('r1-rack05-cn06', **{'0': {'VCPU': {'total': 8}}})


def test_near_misses_name_what_the_closest_trees_lack(api, nearly_full):
    body = explain(api, 'resources=VCPU:4,MEMORY_MB:8192')
    assert body['allocation_candidates'] == 0
    assert funnel_of(body) == [('4 VCPU', 4, 2), ('8,192 MEMORY_MB', 0, 4)]
    assert body['explanation'] == [
        'unsuffixed group: 2 trees lack 4 VCPU; 4 more trees cannot take 8,192 MEMORY_MB: '
        '1 takes at most 4,096 at once (max_unit), 1 has it free only split across its '
        'providers (at most 7,168 on one), 1 lacks it free, 1 has none',
        # closest: the smallest share of the amount lacking (1/8, 1/4, 1/2; cn02 lacks 3/4)
        'unsuffixed group, closest: r1-rack05-cn01 has 10,240 MEMORY_MB free only split '
        'across 2 providers (at most 7,168 on one); r1-rack05-cn03 lacks 1 VCPU; '
        'r1-rack05-cn05 takes at most 4,096 MEMORY_MB at once (max_unit)']
    assert [{k: m[k] for k in ('group', 'tree', 'provider', 'resource_class', 'requested',
                               'lacking', 'limit')} for m in body['near_misses']] == [
        {'group': '', 'tree': 'r1-rack05-cn01', 'provider': 'r1-rack05-cn01-numa0',
         'resource_class': 'MEMORY_MB', 'requested': 8192, 'lacking': 1024, 'limit': 'split'},
        {'group': '', 'tree': 'r1-rack05-cn03', 'provider': 'r1-rack05-cn03-numa0',
         'resource_class': 'VCPU', 'requested': 4, 'lacking': 1, 'limit': 'capacity'},
        {'group': '', 'tree': 'r1-rack05-cn05', 'provider': 'r1-rack05-cn05-numa0',
         'resource_class': 'MEMORY_MB', 'requested': 8192, 'lacking': 4096, 'limit': 'max_unit'},
    ]
    by_name = {p['name']: p['uuid'] for p in api.get('/resource_providers').body[
        'resource_providers']}
    miss = body['near_misses'][0]
    assert (miss['tree_uuid'], miss['provider_uuid']) == (
        by_name['r1-rack05-cn01'], by_name['r1-rack05-cn01-numa0'])
    assert miss['text'] == ('r1-rack05-cn01 has 10,240 MEMORY_MB free only split across 2 '
                            'providers (at most 7,168 on one)')
    # Asking for 1,024 MEMORY_MB less fits cn01, and only it.
    assert candidate_trees(api, 'resources=VCPU:4,MEMORY_MB:7168') == {by_name['r1-rack05-cn01']}


def test_near_misses_of_a_nearly_empty_answer_and_of_a_suffixed_group(api, nearly_full):
    # Only cn03 fits: the answer is nearly empty, and the closest others are named.
    body = explain(api, 'resources=VCPU:1,MEMORY_MB:16384')
    assert body['allocation_candidates'] == 1
    assert body['explanation'] == [
        'unsuffixed group, closest: r1-rack05-cn01 lacks 9,216 MEMORY_MB; r1-rack05-cn05 takes '
        'at most 4,096 MEMORY_MB at once (max_unit); r1-rack05-cn02 lacks 14,336 MEMORY_MB']
    # A suffixed group counts providers, and names them (cn03-numa0 fits).
    body = explain(api, 'resources_M=MEMORY_MB:10000')
    assert body['allocation_candidates'] == 1
    assert body['explanation'] == [
        'group _M, closest: r1-rack05-cn01-numa0 lacks 2,832 MEMORY_MB; r1-rack05-cn05-numa0 '
        'takes at most 4,096 MEMORY_MB at once (max_unit); r1-rack05-cn01-numa1 lacks '
        '6,928 MEMORY_MB']
    assert [(m['group'], m['tree']) for m in body['near_misses']] == [
        ('_M', 'r1-rack05-cn01'), ('_M', 'r1-rack05-cn05'), ('_M', 'r1-rack05-cn01')]
    # Far from nearly empty: no near misses.
    body = explain(api, 'resources=VCPU:1,MEMORY_MB:1024')
    assert (body['allocation_candidates'], body['near_misses']) == (6, [])


def test_near_misses_count_sharing_providers(api, db):
    pool = add_provider('nfs', inventories={'DISK_GB': {'total': 1200, 'reserved': 200}},
                        traits=['MISC_SHARES_VIA_AGGREGATE'], aggregates=[AGG])
    add_allocation(pool, DISK_GB=100)
    numa_tree('cn1', root_traits=[], aggregates=[AGG])
    numa_tree('cn2', root_traits=[])  # not served by the pool: no disk at all
    body = explain(api, 'resources=VCPU:1,DISK_GB:1000')
    assert body['allocation_candidates'] == 0
    assert [(m['tree'], m['provider'], m['lacking']) for m in body['near_misses']] == [
        ('cn1', 'nfs', 100)]
    assert body['explanation'][-1] == 'unsuffixed group, closest: cn1 lacks 100 DISK_GB'
    # What the near miss says is what fits.
    assert explain(api, 'resources=VCPU:1,DISK_GB:900')['allocation_candidates'] == 2


def test_thousands_separators_in_every_text(api, ten_nodes):
    body = explain(api, 'resources=VCPU:1000&required=HW_CPU_X86_AVX2')
    assert funnel_of(body) == [('1,000 VCPU', 0, 10), ('trait HW_CPU_X86_AVX2', 0, 0)]
    assert body['explanation'][0] == 'unsuffixed group: 10 providers lack 1,000 VCPU'
    assert body['explanation'][1] == ('unsuffixed group, closest: cn7 lacks 992 VCPU; '
                                      'cn8 lacks 992 VCPU; cn9 lacks 992 VCPU')
    many = [explain_module.Funnel('', 'providers', 12000, [
        explain_module.Step('2 VCPU', 'lack 2 VCPU', 1500, 10500),
        explain_module.Step('trait X', 'lack trait X', 0, 1500)])]
    assert explain_module.summary(many, []) == [
        'unsuffixed group: 10,500 providers lack 2 VCPU; 1,500 more providers lack trait X']
    many[0].steps.pop()
    assert explain_module.summary(many + many, [])[0].startswith(
        'Every request group fits on its own (unsuffixed group 1,500 providers, ')


# ---- cost -------------------------------------------------------------------------

EXPLAINED = [ROOT_TRAIT_QUERY,
             'resources=VCPU:2,MEMORY_MB:1024,DISK_GB:1000',  # the pool is too small
             'resources=VCPU:64',
             'resources=VCPU:2,MEMORY_MB:1024&root_required=HW_CPU_X86_AVX2']


def test_queries_do_not_grow_with_providers(api, db):
    """Suggestions and near misses cost a fixed number of queries."""
    pool = add_provider('nfs', inventories={'DISK_GB': {'total': 100}},
                        traits=['MISC_SHARES_VIA_AGGREGATE'], aggregates=[AGG])

    def grow(start, count):
        for i in range(start, start + count):
            numa_tree(f'cn{i}', aggregates=[AGG])

    def costs():
        counts, answers = [], []
        for query in EXPLAINED:
            with CaptureQueriesContext(connection) as captured:
                body = explain(api, query)
            counts.append(len(captured))
            answers.append((body['allocation_candidates'] > 0, len(body['suggestions']),
                            len(body['near_misses'])))
        return counts, answers

    grow(0, 3)
    small, answers = costs()
    assert answers == [(False, 1, 0), (False, 0, 3), (False, 0, 3), (True, 0, 0)]
    grow(3, 30)
    assert costs() == (small, answers)
    assert pool  # near misses of DISK_GB name the pool
