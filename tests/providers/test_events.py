"""The event log: every change to the books writes exactly one event (one per
consumer for allocation writes) in its own transaction, with the generations
the API reports before and after and the request's id and credentials; a
refused request, or one that changes nothing, writes none. GET /events and
the admin read the log; concurrent writers leave a gap-free generation chain."""
import html
import itertools
import re
import uuid as uuid_lib
from datetime import UTC
from datetime import datetime
from datetime import timedelta
from urllib.parse import urlencode

import pytest
from django.db import connection
from django.db.models import Max
from django.test.utils import CaptureQueriesContext
from django.utils import timezone as dj_timezone

from providers import events
from providers import services
from providers.models import Event
from providers.models import EventProvider
from providers.models import ResourceProvider
from tests.support.admin import admin_url
from tests.support.admin import form_data
from tests.support.api import assert_error
from tests.support.api import generation
from tests.support.api import new_uuid
from tests.support.concurrency import WRITERS
from tests.support.concurrency import Server
from tests.support.concurrency import claim_body
from tests.support.concurrency import together
from tests.support.state import unchanged
from tests.support.state import without_event_log

TIMESTAMP = re.compile(r'^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$')
SERVICE = {'X-Roles': 'service'}  # the reshaper is for services only
RECORD_DEFAULTS = {'reserved': 0, 'min_unit': 1, 'max_unit': 2147483647, 'step_size': 1,
                   'allocation_ratio': 1.0}


# ---- helpers -------------------------------------------------------------------------

def last_id():
    return Event.objects.aggregate(top=Max('id'))['top'] or 0


def events_after(mark):
    """The events written since `mark`, as GET /events shows them."""
    return [events.describe(e) for e in
            Event.objects.filter(pk__gt=mark).prefetch_related('providers')]


def gens(uuid, before, after):
    return {'uuid': uuid, 'generation_before': before, 'generation_after': after}


def record(total, **fields):
    return {'total': total, **RECORD_DEFAULTS, **fields}


def write(call, path, body=None, *, status=200, user='admin', project='admin', **kwargs):
    """Make a request that must succeed and write exactly one event;
    (response, event)."""
    mark = last_id()
    response = call(path, body, **kwargs) if body is not None else call(path, **kwargs)
    assert response.status_code == status, response.content
    [event] = written_by(mark, response, count=1, user=user, project=project)
    return response, event


def written_by(mark, response, *, count, user='admin', project='admin'):
    """The `count` events written since `mark`, all stamped with the
    request's id and credentials."""
    written = events_after(mark)
    assert len(written) == count, written
    for event in written:
        assert event['request_id'] == response['x-openstack-request-id']
        assert event['request_id'].startswith('req-')
        assert (event['user_id'], event['project_id']) == (user, project)
        assert event['sent_at'] is None
        assert TIMESTAMP.match(event['created_at']), event['created_at']
    return written


def chain(uuid):
    """(before, after) of every event about the provider, in id order."""
    return list(EventProvider.objects.filter(provider_uuid=uuid).order_by('event_id')
                .values_list('generation_before', 'generation_after'))


def assert_chain(api, uuid, *, deleted=False):
    """The provider's events, from its creation, link up: each one starts
    at the generation the previous one left, and the last one leaves the
    generation the API reports (None once deleted)."""
    assert_links(uuid, None if deleted else generation(api, uuid))


def assert_links(uuid, current):
    links = chain(uuid)
    assert links[0][0] is None, links  # the create
    for (_, after), (before, _) in itertools.pairwise(links):
        assert before == after, links
    assert links[-1][1] == current, links


def claim(rp, amount, rc='VCPU'):
    return {'allocations': {rp: {'resources': {rc: amount}}}, 'project_id': 'proj',
            'user_id': 'user', 'consumer_type': 'INSTANCE'}


def consumer_generation(api, consumer):
    return api.get(f'/allocations/{consumer}').body.get('consumer_generation')


# ---- 1. each kind of change writes one event -----------------------------------------

def test_provider_create_writes_one_event_with_the_callers_identity(api):
    rp, child = new_uuid(), new_uuid()
    alice = {'token': 'alice:proj1', 'headers': {'X-Roles': 'admin'},
             'user': 'alice', 'project': 'proj1'}
    response, event = write(api.post, '/resource_providers', {'name': 'cn1', 'uuid': rp},
                            **alice)
    assert response.body['generation'] == 0
    assert event['event_type'] == events.PROVIDER_CREATE == 'resource_provider.create'
    assert event['providers'] == [gens(rp, None, 0)]
    assert event['consumer'] is None
    assert event['payload'] == {'name': 'cn1', 'parent_provider_uuid': None,
                                'root_provider_uuid': rp}

    _, event = write(api.post, '/resource_providers',
                     {'name': 'cn1-numa0', 'uuid': child, 'parent_provider_uuid': rp})
    assert event['providers'] == [gens(child, None, 0)]
    assert event['payload'] == {'name': 'cn1-numa0', 'parent_provider_uuid': rp,
                                'root_provider_uuid': rp}
    assert (event['user_id'], event['project_id']) == ('admin', 'admin')


def test_renaming_a_provider_is_an_update_at_the_same_generation(api):
    rp = api.create_provider(name='old')['uuid']
    api.set_inventory(rp, {'VCPU': {'total': 4}})
    api.set_traits(rp, ['COMPUTE_NODE'])
    before = generation(api, rp)
    assert before == 2

    response, event = write(api.put, f'/resource_providers/{rp}', {'name': 'new'})
    assert response.body['generation'] == before == generation(api, rp)
    assert event['event_type'] == events.PROVIDER_UPDATE
    assert event['providers'] == [gens(rp, before, before)]
    assert event['payload'] == {'name': 'new'}
    assert_chain(api, rp)


