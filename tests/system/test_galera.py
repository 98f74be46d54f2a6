"""High availability as OpenStack clouds deploy it (docs/ha.md): a real
3-node MariaDB Galera cluster, Debian's HAProxy in front of it as
kolla-ansible configures it, and three Placement API servers
(scripts/bench/ha.py). The short versions of the runs that
`python -m scripts.bench.ha` makes at full length.

They need Debian's mariadb-server, galera-4, haproxy and rsync (installed
when missing) and take about two minutes, so they run when
PLACEMENT_GALERA_TESTS=1: CI's own stage (.ci/run)."""
import os
import threading
import time
import uuid

import pytest
import requests

from scripts.bench import ha
from scripts.harness.api import HEADERS
from scripts.harness.placement import Server

pytestmark = [
    pytest.mark.galera, pytest.mark.slow, pytest.mark.any_database,
    pytest.mark.skipif(os.environ.get('PLACEMENT_GALERA_TESTS') != '1',
                       reason='PLACEMENT_GALERA_TESTS=1 runs the Galera cluster tests'),
]
CLIENTS = 10
BASE_PORT = int(os.environ.get('PLACEMENT_GALERA_TEST_PORT', '23600'))


@pytest.fixture(scope='module')
def deployment(tmp_path_factory):
    deployment = ha.Deployment(tmp_path_factory.mktemp('ha'), base_port=BASE_PORT)
    try:
        yield deployment.start(clients=CLIENTS)
    finally:
        deployment.stop()


def report(result):
    print('\n' + ', '.join(f'{key}={value}' for key, value in result.items()
                           if key not in ('failures', 'problems')))


def assert_books_balance(result):
    """On every node: nothing acknowledged missing, nothing half-written,
    nothing over capacity, `used` the sum of the allocations, every
    acknowledged provider write there; and the nodes hold the same."""
    assert all(problems == {} for problems in result['problems'].values()), result['problems']
    assert result['nodes_agree']


# ---- several writers ---------------------------------------------------------------

def test_three_writers_keep_the_books_and_answer_no_409_or_5xx(deployment):
    """Each API server writes through its own node; Galera aborts some of
    the transactions at commit and the services rerun them."""
    result = ha.multi_writer(deployment, seconds=20, clients=CLIENTS)
    report(result)
    assert_books_balance(result)
    assert result['by_status'].keys() <= {200, 204}, result['failures']
    assert set(result['by_kind']) == {'claim', 'delete', 'post', 'inventory', 'traits',
                                      'aggregates'}
    assert sum(result['galera_aborts'].values()) > 0, 'no write was aborted: nothing was tested'


def put_inventory(server, rp, generation, total):
    return requests.put(f'{server.url}/resource_providers/{rp}/inventories', json={
        'resource_provider_generation': generation,
        'inventories': {'VCPU': {'total': total}}}, headers=HEADERS, timeout=60)


def test_a_real_generation_conflict_is_still_a_409(deployment):
    """Two writers through two nodes with the same generation: one wins,
    the other is told the provider changed, as with one database."""
    first, second = deployment.servers[:2]
    rp = str(uuid.uuid4())
    assert requests.post(f'{first.url}/resource_providers', json={'name': rp, 'uuid': rp},
                         headers=HEADERS, timeout=60).status_code == 200
    answers = {}
    start = threading.Barrier(2)

    def write(server, total):
        start.wait()
        answers[total] = put_inventory(server, rp, 0, total)
    threads = [threading.Thread(target=write, args=(s, t)) for s, t in ((first, 8), (second, 16))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    statuses = sorted(a.status_code for a in answers.values())
    assert statuses == [200, 409], [a.text for a in answers.values()]
    lost = next(a for a in answers.values() if a.status_code == 409)
    assert lost.json()['errors'][0]['code'] == 'placement.concurrent_update'
    won = next(total for total, a in answers.items() if a.status_code == 200)
    for server in deployment.servers:
        inventory = requests.get(f'{server.url}/resource_providers/{rp}/inventories',
                                 headers=HEADERS, timeout=60).json()
        assert (inventory['resource_provider_generation'],
                inventory['inventories']['VCPU']['total']) == (1, won)


def test_a_read_through_another_node_waits_for_the_write(deployment):
    """With ?wsrep_sync_wait=1 a read made through a node that has not yet
    applied a write waits for it; without, it answers what the node has.
    The node is held behind with FLUSH TABLES WITH READ LOCK, which pauses
    its applying."""
    writer, reader = deployment.servers[0], deployment.servers[2]
    lagging = deployment.cluster.nodes[2]
    unsynced = Server(deployment.dir / 'api', database_url=lagging.url)
    unsynced.start()
    rp = str(uuid.uuid4())
    try:
        assert requests.post(f'{writer.url}/resource_providers', json={'name': rp, 'uuid': rp},
                             headers=HEADERS, timeout=60).status_code == 200
        deployment.cluster.wait_synced()
        lock = lagging.connect()
        lock.cursor().execute('FLUSH TABLES WITH READ LOCK')
        try:
            assert put_inventory(writer, rp, 0, 8).status_code == 200
            read = {}

            def read_generation():
                read['answer'] = requests.get(f'{reader.url}/resource_providers/{rp}',
                                              headers=HEADERS, timeout=60)
                read['at'] = time.monotonic()
            waiting = threading.Thread(target=read_generation)
            waiting.start()
            stale = requests.get(f'{unsynced.url}/resource_providers/{rp}', headers=HEADERS,
                                 timeout=60)
            assert stale.json()['generation'] == 0   # what the paused node has
            time.sleep(1.0)
            assert 'answer' not in read, 'the causal read did not wait'
            released = time.monotonic()
        finally:
            lock.cursor().execute('UNLOCK TABLES')
            lock.close()
        waiting.join(timeout=60)
        assert read['answer'].json()['generation'] == 1
        assert read['at'] >= released
    finally:
        unsynced.stop()


# ---- one writer, through HAProxy ---------------------------------------------------

def test_the_active_node_killed_costs_only_503s_and_rejoins_without_a_full_copy(deployment):
    result = ha.node_failover(deployment, seconds=8, clients=CLIENTS)
    report(result)
    assert_books_balance(result)
    assert result['failed_statuses'].keys() <= {'503'}, result['failures']
    assert result['failed_after_kill'] > 0, 'the switch was not seen'
    assert result['first_success_after_kill_s'] < 5.0
    assert (result['rejoin_full_transfers'], result['rejoin_incremental_transfers']) == (0, 1)


def test_an_api_server_killed_fails_only_its_requests_in_flight(deployment):
    result = ha.api_server_killed(deployment, seconds=6, clients=CLIENTS)
    report(result)
    assert_books_balance(result)
    assert result['failed_otherwise'] == 0, result['failures']
    assert result['failed_in_flight'] <= result['in_flight_at_kill']
