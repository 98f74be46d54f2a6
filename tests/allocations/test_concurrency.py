"""Concurrent writers against a live HTTP server: generations decide who
wins, capacity is never exceeded, and losers leave nothing behind."""
import uuid

import pytest
from django.db import connection
from django.db import connections

from allocations import usage_totals
from providers.models import ResourceProvider
from tests.support.api import assert_error
from tests.support.concurrency import WRITERS
from tests.support.concurrency import Server
from tests.support.concurrency import claim_body
from tests.support.concurrency import together

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


@pytest.fixture
def server(live_server):
    return Server(live_server.url)


CONFLICT = 'There was a conflict when trying to complete your request.\n\n '


def conflict(answer, detail, code):
    """A losing writer's 409 with exactly this error."""
    assert answer.status_code == 409, answer.text
    assert answer.json() == {'errors': [{
        'status': 409, 'title': 'Conflict', 'detail': CONFLICT + detail + '  ', 'code': code,
        'request_id': answer.headers['x-openstack-request-id']}]}


@pytest.fixture
def nearly_full(server):
    """A provider with 10 VCPU of which 5 are already allocated."""
    rp = server.vcpu_provider('cn-race', 10)
    assert server.call('PUT', f'/allocations/{uuid.uuid4()}', claim_body(rp, 5)).status_code == 204
    return rp


def test_twenty_claims_for_the_last_five_units(server, nearly_full):
    before = server.call('GET', f'/resource_providers/{nearly_full}').json()['generation']
    consumers = [str(uuid.uuid4()) for _ in range(WRITERS)]
    answers = together(WRITERS, lambda i: server.call(
        'PUT', f'/allocations/{consumers[i]}', claim_body(nearly_full, 1)))

    # Which five win is the race's to decide; how many, and what the others hear, is not.
    statuses = [a.status_code for a in answers]
    assert sorted(statuses) == [204] * 5 + [409] * (WRITERS - 5)
    for answer in answers:
        if answer.status_code == 409:
            conflict(answer, "Unable to allocate inventory: Unable to create allocation for "
                             f"'VCPU' on resource provider '{nearly_full}'. The requested amount "
                             'would exceed the capacity.', 'placement.undefined_code')
    usages = server.call('GET', f'/resource_providers/{nearly_full}/usages').json()
    assert usages['usages'] == {'VCPU': 10}
    assert usages['resource_provider_generation'] == before + 5
    assert usage_totals.miscounted(connection) == []
    for consumer, answer in zip(consumers, answers):
        held = server.call('GET', f'/allocations/{consumer}').json()['allocations']
        assert bool(held) == (answer.status_code == 204)


def test_twenty_claims_of_two_units_never_overcommit(server, nearly_full):
    answers = together(WRITERS, lambda i: server.call(
        'PUT', f'/allocations/{uuid.uuid4()}', claim_body(nearly_full, 2)))
    assert sorted(a.status_code for a in answers) == [204] * 2 + [409] * (WRITERS - 2)
    usages = server.call('GET', f'/resource_providers/{nearly_full}/usages').json()['usages']
    assert usages == {'VCPU': 9}


def test_one_of_twenty_inventory_writers_with_the_same_generation_wins(server, nearly_full):
    generation = server.call('GET', f'/resource_providers/{nearly_full}').json()['generation']
    answers = together(WRITERS, lambda i: server.call(
        'PUT', f'/resource_providers/{nearly_full}/inventories',
        {'resource_provider_generation': generation,
         'inventories': {'VCPU': {'total': 100 + i}}}))

    assert sorted(a.status_code for a in answers) == [200] + [409] * (WRITERS - 1)
    [winner] = [i for i, a in enumerate(answers) if a.status_code == 200]
    for answer in answers:
        if answer.status_code == 409:
            # A loser that read the provider after the winner committed is
            # refused on the generation it sent; one that read it before loses
            # when it claims the generation: which one is up to the race.
            detail = answer.json()['errors'][0]['detail']
            assert detail in (CONFLICT + 'resource provider generation conflict  ',
                              CONFLICT + 'update conflict: Another thread concurrently updated '
                              'the resource provider data. Please retry your update  ')
            conflict(answer, detail[len(CONFLICT):-2], 'placement.concurrent_update')
    inventory = server.call('GET', f'/resource_providers/{nearly_full}/inventories').json()
    expected = {'resource_provider_generation': generation + 1, 'inventories': {'VCPU': {
        'total': 100 + winner, 'reserved': 0, 'min_unit': 1, 'max_unit': 2147483647,
        'step_size': 1, 'allocation_ratio': 1.0}}}
    assert answers[winner].json() == expected
    assert inventory == expected


