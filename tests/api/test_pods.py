"""The pod API (/pods, /pod_bindings; not part of OpenStack Placement):
answers and their numbers, Placement's error format for every refusal,
policy, and the design's own example end to end: two groups of pods, a
tenant bound in each, real allocations filling a pod past its threshold,
a pod put into maintenance, and the history."""
import uuid as uuid_lib
from urllib.parse import quote

import pytest

from tests.support.api import assert_error
from tests.support.api import new_uuid

POD_KEYS = {'uuid', 'name', 'aggregate', 'availability_zone', 'affinity_tags', 'thresholds',
            'state', 'created_at', 'updated_at', 'resources', 'tenants', 'links'}
BINDING_KEYS = {'uuid', 'project_id', 'affinity', 'pod', 'member_of', 'started_at', 'ended_at',
                'end_reason', 'links'}
CAD = 'resource=CAD'
SERVICE = {'X-Roles': 'service'}


class Pods:
    """Pods and their providers, made through the API."""

    def __init__(self, api):
        self.api = api
        self.providers = {}   # pod name -> [provider uuids]

    def create(self, name, *members, **fields):
        """A pod of new providers (inventories as given; default one compute
        node of 16 VCPU) in a new aggregate; fields as POST /pods takes them."""
        aggregate = new_uuid()
        self.providers[name] = []
        for i, inventories in enumerate(members or [{'VCPU': {'total': 16}}]):
            rp = self.api.create_provider(name=f'{name}-cn{i}')['uuid']
            self.api.set_inventory(rp, inventories)
            self.api.set_aggregates(rp, [aggregate])
            self.providers[name].append(rp)
        response = self.api.post('/pods', {'name': name, 'aggregate': aggregate, **fields})
        assert response.status_code == 201, response.content
        return response.body

    def bind(self, project, affinity=None, **body):
        return self.api.post('/pod_bindings', {'project_id': project, 'affinity': affinity,
                                               **body})


@pytest.fixture
def pods(api):
    return Pods(api)


def books_of(api, providers):
    """{class: (capacity, used)} summed over the providers' inventories and
    usages as the Placement API shows them."""
    sums = {}
    for rp in providers:
        inventories = api.get(f'/resource_providers/{rp}/inventories').body['inventories']
        usages = api.get(f'/resource_providers/{rp}/usages').body['usages']
        for rc, inv in inventories.items():
            capacity, used = sums.get(rc, (0.0, 0))
            sums[rc] = (capacity + (inv['total'] - inv['reserved']) * inv['allocation_ratio'],
                        used + usages.get(rc, 0))
    return sums


def claim(api, project, resources, member_of):
    """A consumer placed as a scheduler would: the first allocation candidate
    within the pod (member_of), claimed with PUT /allocations."""
    query = ','.join(f'{rc}:{n}' for rc, n in resources.items())
    candidates = api.get(f'/allocation_candidates?resources={query}&member_of={member_of}')
    assert candidates.status_code == 200, candidates.content
    request = candidates.body['allocation_requests'][0]
    consumer = new_uuid()
    answer = api.put(f'/allocations/{consumer}', {
        **request, 'project_id': project, 'user_id': 'user', 'consumer_generation': None,
        'consumer_type': 'INSTANCE'})
    assert answer.status_code == 204, answer.content
    return set(request['allocations'])


# ---- pods -------------------------------------------------------------------------