def test_reparenting_at_1_37_is_an_update_naming_the_new_parent(api):
    first, second = api.create_provider()['uuid'], api.create_provider()['uuid']
    child = api.create_provider(name='child', parent=first)['uuid']
    api.set_inventory(child, {'VCPU': {'total': 4}})
    path = f'/resource_providers/{child}'

    _, event = write(api.put, path, {'name': 'child', 'parent_provider_uuid': second},
                     version='1.37')
    assert event['event_type'] == events.PROVIDER_UPDATE
    assert event['providers'] == [gens(child, 1, 1)]
    assert event['payload'] == {'parent_provider_uuid': second}
    assert api.get(path).body['root_provider_uuid'] == second

    _, event = write(api.put, path, {'name': 'orphan', 'parent_provider_uuid': None},
                     version='1.37')
    assert event['payload'] == {'name': 'orphan', 'parent_provider_uuid': None}
    assert event['providers'] == [gens(child, 1, 1)]
    assert api.get(path).body['root_provider_uuid'] == child
    assert_chain(api, child)


def test_deleting_a_provider_is_one_event_with_no_generation_after(api):
    rp = api.create_provider(name='doomed')['uuid']
    api.set_inventory(rp, {'VCPU': {'total': 4}})
    api.set_traits(rp, ['COMPUTE_NODE'])
    api.set_aggregates(rp, [new_uuid()])

    _, event = write(api.delete, f'/resource_providers/{rp}', status=204)
    assert event['event_type'] == events.PROVIDER_DELETE
    assert event['providers'] == [gens(rp, 3, None)]
    assert event['payload'] == {'name': 'doomed'}
    assert api.get(f'/resource_providers/{rp}').status_code == 404
    assert_chain(api, rp, deleted=True)


def test_inventory_writes(api):
    rp = api.create_provider()['uuid']
    path = f'/resource_providers/{rp}/inventories'

    response, event = write(api.post, path, {'resource_class': 'VCPU', 'total': 8},
                            status=201)
    assert response.body['resource_provider_generation'] == 1
    assert event['event_type'] == events.INVENTORY_CREATE
    assert event['providers'] == [gens(rp, 0, 1)]
    assert event['payload'] == {'added': {'VCPU': record(8)}, 'updated': {}, 'removed': []}

    response, event = write(api.put, f'{path}/VCPU', {
        'resource_provider_generation': 1, 'total': 16, 'allocation_ratio': 2.0})
    assert response.body['resource_provider_generation'] == 2
    assert event['event_type'] == events.INVENTORY_UPDATE
    assert event['providers'] == [gens(rp, 1, 2)]
    assert event['payload'] == {'added': {}, 'removed': [],
                                'updated': {'VCPU': record(16, allocation_ratio=2.0)}}

    api.set_inventory(rp, {'VCPU': {'total': 16, 'allocation_ratio': 2.0},
                           'MEMORY_MB': {'total': 1024}})  # generation 3
    response, event = write(api.put, path, {'resource_provider_generation': 3, 'inventories': {
        'VCPU': {'total': 32}, 'DISK_GB': {'total': 100, 'reserved': 10}}})
    assert response.body['resource_provider_generation'] == 4
    assert event['event_type'] == events.INVENTORY_UPDATE
    assert event['providers'] == [gens(rp, 3, 4)]
    assert event['payload'] == {'added': {'DISK_GB': record(100, reserved=10)},
                                'updated': {'VCPU': record(32)}, 'removed': ['MEMORY_MB']}

    # The same inventories again: Placement bumps the generation, so the
    # change is logged, with nothing added, updated or removed.
    _, event = write(api.put, path, {'resource_provider_generation': 4, 'inventories': {
        'VCPU': {'total': 32}, 'DISK_GB': {'total': 100, 'reserved': 10}}})
    assert event['providers'] == [gens(rp, 4, 5)]
    assert event['payload'] == {'added': {}, 'updated': {}, 'removed': []}

    _, event = write(api.delete, f'{path}/DISK_GB', status=204)
    assert event['event_type'] == events.INVENTORY_DELETE
    assert event['providers'] == [gens(rp, 5, 6)] and generation(api, rp) == 6
    assert event['payload'] == {'added': {}, 'updated': {}, 'removed': ['DISK_GB']}

    api.set_inventory(rp, {'VCPU': {'total': 32}, 'MEMORY_MB': {'total': 1024}})  # 7
    _, event = write(api.delete, path, status=204)
    assert event['event_type'] == events.INVENTORY_DELETE
    assert event['providers'] == [gens(rp, 7, 8)] and generation(api, rp) == 8
    # In class id order, as Placement lists classes (VCPU is 0, MEMORY_MB 1).
    assert event['payload'] == {'added': {}, 'updated': {}, 'removed': ['VCPU', 'MEMORY_MB']}
    assert_chain(api, rp)


def test_trait_writes(api):
    rp = api.create_provider()['uuid']
    path = f'/resource_providers/{rp}/traits'

    response, event = write(api.put, path, {'resource_provider_generation': 0,
                                            'traits': ['HW_CPU_X86_AVX2', 'COMPUTE_NODE']})
    assert response.body['resource_provider_generation'] == 1
    assert event['event_type'] == events.TRAIT_UPDATE
    assert event['providers'] == [gens(rp, 0, 1)]
    assert event['payload'] == {'added': ['COMPUTE_NODE', 'HW_CPU_X86_AVX2'], 'removed': []}

    _, event = write(api.put, path, {'resource_provider_generation': 1,
                                     'traits': ['COMPUTE_NODE', 'HW_CPU_X86_SSE']})
    assert event['providers'] == [gens(rp, 1, 2)]
    assert event['payload'] == {'added': ['HW_CPU_X86_SSE'], 'removed': ['HW_CPU_X86_AVX2']}

    _, event = write(api.delete, path, status=204)
    assert event['event_type'] == events.TRAIT_UPDATE
    assert event['providers'] == [gens(rp, 2, 3)] and generation(api, rp) == 3
    assert event['payload'] == {'added': [], 'removed': ['COMPUTE_NODE', 'HW_CPU_X86_SSE']}
    assert_chain(api, rp)


