"""The high-availability runs (docs/ha.md): a real 3-node MariaDB Galera
cluster, HAProxy and three Placement API servers on this machine (Debian's
packages, installed when missing), then

  multi     every API server writing through its own node, clients claiming,
            deleting and rewriting providers;
  failover  a single writer through HAProxy, the active node SIGKILLed under
            load and started again;
  api       an API server SIGKILLed behind HAProxy under load.

Each prints what it measured as JSON (the answers by kind and status, the
aborts Galera made, the books of every node). The exit status is 1 when a
run found a fault: a 409 or 5xx other than the 503 of a switch, books that
do not balance, nodes that disagree, a full state transfer.

  .venv/bin/python -m scripts.bench.ha                       # all three, 60 s each
  .venv/bin/python -m scripts.bench.ha multi --seconds 20 --clients 20

tests/system/test_galera.py runs the same functions for a few seconds each and
asserts on their results (scripts/ci/galera-tests.sh, CI's stage).

A Deployment is the cluster (scripts/harness/galera.py), Debian's HAProxy in
front of it (the database frontend as kolla-ansible configures it, and a
second, HTTP frontend over the API servers) and the API servers under
gunicorn (scripts/harness/placement.py). The API servers write through one
node each (several writers) or all through HAProxy's database frontend (a
single writer, as kolla-ansible deploys)."""
import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import requests

from scripts.harness import loads
from scripts.harness.api import HEADERS
from scripts.harness.galera import Cluster
from scripts.harness.galera import Proxy
from scripts.harness.placement import Server
from scripts.harness.process import alive
from scripts.harness.process import wait_for

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
            self.cloud = loads.seed(self.call, computes=6, own=clients)
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
        books = [node_books(node) for node in self.cluster.nodes]
        return ({b.node: loads.check_books(b, answers) for b in books},
                len({b.checksum for b in books}) == 1)


def node_books(node):
    """What one Galera node holds, read as root after making sure it has
    applied everything the cluster committed."""
    conn = node.connect(db='placement')
    conn.cursor().execute('SET SESSION wsrep_sync_wait = 1')
    return loads.read_books(conn, node.name)


def multi_writer(deployment, *, seconds=60, clients=10):
    """Every API server writing through its own node."""
    if deployment.mode != 'multi':
        deployment.serve('multi', clients=clients)
    before, reruns = deployment.aborts(), deployment.log_lines(TRIGGER_RERUN)
    load = loads.MixedLoad([s.url for s in deployment.servers], deployment.cloud, clients=clients)
    started = time.monotonic()
    answers = load.run_for(seconds)
    elapsed = time.monotonic() - started
    after = deployment.aborts()
    problems, agree = deployment.books(answers)
    return {
        'scenario': 'multi-writer', 'seconds': round(elapsed, 1), 'clients': clients,
        'api_servers': len(deployment.servers), **loads.summary(answers),
        'writes_per_second': round(sum(1 for a in answers if a.status in loads.OK) / elapsed, 1),
        'galera_aborts': {node: after[node] - before[node] for node in after},
        'trigger_reruns': deployment.log_lines(TRIGGER_RERUN) - reruns,
        'problems': problems, 'nodes_agree': agree,
        'failures': _examples(loads.failures(answers)),
    }