def test_a_pod_shows_its_live_books_against_its_thresholds(api, pods):
    pod = pods.create('Pod1', {'VCPU': {'total': 10, 'reserved': 2, 'allocation_ratio': 2.0},
                               'DISK_GB': {'total': 100}},
                      {'VCPU': {'total': 8}}, availability_zone='az1',
                      affinity_tags={'resource': 'CAD'}, thresholds={'VCPU': 50, 'DISK_GB': 90})
    assert set(pod) == POD_KEYS
    assert (pod['name'], pod['availability_zone'], pod['affinity_tags'], pod['state'],
            pod['tenants'], pod['updated_at']) == ('Pod1', 'az1', {'resource': 'CAD'},
                                                   'enabled', 0, None)
    assert pod['links'] == [{'rel': 'self', 'href': f'/pods/{pod["uuid"]}'},
                            {'rel': 'bindings', 'href': f'/pod_bindings?pod={pod["uuid"]}'}]
    first, second = pods.providers['Pod1']
    api.allocate(new_uuid(), {first: {'VCPU': 10, 'DISK_GB': 20}, second: {'VCPU': 3}})
    shown = api.get(f'/pods/{pod["uuid"]}')
    assert shown.status_code == 200
    assert 'Last-Modified' not in shown
    assert shown.body['resources'] == {
        'VCPU': {'total': 18, 'reserved': 2, 'capacity': 24.0, 'used': 13, 'free': 11.0,
                 'utilization': pytest.approx(100 * 13 / 24), 'threshold': 50,
                 'threshold_reached': True},
        'DISK_GB': {'total': 100, 'reserved': 0, 'capacity': 100.0, 'used': 20, 'free': 80.0,
                    'utilization': 20.0, 'threshold': 90, 'threshold_reached': False}}
    # The same numbers as the providers' own inventories and usages.
    assert {rc: (r['capacity'], r['used']) for rc, r in shown.body['resources'].items()} == \
        books_of(api, pods.providers['Pod1'])


def test_list_pods_oldest_first_and_filtered(api, pods):
    pods.create('Pod1', availability_zone='az1')
    pods.create('Pod4', availability_zone='az2', affinity_tags={'resource': 'CAD'})
    pods.create('Pod5', availability_zone='az2', affinity_tags={'resource': 'CAD'},
                state='maintenance')

    def listed(query=''):
        response = api.get(f'/pods{query}')
        assert response.status_code == 200, response.content
        return [p['name'] for p in response.body['pods']]
    assert listed() == ['Pod1', 'Pod4', 'Pod5']
    assert listed('?availability_zone=az2') == ['Pod4', 'Pod5']
    assert listed('?state=maintenance') == ['Pod5']
    assert listed(f'?affinity={CAD}') == ['Pod4', 'Pod5']
    assert listed('?affinity=') == ['Pod1']
    assert listed('?availability_zone=nowhere') == []
    assert_error(api.get('/pods?state=retired'), 400, "'retired' is not one of")
    assert_error(api.get('/pods?affinity=CAD'), 400, 'Invalid query string parameters')
    assert_error(api.get('/pods?color=red'), 400, 'Additional properties are not allowed')


def test_create_update_and_delete_a_pod(api):
    uuid = new_uuid()
    created = api.post('/pods', {'name': 'Pod1', 'uuid': uuid})
    assert created.status_code == 201, created.content
    assert created['Location'] == f'http://testserver/pods/{uuid}'
    body = created.body
    assert (body['uuid'], body['availability_zone'], body['affinity_tags'], body['thresholds'],
            body['resources']) == (uuid, 'nova', {}, {}, {})
    uuid_lib.UUID(body['aggregate'])   # a new aggregate
    changed = api.put(f'/pods/{uuid}', {'state': 'maintenance', 'thresholds': {'VCPU': 80}})
    assert changed.status_code == 200, changed.content
    assert (changed.body['state'], changed.body['thresholds'], changed.body['name']) == (
        'maintenance', {'VCPU': 80}, 'Pod1')
    assert changed.body['updated_at'] is not None
    deleted = api.delete(f'/pods/{uuid}')
    assert deleted.status_code == 204 and deleted.content == b''
    assert_error(api.get(f'/pods/{uuid}'), 404, f'No pod with uuid {uuid} found')
    assert_error(api.delete(f'/pods/{uuid}'), 404)
    assert_error(api.put(f'/pods/{uuid}', {'name': 'x'}), 404)


