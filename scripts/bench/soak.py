"""The soak run (docs/operations.md, "Soak runs"): mixed Placement traffic at
a steady rate against the service as production runs it, with per-minute
latency, errors, worker memory and database connections.

    .venv/bin/python -m scripts.bench.soak [--minutes 10] [--rate 25] [--workers 4]
        [--providers 200] [--out DIR] [--bucket-seconds 60] [--database placement_soak]

It
- drops and creates the database --database on the PostgreSQL server of
  --server-url: DATABASE_URL's when that is a postgresql:// URL, else a
  private one started by scripts/dev/pg-test-server.sh (on --pg-port,
  25480, its data in /tmp/placement-soak-pg-<port>);
- starts `scripts/run.sh` (gunicorn, WORKERS=--workers) on a free port, with
  PLACEMENT_DATA_DIR=<out>/data, and waits for GET / to answer;
- seeds through the REST API: --providers compute nodes (VCPU, MEMORY_MB,
  DISK_GB, some CPU traits), every tenth one taking its disk from one of two
  shared DISK_GB pools (MISC_SHARES_VIA_AGGREGATE, through an aggregate);
- sends operations at --rate per second (open loop: on a fixed schedule,
  from a thread pool, whether or not earlier ones answered) for --minutes:
  allocation candidates (a few shapes, with limits), claims of a candidate
  (PUT /allocations, consumer_generation null), deletes of the oldest claims
  (so usage stays level once --live-claims consumers exist), inventory updates
  at the last generation seen (on 409 the inventory is read again and the
  write retried once), project usages and provider usages;
- at the end of each bucket (--bucket-seconds, 60) reads the master's and
  its workers' VmRSS (and its parts) and CPU time, and the database's
  client connections with the process holding each (autovacuum workers,
  which pg_stat_activity also lists under the database, are not counted);
- stops the service with SIGTERM, writes <out>/soak.md (also on stdout),
  <out>/soak.json and <out>/server.log (<out> defaults to
  test-artifacts/soak/<date-time>), and exits 1 when the verdict (no 5xx,
  flat RSS and connections) fails.

Latency is measured from sending a request to reading its whole answer. A
request counts in the bucket it was scheduled in; "lag" is how late the
client started it (a client that cannot keep up shows there, not in latency).
"""
import argparse
import collections
import concurrent.futures as cf
import http.client
import json
import os
import platform
import random
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid

import psycopg2

from scripts.bench import percentile
from scripts.harness.api import send
from scripts.harness.placement import REPO
from scripts.harness.process import Process
from scripts.harness.process import children
from scripts.harness.process import cpu_seconds
from scripts.harness.process import free_port
from scripts.harness.process import memory_mib

ROOT = str(REPO)
MICROVERSION = '1.39'
MIB = 1024 * 1024

PROJECTS = [f'soak-project-{i}' for i in range(5)]
USERS = [f'soak-user-{i}' for i in range(5)]

# What a compute node offers; every tenth node has no DISK_GB of its own and
# takes disk from its aggregate's shared pool.
NODE_INVENTORY = {
    'VCPU': {'total': 32, 'allocation_ratio': 4.0, 'max_unit': 32},
    'MEMORY_MB': {'total': 131072, 'reserved': 512, 'allocation_ratio': 1.5, 'max_unit': 131072},
    'DISK_GB': {'total': 2000, 'max_unit': 2000},
}
POOL_INVENTORY = {'DISK_GB': {'total': 100000, 'max_unit': 100000}}
NODE_TRAITS = [['HW_CPU_X86_AVX2', 'HW_CPU_X86_SSE42'], ['HW_CPU_X86_SSE42'], []]
POOLS = 2
SHARED_EVERY = 10

