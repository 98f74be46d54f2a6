"""Read replicas (placement_site.replicas): advisory reads (candidates,
explain, dashboards) from a streaming replica, everything else from the
primary, and the primary whenever the replica is down or too far behind.

The unit tests run anywhere. The TestRealReplica tests run in the
PostgreSQL pass (DATABASE_URL=postgresql://...): they build their own
primary and pg_basebackup replica (tests/support/replicas.py), put two
gunicorn-served Placement servers in front of them (one trusting a replica
up to 300 s behind, one up to 1 s) and drive them over HTTP. Pausing WAL
replay on the replica makes its reads visibly stale."""
import os
import threading
import types
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import OperationalError
from django.db import router

from placement_site import config
from placement_site import replicas
from providers.models import ResourceProvider
from scripts.harness.placement import Server
from tests.support.replicas import Cluster
from tests.support.replicas import postgres_bin
from tests.support.replicas import wait_for

PASSWORD = 'replica-admin-password'
WRITERS = 20


# ---- unit tests: the router, the health cache, the fallback ---------------------------

@pytest.fixture
def fresh_health():
    replicas.reset()
    yield
    replicas.reset()


def test_no_replicas_configured_reads_from_default(settings):
    assert settings.PLACEMENT_READ_DATABASES == []
    assert settings.DATABASE_ROUTERS == []
    replica_router = replicas.ReplicaRouter()
    with replicas.advisory_reads():
        assert replica_router.db_for_read(ResourceProvider) == 'default'
        assert router.db_for_read(ResourceProvider) == 'default'
    assert replica_router.db_for_read(ResourceProvider) == 'default'
    assert replica_router.db_for_write(ResourceProvider) == 'default'

    @replicas.advisory
    def handler():
        return replicas.read_database()
    assert handler() == 'default'


def test_replica_settings_from_urls():
    databases = config.replica_databases(
        ['postgresql://p:s@db1:5433/placement', 'postgresql://p:s@db2/placement?connect_timeout=7'],
        data_dir='/x')
    assert list(databases) == ['replica0', 'replica1']
    assert databases['replica0']['HOST'] == 'db1'
    assert databases['replica0']['OPTIONS'] == {'connect_timeout': 2, 'options': '-c jit=off'}
    assert databases['replica1']['OPTIONS'] == {'connect_timeout': '7', 'options': '-c jit=off'}
    assert databases['replica0']['TEST'] == {'MIRROR': 'default'}
    with pytest.raises(ValueError, match='not a PostgreSQL URL'):
        config.replica_databases(['sqlite:////tmp/x.sqlite3'], data_dir='/x')


def test_router_only_migrates_and_writes_default():
    replica_router = replicas.ReplicaRouter()
    assert replica_router.allow_migrate('default', 'providers')
    assert not replica_router.allow_migrate('replica0', 'providers')


def test_health_is_cached_and_lag_is_checked(settings, monkeypatch, fresh_health):
    settings.PLACEMENT_READ_DATABASES = ['replica0']
    settings.PLACEMENT_REPLICA_MAX_LAG_SECONDS = 5
    checks = []
    lag = {'replica0': 0.0}

    def replica_lag(alias):
        checks.append(alias)
        if isinstance(lag[alias], Exception):
            raise lag[alias]
        return lag[alias]
    monkeypatch.setattr(replicas, 'replica_lag', replica_lag)
    monkeypatch.setattr(replicas, '_close', lambda alias: None)
    clock = types.SimpleNamespace(now=1000.0)
    monkeypatch.setattr(replicas.time, 'monotonic', lambda: clock.now)

    assert replicas.choose_replica() == 'replica0'
    assert replicas.choose_replica() == 'replica0'
    assert checks == ['replica0']  # one check per HEALTH_SECONDS
    lag['replica0'] = 9.0
    clock.now += replicas.HEALTH_SECONDS + 0.1
    assert replicas.choose_replica() == 'default'  # too far behind
    lag['replica0'] = None
    clock.now += replicas.HEALTH_SECONDS + 0.1
    assert replicas.choose_replica() == 'default'  # lag unknown
    lag['replica0'] = OperationalError('connection refused')
    clock.now += replicas.HEALTH_SECONDS + 0.1
    assert replicas.choose_replica() == 'default'  # down
    assert replicas.choose_replica() == 'default'
    assert len(checks) == 4  # a down replica is not dialled on every request
    lag['replica0'] = 0.5
    clock.now += replicas.HEALTH_SECONDS + 0.1
    assert replicas.choose_replica() == 'replica0'  # back