def test_pod_refusals(api, pods, db_snapshot):
    pod = pods.create('Pod1')
    before = db_snapshot()
    assert_error(api.post('/pods', {'name': 'Pod1'}), 409,
                 'Conflicting pod name: Pod1 already exists.', code='placement.duplicate_name')
    assert_error(api.post('/pods', {'name': 'Pod2', 'aggregate': pod['aggregate']}), 409,
                 f'Aggregate {pod["aggregate"]} is already the pod Pod1.')
    assert_error(api.post('/pods', {'name': 'Pod2', 'thresholds': {'CUSTOM_NOPE': 5}}), 400,
                 'Invalid resource class in thresholds: No such resource class CUSTOM_NOPE.')
    for bad in ({}, {'name': ''}, {'name': 'x', 'state': 'retired'},
                {'name': 'x', 'thresholds': {'VCPU': 0}},
                {'name': 'x', 'thresholds': {'VCPU': 101}},
                {'name': 'x', 'thresholds': {'vcpu': 50}}, {'name': 'x', 'aggregate': 'nope'},
                {'name': 'x', 'affinity_tags': {'res ource': 'CAD'}},
                {'name': 'x', 'affinity_tags': {'resource': ' CAD'}},
                {'name': 'x', 'affinity_tags': {'resource': 'C=AD'}},
                {'name': 'x', 'affinity_tags': {'': 'CAD'}}, {'name': 'x', 'color': 'red'}):
        assert_error(api.post('/pods', bad), 400, 'JSON does not validate')
    assert_error(api.put(f'/pods/{pod["uuid"]}', {}), 400, 'JSON does not validate')
    assert_error(api.put(f'/pods/{pod["uuid"]}', {'uuid': new_uuid()}), 400)
    assert_error(api.post('/pods', raw='{"name": "x"}', content_type='text/plain'), 415)
    assert_error(api.post('/pods', raw='{'), 400, 'Malformed JSON')
    assert_error(api.request('PATCH', '/pods'), 405)
    assert api.request('PATCH', '/pods')['Allow'] == 'GET, POST'
    assert db_snapshot() == before
    pods.bind('tenant1')
    assert_error(api.delete(f'/pods/{pod["uuid"]}'), 409,
                 'Pod Pod1 has bindings, whose history is kept: put it into maintenance '
                 'instead.', code='placement.pod.inuse')


GOOD_VALUES = ['CAD Modeling', 'GPU (A100), 80 GB', "R&D / 3D [beta]!", 'a', 'x' * 64]
BAD_VALUES = ['', ' CAD', 'CAD ', 'C=AD', 'CAD\n', 'CAD\tModeling', 'x' * 65,
              'Modélisation', 'a"b', 'a<b>']


def test_tag_values_take_spaces_and_common_punctuation(api, pods):
    for i, value in enumerate(GOOD_VALUES):
        pod = pods.create(f'Pod{i}', affinity_tags={'resource': value})
        assert pod['affinity_tags'] == {'resource': value}
        bound = pods.bind(f'tenant{i}', f'resource={value}')
        assert bound.status_code == 201, bound.content
        assert (bound.body['affinity'], bound.body['pod']['name']) == (
            f'resource={value}', f'Pod{i}')
        listed = api.get(f'/pods?affinity={quote(f"resource={value}")}').body['pods']
        assert [p['name'] for p in listed] == [f'Pod{i}']
        bindings = api.get(f'/pod_bindings?affinity={quote(f"resource={value}")}')
        assert [b['project_id'] for b in bindings.body['pod_bindings']] == [f'tenant{i}']


@pytest.mark.parametrize('value', BAD_VALUES)
def test_tag_values_are_still_validated_and_limited(api, pods, db_snapshot, value):
    pod = pods.create('Pod1')
    before = db_snapshot()
    assert_error(api.post('/pods', {'name': 'x', 'affinity_tags': {'resource': value}}), 400,
                 'JSON does not validate')
    assert_error(api.put(f'/pods/{pod["uuid"]}', {'affinity_tags': {'resource': value}}), 400,
                 'JSON does not validate')
    assert_error(pods.bind('tenant1', f'resource={value}'), 400, 'JSON does not validate')
    assert_error(api.get(f'/pods?affinity={quote(f"resource={value}")}'), 400)
    assert db_snapshot() == before


def test_tenants_counts_projects_not_bindings(api, pods):
    pod = pods.create('Pod1', affinity_tags={'resource': 'CAD Modeling', 'gpu': 'yes'})
    for affinity in ('resource=CAD Modeling', 'gpu=yes'):
        assert pods.bind('tenant1', affinity).status_code == 201
    assert pods.bind('tenant2', 'gpu=yes').status_code == 201
    open_ = api.get(f'/pod_bindings?pod={pod["uuid"]}&open=true').body['pod_bindings']
    assert len(open_) == 3
    assert api.get(f'/pods/{pod["uuid"]}').body['tenants'] == 2
    assert [p['tenants'] for p in api.get('/pods').body['pods']] == [2]