def test_aggregate_writes_at_1_19(api):
    rp = api.create_provider()['uuid']
    path = f'/resource_providers/{rp}/aggregates'
    one, two, three = sorted(new_uuid() for _ in range(3))

    def put(generation, aggregates):
        response, event = write(api.put, path, {'resource_provider_generation': generation,
                                                'aggregates': aggregates})
        assert response.body['resource_provider_generation'] == generation + 1
        assert event['providers'] == [gens(rp, generation, generation + 1)]
        return event['event_type'], event['payload']

    assert put(0, [one]) == (events.AGGREGATE_ADD, {'added': [one], 'removed': []})
    assert put(1, [one, two]) == (events.AGGREGATE_ADD, {'added': [two], 'removed': []})
    assert put(2, [two]) == (events.AGGREGATE_REMOVE, {'added': [], 'removed': [one]})
    assert put(3, [three]) == (events.AGGREGATE_UPDATE, {'added': [three], 'removed': [two]})
    # The same set again still bumps the generation: an update of nothing.
    assert put(4, [three]) == (events.AGGREGATE_UPDATE, {'added': [], 'removed': []})
    assert put(5, []) == (events.AGGREGATE_REMOVE, {'added': [], 'removed': [three]})
    assert_chain(api, rp)


def test_aggregate_writes_before_1_19_leave_the_generation(api):
    rp = api.create_provider()['uuid']
    api.set_traits(rp, ['COMPUTE_NODE'])
    one, two = new_uuid(), new_uuid()
    path = f'/resource_providers/{rp}/aggregates'

    _, event = write(api.put, path, [one], version='1.18')
    assert event['event_type'] == events.AGGREGATE_ADD
    assert event['providers'] == [gens(rp, 1, 1)]
    assert event['payload'] == {'added': [one], 'removed': []}
    _, event = write(api.put, path, [two], version='1.1')
    assert event['event_type'] == events.AGGREGATE_UPDATE
    assert event['providers'] == [gens(rp, 1, 1)]
    assert event['payload'] == {'added': [two], 'removed': [one]}
    assert generation(api, rp) == 1
    assert_chain(api, rp)


@pytest.fixture
def hosts(api):
    """Two providers with 8 VCPU each (generation 1)."""
    a = api.create_provider(name='host-a')['uuid']
    b = api.create_provider(name='host-b')['uuid']
    for rp in (a, b):
        api.set_inventory(rp, {'VCPU': {'total': 8}, 'MEMORY_MB': {'total': 2048}})
    return a, b


def test_allocation_writes_follow_the_consumer_generation(api, hosts):
    a, _b = hosts
    consumer = new_uuid()
    path = f'/allocations/{consumer}'

    _, event = write(api.put, path, {**claim(a, 2), 'consumer_generation': None}, status=204)
    assert event['event_type'] == events.ALLOCATION_UPDATE
    assert event['consumer'] == {'uuid': consumer, 'generation_before': None,
                                 'generation_after': 1}
    assert consumer_generation(api, consumer) == 1
    assert event['providers'] == [gens(a, 1, 2)] and generation(api, a) == 2
    assert event['payload'] == {'allocations': {a: {'resources': {'VCPU': 2}}},
                                'project_id': 'proj', 'user_id': 'user',
                                'consumer_type': 'INSTANCE'}

    body = {**claim(a, 3), 'consumer_generation': 1}
    body['allocations'][a]['resources']['MEMORY_MB'] = 512
    _, event = write(api.put, path, body, status=204)
    assert event['consumer'] == {'uuid': consumer, 'generation_before': 1,
                                 'generation_after': 2}
    assert consumer_generation(api, consumer) == 2
    assert event['providers'] == [gens(a, 2, 3)] and generation(api, a) == 3
    assert event['payload']['allocations'] == {a: {'resources': {'VCPU': 3, 'MEMORY_MB': 512}}}
    assert_chain(api, a)


def test_moving_a_consumer_lists_both_providers_and_bumps_only_the_new_one(api, hosts):
    a, b = hosts
    consumer = new_uuid()
    assert api.allocate(consumer, {a: {'VCPU': 2}}).status_code == 204
    before_a, before_b = generation(api, a), generation(api, b)

    _, event = write(api.put, f'/allocations/{consumer}',
                     {**claim(b, 2), 'consumer_generation': 1}, status=204)
    assert event['event_type'] == events.ALLOCATION_UPDATE
    assert generation(api, a) == before_a and generation(api, b) == before_b + 1
    assert event['providers'] == sorted([gens(a, before_a, before_a),
                                         gens(b, before_b, before_b + 1)],
                                        key=lambda p: p['uuid'])
    assert event['payload']['allocations'] == {b: {'resources': {'VCPU': 2}}}
    assert event['consumer'] == {'uuid': consumer, 'generation_before': 1,
                                 'generation_after': 2}
    assert_chain(api, a)
    assert_chain(api, b)


def test_posting_allocations_writes_one_event_per_consumer(api, hosts):
    a, b = hosts
    first, second = new_uuid(), new_uuid()
    mark = last_id()
    response = api.post('/allocations', {
        first: {**claim(a, 1), 'consumer_generation': None},
        second: {**claim(b, 2), 'consumer_generation': None, 'project_id': 'other'}})
    assert response.status_code == 204, response.content
    written = written_by(mark, response, count=2)
    by_consumer = {e['consumer']['uuid']: e for e in written}
    assert set(by_consumer) == {first, second}
    assert by_consumer[first]['providers'] == [gens(a, 1, 2)]
    assert by_consumer[second]['providers'] == [gens(b, 1, 2)]
    assert by_consumer[second]['payload']['project_id'] == 'other'
    for event in written:
        assert event['event_type'] == events.ALLOCATION_UPDATE
        assert event['consumer']['generation_before'] is None
        assert event['consumer']['generation_after'] == 1
    assert_chain(api, a)
    assert_chain(api, b)


