"""What-if (providers.what_if, POST /capacity/what-if) against the change
really made: on random small clouds (flat and nested NUMA trees, a sharing
DISK_GB provider in a pool, two pools, allocations on the hosts and on the
share), each kind of change is counted, then made through the Placement
API (providers, inventories, traits and aggregates created; the removed
hosts' consumers deleted, then their providers; inventories updated with
the new ratio or reserved), and `before` must equal GET /capacity before,
`after` GET /capacity after, for the cloud and every pool; on the smallest
clouds `after` must also equal the exhaustive claim search of
tests/providers/test_capacity_fits.py."""
import random

import pytest

from allocations import services as allocation_services
from providers import what_if
from tests.support.api import most_claims
from tests.support.api import new_uuid
from tests.support.factories import add_provider

AGG_A = 'a0000000-0000-4000-8000-00000000000a'
AGG_B = 'b0000000-0000-4000-8000-00000000000b'
AGG_NEW = 'c0000000-0000-4000-8000-00000000000c'
SHARES = 'MISC_SHARES_VIA_AGGREGATE'
SHAPES = [('small', {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 10}),
          ('wide', {'VCPU': 2, 'MEMORY_MB': 1024})]
QUERIES = ['VCPU:1,MEMORY_MB:512,DISK_GB:10', 'VCPU:2,MEMORY_MB:1024']


# ---- the clouds -----------------------------------------------------------------------------

class Cloud:
    """What the test built: roots by name with their aggregates, the
    providers of each tree (name -> provider), the sharing roots."""

    def __init__(self):
        self.trees = {}        # root name -> [provider, ...] root first
        self.aggregates = {}   # provider name -> [uuid]
        self.sharing = set()


def build_cloud(rng):
    cloud = Cloud()
    nfs = add_provider('nfs', inventories={'DISK_GB': {'total': rng.choice([40, 60, 100])}},
                       traits=[SHARES], aggregates=[AGG_A])
    cloud.trees['nfs'] = [nfs]
    cloud.aggregates['nfs'] = [AGG_A]
    cloud.sharing.add('nfs')
    hosts = []
    for index in range(rng.randint(3, 4)):
        name = f'cn{index}'
        aggregates = rng.choice([[AGG_A], [AGG_B], [AGG_A, AGG_B], []])
        disk = {} if AGG_A in aggregates and rng.random() < 0.6 else {
            'DISK_GB': {'total': rng.choice([20, 30, 50])}}
        if rng.random() < 0.5:
            root = add_provider(name, inventories=disk or None, aggregates=aggregates)
            cloud.trees[name] = [root]
            for numa in range(rng.randint(1, 2)):
                numa_name = f'{name}-numa{numa}'
                cloud.trees[name].append(add_provider(numa_name, parent=root, inventories={
                    'VCPU': {'total': rng.choice([1, 2, 3])},
                    'MEMORY_MB': {'total': rng.choice([1024, 2048])}}))
        else:
            root = add_provider(name, inventories={
                'VCPU': {'total': rng.choice([2, 3, 4]),
                         'allocation_ratio': rng.choice([1.0, 1.5])},
                'MEMORY_MB': {'total': rng.choice([1024, 2048, 3072]),
                              'reserved': rng.choice([0, 512])}, **disk}, aggregates=aggregates)
            cloud.trees[name] = [root]
        cloud.aggregates[name] = aggregates
        hosts.append(name)
    # Allocations: some on a host alone, some on a host and the share.
    for name in rng.sample(hosts, 2):
        providers = cloud.trees[name]
        holder = next((p for p in providers if p.inventories.filter(
            resource_class__name='VCPU').exists()), None)
        if holder is None:
            continue
        allocations = {holder.uuid: {'VCPU': 1}}
        if AGG_A in cloud.aggregates[name] and rng.random() < 0.7:
            allocations[nfs.uuid] = {'DISK_GB': 10}
        allocation_services.allocations_replace([allocation_services.ConsumerAllocations(
            consumer_uuid=new_uuid(), allocations=allocations, project_id='p', user_id='u',
            generation=None)])
    return cloud


# ---- reading and making the change through the API ----------------------------------------