FLAVORS = {
    'small': 'VCPU:1,MEMORY_MB:2048,DISK_GB:20',
    'medium': 'VCPU:4,MEMORY_MB:8192,DISK_GB:80',
}
# GET /allocation_candidates shapes: (name, query, flavor claims take from it).
# {agg} is a pool's aggregate.
SHAPES = [
    ('small', f'resources={FLAVORS["small"]}&limit=20', 'small'),
    ('medium_avx2', f'resources={FLAVORS["medium"]}&required=HW_CPU_X86_AVX2&limit=50', 'medium'),
    ('shared_pool', f'resources={FLAVORS["small"]}&member_of={{agg}}&limit=10', None),
    ('nova_limit1000', 'resources=VCPU:1,MEMORY_MB:512,DISK_GB:10&limit=1000', None),
]

# Operation mix (weights) and the answers each request kind may get.
MIX = {'candidates': 30, 'claim': 20, 'delete': 20, 'inventory': 5, 'usages': 10,
       'provider_usages': 15}
EXPECTED = {
    'candidates': {200},
    'claim': {204, 409},           # capacity taken or a generation race
    'delete': {204},
    'inventory': {200, 409},       # a write at a stale generation
    'inventory_read': {200},
    'usages': {200},
    'provider_usages': {200},
}


def parse_args(argv):
    parser = argparse.ArgumentParser(prog='python -m scripts.bench.soak',
                                     description=__doc__.split('\n')[0])
    parser.add_argument('--server-url',
                        help='postgresql:// URL of the server (its database name is ignored; '
                             'default: DATABASE_URL when PostgreSQL, else a server started here)')
    parser.add_argument('--pg-port', type=int, default=25480,
                        help='the port of the server started here (25480)')
    parser.add_argument('--database', default='placement_soak',
                        help='database dropped and created for the run (placement_soak)')
    parser.add_argument('--minutes', type=float, default=10)
    parser.add_argument('--rate', type=float, default=25, help='operations per second (25)')
    parser.add_argument('--workers', type=int, default=4, help='gunicorn workers (4)')
    parser.add_argument('--worker-threads', type=int, default=1,
                        help='threads per worker, for the connection limit (1: sync workers)')
    parser.add_argument('--providers', type=int, default=200, help='compute nodes (200)')
    parser.add_argument('--live-claims', type=int, default=None,
                        help='consumers kept before deletes start (default: --providers)')
    parser.add_argument('--bucket-seconds', type=float, default=60)
    parser.add_argument('--client-threads', type=int, default=32)
    parser.add_argument('--seed', type=int, default=42)
    parser.add_argument('--out', default=None, help='output directory (test-artifacts/soak/<time>)')
    parser.add_argument('--rss-slack-mib', type=float, default=10,
                        help='last bucket max worker RSS may exceed the second\'s by '
                             'max(this, --rss-slack-percent)')
    parser.add_argument('--rss-slack-percent', type=float, default=10)
    args = parser.parse_args(argv)
    if args.live_claims is None:
        args.live_claims = args.providers
    if args.out is None:
        args.out = os.path.join(ROOT, 'test-artifacts', 'soak', time.strftime('%Y%m%d-%H%M%S'))
    if args.server_url is None:
        args.server_url = postgresql_server(args.pg_port)
    return args


def postgresql_server(port):
    """DATABASE_URL when it names PostgreSQL, else the URL of a private
    server on `port` (started unless running). One directory per port:
    pg-test-server.sh empties the directory of a server it starts, which
    must never be another port's running server."""
    url = os.environ.get('DATABASE_URL', '')
    if url.startswith(('postgresql://', 'postgres://')):
        return url
    env = {**os.environ, 'PG_TEST_PORT': str(port), 'PG_TEST_DIR': f'/tmp/placement-soak-pg-{port}'}
    started = subprocess.run([os.path.join(ROOT, 'scripts', 'dev', 'pg-test-server.sh')],
                             env=env, check=True, capture_output=True, text=True)
    return started.stdout.strip().splitlines()[-1]


# ---- the database and the service ----

def database_url(server_url, name):
    parts = urllib.parse.urlsplit(server_url)
    return urllib.parse.urlunsplit(parts._replace(path='/' + name))