def test_posting_two_consumers_on_one_provider_keeps_its_chain(api, hosts):
    a, _b = hosts
    response = api.post('/allocations', {
        new_uuid(): {**claim(a, 1), 'consumer_generation': None},
        new_uuid(): {**claim(a, 2), 'consumer_generation': None}})
    assert response.status_code == 204, response.content
    assert generation(api, a) == 2
    assert_chain(api, a)


def test_emptying_a_consumer_with_put_is_an_allocation_delete(api, hosts):
    a, _b = hosts
    consumer = new_uuid()
    assert api.allocate(consumer, {a: {'VCPU': 2}}).status_code == 204
    before = generation(api, a)

    _, event = write(api.put, f'/allocations/{consumer}',
                     {**claim(a, 1), 'allocations': {}, 'consumer_generation': 1},
                     status=204)
    assert event['event_type'] == events.ALLOCATION_DELETE
    assert event['consumer'] == {'uuid': consumer, 'generation_before': 1,
                                 'generation_after': None}
    after = generation(api, a)
    assert event['providers'] == [gens(a, before, after)]
    assert event['payload']['allocations'] == {}
    assert api.get(f'/allocations/{consumer}').body == {'allocations': {}}
    assert_chain(api, a)


def test_deleting_allocations_is_an_allocation_delete_at_the_same_generations(api, hosts):
    a, b = hosts
    consumer = new_uuid()
    assert api.allocate(consumer, {a: {'VCPU': 2}, b: {'VCPU': 1}}).status_code == 204
    assert api.allocate(consumer, {a: {'VCPU': 3}, b: {'VCPU': 1}},
                        generation=1).status_code == 204
    ga, gb = generation(api, a), generation(api, b)

    _, event = write(api.delete, f'/allocations/{consumer}', status=204)
    assert event['event_type'] == events.ALLOCATION_DELETE
    assert event['consumer'] == {'uuid': consumer, 'generation_before': 2,
                                 'generation_after': None}
    assert (generation(api, a), generation(api, b)) == (ga, gb)
    assert event['providers'] == sorted([gens(a, ga, ga), gens(b, gb, gb)],
                                        key=lambda p: p['uuid'])
    assert event['payload'] == {'allocations': {}}
    assert_chain(api, a)
    assert_chain(api, b)


def test_reshape_writes_consistent_events(api):
    """Move VCPU from a compute node to its new NUMA child, with the
    allocations against it."""
    root = api.create_provider(name='cn')['uuid']
    api.set_inventory(root, {'VCPU': {'total': 8}, 'MEMORY_MB': {'total': 2048}})
    consumer = new_uuid()
    assert api.allocate(consumer, {root: {'VCPU': 2, 'MEMORY_MB': 256}}).status_code == 204
    numa = api.create_provider(name='cn-numa0', parent=root)['uuid']
    g_root, g_numa = generation(api, root), generation(api, numa)
    mark = last_id()

    response = api.post('/reshaper', {
        'inventories': {
            root: {'resource_provider_generation': g_root,
                   'inventories': {'MEMORY_MB': {'total': 2048}}},
            numa: {'resource_provider_generation': g_numa,
                   'inventories': {'VCPU': {'total': 8}}}},
        'allocations': {consumer: {
            'allocations': {root: {'resources': {'MEMORY_MB': 256}},
                            numa: {'resources': {'VCPU': 2}}},
            'project_id': 'proj', 'user_id': 'user', 'consumer_generation': 1,
            'consumer_type': 'INSTANCE'}}}, headers=SERVICE)
    assert response.status_code == 204, response.content
    assert api.get(f'/resource_providers/{numa}/usages').body['usages'] == {'VCPU': 2}

    written = written_by(mark, response, count=len(events_after(mark)))
    types = [e['event_type'] for e in written]
    assert types.count(events.ALLOCATION_UPDATE) == 1
    assert set(types) <= {events.ALLOCATION_UPDATE, events.INVENTORY_UPDATE,
                          events.INVENTORY_DELETE}
    [moved] = [e for e in written if e['event_type'] == events.ALLOCATION_UPDATE]
    assert moved['consumer'] == {'uuid': consumer, 'generation_before': 1,
                                 'generation_after': 2}
    assert {p['uuid'] for p in moved['providers']} == {root, numa}
    # What the inventory events say, taken together, is what happened.
    added = {name for e in written if e['providers'][0]['uuid'] == numa
             for name in e['payload'].get('added', {})}
    removed = {name for e in written if e['providers'][0]['uuid'] == root
               for name in e['payload'].get('removed', [])}
    assert (added, removed) == ({'VCPU'}, {'VCPU'})
    for rp in (root, numa):
        assert_chain(api, rp)
    assert generation(api, root) > g_root and generation(api, numa) > g_numa


# ---- 2. a refused request writes nothing ------------------------------------------------

@pytest.fixture
def busy(api, hosts):
    """host-a with 6 of its 8 VCPU held by a consumer; host-b idle; a child
    under host-b."""
    a, b = hosts
    consumer = new_uuid()
    assert api.allocate(consumer, {a: {'VCPU': 6}}).status_code == 204
    child = api.create_provider(name='host-b-numa0', parent=b)['uuid']
    return {'a': a, 'b': b, 'child': child, 'consumer': consumer}


def _send(method, path, body=None, **kwargs):
    """A request to `path`, its {a}, {b}, {child} and {consumer} busy's."""
    return lambda api, rp: api.request(method, path.format(**rp), body, **kwargs)


