"""Resilience: a database that crashes, restarts or fails over costs 503s
with Retry-After and nothing else; killed and stopped server processes
leave nothing half-written.

The classification tests run on PostgreSQL and MariaDB with real driver
errors. The TestOutages tests (PostgreSQL pass) build a private PostgreSQL
(tests/support/replicas.py), serve Placement from it under gunicorn as
scripts/run.sh does, drive claims from several clients (scripts/harness/loads.py)
and then crash and restart the database, SIGKILL a worker, SIGTERM the
server, or promote a synchronous streaming replica; afterwards the books are
read straight from the database."""
import contextlib
import json
import os
import re
import signal
import threading
import time
import types
import uuid

import psycopg2
import pytest
import requests
from django.db import DatabaseError
from django.db import connection
from django.db import connections

from placement_site import outages
from scripts.harness.loads import ClaimsLoad
from scripts.harness.loads import assert_books_balance
from scripts.harness.loads import claim_body
from scripts.harness.loads import seed
from scripts.harness.placement import Server
from scripts.harness.process import free_port
from tests.support.replicas import Cluster
from tests.support.replicas import postgres_bin
from tests.support.replicas import wait_for

PORT = int(os.environ.get('PLACEMENT_RESILIENCE_TEST_PORT', '25470'))
PASSWORD = 'resilience-admin-password'
UNAVAILABLE_DETAIL = ('The server is currently unavailable. Please try again at a later '
                      'time.\n\n The database is unavailable; please retry your request.  ')


def on_postgresql():
    return os.environ.get('DATABASE_URL', '').startswith(('postgres', 'pgsql'))


def on_server_database():
    return connection.vendor in ('postgresql', 'mysql')


# ---- which errors mean "the database is away" (real driver errors) -------------------

def unreachable_error():
    """The error of connecting to a port nothing listens on."""
    settings = {**connection.settings_dict, 'PORT': str(free_port()), 'HOST': '127.0.0.1'}
    unreachable = type(connections['default'])(settings, alias='unreachable')
    with pytest.raises(DatabaseError) as failed:
        unreachable.ensure_connection()
    return failed.value


@pytest.mark.skipif(not on_server_database(), reason='needs PostgreSQL or MariaDB')
@pytest.mark.django_db
def test_an_unreachable_server_is_unavailable():
    assert outages.is_unavailable(unreachable_error())


@pytest.mark.skipif(not on_server_database(), reason='needs PostgreSQL or MariaDB')
@pytest.mark.django_db
def test_a_read_only_transaction_is_unavailable_a_bad_query_is_not():
    """A write on a server that became a standby (or a read-only MariaDB)
    is the failover's business; a mistake in a query is ours."""
    # A transaction of its own.
    own = type(connections['default'])(connection.settings_dict, alias='own')

    def error_of(*statements):
        own.set_autocommit(False)
        try:
            with pytest.raises(DatabaseError) as failed, own.cursor() as cursor:
                for statement in statements:
                    cursor.execute(statement)
        finally:
            own.rollback()
            own.set_autocommit(True)
        return failed.value
    try:
        assert outages.is_unavailable(error_of(
            'SET TRANSACTION READ ONLY', "INSERT INTO projects (external_id) VALUES ('p-ro')"))
        assert not outages.is_unavailable(error_of('SELECT no_such_column FROM projects'))
        assert not outages.is_unavailable(error_of(
            "INSERT INTO projects (external_id) VALUES ('p-twice'), ('p-twice')"))
    finally:
        own.close()


def test_errors_that_are_not_the_database_s_are_not_unavailable():
    assert not outages.is_unavailable(ValueError('connection refused'))
    assert not outages.is_unavailable(DatabaseError('database is locked'))


# ---- a private PostgreSQL under a gunicorn-served Placement ---------------------------

def unavailable(answer):
    """A 503 in Placement's error format, with Retry-After."""
    assert answer.status == 503, (answer.status, answer.error, answer.body[:500])
    assert answer.headers.get('Retry-After') == '1'
    assert answer.headers['Content-Type'] == 'application/json'
    assert json.loads(answer.body) == {'errors': [{
        'status': 503, 'title': 'Service Unavailable', 'detail': UNAVAILABLE_DETAIL,
        'code': 'placement.undefined_code',
        'request_id': answer.headers['x-openstack-request-id']}]}
    return True