def capacity_fits(api):
    """{group: [fits per shape]}: GET /capacity, the cloud and every pool."""
    found = {}
    for query in QUERIES:
        for group_by in ('cloud', 'aggregate'):
            answer = api.get(f'/capacity?group_by={group_by}&resources={query}')
            assert answer.status_code == 200, answer.content
            for group in answer.body['groups']:
                found.setdefault(group['group'], []).append(group['fits'])
    return found


def outcome_fits(outcome, when):
    return {group.key: [getattr(group, when)[index].count for index in range(len(SHAPES))]
            for group in outcome.groups}


def nonzero(fits):
    """Groups with some count (GET /capacity leaves out a pool without the
    shapes' classes; the what-if answers it with zeros)."""
    return {key: counts for key, counts in fits.items() if any(counts)}


def ok(response, status=200):
    assert response.status_code == status, response.content
    return response


def generation(api, uuid):
    return ok(api.get(f'/resource_providers/{uuid}')).body['generation']


def create_host(api, name, inventories, traits=(), aggregates=(), parent=None):
    body = {'name': name, **({'parent_provider_uuid': parent} if parent else {})}
    uuid = ok(api.post('/resource_providers', body), 200).body['uuid']
    if inventories:
        ok(api.put(f'/resource_providers/{uuid}/inventories', {
            'resource_provider_generation': generation(api, uuid), 'inventories': inventories}))
    if traits:
        ok(api.put(f'/resource_providers/{uuid}/traits', {
            'resource_provider_generation': generation(api, uuid), 'traits': list(traits)}))
    if aggregates:
        ok(api.put(f'/resource_providers/{uuid}/aggregates', {
            'resource_provider_generation': generation(api, uuid),
            'aggregates': list(aggregates)}))
    return uuid


def add_for_real(api, hosts):
    for number in range(1, hosts.count + 1):
        name = f'{hosts.name}-{number}'
        root = create_host(api, name, hosts.inventories, hosts.traits, hosts.aggregates)
        for index, (inventories, traits) in enumerate(hosts.children):
            create_host(api, f'{name}-{index}', inventories, traits, parent=root)


def remove_for_real(api, cloud, root_name):
    providers = cloud.trees.pop(root_name)
    for provider in providers:
        held = ok(api.get(f'/resource_providers/{provider.uuid}/allocations')).body
        for consumer in held['allocations']:
            ok(api.delete(f'/allocations/{consumer}'), 204)
    for provider in reversed(providers):   # children first
        ok(api.delete(f'/resource_providers/{provider.uuid}'), 204)


def set_for_real(api, cloud, setting):
    for root_name, providers in cloud.trees.items():
        in_pool = (setting.aggregate is None
                   or setting.aggregate in cloud.aggregates.get(root_name, ()))
        for provider in providers:
            if not (in_pool or setting.aggregate in cloud.aggregates.get(provider.name, ())):
                continue
            path = f'/resource_providers/{provider.uuid}/inventories/{setting.resource_class}'
            found = api.get(path)
            if found.status_code == 404:
                continue
            record = {k: v for k, v in found.body.items()}
            if setting.allocation_ratio is not None:
                record['allocation_ratio'] = setting.allocation_ratio
            if setting.reserved is not None:
                record['reserved'] = setting.reserved
            ok(api.put(path, record))


def removed_roots(cloud, removal):
    import fnmatch
    chosen = set(removal.hosts)
    for name in cloud.trees:
        if name in cloud.sharing:
            continue
        if set(removal.aggregates) & set(cloud.aggregates.get(name, ())):
            chosen.add(name)
        if any(fnmatch.fnmatchcase(name, pattern) for pattern in removal.patterns):
            chosen.add(name)
    return sorted(chosen)


# ---- the changes ------------------------------------------------------------------------------

FLAT = {'VCPU': {'total': 4}, 'MEMORY_MB': {'total': 2048, 'reserved': 512},
        'DISK_GB': {'total': 30}}