def test_a_replica_failing_mid_request_is_answered_from_the_primary(
        settings, monkeypatch, fresh_health):
    settings.PLACEMENT_READ_DATABASES = ['replica0']
    monkeypatch.setattr(replicas, 'replica_lag', lambda alias: 0.0)
    monkeypatch.setattr(replicas, '_close', lambda alias: None)
    served_from = []

    @replicas.advisory
    def handler():
        database = replicas.read_database()
        served_from.append(database)
        if database == 'replica0':
            raise OperationalError('server closed the connection unexpectedly')
        return 'answer'

    assert handler() == 'answer'
    assert served_from == ['replica0', 'default']
    assert replicas.choose_replica() == 'default'  # marked down
    assert replicas.read_database() == 'default'  # outside a handler


def test_a_failure_on_the_primary_is_not_retried(settings, monkeypatch, fresh_health):
    settings.PLACEMENT_READ_DATABASES = ['replica0']
    monkeypatch.setattr(replicas, 'replica_lag', lambda alias: 99.0)  # too far behind
    calls = []

    @replicas.advisory
    def handler():
        calls.append(replicas.read_database())
        raise OperationalError('the primary is down')

    with pytest.raises(OperationalError):
        handler()
    assert calls == ['default']


# ---- against a real streaming replica -----------------------------------------------------

def on_postgresql():
    return os.environ.get('DATABASE_URL', '').startswith(('postgres', 'pgsql'))


@pytest.fixture(scope='module')
def replicated(tmp_path_factory):
    """A primary and its replica, and two Placement servers reading from
    both: `fresh` (max lag 300 s) and `strict` (max lag 1 s)."""
    cluster = Cluster(port=int(os.environ.get('PLACEMENT_REPLICA_TEST_PORT', '25460')))
    base = tmp_path_factory.mktemp('replica-servers')
    servers = []
    try:
        cluster.start()
        for max_lag in (300, 1):
            servers.append(Server(base, database_url=cluster.primary_url,
                                  read_urls=[cluster.replica_url], max_lag=max_lag))
        fresh, strict = servers
        fresh.manage('migrate', '--noinput')
        fresh.manage('shell', '-c', 'from django.contrib.auth.models import User; '
                     f"User.objects.create_superuser('admin', '', {PASSWORD!r})")
        for server in servers:
            server.start()
        cluster.wait_caught_up()
        yield types.SimpleNamespace(cluster=cluster, fresh=fresh, strict=strict)
    finally:
        for server in servers:
            server.stop()
        cluster.stop()


def add_provider(server, vcpu):
    rp = str(uuid.uuid4())
    assert server.call('POST', '/resource_providers',
                       {'name': f'cn-{rp[:8]}', 'uuid': rp}).status_code == 200
    answer = server.call('PUT', f'/resource_providers/{rp}/inventories', {
        'resource_provider_generation': 0, 'inventories': {'VCPU': {'total': vcpu}}})
    assert answer.status_code == 200, answer.text
    return rp


def candidates(server, query='resources=VCPU:1'):
    answer = server.call('GET', f'/allocation_candidates?{query}')
    assert answer.status_code == 200, answer.text
    return answer.json()


def claim_body(allocations):
    return {'allocations': allocations, 'project_id': 'p', 'user_id': 'u',
            'consumer_generation': None, 'consumer_type': 'INSTANCE'}


def on_replica(cluster, rp):
    return cluster.replica_sql('SELECT count(*) FROM resource_providers WHERE uuid = %s',
                               rp)[0][0] == 1