# ---- bindings ---------------------------------------------------------------------

def test_a_binding_request_binds_then_answers_the_binding(api, pods):
    pod = pods.create('Pod1')
    first = pods.bind('tenant1')
    assert first.status_code == 201, first.content
    assert set(first.body) == BINDING_KEYS | {'replaced'}
    binding = first.body
    assert first['Location'] == f'http://testserver/pod_bindings/{binding["uuid"]}'
    assert (binding['project_id'], binding['affinity'], binding['pod'], binding['member_of'],
            binding['ended_at'], binding['end_reason'], binding['replaced']) == (
        'tenant1', None, {'uuid': pod['uuid'], 'name': 'Pod1'}, pod['aggregate'], None, None,
        None)
    again = pods.bind('tenant1')
    assert again.status_code == 200
    assert again.body == first.body
    shown = api.get(f'/pod_bindings/{binding["uuid"]}')
    assert shown.status_code == 200
    assert shown.body == {k: v for k, v in first.body.items() if k != 'replaced'}
    assert api.get(f'/pods/{pod["uuid"]}').body['tenants'] == 1
    assert_error(api.get(f'/pod_bindings/{new_uuid()}'), 404, 'No pod binding with uuid')


def test_no_pod_available_is_a_409_that_says_why(api, pods, db_snapshot):
    pods.create('Pod1', state='maintenance')
    pods.create('Pod4', affinity_tags={'resource': 'CAD'})
    before = db_snapshot()
    assert_error(pods.bind('tenant1'), 409,
                 'No pod can take the general-purpose work of project tenant1: Pod1 is in '
                 'maintenance; Pod4 is not general purpose (resource=CAD).',
                 code='placement.pod.none_available')
    assert_error(pods.bind('tenant1', CAD, availability_zone='az9', resources={'VCPU': 1}), 409,
                 'Pod4 is in availability zone nova, not az9', code='placement.pod.none_available')
    assert db_snapshot() == before


def test_binding_request_refusals(api, pods, db_snapshot):
    pods.create('Pod1')
    before = db_snapshot()
    for bad in ({}, {'project_id': ''}, {'project_id': 'p', 'affinity': 'CAD'},
                {'project_id': 'p', 'resources': {'VCPU': 0}},
                {'project_id': 'p', 'resources': {'VCPU': 2 ** 31}},
                {'project_id': 'p', 'pod': 'not-a-uuid'}, {'project_id': 'p', 'extra': 1}):
        assert_error(pods.api.post('/pod_bindings', bad), 400, 'JSON does not validate')
    assert_error(pods.bind('p', pod=new_uuid()), 400, 'No pod with uuid')
    assert_error(pods.bind('p', resources={'VCPU': 1, 'CUSTOM_NOPE': 2}), 400,
                 'Invalid resource class in resources: No such resource class CUSTOM_NOPE.')
    assert db_snapshot() == before


def test_an_admin_binds_and_unbinds_explicitly(api, pods, make_api):
    pods.create('Pod1')
    pod2 = pods.create('Pod2')
    cad = pods.create('Pod4', affinity_tags={'resource': 'CAD'})
    bound = pods.bind('tenant1').body
    moved = pods.bind('tenant1', pod=pod2['uuid'])
    assert moved.status_code == 201, moved.content
    assert (moved.body['pod']['name'], moved.body['replaced']['uuid'],
            moved.body['replaced']['end_reason']) == ('Pod2', bound['uuid'], 'admin')
    assert pods.bind('tenant1', pod=pod2['uuid']).status_code == 200   # already there
    assert_error(pods.bind('tenant1', pod=cad['uuid']), 400,
                 'Pod Pod4 does not serve general-purpose work.')
    assert_error(pods.bind('tenant1', pod=pod2['uuid'], resources={'VCPU': 1}), 400,
                 'An explicit binding names its pod: resources is for binding requests.')
    # A service may ask for bindings but not override them.
    nova = make_api(token='nova:service-project')
    assert nova.post('/pod_bindings', {'project_id': 'tenant2'},
                     headers=SERVICE).status_code == 201
    assert_error(nova.post('/pod_bindings', {'project_id': 'tenant2', 'pod': pod2['uuid']},
                           headers=SERVICE), 403, 'placement:pod_bindings:override')
    ended = api.delete(f'/pod_bindings/{moved.body["uuid"]}')
    assert ended.status_code == 204
    again = api.get(f'/pod_bindings/{moved.body["uuid"]}').body
    assert (again['end_reason'], again['ended_at'] is not None) == ('admin', True)
    assert_error(api.delete(f'/pod_bindings/{moved.body["uuid"]}'), 409, 'already ended')