CHANGES = {
    'add flat hosts to a pool': what_if.Change(add=(what_if.NewHosts(
        2, FLAT, traits=('HW_CPU_X86_AVX2',), aggregates=(AGG_B,), name='new'),)),
    'add diskless NUMA hosts to the share\'s pool': what_if.Change(add=(what_if.NewHosts(
        2, {}, aggregates=(AGG_A,), name='numa', children=(
            ({'VCPU': {'total': 2, 'allocation_ratio': 1.5}, 'MEMORY_MB': {'total': 1024}},
             ('HW_NUMA_ROOT',)),
            ({'VCPU': {'total': 1}, 'MEMORY_MB': {'total': 2048, 'step_size': 512}}, ()))),)),
    'add hosts to a new pool': what_if.Change(add=(what_if.NewHosts(
        1, {**FLAT, 'VCPU': {'total': 8, 'max_unit': 1}}, aggregates=(AGG_NEW,), name='fresh'),)),
    'add a share to a pool': what_if.Change(add=(what_if.NewHosts(
        1, {'DISK_GB': {'total': 50, 'reserved': 10}}, traits=(SHARES,), aggregates=(AGG_B,),
        name='share'),)),
    'remove by aggregate': what_if.Change(remove=what_if.Removal(aggregates=(AGG_A,))),
    'remove by pattern': what_if.Change(remove=what_if.Removal(patterns=('cn[02]',))),
    'remove a list': what_if.Change(remove=what_if.Removal(hosts=('cn1', 'nfs'))),
    'ratio everywhere': what_if.Change(settings=(what_if.Setting('VCPU', allocation_ratio=2.0),)),
    'reserved in a pool': what_if.Change(settings=(
        what_if.Setting('MEMORY_MB', aggregate=AGG_B, reserved=1024),
        what_if.Setting('DISK_GB', aggregate=AGG_A, allocation_ratio=0.5))),
    'all at once': what_if.Change(
        add=(what_if.NewHosts(1, FLAT, aggregates=(AGG_A,), name='more'),),
        remove=what_if.Removal(patterns=('cn3',), hosts=('cn0',)),
        settings=(what_if.Setting('VCPU', aggregate=AGG_A, allocation_ratio=1.5),)),
}


def make_for_real(api, cloud, change):
    for root_name in removed_roots(cloud, change.remove):
        remove_for_real(api, cloud, root_name)
    for setting in change.settings:
        set_for_real(api, cloud, setting)
    for hosts in change.add:
        add_for_real(api, hosts)


@pytest.mark.parametrize('seed', range(3))
@pytest.mark.parametrize('kind', list(CHANGES))
def test_after_is_what_the_change_really_makes(api, kind, seed):
    rng = random.Random(f'{kind}-{seed}')
    cloud = build_cloud(rng)
    change = CHANGES[kind]
    before = capacity_fits(api)
    outcome = what_if.what_if(change, SHAPES)
    assert nonzero(outcome_fits(outcome, 'before')) == nonzero(before)
    assert outcome.hosts_removed == removed_roots(cloud, change.remove)
    assert all(fit.exact for group in outcome.groups for fit in group.before + group.after)
    make_for_real(api, cloud, change)
    assert nonzero(outcome_fits(outcome, 'after')) == nonzero(capacity_fits(api)), kind


# ---- the API ---------------------------------------------------------------------------------

def test_the_api_answers_before_and_after_per_flavor_and_pool_and_writes_nothing(
        api, settings, db_snapshot):
    settings.PLACEMENT_CAPACITY_FLAVORS = 'one=VCPU:1,MEMORY_MB:1024;big=VCPU:8,MEMORY_MB:1024'
    add_provider('cn1', inventories={'VCPU': {'total': 4}, 'MEMORY_MB': {'total': 4096}},
                 aggregates=[AGG_A])
    add_provider('cn2', inventories={'VCPU': {'total': 2}, 'MEMORY_MB': {'total': 2048}},
                 aggregates=[AGG_B])
    body = {'add_hosts': [{'count': 3, 'name': 'more', 'aggregates': [AGG_A, AGG_NEW],
                           'inventories': {'VCPU': {'total': 8, 'reserved': 2},
                                           'MEMORY_MB': {'total': 1024}}}],
            'remove_hosts': {'names': ['cn2']},
            'set_inventories': [{'resource_class': 'VCPU', 'aggregate': AGG_A,
                                 'allocation_ratio': 2.0}]}
    before = db_snapshot()
    answer = ok(api.post('/capacity/what-if', body))
    assert db_snapshot() == before   # nothing written
    assert answer.body['shapes'] == [
        {'name': 'one', 'resources': {'VCPU': 1, 'MEMORY_MB': 1024}},
        {'name': 'big', 'resources': {'VCPU': 8, 'MEMORY_MB': 1024}}]
    assert answer.body['changes'] == {'hosts_added': 3, 'hosts_removed': ['cn2'],
                                      'consumers_removed': 0, 'inventories_changed': 1}

    def fits(before, after):
        return {'before': before, 'after': after, 'before_exact': True, 'after_exact': True}
    # cn1: VCPU 4 -> 8 at ratio 2, memory 4: 4 of `one`, then one `big` too;
    # each new host: 6 VCPU (the ratio leaves them), memory 1: one `one`, no `big`.
    assert answer.body['groups'] == [
        {'group': 'cloud', 'name': None, 'fits': {'one': fits(6, 7), 'big': fits(0, 1)}},
        {'group': AGG_A, 'name': AGG_A, 'fits': {'one': fits(4, 7), 'big': fits(0, 1)}},
        {'group': AGG_B, 'name': AGG_B, 'fits': {'one': fits(2, 0), 'big': fits(0, 0)}},
        {'group': AGG_NEW, 'name': None, 'fits': {'one': fits(0, 3), 'big': fits(0, 0)}},
    ]
    # A shape of one's own instead of the flavors.
    answer = ok(api.post('/capacity/what-if', {'resources': 'VCPU:2'}))
    assert answer.body['shapes'] == [{'name': 'VCPU:2', 'resources': {'VCPU': 2}}]
    assert answer.body['groups'][0]['fits'] == {'VCPU:2': fits(3, 3)}


