"""Binding requests for one tenant racing each other over real HTTP: the
database leaves exactly one open binding, whoever wins, and every request
answers it; a rebinding race ends the old binding once."""
import uuid

import pytest

from providers.pods.models import PodBinding
from tests.support.concurrency import WRITERS
from tests.support.concurrency import Server
from tests.support.concurrency import together

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


@pytest.fixture
def server(live_server):
    return Server(live_server.url)


def make_pod(server, name, vcpus=16, **fields):
    """A pod of one new compute node; its provider's uuid."""
    rp, aggregate = str(uuid.uuid4()), str(uuid.uuid4())
    assert server.call('POST', '/resource_providers', {'name': f'{name}-cn', 'uuid': rp}
                       ).status_code == 200
    assert server.call('PUT', f'/resource_providers/{rp}/inventories', {
        'resource_provider_generation': 0,
        'inventories': {'VCPU': {'total': vcpus}}}).status_code == 200
    assert server.call('PUT', f'/resource_providers/{rp}/aggregates', {
        'resource_provider_generation': 1, 'aggregates': [aggregate]}).status_code == 200
    answer = server.call('POST', '/pods', {'name': name, 'aggregate': aggregate, **fields})
    assert answer.status_code == 201, answer.text
    return rp


def request_binding(server):
    return server.call('POST', '/pod_bindings', {'project_id': 'tenant1'})


def test_twenty_first_requests_for_one_tenant_make_one_binding(server):
    for name in ('Pod1', 'Pod2', 'Pod3'):
        make_pod(server, name)
    answers = together(WRITERS, lambda i: request_binding(server))
    statuses = sorted(a.status_code for a in answers)
    assert statuses == [200] * (WRITERS - 1) + [201], [a.text for a in answers
                                                       if a.status_code not in (200, 201)][:2]
    assert {a.json()['uuid'] for a in answers} == {answers[0].json()['uuid']}
    assert {a.json()['pod']['name'] for a in answers} == {'Pod1'}
    assert PodBinding.objects.filter(project_id='tenant1').count() == 1
    assert PodBinding.objects.open().filter(project_id='tenant1').count() == 1


def test_twenty_requests_racing_to_rebind_end_the_old_binding_once(server):
    full = make_pod(server, 'Pod1', thresholds={'VCPU': 50})
    make_pod(server, 'Pod2')
    first = request_binding(server).json()
    assert server.call('PUT', f'/allocations/{uuid.uuid4()}', {
        'allocations': {full: {'resources': {'VCPU': 8}}}, 'project_id': 'tenant1',
        'user_id': 'u', 'consumer_generation': None, 'consumer_type': 'INSTANCE',
    }).status_code == 204
    answers = together(WRITERS, lambda i: request_binding(server))
    assert sorted(a.status_code for a in answers) == [200] * (WRITERS - 1) + [201]
    (moved,) = [a.json() for a in answers if a.status_code == 201]
    assert (moved['pod']['name'], moved['replaced']['uuid'],
            moved['replaced']['end_reason']) == ('Pod2', first['uuid'], 'threshold')
    assert {a.json()['uuid'] for a in answers} == {moved['uuid']}
    history = server.call('GET', '/pod_bindings?project_id=tenant1').json()['pod_bindings']
    assert [(b['pod']['name'], b['end_reason']) for b in history] == [
        ('Pod1', 'threshold'), ('Pod2', None)]


def test_tenants_and_affinities_do_not_wait_for_each_other(server):
    make_pod(server, 'Pod1')
    make_pod(server, 'Pod4', affinity_tags={'resource': 'CAD'})
    answers = together(WRITERS, lambda i: server.call('POST', '/pod_bindings', {
        'project_id': f'tenant{i // 2}', 'affinity': 'resource=CAD' if i % 2 else None}))
    assert [a.status_code for a in answers] == [201] * WRITERS   # 20 distinct pairs
    assert [a.json()['pod']['name'] for a in answers] == ['Pod1', 'Pod4'] * (WRITERS // 2)
    assert PodBinding.objects.open().count() == WRITERS