def _stale(path, **body):
    return _send('PUT', path, {'resource_provider_generation': 0, **body})


REFUSED = {
    'stale inventories': (409, 'resource provider generation conflict',
        _stale('/resource_providers/{a}/inventories', inventories={'VCPU': {'total': 9}})),
    'stale inventory': (409, 'resource provider generation conflict',
        _stale('/resource_providers/{a}/inventories/VCPU', total=9)),
    'stale traits': (409, 'generation already changed',
        _stale('/resource_providers/{a}/traits', traits=['COMPUTE_NODE'])),
    'stale aggregates': (409, 'generation already changed',
        _stale('/resource_providers/{a}/aggregates', aggregates=[str(uuid_lib.UUID(int=1))])),
    'unknown class in inventories': (400, 'No such resource class CUSTOM_NOPE',
        _send('PUT', '/resource_providers/{b}/inventories', {
            'resource_provider_generation': 1, 'inventories': {'CUSTOM_NOPE': {'total': 1}}})),
    'unknown class posted': (400, 'No such resource class CUSTOM_NOPE',
        _send('POST', '/resource_providers/{b}/inventories',
              {'resource_class': 'CUSTOM_NOPE', 'total': 1})),
    'class posted twice': (409, 'Inventory of class VCPU already exists',
        _send('POST', '/resource_providers/{b}/inventories',
              {'resource_class': 'VCPU', 'total': 1})),
    'deleting a class not held': (404, 'No inventory of class DISK_GB',
        _send('DELETE', '/resource_providers/{b}/inventories/DISK_GB')),
    'unknown trait': (400, 'No such trait CUSTOM_NOPE',
        _send('PUT', '/resource_providers/{b}/traits',
              {'resource_provider_generation': 1, 'traits': ['CUSTOM_NOPE']})),
    'over capacity': (409, 'would exceed the capacity',
        lambda api, rp: api.allocate(new_uuid(), {rp['a']: {'VCPU': 3}})),
    'class without inventory': (409, "Inventory for 'DISK_GB'",
        lambda api, rp: api.allocate(
            new_uuid(), {rp['a']: {'DISK_GB': 1}})),
    'stale consumer generation': (409, 'expected 1 but got 7',
        lambda api, rp: api.allocate(
            rp['consumer'], {rp['a']: {'VCPU': 1}}, generation=7)),
    'deleting inventory in use': (409, 'in use',
        _send('DELETE', '/resource_providers/{a}/inventories/VCPU')),
    'deleting all inventories in use': (409, 'in use',
        _send('DELETE', '/resource_providers/{a}/inventories')),
    'replacing away inventory in use': (409, 'in use',
        _send('PUT', '/resource_providers/{a}/inventories', {
            'resource_provider_generation': 2, 'inventories': {'MEMORY_MB': {'total': 1}}})),
    'deleting a provider in use': (409, 'has allocations',
        _send('DELETE', '/resource_providers/{a}')),
    'deleting a parent': (409, 'It has child resource providers',
        _send('DELETE', '/resource_providers/{b}')),
    'renaming to a taken name': (409, 'already exists',
        _send('PUT', '/resource_providers/{b}', {'name': 'host-a'})),
    'reparenting before 1.37': (400, 're-parenting a provider is not currently allowed',
        lambda api, rp: api.put(
            f"/resource_providers/{rp['child']}",
            {'name': 'host-b-numa0', 'parent_provider_uuid': rp['a']}, version='1.36')),
    'bad inventory body': (400, "'lots' is not of type 'integer'",
        _send('PUT', '/resource_providers/{b}/inventories', {
            'resource_provider_generation': 1, 'inventories': {'VCPU': {'total': 'lots'}}})),
    'bad allocation body': (400, 'is less than the minimum of 1',
        lambda api, rp: api.put(
            f'/allocations/{new_uuid()}', {**claim(rp['a'], 0), 'consumer_generation': None})),
    'second consumer over capacity': (409, 'would exceed the capacity',
        lambda api, rp: api.post('/allocations', {
            str(uuid_lib.UUID(int=1)): {**claim(rp['b'], 1), 'consumer_generation': None},
            str(uuid_lib.UUID(int=2)): {**claim(rp['a'], 3), 'consumer_generation': None}})),
    'second consumer on an unknown provider': (400, 'that does not exist',
        lambda api, rp: api.post('/allocations', {
            str(uuid_lib.UUID(int=1)): {**claim(rp['b'], 1), 'consumer_generation': None},
            str(uuid_lib.UUID(int=2)): {**claim(new_uuid(), 1), 'consumer_generation': None}})),
    # The reshape writes inventory events before the allocations fail.
    'reshape over the new capacity': (409, 'would exceed the capacity',
        lambda api, rp: api.post('/reshaper', {
            'inventories': {rp['child']: {'resource_provider_generation': 0,
            'inventories': {'VCPU': {'total': 2}}}},
            'allocations': {rp['consumer']: {**claim(rp['child'], 6), 'consumer_generation': 1}}},
            headers=SERVICE)),
    'reshape removing inventory in use': (409, "'VCPU' on resource provider '{a}' in use",
        lambda api, rp: api.post('/reshaper', {
            'inventories': {rp['a']: {'resource_provider_generation': 2,
            'inventories': {'MEMORY_MB': {'total': 2048}}},
            rp['b']: {'resource_provider_generation': 1,
            'inventories': {'VCPU': {'total': 2}}}},
            'allocations': {new_uuid(): {**claim(rp['b'], 1), 'consumer_generation': None}}},
            headers=SERVICE)),
}


@pytest.mark.parametrize('case', REFUSED)
def test_a_refused_request_writes_no_event(api, busy, case):
    status, detail, send = REFUSED[case]
    count = Event.objects.count()
    with unchanged():  # the events tables included
        response = send(api, busy)
        assert response.status_code == status, response.content
        assert detail.format(**busy) in response.body['errors'][0]['detail']
        assert Event.objects.count() == count