def assert_quiet_log(server):
    """Outages are WARNING lines with the request id, never a traceback."""
    log = server.log()
    assert 'Traceback' not in log, log[-5000:]
    assert not re.search(r'\bERROR\b', log), log[-5000:]
    return log


@pytest.mark.postgresql
@pytest.mark.slow
@pytest.mark.skipif(not on_postgresql(), reason='needs DATABASE_URL=postgresql://...')
@pytest.mark.skipif(postgres_bin() is None, reason="needs Debian's PostgreSQL (initdb)")
class TestOutages:

    @pytest.fixture
    def single(self, tmp_path):
        """A private PostgreSQL and Placement on it: two sync workers, as
        scripts/run.sh serves it."""
        with serving(Cluster(port=PORT, replica=False), tmp_path, admin=True) as served:
            yield served

    def test_a_crashed_and_restarted_database_costs_only_503s(self, single):
        cluster, server = single.cluster, single.server
        dashboards = server.login('admin', PASSWORD)
        load = ClaimsLoad(server, single.cloud, clients=8).start()
        try:
            load.wait_for(40)
            cluster.stop_primary('immediate')
            down = time.monotonic()
            wait_for(lambda: load.count(lambda a: a.status == 503) > 0,
                     'the claims to meet the outage')
            # The dashboards say so too, in plain HTML.
            page = dashboards.get(server.url + '/ui/', timeout=30)
            assert (page.status_code, page.headers.get('Retry-After')) == (503, '1'), page.text
            assert 'The database is unavailable' in page.text
            # As many 503s as the checks below want, before the database returns.
            wait_for(lambda: load.count(lambda a: a.status == 503) >= 8,
                     'eight claims answered 503')
            # From now on, when does the database accept connections again?
            accepting = {}

            def watch():
                while not cluster.accepts_connections(cluster.primary_port):
                    time.sleep(0.01)
                accepting['at'] = time.monotonic()
            watcher = threading.Thread(target=watch)
            watcher.start()
            cluster.start_primary()
            watcher.join(timeout=60)
            up = accepting['at']
            load.wait_for(40, after=up)
        finally:
            answers = load.stop()

        during = [a for a in answers if a.status != 204]
        assert [a for a in during if a.status is None] == []  # the server never went away
        assert len(during) >= 8, 'the outage was not seen'
        assert all(unavailable(a) for a in during)
        assert all(down - 1 < a.done < up + 2 for a in during)
        # Each worker may lose the request its dead connection was serving.
        after = [a for a in during if a.sent >= up]
        assert len(after) <= server.workers
        first = min(a.done for a in answers if a.status == 204 and a.done >= up)
        assert first - up < 2.0, f'first success {first - up:.2f} s after the database came back'
        assert_books_balance(cluster.books(), load.answers)
        assert dashboards.get(server.url + '/ui/', timeout=30).status_code == 200
        log = assert_quiet_log(server)
        assert re.search(r'WARNING placement\.database Database unavailable, answered 503 to '
                         r'req-[0-9a-f-]{36} \(/allocations/', log), log[-3000:]
        print(f'\nrestart: {len(answers) - len(during)} claims acknowledged, {len(during)} '
              f'answered 503 in a {up - down:.2f} s outage, {len(after)} after it; first '
              f'success {first - up:.2f} s after the database accepted connections')

    def test_a_worker_killed_mid_request_writes_nothing(self, single):
        cluster, server, cloud = single.cluster, single.server, single.cloud
        # Hold the disk pool's row: a claim on it waits inside its transaction.
        blocker = psycopg2.connect(host='127.0.0.1', port=cluster.primary_port, user='postgres',
                                   dbname='placement')
        consumer = str(uuid.uuid4())
        result = {}
        try:
            with blocker.cursor() as cursor:
                cursor.execute('SELECT id FROM resource_providers WHERE uuid = %s FOR UPDATE',
                               (cloud.pool,))

            def claim():
                try:
                    result['answer'] = server.call('PUT', f'/allocations/{consumer}',
                                                   claim_body(cloud, 0))
                except requests.RequestException as exc:
                    result['error'] = exc
            client = threading.Thread(target=claim)
            client.start()
            wait_for(lambda: waiting_on_a_lock(cluster) == 1, 'the claim to wait for the lock')
            # Which worker serves it: the one whose database session waits.
            worker = worker_of_waiting_session(cluster, server)
            os.kill(worker, signal.SIGKILL)
            client.join(timeout=30)
        finally:
            blocker.rollback()
            blocker.close()
        assert 'error' in result, result  # the client got no answer at all
        wait_for(lambda: waiting_on_a_lock(cluster) == 0 and sessions(cluster) == 0,
                 'the dead worker\'s session to end')
        assert consumer not in cluster.books().consumers
        # The master replaced the worker; the same claim now goes through.
        wait_for(lambda: len(server.worker_pids()) == server.workers, 'a new worker')
        assert server.call('PUT', f'/allocations/{consumer}', claim_body(cloud, 0)
                           ).status_code == 204
        assert cluster.books().consumers[consumer] == 3

    def test_workers_killed_under_load_lose_nothing_acknowledged(self, single):
        cluster, server = single.cluster, single.server
        load = ClaimsLoad(server, single.cloud, clients=6).start()
        killed = []
        try:
            load.wait_for(20)
            for _ in range(4):
                worker = server.worker_pids()[0]
                os.kill(worker, signal.SIGKILL)
                killed.append(worker)
                wait_for(lambda: len(server.worker_pids()) == server.workers
                         and worker not in server.worker_pids(), 'a new worker')
                load.wait_for(10, after=time.monotonic())
        finally:
            answers = load.stop()
        assert {a.status for a in answers} <= {204, None}
        cut = [a for a in answers if a.status is None]
        assert cut, 'no request was in flight when a worker was killed'
        books = cluster.books()
        assert_books_balance(books, load.answers)
        # A cut claim either committed whole before the kill or not at all.
        assert all(books.consumers.get(a.consumer, 3) == 3 for a in cut)
        print(f'\nSIGKILL x{len(killed)}: {len(load.acknowledged())} claims acknowledged, '
              f'{len(cut)} cut off, {sum(a.consumer in books.consumers for a in cut)} of '
              'those committed whole')

    def test_sigterm_drains_the_requests_in_flight(self, single):
        cluster, server, cloud = single.cluster, single.server, single.cloud
        blocker = psycopg2.connect(host='127.0.0.1', port=cluster.primary_port, user='postgres',
                                   dbname='placement')
        answers = {}
        try:
            with blocker.cursor() as cursor:
                cursor.execute('SELECT id FROM resource_providers WHERE uuid = %s FOR UPDATE',
                               (cloud.pool,))

            def claim(consumer, index):
                answers[consumer] = server.call('PUT', f'/allocations/{consumer}',
                                                claim_body(cloud, index))
            clients = [threading.Thread(target=claim, args=(str(uuid.uuid4()), i))
                       for i in range(server.workers)]
            for client in clients:
                client.start()
            wait_for(lambda: waiting_on_a_lock(cluster) == server.workers,
                     'every worker to hold a waiting claim')
            server.process.send_signal(signal.SIGTERM)
            time.sleep(1.5)
            assert server.process.poll() is None  # waiting for the requests it holds
        finally:
            blocker.rollback()
            blocker.close()
        for client in clients:
            client.join(timeout=30)
        assert server.process.wait(timeout=30) == 0
        assert sorted(a.status_code for a in answers.values()) == [204] * server.workers
        consumers = cluster.books().consumers
        assert all(consumers[c] == 3 for c in answers)

    def test_sigterm_under_load_cuts_no_request_off(self, single):
        cluster, server = single.cluster, single.server
        load = ClaimsLoad(server, single.cloud, clients=6).start()
        try:
            load.wait_for(30)
            server.process.send_signal(signal.SIGTERM)
            assert server.process.wait(timeout=40) == 0
        finally:
            answers = load.stop()
        assert {a.status for a in answers} <= {204, None}
        refused = [a for a in answers if a.status is None]
        books = cluster.books()
        assert_books_balance(books, load.answers)
        # A request without an answer was never taken on: it wrote nothing.
        assert [a.error for a in refused if a.consumer in books.consumers] == []
        print(f'\nSIGTERM under load: {len(load.acknowledged())} claims acknowledged, '
              f'{len(refused)} never taken on')

    @pytest.fixture
    def failover_pair(self, tmp_path):
        """A primary with a synchronous streaming replica (a commit returns
        once the replica has flushed it), and Placement on a multi-host URL
        that connects to whichever of them accepts writes, reading advisory
        answers from the replica."""
        cluster = Cluster(port=PORT + 2, synchronous=True)
        url = (f'postgresql://placement:placement@127.0.0.1:{cluster.primary_port},'
               f'127.0.0.1:{cluster.replica_port}/placement?target_session_attrs=read-write')
        with serving(cluster, tmp_path, url, read_urls=[cluster.replica_url]) as served:
            yield served

    def test_writes_go_to_a_promoted_replica_without_a_restart(self, failover_pair):
        cluster, server, cloud = failover_pair.cluster, failover_pair.server, failover_pair.cloud
        processes = (server.process.pid, server.worker_pids())
        load = ClaimsLoad(server, cloud, clients=8).start()
        try:
            load.wait_for(40)
            cluster.stop_primary('immediate')  # the primary's host dies
            down = time.monotonic()
            cluster.promote_replica()
            promoted = time.monotonic()
            load.wait_for(40, after=promoted)
        finally:
            answers = load.stop()

        # The same processes serve on: nothing was restarted.
        assert (server.process.poll(), server.process.pid, server.worker_pids()) == (
            None, *processes)
        before = [a for a in answers if a.status == 204 and a.done < down]
        after = [a for a in answers if a.status == 204 and a.sent > promoted]
        assert len(before) >= 40 and len(after) >= 40
        failed = [a for a in answers if a.status != 204]
        assert all(unavailable(a) for a in failed)
        first = min(a.done for a in after)
        assert first - promoted < 2.0, f'first write {first - promoted:.2f} s after promotion'
        # Every claim acknowledged before the switch is on the new primary.
        assert_books_balance(cluster.books(cluster.replica_port), load.answers)
        # Other writes too: a provider, its inventory, a deletion.
        rp = str(uuid.uuid4())
        assert server.call('POST', '/resource_providers', {'name': 'after-failover', 'uuid': rp}
                           ).status_code == 200
        assert server.call('PUT', f'/resource_providers/{rp}/inventories', {
            'resource_provider_generation': 0, 'inventories': {'VCPU': {'total': 8}}}
        ).status_code == 200
        assert server.call('DELETE', f'/allocations/{before[0].consumer}').status_code == 204
        assert cluster.replica_sql('SELECT count(*) FROM resource_providers WHERE uuid = %s',
                                   rp) == [(1,)]
        assert_quiet_log(server)
        print(f'\nfailover: {len(before)} claims before, {len(after)} after, '
              f'{len(failed)} answered 503, first write {first - promoted:.2f} s after promotion '
              f'({promoted - down:.2f} s to promote)')