def test_list_bindings_filtered_and_paged(api, pods):
    pods.create('Pod1')
    pod4 = pods.create('Pod4', affinity_tags={'resource': 'CAD'})
    for tenant in ('t1', 't2', 't3'):
        pods.bind(tenant)
        pods.bind(tenant, CAD)
    api.delete(f'/pod_bindings/{pods.bind("t1").body["uuid"]}')

    def listed(query):
        response = api.get(f'/pod_bindings{query}')
        assert response.status_code == 200, response.content
        return [(b['project_id'], b['affinity'], b['end_reason'])
                for b in response.body['pod_bindings']], response.body['links']
    assert listed('?project_id=t1')[0] == [('t1', None, 'admin'), ('t1', CAD, None)]
    assert listed(f'?pod={pod4["uuid"]}')[0] == [('t1', CAD, None), ('t2', CAD, None),
                                                 ('t3', CAD, None)]
    assert listed('?affinity=&open=true')[0] == [('t2', None, None), ('t3', None, None)]
    assert listed('?open=false')[0] == [('t1', None, 'admin')]
    page, links = listed('?limit=4')
    assert len(page) == 4
    (link,) = links
    assert link['rel'] == 'next'
    rest, more = listed(link['href'][len('/pod_bindings'):])
    assert len(rest) == 2 and more == []
    assert_error(api.get('/pod_bindings?open=maybe'), 400)
    assert_error(api.get('/pod_bindings?pod=nope'), 400)


def test_policy(api, pods, make_api):
    pod = pods.create('Pod1')
    nova = make_api(token='nova:service-project')
    user = make_api(token='user')
    assert nova.get('/pods', headers=SERVICE).status_code == 200
    assert nova.get(f'/pods/{pod["uuid"]}', headers=SERVICE).status_code == 200
    assert nova.get('/pod_bindings', headers=SERVICE).status_code == 200
    for method, path, body, rule in [
            ('POST', '/pods', {'name': 'x'}, 'pods:create'),
            ('PUT', f'/pods/{pod["uuid"]}', {'name': 'x'}, 'pods:update'),
            ('DELETE', f'/pods/{pod["uuid"]}', None, 'pods:delete')]:
        assert_error(nova.request(method, path, body, headers=SERVICE), 403,
                     f'Policy does not allow placement:{rule} to be performed.')
    for method, path, body, rule in [
            ('GET', '/pods', None, 'pods:list'),
            ('GET', '/pod_bindings', None, 'pod_bindings:list'),
            ('POST', '/pod_bindings', {'project_id': 'p'}, 'pod_bindings:create')]:
        assert_error(user.request(method, path, body), 403,
                     f'Policy does not allow placement:{rule} to be performed.')
    assert make_api(token=False).get('/pods').status_code == 401


# ---- the design's example ------------------------------------------------------------

