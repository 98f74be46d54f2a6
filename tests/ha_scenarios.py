"""The high-availability runs of docs/ha.md, each a function returning what
it measured: tests/test_galera.py runs them short and asserts on the
result, scripts/galera_run.py runs them for longer and prints it.

A Deployment is a 3-node Galera cluster (tests/galera_cluster.py), Debian's
HAProxy in front of it (the database frontend as kolla-ansible configures
it, and a second, HTTP frontend over the API servers) and several
Placement API servers under gunicorn (tests/servers.py). The API servers
write through one node each (several writers) or all through HAProxy's
database frontend (a single writer, as kolla-ansible deploys)."""
import os
import signal
import time
from pathlib import Path

import requests

from tests import ha_load
from tests.galera_cluster import Cluster, Proxy
from tests.servers import HEADERS, Server, wait_for

SYNC_WAIT = '?wsrep_sync_wait=1'
# What the services log when they rerun a write that met MariaDB's broken
# trigger (placement_site.retries.is_broken_trigger).
TRIGGER_RERUN = 'failed to load a trigger'
# Seconds after an API server's processes are gone during which a request
# may still reach its closing socket.
GRACE = 0.25


class Deployment:
    def __init__(self, base_dir, *, base_port=23400, api_servers=3, workers=1, threads=4):
        self.dir = Path(base_dir)
        self.cluster = Cluster(base_port=base_port)
        self.proxy = None
        self.db_port, self.api_port = base_port + 90, base_port + 91
        self.api_count, self.workers, self.threads = api_servers, workers, threads
        self.servers, self.mode, self.cloud = [], None, None

    def start(self, clients):
        self.cluster.start()
        self.serve('multi', clients=clients)
        return self

    def serve(self, mode, *, clients=10):
        """(Re)start the API servers: 'multi', each writing through its own
        node (with wsrep_sync_wait), or 'single', all through HAProxy."""
        self._stop_servers()
        nodes = self.cluster.nodes
        through_proxy = f'mysql://placement:placement@127.0.0.1:{self.db_port}/placement'
        urls = ([nodes[i % len(nodes)].url + SYNC_WAIT for i in range(self.api_count)]
                if mode == 'multi' else [through_proxy] * self.api_count)
        self.servers = [Server(self.dir / 'api', database_url=url, workers=self.workers,
                               threads=self.threads) for url in urls]
        self.proxy = Proxy(self.dir / 'haproxy', nodes, self.db_port, api_port=self.api_port,
                           api_servers=self.servers)
        self.proxy.start()
        if self.mode is None:
            self.servers[0].manage('migrate', '--noinput')
        for server in self.servers:
            server.start()
        self.mode = mode
        if self.cloud is None:
            self.cloud = ha_load.seed(self.call, clients)
        return self

    def call(self, method, path, body=None):
        return requests.request(method, self.servers[0].url + path, json=body, headers=HEADERS,
                                timeout=60)

    def _stop_servers(self):
        for server in self.servers:
            server.stop()
        if self.proxy is not None:
            self.proxy.stop()
            self.proxy = None
        self.servers = []

    def stop(self):
        self._stop_servers()
        self.cluster.stop()

    def log_lines(self, text):
        """How many lines of every API server's log so far say `text`."""
        return sum(log.read_text(errors='replace').count(text)
                   for log in (self.dir / 'api').glob('server-*/gunicorn.log'))

    def aborts(self):
        """{node: transactions Galera aborted there so far} (certification
        failures and brute-force aborts)."""
        counts = {}
        for node in self.cluster.nodes:
            counts[node.name] = sum(int(node.status(name) or 0) for name in (
                'wsrep_local_cert_failures', 'wsrep_local_bf_aborts'))
        return counts

    def books(self, answers):
        """{node: problems} and whether every node holds the same allocations."""
        self.cluster.wait_synced()
        books = [ha_load.read_books(node) for node in self.cluster.nodes]
        return ({b.node: ha_load.check_books(b, answers, self.cloud) for b in books},
                len({b.checksum for b in books}) == 1)


def multi_writer(deployment, *, seconds=60, clients=10):
    """Acceptance 1: every API server writing through its own node."""
    if deployment.mode != 'multi':
        deployment.serve('multi', clients=clients)
    before, reruns = deployment.aborts(), deployment.log_lines(TRIGGER_RERUN)
    load = ha_load.Load([s.url for s in deployment.servers], deployment.cloud, clients=clients)
    started = time.monotonic()
    answers = load.run_for(seconds)
    elapsed = time.monotonic() - started
    after = deployment.aborts()
    problems, agree = deployment.books(answers)
    return {
        'scenario': 'multi-writer', 'seconds': round(elapsed, 1), 'clients': clients,
        'api_servers': len(deployment.servers), **ha_load.summary(answers),
        'writes_per_second': round(sum(1 for a in answers if a.status in ha_load.OK) / elapsed, 1),
        'galera_aborts': {node: after[node] - before[node] for node in after},
        'trigger_reruns': deployment.log_lines(TRIGGER_RERUN) - reruns,
        'problems': problems, 'nodes_agree': agree,
        'failures': _examples(ha_load.failures(answers)),
    }