@contextlib.contextmanager
def serving(cluster, base, url=None, *, read_urls=(), admin=False):
    """The cluster started, and Placement on it (on `url`, else the
    primary's) with 2 sync workers as scripts/run.sh serves it, seeded
    with a cloud; both stopped at the end."""
    server = None
    try:
        cluster.start()
        server = Server(base, database_url=url or cluster.primary_url, read_urls=read_urls,
                        threads=None)
        server.manage('migrate', '--noinput')
        if admin:
            server.manage('shell', '-c', 'from django.contrib.auth.models import User; '
                          f"User.objects.create_superuser('admin', '', {PASSWORD!r})")
        server.start()
        yield types.SimpleNamespace(cluster=cluster, server=server, cloud=seed(server.call))
    finally:
        if server is not None:
            server.stop()
        cluster.stop()


def waiting_on_a_lock(cluster):
    return cluster.primary_sql(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = 'placement' "
        "AND wait_event_type = 'Lock'")[0][0]


def sessions(cluster):
    """Sessions of Placement's own user running a statement or inside a
    transaction."""
    return cluster.primary_sql(
        "SELECT count(*) FROM pg_stat_activity WHERE usename = 'placement' "
        "AND state IN ('active', 'idle in transaction', 'idle in transaction (aborted)')")[0][0]


def worker_of_waiting_session(cluster, server):
    """The worker process owning the TCP connection of the session that
    waits for a lock (matched by the connection's local port)."""
    port = cluster.primary_sql(
        "SELECT client_port FROM pg_stat_activity WHERE datname = 'placement' "
        "AND wait_event_type = 'Lock'")[0][0]
    inodes = set()
    for line in open('/proc/net/tcp').read().splitlines()[1:]:
        fields = line.split()
        if int(fields[1].split(':')[1], 16) == port:
            inodes.add(fields[9])
    for pid in server.worker_pids():
        for fd in os.listdir(f'/proc/{pid}/fd'):
            try:
                target = os.readlink(f'/proc/{pid}/fd/{fd}')
            except OSError:
                continue
            if target.startswith('socket:[') and target[8:-1] in inodes:
                return pid
    raise AssertionError(f'no worker has the connection from port {port}')