def test_the_designs_example_end_to_end(api, pods, settings):
    """GroupA (Pod1-3, general purpose) and GroupB (Pod4-6, resource=CAD),
    created in that order, each pod with an 80% VCPU threshold; Pod3 is the
    largest of GroupA. tenant1 and tenant2 are bound to Pod1 and Pod4; real
    allocations (placed with the binding's member_of) fill Pod1 past its
    threshold; the next general-purpose requests move tenant1 to Pod2 by
    creation time, and tenant2 to Pod3 when the idle-capacity weigher
    dominates; the CAD bindings stay on Pod4 until it goes into
    maintenance, then move to Pod5; the history has every binding with its
    reason."""
    vcpus = {'Pod1': 16, 'Pod2': 16, 'Pod3': 64, 'Pod4': 16, 'Pod5': 16, 'Pod6': 16}
    group = {}
    for name in ('Pod1', 'Pod2', 'Pod3'):
        group[name] = pods.create(name, {'VCPU': {'total': vcpus[name]},
                                         'MEMORY_MB': {'total': 65536}},
                                  thresholds={'VCPU': 80})
    for name in ('Pod4', 'Pod5', 'Pod6'):
        group[name] = pods.create(name, {'VCPU': {'total': vcpus[name]}},
                                  thresholds={'VCPU': 80}, affinity_tags={'resource': 'CAD'})
    by_aggregate = {p['aggregate']: name for name, p in group.items()}

    bound = {}
    for tenant in ('tenant1', 'tenant2'):
        for affinity in (None, CAD):
            answer = pods.bind(tenant, affinity)
            assert answer.status_code == 201, answer.content
            bound[tenant, affinity] = answer.body
    assert {k: by_aggregate[b['member_of']] for k, b in bound.items()} == {
        ('tenant1', None): 'Pod1', ('tenant1', CAD): 'Pod4',
        ('tenant2', None): 'Pod1', ('tenant2', CAD): 'Pod4'}

    # tenant1's instances, placed within its pod: 13 of Pod1's 16 VCPU (81%).
    member_of = bound['tenant1', None]['member_of']
    for _ in range(13):
        assert claim(api, 'tenant1', {'VCPU': 1, 'MEMORY_MB': 512}, member_of) <= set(
            pods.providers['Pod1'])
    pod1 = api.get(f'/pods/{group["Pod1"]["uuid"]}').body['resources']['VCPU']
    assert (pod1['used'], pod1['threshold_reached']) == (13, True)

    # First pod in line (the default weighers): tenant1 moves to Pod2.
    moved = pods.bind('tenant1')
    assert moved.status_code == 201, moved.content
    assert by_aggregate[moved.body['member_of']] == 'Pod2'
    assert (moved.body['replaced']['uuid'], moved.body['replaced']['end_reason']) == (
        bound['tenant1', None]['uuid'], 'threshold')
    # Its next instance lands in Pod2.
    assert claim(api, 'tenant1', {'VCPU': 1}, moved.body['member_of']) <= set(
        pods.providers['Pod2'])

    # With the idle-capacity weigher dominating, tenant2 goes to the emptiest: Pod3.
    settings.PLACEMENT_POD_WEIGHERS = ['CreationTimeWeigher:1.0', 'IdleCapacityWeigher:10.0']
    moved2 = pods.bind('tenant2')
    assert by_aggregate[moved2.body['member_of']] == 'Pod3'
    assert moved2.body['replaced']['end_reason'] == 'threshold'
    settings.PLACEMENT_POD_WEIGHERS = ['CreationTimeWeigher:1.0', 'IdleCapacityWeigher:0.0']

    # The CAD bindings stayed on Pod4 ...
    kept = pods.bind('tenant1', CAD)
    assert (kept.status_code, kept.body['uuid']) == (200, bound['tenant1', CAD]['uuid'])
    # ... until Pod4 goes into maintenance.
    assert api.put(f'/pods/{group["Pod4"]["uuid"]}',
                   {'state': 'maintenance'}).status_code == 200
    cad = pods.bind('tenant1', CAD)
    assert cad.status_code == 201
    assert by_aggregate[cad.body['member_of']] == 'Pod5'
    assert cad.body['replaced']['end_reason'] == 'maintenance'

    history = api.get('/pod_bindings?project_id=tenant1').body['pod_bindings']
    assert [(by_aggregate[b['member_of']], b['affinity'], b['end_reason'],
             b['ended_at'] is None) for b in history] == [
        ('Pod1', None, 'threshold', False),
        ('Pod4', CAD, 'maintenance', False),
        ('Pod2', None, None, True),
        ('Pod5', CAD, None, True)]
    assert history[0]['ended_at'] <= history[2]['started_at']
    assert history[1]['ended_at'] <= history[3]['started_at']
    tenants = {p['name']: p['tenants'] for p in api.get('/pods').body['pods']}
    assert tenants == {'Pod1': 0, 'Pod2': 1, 'Pod3': 1, 'Pod4': 1, 'Pod5': 1, 'Pod6': 0}