@pytest.mark.parametrize('body, detail', [
    ([], 'is not of type'),
    ({'nope': 1}, 'Additional properties'),
    ({'resources': 'VCPU'}, 'resources'),
    ({'resources': 'CUSTOM_NOPE:1'}, 'Invalid resource class in resources'),
    ({'add_hosts': [{'count': 0, 'inventories': {}}]}, 'minimum'),
    ({'add_hosts': [{'count': 1001, 'inventories': {}}]}, 'maximum'),
    ({'add_hosts': [{'inventories': {}}]}, "'count' is a required property"),
    ({'add_hosts': [{'count': 1, 'inventories': {'VCPU': {}}}]}, "'total' is a required"),
    ({'add_hosts': [{'count': 1, 'inventories': {'VCPU': {'total': 1, 'step': 1}}}]},
     'Additional properties'),
    ({'add_hosts': [{'count': 1, 'inventories': {'vcpu': {'total': 1}}}]}, 'does not match'),
    ({'add_hosts': [{'count': 1, 'inventories': {'CUSTOM_NOPE': {'total': 1}}}]},
     'No such resource class CUSTOM_NOPE'),
    ({'add_hosts': [{'count': 1, 'inventories': {'VCPU': {'total': 1, 'reserved': 2}}}]},
     'capacity below zero'),
    ({'add_hosts': [{'count': 1, 'inventories': {}, 'traits': ['CUSTOM_NOPE']}]},
     'No such trait CUSTOM_NOPE'),
    ({'add_hosts': [{'count': 1, 'inventories': {}, 'aggregates': ['x']}]}, 'does not match'),
    ({'add_hosts': [{'count': 1, 'inventories': {}, 'children': [{'traits': []}]}]},
     "'inventories' is a required"),
    ({'remove_hosts': {'aggregates': [AGG_NEW]}}, f'No aggregate {AGG_NEW} exists'),
    ({'remove_hosts': {'hosts': ['cn9']}}, 'No root provider named cn9'),
    ({'remove_hosts': {'names': ['']}}, 'should be non-empty'),
    ({'remove_hosts': {'every': True}}, 'Additional properties'),
    ({'set_inventories': [{'resource_class': 'VCPU'}]}, 'is not valid under any'),
    ({'set_inventories': [{'resource_class': 'VCPU', 'reserved': -1}]}, 'minimum'),
    ({'set_inventories': [{'resource_class': 'VCPU', 'allocation_ratio': 'x'}]}, 'not of type'),
    ({'set_inventories': [{'resource_class': 'CUSTOM_NOPE', 'reserved': 1}]},
     'No such resource class CUSTOM_NOPE'),
    ({'set_inventories': [{'resource_class': 'VCPU', 'reserved': 9}]}, 'capacity below zero'),
    ({'set_inventories': [{'resource_class': 'VCPU', 'aggregate': AGG_NEW, 'reserved': 1}]},
     f'No aggregate {AGG_NEW} exists'),
])
def test_a_bad_field_is_a_400_in_placements_format(api, db_snapshot, body, detail):
    add_provider('cn1', inventories={'VCPU': {'total': 4}}, aggregates=[AGG_A])
    before = db_snapshot()
    answer = api.post('/capacity/what-if', body)
    assert db_snapshot() == before
    assert answer.status_code == 400, answer.content
    error, = answer.body['errors']
    assert error['code'] == 'placement.undefined_code'
    assert detail in error['detail'], error['detail']