def node_failover(deployment, *, seconds=20, clients=10):
    """Acceptance 2: a single writer through HAProxy, its active node
    SIGKILLed under load, then started again from its recovered position."""
    if deployment.mode != 'single':
        deployment.serve('single', clients=clients)
    cluster, proxy = deployment.cluster, deployment.proxy
    active = cluster.nodes[0]
    reruns = deployment.log_lines(TRIGGER_RERUN)
    load = ha_load.Load([proxy.api_url], deployment.cloud, clients=clients).start()
    try:
        load.wait_for(40)
        time.sleep(seconds / 4)
        active.kill()
        killed = time.monotonic()
        load.wait_for(40, after=killed, timeout=60)
        time.sleep(seconds / 4)
        log_from = active.log_size()
        restarting = time.monotonic()
        active.start()
        synced = time.monotonic()
        wait_for(lambda: proxy.server_states().get(active.name) == 'UP',
                 'HAProxy to send connections to the rejoined node', timeout=30)
        back = time.monotonic()
        load.wait_for(40, after=back, timeout=60)
        time.sleep(seconds / 4)
    finally:
        answers = load.stop()
    failed = ha_load.failures(answers)
    first = min((a.done for a in answers if a.status in ha_load.OK and a.sent >= killed),
                default=None)
    full, incremental = active.transfers(log_from)
    problems, agree = deployment.books(answers)
    return {
        'scenario': 'single-writer node failover', 'clients': clients, **ha_load.summary(answers),
        'failed_statuses': _statuses(failed),
        'failed_after_kill': sum(1 for a in failed if killed <= a.done < restarting),
        'failed_around_rejoin': sum(1 for a in failed if a.done >= restarting),
        'first_success_after_kill_s': None if first is None else round(first - killed, 2),
        'rejoin_s': round(synced - restarting, 1), 'rejoin_to_active_s': round(back - synced, 1),
        'rejoin_full_transfers': full, 'rejoin_incremental_transfers': incremental,
        'trigger_reruns': deployment.log_lines(TRIGGER_RERUN) - reruns,
        'problems': problems, 'nodes_agree': agree, 'failures': _examples(failed),
    }


def api_server_killed(deployment, *, seconds=10, clients=10):
    """Acceptance 3: one of the API servers behind HAProxy SIGKILLed under
    load (its master and workers at once)."""
    if deployment.mode != 'single':
        deployment.serve('single', clients=clients)
    victim = deployment.servers[-1]
    reruns = deployment.log_lines(TRIGGER_RERUN)
    load = ha_load.Load([deployment.proxy.api_url], deployment.cloud, clients=clients).start()
    try:
        load.wait_for(40)
        time.sleep(seconds / 2)
        processes = [victim.process.pid, *victim.worker_pids()]
        killing = time.monotonic()
        os.killpg(victim.process.pid, signal.SIGKILL)
        victim.process.wait()
        wait_for(lambda: not any(_alive(pid) for pid in processes),
                 'the API server to be gone', interval=0.005)
        killed = time.monotonic()   # requests sent from now on met no process of it
        load.wait_for(40, after=killed + 1)
        time.sleep(seconds / 2)
    finally:
        answers = load.stop()
    failed = ha_load.failures(answers)
    problems, agree = deployment.books(answers)

    def in_flight(answer):
        return answer.sent < killed + GRACE and answer.done >= killing
    return {
        'scenario': 'API server killed', 'clients': clients, **ha_load.summary(answers),
        # Requests of any server outstanding when the kill began, or sent
        # until its processes were gone (and the kernel had closed its
        # socket: GRACE): a failure must be one of them.
        'in_flight_at_kill': sum(1 for a in answers if in_flight(a)),
        'failed_statuses': _statuses(failed),
        'failed_in_flight': sum(1 for a in failed if in_flight(a)),
        'failed_otherwise': sum(1 for a in failed if not in_flight(a)),
        'failed_sent_after_gone_s': sorted(round(a.sent - killed, 3) for a in failed
                                           if a.sent >= killed),
        'kill_s': round(killed - killing, 3),
        'trigger_reruns': deployment.log_lines(TRIGGER_RERUN) - reruns,
        'problems': problems, 'nodes_agree': agree, 'failures': _examples(failed),
    }


def _alive(pid):
    """Is the process still running (neither gone nor a zombie)?"""
    try:
        status = Path(f'/proc/{pid}/status').read_text()
    except OSError:
        return False
    return '\nState:\tZ' not in status


def _statuses(answers):
    counts = {}
    for a in answers:
        key = 'none' if a.status is None else str(a.status)
        counts[key] = counts.get(key, 0) + 1
    return counts


def _examples(answers, count=5):
    return [{'kind': a.kind, 'status': a.status, 'code': a.code, 'error': a.error[:200],
             'body': a.body[:300]} for a in answers[:count]]