# ---- 3. a change that changes nothing writes nothing ----------------------------------

NO_CHANGE = {
    'the same traits': lambda api, rp: api.put(f'/resource_providers/{rp}/traits', {
        'resource_provider_generation': 2, 'traits': ['COMPUTE_NODE']}),
    'deleting no traits': lambda api, rp: api.delete(f'/resource_providers/{rp}/traits',
                                                     version='1.6'),
    'the same name': lambda api, rp: api.put(f'/resource_providers/{rp}', {'name': 'same'}),
    'the same parent': lambda api, rp: api.put(f'/resource_providers/{rp}', {
        'name': 'same', 'parent_provider_uuid': None}, version='1.37'),
}


@pytest.mark.parametrize('case', NO_CHANGE)
def test_a_change_of_nothing_writes_no_event(api, case):
    rp = api.create_provider(name='same')['uuid']
    api.set_inventory(rp, {'VCPU': {'total': 4}})
    if case != 'deleting no traits':
        api.set_traits(rp, ['COMPUTE_NODE'])
    with unchanged():
        response = NO_CHANGE[case](api, rp)
        assert response.status_code in (200, 204), response.content


def test_the_same_aggregates_before_1_19_write_no_event(api, db_snapshot):
    rp = api.create_provider()['uuid']
    aggregate = new_uuid()
    assert api.put(f'/resource_providers/{rp}/aggregates', [aggregate],
                   version='1.1').status_code == 200
    before, mark = db_snapshot(), last_id()
    assert api.put(f'/resource_providers/{rp}/aggregates', [aggregate],
                   version='1.1').status_code == 200
    assert without_event_log(db_snapshot()) == without_event_log(before)  # no change...
    assert events_after(mark) == []  # ...so no event


def test_emptying_an_unknown_consumer_writes_no_event(api, hosts):
    mark = last_id()
    consumer = new_uuid()
    response = api.put(f'/allocations/{consumer}', {
        **claim(hosts[0], 1), 'allocations': {}, 'consumer_generation': None})
    assert response.status_code == 204, response.content
    assert api.get(f'/allocations/{consumer}').body == {'allocations': {}}
    assert generation(api, hosts[0]) == 1
    assert events_after(mark) == []


# ---- 4. GET /events -------------------------------------------------------------------

@pytest.fixture
def history(api, hosts):
    """Eight events: host-a and host-b created and given inventory, c1 on
    host-a, c2 on host-b, c1 moved to host-b, a trait on host-b."""
    a, b = hosts
    c1, c2 = new_uuid(), new_uuid()
    assert api.allocate(c1, {a: {'VCPU': 1}}).status_code == 204
    assert api.allocate(c2, {b: {'VCPU': 1}}).status_code == 204
    assert api.allocate(c1, {b: {'VCPU': 2}}, generation=1).status_code == 204
    api.set_traits(b, ['COMPUTE_NODE'])
    ids = list(Event.objects.order_by('id').values_list('id', flat=True))
    assert len(ids) == 8
    return {'a': a, 'b': b, 'c1': c1, 'c2': c2, 'ids': ids}


def listed(api, query=''):
    response = api.get(f'/events{query}')
    assert response.status_code == 200, response.content
    return response.body


def ids_of(body):
    return [event['id'] for event in body['events']]


def test_events_lists_the_log_in_id_order(api, history):
    body = listed(api)
    assert body == {'events': [events.describe(e) for e in
                               Event.objects.prefetch_related('providers')], 'links': []}
    assert ids_of(body) == history['ids']
    assert [e['event_type'] for e in body['events']] == [
        events.PROVIDER_CREATE, events.PROVIDER_CREATE, events.INVENTORY_UPDATE,
        events.INVENTORY_UPDATE, events.ALLOCATION_UPDATE, events.ALLOCATION_UPDATE,
        events.ALLOCATION_UPDATE, events.TRAIT_UPDATE]


def test_events_filters(api, history):
    e = history['ids']
    assert ids_of(listed(api, f"?provider={history['a']}")) == [e[0], e[2], e[4], e[6]]
    assert ids_of(listed(api, f"?provider={history['b']}")) == [e[1], e[3], e[5], e[6], e[7]]
    assert ids_of(listed(api, f"?provider={history['a'].upper()}")) == [e[0], e[2], e[4], e[6]]
    assert ids_of(listed(api, f'?provider={new_uuid()}')) == []
    assert ids_of(listed(api, f"?consumer={history['c1']}")) == [e[4], e[6]]
    assert ids_of(listed(api, '?type=resource_provider.create,allocation.update')) == [
        e[0], e[1], e[4], e[5], e[6]]
    assert ids_of(listed(api, '?type=resource_provider.trait.update')) == [e[7]]
    assert ids_of(listed(api, f"?provider={history['a']}&type=allocation.update"
                              f"&consumer={history['c1']}")) == [e[4], e[6]]


def test_events_since(api, history):
    e = history['ids']
    start = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)
    for minutes, pk in enumerate(e):
        Event.objects.filter(pk=pk).update(created_at=start + timedelta(minutes=minutes))
    assert ids_of(listed(api, '?since=2026-03-01T10:02:30Z')) == e[3:]
    assert ids_of(listed(api, '?since=2026-03-01T10:03:00Z')) == e[3:]  # at or after
    assert ids_of(listed(api, '?since=2026-03-01T10:03:00')) == e[3:]  # UTC by default
    assert ids_of(listed(api, '?' + urlencode({'since': '2026-03-01T12:05:00+02:00'}))) == e[5:]
    assert ids_of(listed(api, '?since=2026-03-01T11:00:00Z')) == []
    assert ids_of(listed(api, f"?since=2026-03-01T10:02:30Z&provider={history['a']}")) == [
        e[4], e[6]]
    assert listed(api, '?since=2026-03-01T10:07:00Z')['events'][0]['created_at'] == (
        '2026-03-01T10:07:00.000000Z')
    # Offsets beyond what the database takes (PostgreSQL: 15:59), and
    # ancient times: read as the UTC moment they name (found by the fuzzer).
    assert ids_of(listed(api, '?' + urlencode({'since': '2026-03-01T10:03:00+23:37'}))) == e
    assert ids_of(listed(api, '?' + urlencode({'since': '0574-07-20T03:59:38-23:37'}))) == e