def node_failover(deployment, *, seconds=20, clients=10):
    """A single writer through HAProxy, its active node
    SIGKILLed under load, then started again from its recovered position."""
    if deployment.mode != 'single':
        deployment.serve('single', clients=clients)
    cluster, proxy = deployment.cluster, deployment.proxy
    active = cluster.nodes[0]
    reruns = deployment.log_lines(TRIGGER_RERUN)
    load = loads.MixedLoad([proxy.api_url], deployment.cloud, clients=clients).start()
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
    failed = loads.failures(answers)
    first = min((a.done for a in answers if a.status in loads.OK and a.sent >= killed),
                default=None)
    full, incremental = active.transfers(log_from)
    problems, agree = deployment.books(answers)
    return {
        'scenario': 'single-writer node failover', 'clients': clients, **loads.summary(answers),
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
    """One of the API servers behind HAProxy SIGKILLed under
    load (its master and workers at once)."""
    if deployment.mode != 'single':
        deployment.serve('single', clients=clients)
    victim = deployment.servers[-1]
    reruns = deployment.log_lines(TRIGGER_RERUN)
    load = loads.MixedLoad([deployment.proxy.api_url], deployment.cloud, clients=clients).start()
    try:
        load.wait_for(40)
        time.sleep(seconds / 2)
        processes = [victim.process.pid, *victim.worker_pids()]
        killing = time.monotonic()
        victim.kill()   # its master and workers at once
        wait_for(lambda: not any(alive(pid) for pid in processes),
                 'the API server to be gone', interval=0.005)
        killed = time.monotonic()   # requests sent from now on met no process of it
        load.wait_for(40, after=killed + 1)
        time.sleep(seconds / 2)
    finally:
        answers = load.stop()
    failed = loads.failures(answers)
    problems, agree = deployment.books(answers)

    def in_flight(answer):
        return answer.sent < killed + GRACE and answer.done >= killing
    return {
        'scenario': 'API server killed', 'clients': clients, **loads.summary(answers),
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


def _statuses(answers):
    counts = {}
    for a in answers:
        key = 'none' if a.status is None else str(a.status)
        counts[key] = counts.get(key, 0) + 1
    return counts


def _examples(answers, count=5):
    return [{'kind': a.kind, 'status': a.status, 'code': a.code, 'error': a.error[:200],
             'body': a.body[:300]} for a in answers[:count]]


# ---- the command ----------------------------------------------------------------

RUNS = {'multi': multi_writer, 'failover': node_failover,
        'api': api_server_killed}


def faults(result):
    """What is wrong in a run's result (empty when nothing)."""
    found = [f'{node}: {problems}' for node, problems in result['problems'].items() if problems]
    if not result['nodes_agree']:
        found.append('the nodes hold different allocations')
    for kind, counts in result['by_kind'].items():
        for status, count in counts.items():
            if str(status).startswith('409') or (str(status).startswith('5') and
                                                 result['scenario'] == 'multi-writer'):
                found.append(f'{kind}: {count} x {status}')
    if 'failed_statuses' in result and result['scenario'].startswith('single'):
        found += [f'{count} x {status} in the switch' for status, count
                  in result['failed_statuses'].items() if status != '503']
        if result['rejoin_full_transfers']:
            found.append('the rejoined node needed a full state transfer')
    return found


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m scripts.bench.ha',
                                     description=__doc__.split('\n\n')[0])
    parser.add_argument('runs', nargs='*', metavar='run', help=f"some of {', '.join(RUNS)} (all)")
    parser.add_argument('--seconds', type=float, default=60)
    parser.add_argument('--clients', type=int, default=10)
    parser.add_argument('--base-port', type=int, default=23400)
    parser.add_argument('--workers', type=int, default=2, help="gunicorn workers per API server")
    args = parser.parse_args(argv)
    unknown = set(args.runs) - set(RUNS)
    if unknown:
        parser.error(f"unknown runs {', '.join(sorted(unknown))}: choose from {', '.join(RUNS)}")
    failed = False
    with tempfile.TemporaryDirectory(prefix='placement-ha-') as base:
        deployment = Deployment(base, base_port=args.base_port,
                                             workers=args.workers)
        try:
            deployment.start(clients=args.clients)
            for name in args.runs or list(RUNS):
                result = RUNS[name](deployment, seconds=args.seconds, clients=args.clients)
                result['faults'] = faults(result)
                failed |= bool(result['faults'])
                print(json.dumps(result, indent=1, default=str), flush=True)
        finally:
            deployment.stop()
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