def recreate_database(server_url, name):
    conn = psycopg2.connect(server_url, dbname='postgres')
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        cur.execute(f'CREATE DATABASE "{name}"')
    conn.close()


def open_connections(url, name):
    """Clients' connections to the database, not counting the one asking,
    as [{backend pid, client port, state, backend_start}], and the other
    backends on it by type: autovacuum workers show in pg_stat_activity with
    the database's name too, but they are not connections anyone opened."""
    conn = psycopg2.connect(url, connect_timeout=5)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT pid, client_port, state, backend_start::text FROM pg_stat_activity "
                        "WHERE datname = %s AND backend_type = 'client backend' "
                        "AND pid <> pg_backend_pid() ORDER BY backend_start", [name])
            clients = [dict(zip(('backend_pid', 'client_port', 'state', 'since'), row))
                       for row in cur.fetchall()]
            cur.execute("SELECT backend_type, count(*) FROM pg_stat_activity WHERE datname = %s "
                        "AND backend_type <> 'client backend' GROUP BY 1", [name])
            return clients, dict(cur.fetchall())
    finally:
        conn.close()


def socket_owners(pids):
    """{local TCP port: pid} for the TCP sockets the processes `pids` hold."""
    inode_pid = {}
    for pid in pids:
        try:
            for fd in os.listdir(f'/proc/{pid}/fd'):
                target = os.readlink(f'/proc/{pid}/fd/{fd}')
                if target.startswith('socket:['):
                    inode_pid[target[8:-1]] = pid
        except OSError:
            continue
    owners = {}
    for table in ('/proc/net/tcp', '/proc/net/tcp6'):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    fields = line.split()
                    if fields[9] in inode_pid:
                        owners[int(fields[1].rsplit(':', 1)[1], 16)] = inode_pid[fields[9]]
        except OSError:
            continue
    return owners


class Service(Process):
    """scripts/run.sh as production starts it. run.sh execs scripts/serve.sh,
    which starts nginx and two gunicorn pools (docs/serving.md): the master
    measured is the API pool's (the one whose environment names it), its
    workers are its children; without nginx (FRONT=none) serve.sh execs that
    gunicorn itself."""

    def __init__(self, *, db_url, workers, out):
        self.port = free_port()
        self.url = f'http://127.0.0.1:{self.port}'
        env = dict(os.environ, WORKERS=str(workers), PORT=str(self.port), HOST='127.0.0.1',
                   DATABASE_URL=db_url, PLACEMENT_DATA_DIR=os.path.join(out, 'data'),
                   PLACEMENT_AUTH_STRATEGY='noauth2')
        env.pop('PROMETHEUS_MULTIPROC_DIR', None)
        super().__init__([os.path.join(ROOT, 'scripts', 'run.sh')],
                         os.path.join(out, 'server.log'), env=env, cwd=ROOT)
        self.start()

    def wait_ready(self, timeout=300):
        self.wait_answering(self.url + '/', timeout)
        self.master = api_master(self.pid)

    def stop(self, timeout=90):
        """SIGTERM to run.sh (serve.sh's graceful stop); the seconds it took."""
        return super().stop(timeout)

    def tracebacks(self):
        return self.log().count('Traceback (most recent call last)')


def api_master(pid):
    """The API pool's gunicorn master among `pid` and its descendants: the
    first, from the top, whose environment says PLACEMENT_SERVING_POOL=api
    (its workers inherit it); `pid` itself when none does (one gunicorn)."""
    level = [pid]
    while level:
        for candidate in level:
            try:
                with open(f'/proc/{candidate}/environ', 'rb') as f:
                    if b'PLACEMENT_SERVING_POOL=api' in f.read().split(b'\0'):
                        return candidate
            except OSError:
                continue
        level = [child for parent in level for child in children(parent)]
    return pid