def follow(api, query):
    """Every page from `query` on, following the next links."""
    pages, path = [], f'/events{query}'
    while path:
        response = api.get(path)
        assert response.status_code == 200, response.content
        pages.append(ids_of(response.body))
        links = response.body['links']
        assert [link['rel'] for link in links] in ([], ['next'])
        path = links[0]['href'] if links else None
    return pages


def test_paging_returns_every_event_once(api, history):
    e = history['ids']
    assert follow(api, '?limit=3') == [e[0:3], e[3:6], e[6:8]]
    assert follow(api, '?limit=4') == [e[0:4], e[4:8]]
    assert follow(api, '?limit=1') == [[pk] for pk in e]
    assert follow(api, f"?provider={history['b']}&limit=2") == [[e[1], e[3]], [e[5], e[6]],
                                                               [e[7]]]
    assert follow(api, f'?marker={e[5]}&limit=100') == [e[6:]]
    first = api.get('/events?limit=3&type=allocation.update,resource_provider.create').body
    assert first['links'][0]['href'].startswith('/events?')
    assert 'type=allocation.update%2Cresource_provider.create' in first['links'][0]['href']


def test_page_size_defaults_to_100_and_stops_at_1000(api):
    events.record_many([(events.PROVIDER_CREATE, [(new_uuid(), None, 0)], {}, None)] * 1001)
    body = listed(api)
    assert len(body['events']) == 100 and body['links'][0]['rel'] == 'next'
    body = listed(api, '?limit=5000')
    assert len(body['events']) == 1000 and body['links'][0]['rel'] == 'next'
    assert len(listed(api, f"?marker={ids_of(body)[-1]}&limit=5000")['events']) == 1


@pytest.mark.parametrize('query', [
    'type=resource_provider.explode', 'type=allocation.update,allocation.nope', 'type=',
    'type=ALLOCATION.UPDATE', 'since=yesterday', 'since=2026-13-01T00:00:00Z', 'since=',
    'since=0001-01-01T00:00:00%2B01:00',
    'provider=not-a-uuid', 'consumer=1234', 'colour=red', 'limit=0', 'limit=-1', 'limit=ten',
    'marker=abc', 'marker=-1'])
def test_bad_event_queries_are_400(api, history, query):
    assert_error(api.get(f'/events?{query}'), 400)


def test_events_are_for_admins(api, history):
    assert_error(api.get('/events', token='alice:proj1'), 403)
    assert api.get('/events', token='alice:proj1', headers={'X-Roles': 'admin'}).status_code == 200
    assert api.get('/events', token=False).status_code == 401


def test_events_queries_do_not_grow_with_the_page(api):
    providers = [(new_uuid(), 1, 2) for _ in range(3)]
    events.record_many([(events.ALLOCATION_UPDATE, providers, {'allocations': {}},
                         (new_uuid(), 1, 2))] * 25)

    def queries(query):
        with CaptureQueriesContext(connection) as captured:
            body = listed(api, query)
        assert all(len(e['providers']) == 3 for e in body['events'])
        return len(captured), len(body['events'])

    assert queries('?limit=2')[0] == queries('?limit=20')[0]
    assert queries(f'?limit=2&provider={providers[0][0]}')[0] == queries(
        f'?limit=20&provider={providers[0][0]}')[0]


# ---- 5. the admin -----------------------------------------------------------------------

def changelist(admin_client, query=''):
    response = admin_client.get(admin_url(Event) + query)
    assert response.status_code == 200, response.content
    return [event.pk for event in response.context['cl'].result_list]


def test_admin_lists_filters_and_searches_events(admin_client, history):
    e = history['ids']
    assert changelist(admin_client) == e[::-1]  # newest first
    Event.objects.filter(pk=e[0]).update(sent_at=dj_timezone.now())
    assert changelist(admin_client, '?sent=no') == e[:0:-1]
    assert changelist(admin_client, '?sent=yes') == [e[0]]
    assert changelist(admin_client, f"?q={history['a']}") == [e[6], e[4], e[2], e[0]]
    assert changelist(admin_client, f"?q={history['c2']}") == [e[5]]
    assert changelist(admin_client, '?event_type=allocation.update') == [e[6], e[5], e[4]]
    response = admin_client.get(admin_url(Event))
    assert not response.context['has_add_permission']
    assert history['a'] in response.content.decode()


def test_admin_shows_an_event(admin_client, history):
    moved = Event.objects.get(pk=history['ids'][6])
    response = admin_client.get(admin_url(Event, 'change', moved.pk))
    assert response.status_code == 200
    page = html.unescape(response.content.decode())
    assert history['c1'] in page and history['a'] in page and history['b'] in page
    payload = page[page.index('Payload:'):]
    payload = payload[:payload.index('</div>')]
    for part in (f'"{history["b"]}": {{"resources": {{"VCPU": 2}}}}',
                 '"consumer_type": "INSTANCE"'):
        assert part in payload
    rows = response.context['inline_admin_formsets'][0].formset.queryset
    assert sorted(rows.values_list('provider_uuid', 'generation_before', 'generation_after')) == (
        sorted([(history['a'], 2, 2), (history['b'], 2, 3)]))