def test_same_consumer_written_concurrently_keeps_one_version(server, nearly_full):
    consumer = str(uuid.uuid4())
    answers = together(WRITERS, lambda i: server.call(
        'PUT', f'/allocations/{consumer}', claim_body(nearly_full, 1)))
    # Every writer said "new consumer" (generation null): one creates it,
    # the others find it exists and lose on the consumer generation.
    assert sorted(a.status_code for a in answers) == [204] + [409] * (WRITERS - 1)
    for answer in answers:
        if answer.status_code == 409:
            conflict(answer, 'consumer generation conflict - expected 1 but got None',
                     'placement.concurrent_update')
    held = server.call('GET', f'/allocations/{consumer}').json()
    assert held == {'allocations': {nearly_full: {'resources': {'VCPU': 1}, 'generation': 3}},
                    'project_id': 'p', 'user_id': 'u', 'consumer_generation': 1,
                    'consumer_type': 'INSTANCE'}


def test_writers_creating_the_same_new_projects_in_any_order_all_succeed(server):
    """New projects and users are created in one fixed order: two writers
    naming them in opposite orders must not deadlock (a 500 before)."""
    rp = server.vcpu_provider('cn-owners', 1000)
    owners = [(f'project-{n}', f'user-{n}') for n in range(4)]

    def write(i):
        order = owners if i % 2 else list(reversed(owners))
        body = {str(uuid.uuid4()): {
            'allocations': {rp: {'resources': {'VCPU': 1}}}, 'project_id': project,
            'user_id': user, 'consumer_generation': None, 'consumer_type': 'INSTANCE'}
            for project, user in order}
        return server.call('POST', '/allocations', body)

    answers = together(WRITERS, write)
    assert [a.status_code for a in answers] == [204] * WRITERS, [a.text for a in answers
                                                                 if a.status_code != 204][:1]
    usages = server.call('GET', f'/resource_providers/{rp}/usages').json()['usages']
    assert usages == {'VCPU': WRITERS * len(owners)}


@pytest.mark.skipif(connection.vendor != 'mysql', reason="MySQL's lock wait timeout")
def test_a_lock_wait_timeout_is_a_conflict_not_a_server_error(api):
    """MySQL gives up waiting for a row lock where PostgreSQL waits on: the
    write is rerun (retried_write, at least 10 times and 5 s), and while the
    lock stays held the writer hears 409 concurrent_update in the view's
    words, as when it loses on a generation; nothing is written."""
    rp = api.create_provider('cn-locked')['uuid']
    provider_id = ResourceProvider.objects.get(uuid=rp).pk
    holder = connections.create_connection('default')
    try:
        holder.set_autocommit(False)
        with holder.cursor() as cursor:
            cursor.execute('SELECT id FROM resource_providers WHERE id = %s FOR UPDATE',
                           [provider_id])
        with connection.cursor() as cursor:
            cursor.execute('SET SESSION innodb_lock_wait_timeout = 1')
        answer = api.put(f'/resource_providers/{rp}/inventories', {
            'resource_provider_generation': 0, 'inventories': {'VCPU': {'total': 4}}})
    finally:
        holder.rollback()
        holder.close()
        with connection.cursor() as cursor:
            cursor.execute('SET SESSION innodb_lock_wait_timeout = DEFAULT')
    assert_error(answer, 409, 'update conflict: Another thread concurrently updated the data. '
                              'Please retry your update', code='placement.concurrent_update')
    assert api.get(f'/resource_providers/{rp}/inventories').body['inventories'] == {}