@pytest.mark.postgresql
@pytest.mark.slow
@pytest.mark.skipif(not on_postgresql(), reason='needs DATABASE_URL=postgresql://...')
@pytest.mark.skipif(postgres_bin() is None, reason="needs Debian's PostgreSQL (initdb)")
class TestRealReplica:

    @pytest.fixture(autouse=True)
    def replaying(self, replicated):
        """Each test starts and ends with a replica that has caught up."""
        replicated.cluster.wait_caught_up()
        yield
        replicated.cluster.resume_replay()
        replicated.cluster.wait_caught_up()

    def test_candidates_explain_and_dashboards_are_read_from_the_replica(self, replicated):
        cluster, server = replicated.cluster, replicated.fresh
        old = add_provider(server, vcpu=8)
        cluster.wait_caught_up()
        assert old in candidates(server)['provider_summaries']
        cluster.pause_replay()

        # Logging in writes a session, which the next page reads: on the primary.
        dashboards = server.login('admin', PASSWORD)
        new = add_provider(server, vcpu=8)
        assert not on_replica(cluster, new)

        # The primary answers everything a generation check could use...
        shown = server.call('GET', f'/resource_providers/{new}')
        assert shown.status_code == 200 and shown.json()['generation'] == 1
        inventories = server.call('GET', f'/resource_providers/{new}/inventories').json()
        assert inventories['resource_provider_generation'] == 1
        assert inventories['inventories']['VCPU']['total'] == 8
        assert new in {p['uuid'] for p in server.call('GET', '/resource_providers').json()[
            'resource_providers']}

        # ...the replica the advisory reads: they do not see the new provider yet.
        stale = candidates(server)
        assert old in stale['provider_summaries'] and new not in stale['provider_summaries']
        explained = server.call('GET', '/explain/allocation_candidates?resources=VCPU:1')
        assert explained.status_code == 200
        assert explained.json()['allocation_candidates'] == len(stale['allocation_requests'])
        assert dashboards.get(f'{server.url}/ui/', timeout=30).status_code == 200
        assert dashboards.get(f'{server.url}/ui/providers/{old}/', timeout=30).status_code == 200
        assert dashboards.get(f'{server.url}/ui/providers/{new}/', timeout=30).status_code == 404

        cluster.resume_replay()
        wait_for(lambda: new in candidates(server)['provider_summaries'],
                 'the candidate to appear once replayed', timeout=15)
        assert server.call('GET', '/explain/allocation_candidates?resources=VCPU:1').json()[
            'allocation_candidates'] == len(stale['allocation_requests']) + 1
        assert dashboards.get(f'{server.url}/ui/providers/{new}/', timeout=30).status_code == 200

    def test_a_replica_lagging_more_than_the_maximum_is_skipped(self, replicated):
        cluster = replicated.cluster
        cluster.pause_replay()
        new = add_provider(replicated.strict, vcpu=4)
        # Past 1 s behind (and the health cached a second), the strict server
        # reads the primary; the other, trusting 300 s, still the paused replica.
        wait_for(lambda: new in candidates(replicated.strict)['provider_summaries'],
                 'the strict server to give up on the lagging replica', timeout=15)
        assert not on_replica(cluster, new)
        assert new not in candidates(replicated.fresh)['provider_summaries']
        assert 'behind (more than 1 s)' in replicated.strict.log()

    def test_writes_and_generation_reads_go_to_the_primary(self, replicated):
        cluster, server = replicated.cluster, replicated.fresh
        rp = add_provider(server, vcpu=8)
        cluster.wait_caught_up()
        cluster.pause_replay()

        generation = server.call('GET', f'/resource_providers/{rp}').json()['generation']
        answer = server.call('PUT', f'/resource_providers/{rp}/inventories', {
            'resource_provider_generation': generation,
            'inventories': {'VCPU': {'total': 16}}})
        assert answer.status_code == 200, answer.text
        assert answer.json()['resource_provider_generation'] == generation + 1
        inventories = server.call('GET', f'/resource_providers/{rp}/inventories').json()
        assert inventories['resource_provider_generation'] == generation + 1
        assert inventories['inventories']['VCPU']['total'] == 16
        # The next write's generation check passes, read straight back.
        traits = server.call('PUT', f'/resource_providers/{rp}/traits', {
            'resource_provider_generation': generation + 1, 'traits': ['HW_CPU_X86_AVX2']})
        assert traits.status_code == 200, traits.text
        assert server.call('GET', f'/resource_providers/{rp}/traits').json() == {
            'resource_provider_generation': generation + 2, 'traits': ['HW_CPU_X86_AVX2']}
        consumer = str(uuid.uuid4())
        assert server.call('PUT', f'/allocations/{consumer}', claim_body(
            {rp: {'resources': {'VCPU': 3}}})).status_code == 204
        held = server.call('GET', f'/allocations/{consumer}').json()
        assert held['allocations'][rp]['resources'] == {'VCPU': 3}
        assert held['consumer_generation'] == 1
        assert server.call('GET', f'/resource_providers/{rp}/usages').json()['usages'] == {
            'VCPU': 3}
        # Meanwhile the replica has none of it.
        assert cluster.replica_sql('SELECT generation FROM resource_providers WHERE uuid = %s',
                                   rp) == [(generation,)]
        stale = candidates(server, f'resources=VCPU:1&in_tree={rp}')
        assert stale['provider_summaries'][rp]['resources']['VCPU'] == {'capacity': 8, 'used': 0}

    def test_claims_through_stale_candidates_never_exceed_capacity(self, replicated):
        cluster, server = replicated.cluster, replicated.fresh
        rp = add_provider(server, vcpu=10)
        cluster.wait_caught_up()
        cluster.pause_replay()
        assert server.call('PUT', f'/allocations/{uuid.uuid4()}', claim_body(
            {rp: {'resources': {'VCPU': 5}}})).status_code == 204

        # The replica still believes all ten are free.
        stale = candidates(server, f'resources=VCPU:1&in_tree={rp}')
        assert stale['provider_summaries'][rp]['resources']['VCPU'] == {'capacity': 10, 'used': 0}
        request = stale['allocation_requests'][0]['allocations']
        start = threading.Barrier(WRITERS)

        def claim(_):
            start.wait()
            return server.call('PUT', f'/allocations/{uuid.uuid4()}', claim_body(request))
        with ThreadPoolExecutor(WRITERS) as pool:
            statuses = [answer.status_code for answer in pool.map(claim, range(WRITERS))]

        assert set(statuses) <= {204, 409}, statuses
        won = statuses.count(204)
        assert 1 <= won <= 5, statuses
        usages = server.call('GET', f'/resource_providers/{rp}/usages').json()['usages']
        assert usages == {'VCPU': 5 + won}
        assert usages['VCPU'] <= 10
        # The candidates were stale throughout.
        assert candidates(server, f'resources=VCPU:1&in_tree={rp}')['provider_summaries'][rp][
            'resources']['VCPU']['used'] == 0

    def test_a_stopped_replica_falls_back_to_the_primary(self, replicated):
        cluster, server = replicated.cluster, replicated.fresh
        old = add_provider(server, vcpu=2)
        cluster.wait_caught_up()
        assert old in candidates(server)['provider_summaries']  # the replica is in use
        cluster.stop_replica()
        try:
            dashboards = server.login('admin', PASSWORD)
            new = add_provider(server, vcpu=2)
            for _ in range(5):
                found = candidates(server)['provider_summaries']
                assert old in found and new in found
                explained = server.call('GET', '/explain/allocation_candidates?resources=VCPU:1')
                assert explained.status_code == 200, explained.text
                for page in ('/ui/', '/ui/providers/', f'/ui/providers/{new}/', '/ui/pools/',
                             '/ui/usage/', '/ui/explorer/?resources=VCPU:1'):
                    answer = dashboards.get(server.url + page, timeout=30)
                    assert answer.status_code == 200, (page, server.log()[-6000:])
        finally:
            cluster.start_replica()
        assert 'Internal Server Error' not in server.log()
        assert 'Read replica replica0 skipped' in server.log()