def test_admin_cannot_write_events(admin_client, history):
    pk = history['ids'][0]
    with unchanged():
        assert admin_client.get(admin_url(Event, 'add')).status_code == 403
        assert admin_client.post(admin_url(Event, 'add'), {'event_type': 'x'}).status_code == 403
        assert admin_client.post(admin_url(Event, 'change', pk),
                                 {'event_type': 'allocation.delete'}).status_code == 403
        assert admin_client.post(admin_url(Event, 'delete', pk), {'post': 'yes'}).status_code == 403
        admin_client.post(admin_url(Event), {'action': 'delete_selected',
                                             '_selected_action': [pk], 'post': 'yes'})


def test_a_change_through_the_admin_is_the_staff_users(admin_client, api):
    rp = api.create_provider(name='before')['uuid']
    api.set_inventory(rp, {'VCPU': {'total': 4}})
    url = admin_url(ResourceProvider, 'change', ResourceProvider.objects.get(uuid=rp).pk)
    data = form_data(admin_client.get(url))
    data['name'] = 'after'
    mark = last_id()
    response = admin_client.post(url, data)
    assert response.status_code == 302, response.content
    [event] = events_after(mark)
    assert event['event_type'] == events.PROVIDER_UPDATE
    assert (event['user_id'], event['project_id']) == ('staff:admin', None)
    assert event['request_id'].startswith('req-')
    assert event['providers'] == [gens(rp, 1, 1)] and event['payload'] == {'name': 'after'}
    assert_chain(api, rp)


# ---- generations read without a lock -----------------------------------------------------

def test_a_rename_after_a_concurrent_write_keeps_the_chain(api, monkeypatch):
    rp = api.create_provider(name='old')['uuid']
    real_update = services.provider_update

    def another_client_writes_first(**kwargs):
        services.traits_replace(provider=ResourceProvider.objects.get(uuid=rp),
                                trait_names=['COMPUTE_NODE'])
        return real_update(**kwargs)

    monkeypatch.setattr(services, 'provider_update', another_client_writes_first)
    assert api.put(f'/resource_providers/{rp}', {'name': 'new'}).status_code == 200
    assert_chain(api, rp)


# ---- 6. concurrent writers ------------------------------------------------------------------

@pytest.fixture
def server(live_server):
    return Server(live_server.url)


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_concurrent_claims_write_one_event_per_winner(server):
    rp = server.vcpu_provider('cn-race', 10)
    mark = last_id()
    consumers = [new_uuid() for _ in range(WRITERS)]
    amounts = [1 + i % 3 for i in range(WRITERS)]  # 40 asked for, 10 to have
    answers = together(WRITERS, lambda i: server.call(
        'PUT', f'/allocations/{consumers[i]}', claim_body(rp, amounts[i])))

    statuses = [a.status_code for a in answers]
    assert set(statuses) == {204, 409}, [a.text for a in answers if a.status_code >= 500][:1]
    winners = {c for c, a in zip(consumers, answers) if a.status_code == 204}
    written = events_after(mark)
    assert [e['event_type'] for e in written] == [events.ALLOCATION_UPDATE] * len(winners)
    assert {e['consumer']['uuid'] for e in written} == winners
    by_request = {a.headers['x-openstack-request-id'] for a in answers if a.status_code == 204}
    assert {e['request_id'] for e in written} == by_request
    used = server.call('GET', f'/resource_providers/{rp}/usages').json()['usages']['VCPU']
    assert used == sum(n for c, n in zip(consumers, amounts) if c in winners) <= 10
    assert_links(rp, server.call('GET', f'/resource_providers/{rp}').json()['generation'])


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_concurrent_inventory_writers_write_one_event_per_winner(server):
    rp = new_uuid()
    assert server.call('POST', '/resource_providers', {'name': 'cn-inv', 'uuid': rp}
                       ).status_code == 200
    mark = last_id()
    answers = together(WRITERS, lambda i: server.call(
        'PUT', f'/resource_providers/{rp}/inventories',
        {'resource_provider_generation': 0, 'inventories': {'VCPU': {'total': 100 + i}}}))
    statuses = sorted(a.status_code for a in answers)
    assert statuses == [200] + [409] * (WRITERS - 1)
    [winner] = [a for a in answers if a.status_code == 200]
    [event] = events_after(mark)
    assert event['event_type'] == events.INVENTORY_UPDATE
    assert event['request_id'] == winner.headers['x-openstack-request-id']
    assert event['providers'] == [gens(rp, 0, 1)]
    assert event['payload']['added']['VCPU']['total'] == (
        winner.json()['inventories']['VCPU']['total'])
    assert_links(rp, server.call('GET', f'/resource_providers/{rp}').json()['generation'])


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_concurrent_deletes_and_moves_keep_every_chain(server):
    # Deletes and moves do not bump the providers they leave, but their
    # events still record those providers' generations: read under the row
    # locks the writers take, they link up with the claims racing them.
    a, b = server.vcpu_provider('cn-a', 100), server.vcpu_provider('cn-b', 100)
    held = [new_uuid() for _ in range(WRITERS // 2)]
    for consumer in held:
        assert server.call('PUT', f'/allocations/{consumer}', claim_body(a, 1)
                           ).status_code == 204

    def work(i):
        if i < len(held) // 2:
            return server.call('DELETE', f'/allocations/{held[i]}')
        if i < len(held):  # move from a to b (a keeps its generation)
            return server.call('PUT', f'/allocations/{held[i]}', {
                **claim_body(b, 1), 'consumer_generation': 1})
        return server.call('PUT', f'/allocations/{new_uuid()}', claim_body(a, 1))
    answers = together(WRITERS, work)

    assert {answer.status_code for answer in answers} == {204}, [a.text for a in answers]
    for rp in (a, b):
        assert_links(rp, server.call('GET', f'/resource_providers/{rp}').json()['generation'])
