"""GET /explain/allocation_candidates names the limit that binds: clouds
built so that each limit in turn is the only cause, and the explanation,
the step's causes and the closest miss name it, and only it."""
import pytest

from tests.support.factories import add_allocation
from tests.support.factories import add_provider

SHARED = '7b3c1d1e-51d4-4f07-9d3f-7c1a3e1f0001'
ELSEWHERE = '7b3c1d1e-51d4-4f07-9d3f-7c1a3e1f0002'


def capacity():
    add_allocation(add_provider('cn1', inventories={'VCPU': {'total': 8}}), VCPU=6)


def reserved():
    add_provider('cn1', inventories={'VCPU': {'total': 8, 'reserved': 6}})


def max_unit():
    add_provider('cn1', inventories={'VCPU': {'total': 64, 'max_unit': 32}})


def min_unit():
    add_provider('cn1', inventories={'DISK_GB': {'total': 1000, 'min_unit': 100}})


def step_size():
    add_provider('cn1', inventories={'MEMORY_MB': {'total': 8192, 'step_size': 512}})


def numa_split():
    root = add_provider('cn1')
    for i in range(2):
        add_provider(f'cn1-numa{i}', parent=root, inventories={'MEMORY_MB': {'total': 4096}})


def trait():
    add_provider('cn1', inventories={'VCPU': {'total': 8}})


def aggregate():
    add_provider('cn1', inventories={'VCPU': {'total': 8}}, aggregates=[ELSEWHERE])


def isolate():
    add_provider('cn1', inventories={'VCPU': {'total': 8}})


def sharing_reach():
    add_provider('cn1', inventories={'VCPU': {'total': 8}}, aggregates=[ELSEWHERE])
    add_provider('nfs', inventories={'DISK_GB': {'total': 1000}},
                 traits=['MISC_SHARES_VIA_AGGREGATE'], aggregates=[SHARED])


# (cloud, query, the explanation's first sentence, the causes of the
# resource step that eliminated it ([] when another step did), the closest
# miss's limit and least change (None: no near miss))
CASES = {
    'capacity': (capacity, 'resources=VCPU:4',
                 'unsuffixed group: 1 provider lacks 4 VCPU', ['capacity'],
                 ('capacity', 2, 'free 2 VCPU on cn1')),
    'reserved': (reserved, 'resources=VCPU:4',
                 'unsuffixed group: 1 provider lacks 4 VCPU', ['capacity'],
                 ('capacity', 2, 'free 2 VCPU on cn1')),
    'max_unit': (max_unit, 'resources=VCPU:64',
                 'unsuffixed group: 1 provider takes at most 32 VCPU at once (max_unit), '
                 'not 64', ['max_unit'],
                 ('max_unit', 32, 'raise max_unit of VCPU on cn1 to 64')),
    'min_unit': (min_unit, 'resources=DISK_GB:50',
                 'unsuffixed group: 1 provider takes at least 100 DISK_GB at once (min_unit), '
                 'not 50', ['min_unit'],
                 ('min_unit', 50, 'lower min_unit of DISK_GB on cn1 to 50')),
    'step_size': (step_size, 'resources=MEMORY_MB:1000',
                  'unsuffixed group: 1 provider takes MEMORY_MB only in steps of 512 '
                  '(step_size), not 1,000', ['step_size'],
                  ('step_size', 24, 'a step_size of MEMORY_MB on cn1 that divides 1,000')),
    'numa_split': (numa_split, 'resources=MEMORY_MB:6000',
                   'unsuffixed group: 1 tree has 6,000 MEMORY_MB free only split across its '
                   'providers (at most 4,096 on one)', ['split'],
                   ('split', 1904, 'free 1,904 MEMORY_MB on cn1-numa0, or ask less than 6,000 '
                                   'per provider')),
    'trait': (trait, 'resources=VCPU:4&required=HW_CPU_X86_AVX2',
              'unsuffixed group: 1 provider lacks trait HW_CPU_X86_AVX2', [], None),
    'aggregate': (aggregate, f'resources=VCPU:4&member_of={SHARED}',
                  f'unsuffixed group: 1 provider is not in aggregate {SHARED}', [], None),
    'isolate': (isolate, 'resources1=VCPU:1&resources2=VCPU:1&group_policy=isolate',
                'Every request group fits on its own (group 1 1 provider, group 2 1 provider), '
                'but no combination of them does: group_policy=isolate rules out 1 tree '
                '(their groups fit only by sharing a provider).', [], None),
    # nfs's own tree has no VCPU; cn1's is not in nfs's aggregate.
    'sharing_reach': (sharing_reach, 'resources=VCPU:4,DISK_GB:10',
                      'unsuffixed group: 1 tree has no VCPU; 1 more tree has no DISK_GB, nor a '
                      'sharing provider of it in its aggregates', ['none', 'unreached'], None),
}


@pytest.mark.parametrize('case', CASES)
def test_the_explanation_names_the_only_cause(api, db, case):
    cloud, query, sentence, causes, closest = CASES[case]
    cloud()
    body = api.get(f'/explain/allocation_candidates?{query}').body
    assert body['allocation_candidates'] == 0
    assert body['explanation'][0] == sentence
    assert [cause['limit'] for group in body['groups'] for step in group['funnel']
            for cause in step.get('causes', ())] == causes
    if closest is None:
        assert body['near_misses'] == []
    else:
        (miss,) = body['near_misses']
        assert (miss['limit'], miss['lacking'], miss['change']) == closest


def test_a_tree_with_one_limit_per_provider_is_told_by_the_closest_alone(api, db):
    """cn1's NUMA nodes: one refuses 32 VCPU by max_unit, the other by
    capacity: a tree one change away on either names the inventory's setting
    first; a provider refused by two limits at once is not one change away."""
    root = add_provider('cn1')
    add_provider('cn1-numa0', parent=root, inventories={'VCPU': {'total': 64, 'max_unit': 16}})
    add_allocation(add_provider('cn1-numa1', parent=root, inventories={'VCPU': {'total': 40}}),
                   VCPU=20)
    add_provider('cn2', inventories={'VCPU': {'total': 8, 'max_unit': 4}})
    body = api.get('/explain/allocation_candidates?resources=VCPU:32').body
    (step,) = body['groups'][0]['funnel']
    assert [(c['limit'], c['count'], c['text']) for c in step['causes']] == [
        ('max_unit', 1, 'takes at most 16 VCPU at once (max_unit), not 32'),
        ('limits', 1, 'has no provider both with 32 VCPU free and allowing it (max_unit, '
                      'min_unit, step_size)')]
    assert body['explanation'][0] == (
        'unsuffixed group: 2 trees cannot take 32 VCPU: 1 takes at most 16 at once (max_unit), '
        '1 has no provider both with it free and allowing it (max_unit, min_unit, step_size)')
    # One change away first; then cn2, which needs two.
    assert [(m['tree'], m['provider'], m['limit'], m['change']) for m in body['near_misses']] == [
        ('cn1', 'cn1-numa0', 'max_unit', 'raise max_unit of VCPU on cn1-numa0 to 32'),
        ('cn2', 'cn2', 'limits', 'raise max_unit of VCPU on cn2 to 32 and free 24 VCPU on cn2')]