def test_only_admins_and_services_ask(make_api):
    answer = make_api(token='user:proj').post('/capacity/what-if', {})
    assert answer.status_code == 403, answer.content


# ---- the claims a candidate search grants, and the ledger's own folds -----------------------

def test_after_is_the_claims_granted_one_after_another(api):
    """A cloud small enough for the exhaustive search: a diskless host
    added to the share's pool, and a host whose consumer also holds disk on
    the share removed."""
    nfs = add_provider('nfs', inventories={'DISK_GB': {'total': 40}}, traits=[SHARES],
                       aggregates=[AGG_A])
    cn1 = add_provider('cn1', inventories={'VCPU': {'total': 2}, 'MEMORY_MB': {'total': 1024}},
                       aggregates=[AGG_A])
    cn2 = add_provider('cn2', inventories={'DISK_GB': {'total': 20}})
    add_provider('cn2-numa0', parent=cn2,
                 inventories={'VCPU': {'total': 1}, 'MEMORY_MB': {'total': 1024}})
    allocation_services.allocations_replace([allocation_services.ConsumerAllocations(
        consumer_uuid=new_uuid(), allocations={cn1.uuid: {'VCPU': 1}, nfs.uuid: {'DISK_GB': 20}},
        project_id='p', user_id='u', generation=None)])
    query = 'VCPU:1,MEMORY_MB:512,DISK_GB:10'
    shapes = [('s', {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 10})]
    change = what_if.Change(
        add=(what_if.NewHosts(1, {'VCPU': {'total': 2}, 'MEMORY_MB': {'total': 1024}},
                              aggregates=(AGG_A,), name='new'),),
        remove=what_if.Removal(hosts=('cn1',)))
    outcome = what_if.what_if(change, shapes)
    # cn1: 1 VCPU left (the share has 2 claims of disk), cn2 1; then the new host takes 2
    # from the share, its 4 claims free with cn1's consumer gone, and cn2 still 1.
    assert [g.before[0].count for g in outcome.groups] == [2, 1]
    assert [g.after[0].count for g in outcome.groups] == [3, 2]
    assert outcome.consumers_removed == 1
    cloud = Cloud()
    cloud.trees = {'cn1': [cn1]}
    make_for_real(api, cloud, change)
    assert most_claims(api, f'resources={query}') == outcome.groups[0].after[0].count
    claims = most_claims(api, f'resources={query}&member_of={AGG_A}')
    assert claims == outcome.groups[1].after[0].count


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@pytest.mark.slow
@pytest.mark.parametrize('kind', ['add diskless NUMA hosts to the share\'s pool',
                                  'add a share to a pool', 'remove by aggregate',
                                  'remove a list', 'all at once'])
def test_the_ledgers_folds_moved_along_answer_as_a_fresh_count(monkeypatch, kind):
    """Outside a writing transaction the ledger serves: its held folds,
    copied and moved by the changed trees, against folds counted afresh on
    the whole cloud read again, and GET /capacity after the change."""
    from django.db import connection

    from providers import ledger
    from tests.support.api import PlacementClient
    assert not connection.in_atomic_block
    api = PlacementClient()
    cloud = build_cloud(random.Random(kind))
    assert ledger.serves('default')
    capacity_fits(api)   # the ledger's folds of the cloud and the pools, for these shapes
    held = what_if.what_if(CHANGES[kind], SHAPES)
    with monkeypatch.context() as patched:
        patched.setattr(what_if.ledger, 'serves', lambda using: False)
        fresh = what_if.what_if(CHANGES[kind], SHAPES)
    assert held == fresh
    make_for_real(api, cloud, CHANGES[kind])
    assert nonzero(outcome_fits(held, 'after')) == nonzero(capacity_fits(api))