def rss_mib(pid):
    memory = memory_mib(pid)
    return memory and memory['VmRSS']


# ---- HTTP ----

def request(port, method, path, body=None):
    """(status, parsed body or None, seconds). One connection per request:
    gunicorn's sync workers close it after every answer anyway."""
    response, raw, elapsed = send(port, method, path, body, MICROVERSION, timeout=60)
    parsed = None
    if raw and response.getheader('Content-Type', '').startswith('application/json'):
        parsed = json.loads(raw)
    return response.status, parsed, elapsed


# ---- seeding ----

def seed(port, providers, threads=8):
    """Pools and compute nodes through the REST API. Returns (node uuids,
    pool aggregate uuids)."""
    def ok(status, body, expected=200):
        if status != expected:
            raise RuntimeError(f'seeding: {status} {body}')
        return body

    def provider(name, inventories, traits, aggregate):
        body = ok(*request(port, 'POST', '/resource_providers',
                           {'name': name, 'uuid': str(uuid.uuid4())})[:2])
        rp, gen = body['uuid'], body['generation']
        gen = ok(*request(port, 'PUT', f'/resource_providers/{rp}/inventories', {
            'resource_provider_generation': gen, 'inventories': inventories})[:2])[
                'resource_provider_generation']
        if traits:
            gen = ok(*request(port, 'PUT', f'/resource_providers/{rp}/traits', {
                'resource_provider_generation': gen, 'traits': traits})[:2])[
                    'resource_provider_generation']
        if aggregate:
            ok(*request(port, 'PUT', f'/resource_providers/{rp}/aggregates', {
                'resource_provider_generation': gen, 'aggregates': [aggregate]})[:2])
        return rp

    aggregates = [str(uuid.uuid4()) for _ in range(POOLS)]
    for i, agg in enumerate(aggregates):
        provider(f'soak-pool-{i}', POOL_INVENTORY,
                 ['MISC_SHARES_VIA_AGGREGATE', 'STORAGE_DISK_SSD'], agg)

    def node(i):
        shared = i % SHARED_EVERY == 0
        inventories = {rc: inv for rc, inv in NODE_INVENTORY.items()
                       if not (shared and rc == 'DISK_GB')}
        return provider(f'soak-cn{i:05d}', inventories, NODE_TRAITS[i % len(NODE_TRAITS)],
                        aggregates[(i // SHARED_EVERY) % POOLS] if shared else None)

    with cf.ThreadPoolExecutor(threads) as pool:
        nodes = list(pool.map(node, range(providers)))
    return nodes, aggregates


# ---- recording ----

class Recorder:
    """Every request's kind, status and latency, by the bucket of its
    scheduled time."""

    def __init__(self, start, bucket_seconds, buckets):
        self.start, self.bucket_seconds = start, bucket_seconds
        self.lock = threading.Lock()
        self.requests = [collections.defaultdict(list) for _ in range(buckets)]  # kind -> ms
        self.statuses = [collections.Counter() for _ in range(buckets)]  # (kind, status)
        self.lag = [0.0] * buckets
        self.samples = [None] * buckets
        self.cpu_at_start = {}

    def bucket(self, scheduled):
        return min(int((scheduled - self.start) // self.bucket_seconds), len(self.lag) - 1)

    def record(self, scheduled, kind, status, seconds):
        b = self.bucket(scheduled)
        with self.lock:
            if seconds is not None:
                self.requests[b][kind].append(seconds * 1000)
            self.statuses[b][(kind, status)] += 1

    def late(self, scheduled, seconds):
        b = self.bucket(scheduled)
        with self.lock:
            self.lag[b] = max(self.lag[b], seconds)


# ---- traffic ----

class Traffic:
    def __init__(self, port, recorder, nodes, aggregates, *, live_claims, seed):
        self.port, self.recorder = port, recorder
        self.nodes, self.aggregates = nodes, aggregates
        self.live_claims = live_claims
        self.random = random.Random(seed)
        self.lock = threading.Lock()
        self.live = collections.deque()            # (consumer uuid) oldest first
        self.latest = {}                           # flavor -> latest allocation_requests
        self.generations = {}                      # provider uuid -> last generation seen
        self.reserved = {}                         # provider uuid -> MEMORY_MB reserved

    def call(self, scheduled, kind, method, path, body=None):
        try:
            status, answer, seconds = request(self.port, method, path, body)
        except (OSError, http.client.HTTPException) as exc:
            self.recorder.record(scheduled, kind, f'failed: {type(exc).__name__}', None)
            return None, None
        self.recorder.record(scheduled, kind, status, seconds)
        return status, answer

    def choose(self):
        with self.lock:
            kind = self.random.choices(list(MIX), weights=list(MIX.values()))[0]
            if kind == 'delete' and len(self.live) <= self.live_claims:
                kind = 'claim'
            return kind, random.Random(self.random.getrandbits(64))

    def run(self, scheduled, kind, rng):
        self.recorder.late(scheduled, time.monotonic() - scheduled)
        try:
            getattr(self, kind)(scheduled, rng)
        except Exception as exc:  # noqa: BLE001 - a broken answer or a bug here: counted, never lost
            self.recorder.record(scheduled, kind, f'client error: {exc!r}'[:200], None)

    def candidates_(self, scheduled, name, query, flavor):
        status, answer = self.call(scheduled, 'candidates', 'GET',
                                   f'/allocation_candidates?{query}')
        if status == 200 and flavor and answer['allocation_requests']:
            with self.lock:
                self.latest[flavor] = answer['allocation_requests']
        return status

    def shape_query(self, query, rng):
        return query.format(agg=rng.choice(self.aggregates))

    # Each operation is named after its kind.
    def candidates(self, scheduled, rng):
        name, query, flavor = rng.choice(SHAPES)
        self.candidates_(scheduled, name, self.shape_query(query, rng), flavor)

    def claim(self, scheduled, rng):
        flavor = rng.choice(list(FLAVORS))
        with self.lock:
            known = self.latest.get(flavor)
        if not known:
            name, query, _ = next(s for s in SHAPES if s[2] == flavor)
            self.candidates_(scheduled, name, query, flavor)
            with self.lock:
                known = self.latest.get(flavor)
            if not known:
                return
        chosen = rng.choice(known)
        consumer = str(uuid.uuid4())
        status, _ = self.call(scheduled, 'claim', 'PUT', f'/allocations/{consumer}', {
            'allocations': chosen['allocations'],
            'project_id': rng.choice(PROJECTS), 'user_id': rng.choice(USERS),
            'consumer_generation': None, 'consumer_type': 'INSTANCE'})
        if status == 204:
            with self.lock:
                self.live.append(consumer)

    def delete(self, scheduled, rng):
        with self.lock:
            consumer = self.live.popleft() if self.live else None
        if consumer:
            self.call(scheduled, 'delete', 'DELETE', f'/allocations/{consumer}')

    def inventory(self, scheduled, rng):
        rp = rng.choice(self.nodes)
        with self.lock:
            generation = self.generations.get(rp)
        for attempt in range(2):
            if generation is None or attempt:
                status, answer = self.call(scheduled, 'inventory_read', 'GET',
                                           f'/resource_providers/{rp}/inventories')
                if status != 200:
                    return
                generation = answer['resource_provider_generation']
            with self.lock:
                reserved = 0 if self.reserved.get(rp, 512) else 512
            record = dict(NODE_INVENTORY['MEMORY_MB'], reserved=reserved,
                          resource_provider_generation=generation)
            status, answer = self.call(scheduled, 'inventory', 'PUT',
                                       f'/resource_providers/{rp}/inventories/MEMORY_MB', record)
            if status == 200:
                with self.lock:
                    self.generations[rp] = answer['resource_provider_generation']
                    self.reserved[rp] = reserved
                return
            if status != 409:
                return

    def usages(self, scheduled, rng):
        self.call(scheduled, 'usages', 'GET', f'/usages?project_id={rng.choice(PROJECTS)}')

    def provider_usages(self, scheduled, rng):
        rp = rng.choice(self.nodes)
        status, answer = self.call(scheduled, 'provider_usages', 'GET',
                                   f'/resource_providers/{rp}/usages')
        if status == 200:
            with self.lock:
                self.generations[rp] = answer['resource_provider_generation']


def sample(service, db_url, database):
    workers = children(service.master)
    memory = {pid: memory_mib(pid) for pid in workers}
    memory = {pid: value for pid, value in memory.items() if value}
    rss = {pid: value['VmRSS'] for pid, value in memory.items()}
    try:
        details, others = open_connections(db_url, database)
        connections = len(details)
        owners = socket_owners([service.master, *workers])
        for connection in details:
            connection['owner_pid'] = owners.get(connection['client_port'])
    except psycopg2.Error as exc:
        connections, details, others = None, [], {}
        print(f'soak: could not count connections: {exc}', file=sys.stderr)
    cpu = {pid: cpu_seconds(pid) for pid in workers}
    return {'at': time.time(), 'master_rss_mib': rss_mib(service.master),
            'worker_cpu_seconds': {str(pid): v for pid, v in cpu.items() if v is not None},
            'worker_rss_mib': {str(pid): round(v, 1) for pid, v in rss.items()},
            'worker_memory_mib': {str(pid): {k: round(v, 1) for k, v in parts.items()}
                                  for pid, parts in memory.items()},
            'worker_rss_max_mib': max(rss.values()) if rss else None,
            'worker_rss_total_mib': sum(rss.values()) if rss else None,
            'worker_pids': sorted(rss), 'db_connections': connections,
            'db_connection_details': details, 'db_other_backends': others}


def drive(args, service, db_url, nodes, aggregates):
    buckets = max(1, round(args.minutes * 60 / args.bucket_seconds))
    duration = buckets * args.bucket_seconds
    start = time.monotonic()
    recorder = Recorder(start, args.bucket_seconds, buckets)
    traffic = Traffic(service.port, recorder, nodes, aggregates,
                      live_claims=args.live_claims, seed=args.seed)
    first_pids = set(children(service.master))
    recorder.cpu_at_start = {str(pid): cpu_seconds(pid) or 0.0 for pid in first_pids}

    def sampler():
        for b in range(buckets):
            wake = start + (b + 1) * args.bucket_seconds
            time.sleep(max(0.0, wake - time.monotonic()))
            reading = recorder.samples[b] = sample(service, db_url, args.database)
            new = sorted(set(reading['worker_pids']) - first_pids)
            with recorder.lock:
                done = sum(recorder.statuses[b].values())
            print(f'soak: {label(b, args.bucket_seconds)}  {done} requests  worker RSS max '
                  f'{fmt(reading["worker_rss_max_mib"])} MiB  connections '
                  f'{reading["db_connections"]}  new workers {new or "none"}',
                  file=sys.stderr, flush=True)

    sampling = threading.Thread(target=sampler, daemon=True)
    sampling.start()
    interval = 1.0 / args.rate
    with cf.ThreadPoolExecutor(args.client_threads) as pool:
        i = 0
        while True:
            scheduled = start + i * interval
            if scheduled >= start + duration:
                break
            time.sleep(max(0.0, scheduled - time.monotonic()))
            kind, rng = traffic.choose()
            pool.submit(traffic.run, scheduled, kind, rng)
            i += 1
    sampling.join()
    return recorder, first_pids, len(traffic.live)


# ---- report ----

def label(b, bucket_seconds):
    if bucket_seconds == 60:
        return f'minute {b + 1}'
    return f'{(b + 1) * bucket_seconds:g} s'


def fmt(value, digits=1):
    return '-' if value is None else f'{value:.{digits}f}'


def summarise(recorder, first_pids, args):
    rows = []
    seen_pids = set(first_pids)
    for b in range(len(recorder.lag)):
        all_ms = [ms for values in recorder.requests[b].values() for ms in values]
        statuses = recorder.statuses[b]
        server_errors = sum(n for (k, s), n in statuses.items()
                            if isinstance(s, int) and s >= 500)
        unexpected = sum(n for (k, s), n in statuses.items()
                         if not (isinstance(s, int) and s >= 500) and s not in EXPECTED[k])
        conflicts = sum(n for (k, s), n in statuses.items() if s == 409)
        reading = recorder.samples[b] or {}
        # CPU the workers used in the bucket (a new worker's from its start).
        before = ((recorder.samples[b - 1] or {}).get('worker_cpu_seconds') if b
                  else recorder.cpu_at_start)
        used = reading.get('worker_cpu_seconds')
        cores = (sum(v - before.get(pid, 0.0) for pid, v in used.items()) / args.bucket_seconds
                 if used and before else None)
        pids = set(reading.get('worker_pids', []))
        respawned = sorted(pids - seen_pids)
        seen_pids |= pids
        rows.append({
            'bucket': b + 1, 'label': label(b, args.bucket_seconds),
            'requests': sum(statuses.values()),
            'p50_ms': percentile(all_ms, 50), 'p95_ms': percentile(all_ms, 95),
            'conflicts_409': conflicts, 'errors_5xx': server_errors,
            'errors_unexpected': unexpected, 'client_lag_max_s': round(recorder.lag[b], 3),
            'by_kind': {kind: {'n': len(ms), 'p50_ms': percentile(ms, 50),
                               'p95_ms': percentile(ms, 95)}
                        for kind, ms in sorted(recorder.requests[b].items())},
            'statuses': {f'{k} {s}': n for (k, s), n in sorted(statuses.items(), key=str)},
            'new_worker_pids': respawned, 'workers_cpu_cores': cores, **reading,
        })
    return rows


def verdict(rows, args, tracebacks):
    """(passed, reasons) from the rows: no 5xx or unexpected answer, no
    respawned worker, flat worker RSS and connections."""
    failures, notes = [], []
    errors = sum(r['errors_5xx'] for r in rows)
    unexpected = sum(r['errors_unexpected'] for r in rows)
    (failures if errors else notes).append(f'5xx answers: {errors}')
    (failures if unexpected else notes).append(f'unexpected answers: {unexpected}')
    (failures if tracebacks else notes).append(f'tracebacks in the server log: {tracebacks}')
    respawned = sum(len(r['new_worker_pids']) for r in rows)
    (failures if respawned else notes).append(f'workers respawned: {respawned}')
    if len(rows) >= 2 and rows[1].get('worker_rss_max_mib') and rows[-1].get('worker_rss_max_mib'):
        base, last = rows[1]['worker_rss_max_mib'], rows[-1]['worker_rss_max_mib']
        allowed = max(args.rss_slack_mib, base * args.rss_slack_percent / 100)
        line = (f'max worker RSS {last:.1f} MiB in the last bucket, {base:.1f} MiB in the second '
                f'(growth {last - base:+.1f} MiB, allowed {allowed:.1f})')
        (failures if last - base > allowed else notes).append(line)
    limit = args.workers * args.worker_threads
    counts = [r.get('db_connections') for r in rows]
    if None in counts:
        failures.append('database connections could not be counted in every bucket')
    elif counts:
        line = (f'database connections {min(counts)}..{max(counts)} '
                f'(limit workers x threads = {limit})')
        (failures if max(counts) > limit else notes).append(line)
    return not failures, failures, notes


def markdown(rows, args, meta, passed, failures, notes):
    lines = [
        (f'Soak run: {args.minutes:g} min at {args.rate:g} operations/s, {args.workers} workers, '
         f'{args.providers} compute nodes, PostgreSQL {meta["postgresql"]}; '
         f'{meta["machine"]}.'), '',
        (f'| {"minute" if args.bucket_seconds == 60 else "until"} | requests | p50 ms | p95 ms '
         '| 409 | 5xx | other errors | workers CPU | worker RSS max MiB | worker RSS total MiB '
         '| master RSS MiB | DB connections | new workers |'),
        '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ]
    for r in rows:
        bucket = (r['bucket'] if args.bucket_seconds == 60
                  else f'{r["bucket"] * args.bucket_seconds:g} s')
        lines.append(
            f'| {bucket} | {r["requests"]} | {fmt(r["p50_ms"])} | {fmt(r["p95_ms"])} '
            f'| {r["conflicts_409"]} | {r["errors_5xx"]} | {r["errors_unexpected"]} '
            f'| {fmt(r["workers_cpu_cores"], 2)} '
            f'| {fmt(r.get("worker_rss_max_mib"))} | {fmt(r.get("worker_rss_total_mib"))} '
            f'| {fmt(r.get("master_rss_mib"))} | {fmt(r.get("db_connections"), 0)} '
            f'| {", ".join(map(str, r["new_worker_pids"])) or "-"} |')
    lines += ['', f'Verdict: {"PASS" if passed else "FAIL"}']
    lines += [f'- FAIL: {line}' for line in failures]
    lines += [f'- {line}' for line in notes]
    return '\n'.join(lines) + '\n'


def postgres_version(url):
    conn = psycopg2.connect(url)
    try:
        with conn.cursor() as cur:
            cur.execute('SHOW server_version')
            return cur.fetchone()[0].split()[0]
    finally:
        conn.close()


def machine():
    cpus = os.cpu_count()
    model = ''
    try:
        with open('/proc/cpuinfo') as f:
            model = next((line.split(':', 1)[1].strip() for line in f
                          if line.startswith('model name')), '')
    except OSError:
        pass
    with open('/proc/meminfo') as f:
        mem_gib = int(f.readline().split()[1]) / 1024 / 1024
    return f'{cpus} CPUs ({model or platform.machine()}), {mem_gib:.0f} GiB RAM'


def main(argv=None):
    args = parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    db_url = database_url(args.server_url, args.database)
    recreate_database(args.server_url, args.database)
    service = Service(db_url=db_url, workers=args.workers, out=args.out)
    stop_seconds = None
    try:
        service.wait_ready()
        seeded = time.monotonic()
        nodes, aggregates = seed(service.port, args.providers)
        print(f'soak: seeded {len(nodes)} compute nodes and {POOLS} pools in '
              f'{time.monotonic() - seeded:.1f} s; traffic for {args.minutes:g} min',
              file=sys.stderr, flush=True)
        recorder, first_pids, live = drive(args, service, db_url, nodes, aggregates)
    finally:
        stop_seconds = service.stop()
    tracebacks = service.tracebacks()
    rows = summarise(recorder, first_pids, args)
    passed, failures, notes = verdict(rows, args, tracebacks)
    notes.append(f'SIGTERM stopped the service in {stop_seconds:.1f} s '
                 f'(exit status {service.process.returncode})')
    meta = {'postgresql': postgres_version(db_url), 'machine': machine(),
            'python': platform.python_version()}
    report = markdown(rows, args, meta, passed, failures, notes)
    sys.stdout.write(report)
    with open(os.path.join(args.out, 'soak.md'), 'w') as f:
        f.write(report)
    with open(os.path.join(args.out, 'soak.json'), 'w') as f:
        json.dump({'arguments': {k: v for k, v in vars(args).items() if k != 'server_url'},
                   'database': args.database, **meta, 'passed': passed, 'failures': failures,
                   'notes': notes, 'live_claims_at_end': live, 'first_worker_pids':
                   sorted(first_pids), 'server_log_tracebacks': tracebacks, 'rows': rows},
                  f, indent=1)
    return 0 if passed else 1


if __name__ == '__main__':
    sys.exit(main())
