"""The 100,000-provider benchmark (docs/performance.md, "100,000
providers"): Placement holding the `manage.py load_scale` dataset, served by
gunicorn, timed.

    DATABASE_URL=postgresql://... .venv/bin/python -m scripts.bench.scale \
        [--load N] [--seed 42] [--reps 20] [--budget 60] [--claim-clients 10]
        [--claim-seconds 30] [--json OUT] [--url URL --server-pid PID]

--load N migrates the database and loads N compute nodes first (the
database must have no providers; 40000 gives ~100,000 providers). It then
serves DATABASE_URL with gunicorn (--workers sync workers, --port, a
--gunicorn-timeout of 900 s: the unlimited candidate requests take seconds
at this size), measures and stops the server; with --url it measures that
server instead. DATABASE_URL (or --database-url) is the server's database,
read for the dataset's size, the floor and the capacity check: PostgreSQL
for those (`PG_TEST_PORT=25450 scripts/dev/pg-test-server.sh` prints one).
What it measures, with one sequential client:
- the read workloads of the shared side-by-side benchmark (same queries,
  with this dataset's aggregate and project uuids), nova's boot request
  (`resources=VCPU:1,MEMORY_MB:512,DISK_GB:10&limit=1000`), the same without
  a limit, the whole provider list and one provider's usages: median and p95
  latency (request sent .. whole body read) and the answer's size;
- the database floor: the capacity query alone for nova's request
  (inventories joined with summed allocations, capacity =
  (total - reserved) * allocation_ratio - used >= amount, within min_unit,
  max_unit and step_size), its execution time by EXPLAIN (ANALYZE), in the
  same run against the same database;
- claims: C clients for S seconds, each looping GET /allocation_candidates
  (with a limit) then PUT /allocations/{new consumer} with the first
  candidate (again from the GET on 409, up to 3 times); afterwards no
  provider's usage may exceed its capacity (checked on every provider in the
  database) and every claim must read back as written;
- the peak RSS of the gunicorn workers (VmHWM of the master's children).

The table goes to stdout, everything (samples included) to the JSON file.
Needs Django's settings only for the dataset's names (load_scale.Names).
"""
import argparse
import concurrent.futures as cf
import http.client
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid

from scripts.bench import percentile
from scripts.harness.api import api_request
from scripts.harness.placement import REPO
from scripts.harness.placement import Server
from scripts.harness.process import children
from scripts.harness.process import memory_mib

ROOT = str(REPO)

MICROVERSION = '1.39'
NOVA = 'resources=VCPU:1,MEMORY_MB:512,DISK_GB:10'
PERFLOAD = 'resources=VCPU:1,DISK_GB:10,MEMORY_MB:256&member_of={agg}&required=HW_CPU_X86_AVX2'
NESTED = ('resources=DISK_GB:10&resources_COMPUTE=VCPU:2,MEMORY_MB:2048'
          '&required_COMPUTE=HW_NUMA_ROOT&resources_NET=SRIOV_NET_VF:1'
          '&required_NET=CUSTOM_PHYSNET_TENANT&group_policy=isolate&same_subtree=_COMPUTE,_NET')


def workloads(names):
    """(name, path, microversion) in the order they run."""
    perfload = PERFLOAD.format(agg=names.host_aggregates[0])
    node = names.uuid('cn00000')
    return [
        ('candidates_nova_limit1000', f'/allocation_candidates?{NOVA}&limit=1000', MICROVERSION),
        ('candidates_simple',
         '/allocation_candidates?resources=VCPU:1,MEMORY_MB:256,DISK_GB:10', MICROVERSION),
        ('candidates_plain_unlimited', f'/allocation_candidates?{NOVA}', MICROVERSION),
        ('candidates_perfload', f'/allocation_candidates?{perfload}', MICROVERSION),
        ('candidates_perfload_limit50', f'/allocation_candidates?{perfload}&limit=50',
         MICROVERSION),
        ('candidates_nested_granular', f'/allocation_candidates?{NESTED}', MICROVERSION),
        ('candidates_sharing',
         '/allocation_candidates?resources=VCPU:1,MEMORY_MB:512,DISK_GB:2500', MICROVERSION),
        ('providers_filtered', ('/resource_providers?resources=VCPU:4,MEMORY_MB:4096'
                                '&required=HW_CPU_X86_AVX2,!COMPUTE_STATUS_DISABLED'),
         MICROVERSION),
        ('providers_list', '/resource_providers', MICROVERSION),
        ('provider_usages', f'/resource_providers/{node}/usages', MICROVERSION),
        ('usages_project', f'/usages?project_id={names.big_project}', '1.37'),
        ('provider_in_tree', f'/resource_providers?in_tree={node}', MICROVERSION),
        ('allocations_consumer', f'/allocations/{names.uuid("cn00000-consumer0")}',
         MICROVERSION),
    ]


# ---- HTTP ----

class Client:
    """One persistent connection per thread; reconnects when the server
    closes (gunicorn's sync workers close after every response)."""

    def __init__(self, url, timeout=900):
        parts = urllib.parse.urlsplit(url.rstrip('/'))
        self.host, self.port, self.prefix = parts.hostname, parts.port or 80, parts.path
        self.timeout = timeout
        self.local = threading.local()

    def request(self, method, path, body=None, version=MICROVERSION):
        headers, data = api_request(body, version)
        for attempt in range(3):
            conn = getattr(self.local, 'conn', None)
            if conn is None:
                conn = self.local.conn = http.client.HTTPConnection(
                    self.host, self.port, timeout=self.timeout)
            started = time.perf_counter()
            try:
                conn.request(method, self.prefix + path, body=data, headers=headers)
                response = conn.getresponse()
                raw = response.read()
            except (http.client.HTTPException, ConnectionError):
                conn.close()
                self.local.conn = None
                if attempt == 2:
                    raise
                continue
            elapsed = time.perf_counter() - started
            if response.will_close:
                conn.close()
                self.local.conn = None
            return response.status, raw, elapsed
        raise RuntimeError('unreachable')


def describe(body):
    """What an answer holds, in a few words."""
    if 'allocation_requests' in body:
        return (f'{len(body["allocation_requests"])} candidates, '
                f'{len(body.get("provider_summaries", {}))} summaries')
    if 'resource_providers' in body:
        return f'{len(body["resource_providers"])} providers'
    if 'usages' in body:
        return f'{len(body["usages"])} classes'
    if 'allocations' in body:
        return f'{len(body["allocations"])} providers'
    return '?'


# ---- read workloads ----

def run_read(client, name, path, version, *, reps, warmup, budget, min_reps, log,
             between=None):
    """`between` (optional) runs after every timed request: the database
    floor is sampled that way, so both see the same machine noise."""
    for _ in range(warmup):
        client.request('GET', path, version=version)
    samples, sizes, statuses = [], set(), {}
    what = None
    started = time.monotonic()
    while len(samples) < reps:
        status, raw, elapsed = client.request('GET', path, version=version)
        statuses[status] = statuses.get(status, 0) + 1
        samples.append(elapsed)
        sizes.add(len(raw))
        if what is None:
            what = describe(json.loads(raw)) if status == 200 else raw[:200].decode()
        if between is not None:
            between()
        if len(samples) >= min_reps and time.monotonic() - started > budget:
            break
    ms = [s * 1000 for s in samples]
    result = {'path': path, 'microversion': version, 'n': len(ms),
              'median_ms': statistics.median(ms), 'p95_ms': percentile(ms, 95),
              'min_ms': min(ms), 'max_ms': max(ms), 'bytes': max(sizes), 'answer': what,
              'statuses': statuses, 'samples_ms': [round(x, 2) for x in ms]}
    log(f'{name:30s} {result["median_ms"]:9.1f} ms  p95 {result["p95_ms"]:9.1f}  '
        f'{result["bytes"]:>11,d} B  n={len(ms)}  {what}')
    return result


# ---- the database floor ----

def capacity_sql(resources, *, summed=False):
    """The core capacity query: every (provider, class) able to supply
    `resources` ({class id: amount}), with its root. It reads the usage the
    database keeps per inventory (Inventory.used); with summed=True it sums
    the allocations of the requested classes instead, as a schema without
    that column must (the floor before it existed)."""
    used = 'COALESCE(u.used, 0)' if summed else 'inv.used'
    clauses, params = [], []
    for class_id, amount in sorted(resources.items()):
        clauses.append(
            f'(inv.resource_class_id = %s AND (inv.total - inv.reserved) * inv.allocation_ratio'
            f' - {used} >= %s AND inv.min_unit <= %s AND inv.max_unit >= %s'
            ' AND %s %% inv.step_size = 0)')
        params += [class_id, amount, amount, amount, amount]
    ids = ', '.join(str(int(i)) for i in sorted(resources))
    usage = f"""
        LEFT JOIN (SELECT resource_provider_id, resource_class_id, SUM(used) AS used
                   FROM allocations WHERE resource_class_id IN ({ids})
                   GROUP BY resource_provider_id, resource_class_id) u
               ON u.resource_provider_id = inv.resource_provider_id
              AND u.resource_class_id = inv.resource_class_id""" if summed else ''
    sql = f"""
        SELECT inv.resource_provider_id, rp.root_provider_id, inv.resource_class_id,
               (inv.total - inv.reserved) * inv.allocation_ratio - {used} AS free
        FROM inventories inv
        JOIN resource_providers rp ON rp.id = inv.resource_provider_id{usage}
        WHERE inv.resource_class_id IN ({ids}) AND ({' OR '.join(clauses)})"""
    return sql, params


def explain_ms(cursor, sql, params):
    cursor.execute('EXPLAIN (ANALYZE, FORMAT JSON) ' + sql, params)
    plan = cursor.fetchone()[0]
    plan = json.loads(plan) if isinstance(plan, str) else plan
    return plan[0]['Execution Time']


class Floor:
    """The capacity query for nova's request, timed by EXPLAIN (ANALYZE)
    (execution time on the server, no transfer) and by running it and
    fetching its rows; the summing variant is timed alongside for
    reference."""
    WANTED = (('VCPU', 1), ('MEMORY_MB', 512), ('DISK_GB', 10))

    def __init__(self, connection):
        self.connection = connection
        with connection.cursor() as cursor:
            wanted = dict(self.WANTED)
            cursor.execute('SELECT name, id FROM resource_classes WHERE name IN %s',
                           [tuple(wanted)])
            resources = {class_id: wanted[name] for name, class_id in cursor.fetchall()}
        self.sql, self.params = capacity_sql(resources)
        self.summed_sql, _ = capacity_sql(resources, summed=True)
        self.executions, self.summed_executions, self.walls, self.rows = [], [], [], []

    def sample(self):
        with self.connection.cursor() as cursor:
            self.executions.append(explain_ms(cursor, self.sql, self.params))
            self.summed_executions.append(explain_ms(cursor, self.summed_sql, self.params))
            started = time.perf_counter()
            cursor.execute(self.sql, self.params)
            self.rows = cursor.fetchall()
            self.walls.append((time.perf_counter() - started) * 1000)

    def result(self):
        with self.connection.cursor() as cursor:
            cursor.execute('EXPLAIN (ANALYZE) ' + self.sql, self.params)
            plan_text = '\n'.join(r[0] for r in cursor.fetchall())
        return {'sql': ' '.join(self.sql.split()), 'params': self.params,
                'rows': len(self.rows), 'providers': len({r[0] for r in self.rows}),
                'trees': len({r[1] for r in self.rows}),
                'execution_median_ms': statistics.median(self.executions),
                'execution_min_ms': min(self.executions),
                'execution_ms': [round(x, 2) for x in self.executions],
                'summed_execution_median_ms': statistics.median(self.summed_executions),
                'summed_execution_ms': [round(x, 2) for x in self.summed_executions],
                'query_and_fetch_median_ms': statistics.median(self.walls),
                'plan': plan_text}


def capacity_violations(cursor):
    cursor.execute("""
        SELECT rp.uuid, rc.name, inv.total, inv.reserved, inv.allocation_ratio, u.used
        FROM inventories inv
        JOIN resource_providers rp ON rp.id = inv.resource_provider_id
        JOIN resource_classes rc ON rc.id = inv.resource_class_id
        JOIN (SELECT resource_provider_id, resource_class_id, SUM(used) AS used
              FROM allocations GROUP BY resource_provider_id, resource_class_id) u
          ON u.resource_provider_id = inv.resource_provider_id
         AND u.resource_class_id = inv.resource_class_id
        WHERE u.used > (inv.total - inv.reserved) * inv.allocation_ratio""")
    return [list(map(str, row)) for row in cursor.fetchall()]


def allocations_without_inventory(cursor):
    cursor.execute("""
        SELECT COUNT(*) FROM allocations a LEFT JOIN inventories inv
          ON inv.resource_provider_id = a.resource_provider_id
         AND inv.resource_class_id = a.resource_class_id
        WHERE inv.id IS NULL""")
    return cursor.fetchone()[0]


# ---- claims ----

class ClaimStats:
    def __init__(self):
        self.lock = threading.Lock()
        self.claims = []          # (consumer, allocations) that got 204
        self.conflicts = {}       # error code -> count
        self.gave_up = self.no_candidates = 0
        self.errors = []
        self.latency = []         # GET + PUT of successful claims, seconds

    def conflict(self, raw):
        try:
            code = json.loads(raw)['errors'][0].get('code')
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            code = '?'
        with self.lock:
            self.conflicts[code] = self.conflicts.get(code, 0) + 1


def claimer(client, query, names, deadline, stats, index):
    project = names.projects[1 + index % (len(names.projects) - 1)]
    user = names.users[1 + index % (len(names.projects) - 1)][0]
    while time.monotonic() < deadline:
        consumer = str(uuid.uuid4())
        started = time.perf_counter()
        for _attempt in range(4):
            status, raw, _ = client.request('GET', f'/allocation_candidates?{query}')
            if status != 200:
                stats.errors.append(f'GET {status} {raw[:200]!r}')
                return
            requests = json.loads(raw)['allocation_requests']
            if not requests:
                with stats.lock:
                    stats.no_candidates += 1
                time.sleep(0.5)
                break
            body = {'allocations': requests[0]['allocations'],
                    'mappings': requests[0].get('mappings', {}),
                    'project_id': project, 'user_id': user,
                    'consumer_generation': None, 'consumer_type': 'INSTANCE'}
            status, raw, _ = client.request('PUT', f'/allocations/{consumer}', body)
            if status == 204:
                with stats.lock:
                    stats.claims.append((consumer, requests[0]['allocations']))
                    stats.latency.append(time.perf_counter() - started)
                break
            if status == 409:
                stats.conflict(raw)
                continue
            stats.errors.append(f'PUT {status} {raw[:200]!r}')
            return
        else:
            with stats.lock:
                stats.gave_up += 1


def run_claims(client, names, query, clients, seconds, log):
    stats = ClaimStats()
    deadline = time.monotonic() + seconds
    started = time.monotonic()
    with cf.ThreadPoolExecutor(clients) as pool:
        for future in [pool.submit(claimer, client, query, names, deadline, stats, i)
                       for i in range(clients)]:
            future.result()
    elapsed = time.monotonic() - started
    lost = 0
    for consumer, allocations in stats.claims:
        _status, raw, _ = client.request('GET', f'/allocations/{consumer}')
        got = {rp: a['resources'] for rp, a in json.loads(raw)['allocations'].items()}
        if got != {rp: a['resources'] for rp, a in allocations.items()}:
            lost += 1
    ms = [x * 1000 for x in stats.latency]
    result = {'query': query, 'clients': clients, 'seconds': round(elapsed, 1),
              'claims': len(stats.claims), 'claims_per_s': len(stats.claims) / elapsed,
              'conflicts_409': sum(stats.conflicts.values()), 'conflict_codes': stats.conflicts,
              'gave_up': stats.gave_up, 'no_candidates': stats.no_candidates,
              'errors': len(stats.errors), 'error_samples': stats.errors[:5], 'lost': lost,
              'claim_median_ms': statistics.median(ms) if ms else None,
              'claim_p95_ms': percentile(ms, 95)}
    log(f'claims: {result["claims"]} in {elapsed:.1f}s = {result["claims_per_s"]:.2f}/s with '
        f'{clients} clients, {result["conflicts_409"]} x 409 {stats.conflicts}, '
        f'{stats.gave_up} gave up, {len(stats.errors)} errors, {lost} lost')
    return result


# ---- the server's workers ----

def find_master(port):
    """The gunicorn master bound to this port (by its command line)."""
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open(f'/proc/{entry}/cmdline', 'rb') as f:
                cmd = f.read().replace(b'\0', b' ').decode(errors='replace')
        except OSError:
            continue
        if 'gunicorn' in cmd and f':{port}' in cmd and children(int(entry)):
            return int(entry)
    return None


class RssSampler(threading.Thread):
    """Samples the workers' RSS every second; VmHWM keeps each one's peak."""

    def __init__(self, master):
        super().__init__(daemon=True)
        self.master = master
        self.peak_rss = 0
        self.workers = {}
        self.stop = threading.Event()

    def run(self):
        while not self.stop.wait(1.0):
            self.sample()

    def sample(self):
        for pid in children(self.master):
            m = {key: int(mib) for key, mib in
                 (memory_mib(pid, ('VmHWM', 'VmRSS')) or {}).items()}
            if m:
                self.workers[pid] = m
                self.peak_rss = max(self.peak_rss, m.get('VmRSS', 0))


# ---- main ----

def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m scripts.bench.scale', description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--url', help='measure the server there (default: serve one here)')
    parser.add_argument('--database-url', default=os.environ.get('DATABASE_URL'),
                        help='the server\'s database (PostgreSQL), for the floor and the '
                             'capacity check (default: $DATABASE_URL)')
    parser.add_argument('--load', type=int, metavar='N',
                        help='migrate and load N compute nodes first (manage.py load_scale)')
    parser.add_argument('--port', type=int, help='where to serve (default: a free port)')
    parser.add_argument('--workers', type=int, default=2, help='gunicorn sync workers (2)')
    parser.add_argument('--gunicorn-timeout', type=int, default=900)
    parser.add_argument('--seed', type=int, default=42)
    parser.add_argument('--reps', type=int, default=20, help='at most this many per workload')
    parser.add_argument('--min-reps', type=int, default=3)
    parser.add_argument('--warmup', type=int, default=1)
    parser.add_argument('--budget', type=float, default=60,
                        help='seconds per read workload (after --min-reps)')
    parser.add_argument('--workloads', help='comma-separated subset of the read workloads')
    parser.add_argument('--floor-reps', type=int, default=5)
    parser.add_argument('--server-pid', type=int,
                        help='the gunicorn master (default: found by the port)')
    parser.add_argument('--claim-clients', type=int, default=10)
    parser.add_argument('--claim-seconds', type=float, default=30)
    parser.add_argument('--claim-limit', type=int, default=5,
                        help='the limit on the claims\' candidate request')
    parser.add_argument('--claim-query', default='perfload', choices=('perfload', 'nova'),
                        help="perfload: the shared bench's claim query; nova: nova's request")
    parser.add_argument('--json', help='where to write the results '
                        '(default /tmp/scale-bench-TIME.json)')
    args = parser.parse_args(argv)
    if not args.url and not args.database_url:
        parser.error('DATABASE_URL or --database-url names the database to serve')
    if args.database_url:
        os.environ['DATABASE_URL'] = args.database_url
    server = None
    if not args.url:
        if args.load:
            load(args.load, args.seed)
        server = Server(tempfile.mkdtemp(prefix='scale-bench-'), database_url=args.database_url,
                        port=args.port, workers=args.workers, threads=None,
                        env={'PLACEMENT_AUTH_STRATEGY': 'noauth2'},
                        gunicorn_args=['--timeout', str(args.gunicorn_timeout)])
        print(f'serving on {server.url} (log: {server.log_path})', flush=True)
        server.start(timeout=300)
        args.url, args.server_pid = server.url, server.pid
    try:
        return measure(args)
    finally:
        if server is not None:
            server.stop(timeout=60)


def load(nodes, seed):
    """manage.py migrate, then load_scale of `nodes` compute nodes."""
    for command in (['migrate', '--noinput', '-v0'],
                    ['load_scale', '--compute-nodes', str(nodes), '--seed', str(seed)]):
        subprocess.run([sys.executable, 'manage.py', *command], cwd=ROOT, check=True)


def measure(args):
    """Every workload against args.url; the exit status."""
    os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'placement_site.settings')
    import django
    django.setup()
    from django.db import connection

    from allocations.management.commands.load_scale import Names

    def log(message):
        print(message, flush=True)

    names = Names(args.seed)
    client = Client(args.url)
    status, raw, _ = client.request('GET', '/resource_providers?name=cn00000')
    if status != 200 or not json.loads(raw)['resource_providers']:
        raise SystemExit(f'{args.url} has no provider cn00000: load it with '
                         f'manage.py load_scale --seed {args.seed}')
    use_db = connection.vendor == 'postgresql'
    port = urllib.parse.urlsplit(args.url).port
    master = args.server_pid or find_master(port)
    sampler = RssSampler(master) if master else None
    if sampler:
        sampler.start()

    result = {'url': args.url, 'seed': args.seed, 'started': time.strftime('%Y-%m-%dT%H:%M:%S'),
              'machine': {'platform': platform.platform(), 'python': platform.python_version(),
                          'cpus': os.cpu_count(), 'loadavg_start': os.getloadavg()},
              'commit': _commit()}
    if use_db:
        with connection.cursor() as cursor:
            cursor.execute('SELECT version()')
            result['machine']['database'] = cursor.fetchone()[0]
            cursor.execute('SELECT (SELECT COUNT(*) FROM resource_providers), '
                           '(SELECT COUNT(*) FROM consumers), (SELECT COUNT(*) FROM allocations)')
            providers, consumers, allocations = cursor.fetchone()
            result['dataset'] = {'providers': providers, 'consumers': consumers,
                                 'allocations': allocations}
            log(f'dataset: {providers} providers, {consumers} consumers, '
                f'{allocations} allocations')

    chosen = set(args.workloads.split(',')) if args.workloads else None
    floor = Floor(connection) if use_db else None
    reads = {}
    for name, path, version in workloads(names):
        if chosen and name not in chosen:
            continue
        interleave = floor.sample if floor and name == 'candidates_nova_limit1000' else None
        reads[name] = run_read(client, name, path, version, reps=args.reps,
                               warmup=args.warmup, budget=args.budget,
                               min_reps=args.min_reps, log=log, between=interleave)
    result['reads'] = reads

    if floor:
        while len(floor.executions) < args.floor_reps:
            floor.sample()
        result['floor'] = f = floor.result()
        log(f'database floor (capacity query for {NOVA}): EXPLAIN ANALYZE execution '
            f'{f["execution_median_ms"]:.1f} ms median (min {f["execution_min_ms"]:.1f}, '
            f'n={len(f["execution_ms"])}), query+fetch {f["query_and_fetch_median_ms"]:.1f} ms, '
            f'{f["rows"]} rows, {f["providers"]} providers in {f["trees"]} trees; summing '
            f'allocations instead: {f["summed_execution_median_ms"]:.1f} ms')
        if 'candidates_nova_limit1000' in reads:
            request = reads['candidates_nova_limit1000']
            ratio = request['median_ms'] / f['execution_median_ms']
            pairs = [r / e for r, e in zip(request['samples_ms'], f['execution_ms'])]
            result['limit1000_over_floor'] = ratio
            result['limit1000_over_floor_pairs'] = {
                'median': statistics.median(pairs), 'p10': percentile(pairs, 10),
                'p90': percentile(pairs, 90)}
            log(f'limit=1000 median / floor median = {ratio:.2f} (per pair: median '
                f'{statistics.median(pairs):.2f}, p10..p90 {percentile(pairs, 10):.2f}..'
                f'{percentile(pairs, 90):.2f})')

    if args.claim_seconds > 0:
        query = (PERFLOAD.format(agg=names.host_aggregates[0]) if args.claim_query == 'perfload'
                 else NOVA) + f'&limit={args.claim_limit}'
        result['claims'] = run_claims(client, names, query, args.claim_clients,
                                      args.claim_seconds, log)
        if use_db:
            with connection.cursor() as cursor:
                violations = capacity_violations(cursor)
                orphans = allocations_without_inventory(cursor)
            result['claims']['violations'] = len(violations)
            result['claims']['violation_samples'] = violations[:10]
            result['claims']['allocations_without_inventory'] = orphans
            log(f'capacity check (every provider): {len(violations)} violations, '
                f'{orphans} allocations without inventory')

    if sampler:
        sampler.stop.set()
        sampler.sample()
        result['workers'] = {str(pid): m for pid, m in sampler.workers.items()}
        result['peak_worker_rss_mib'] = max(
            [m.get('VmHWM', 0) for m in sampler.workers.values()] + [sampler.peak_rss])
        log(f'workers (master {master}): ' + ', '.join(
            f'{pid}: RSS {m.get("VmRSS")} MiB, peak {m.get("VmHWM")} MiB'
            for pid, m in sampler.workers.items()))
    result['machine']['loadavg_end'] = os.getloadavg()

    log('')
    log(table(result))
    out = args.json or time.strftime('/tmp/scale-bench-%Y%m%d-%H%M%S.json')
    with open(out, 'w') as f:
        json.dump(result, f, indent=1, default=str)
    log(f'\nresults: {out}')
    claims = result.get('claims', {})
    return 2 if claims.get('violations') or claims.get('lost') else 0


def _commit():
    try:
        return subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], cwd=ROOT, text=True,
                              capture_output=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def table(result):
    lines = [f'commit {result.get("commit")}, {result.get("dataset")}', '',
             '| workload | median ms | p95 ms | answer bytes | answer | n |',
             '| --- | ---: | ---: | ---: | --- | ---: |']
    for name, r in result['reads'].items():
        lines.append(f'| {name} | {r["median_ms"]:.1f} | {r["p95_ms"]:.1f} | {r["bytes"]:,} | '
                     f'{r["answer"]} | {r["n"]} |')
    if 'floor' in result:
        f = result['floor']
        lines.append(f'| database floor (EXPLAIN ANALYZE) | {f["execution_median_ms"]:.1f} | | | '
                     f'{f["providers"]} providers | {len(f["execution_ms"])} |')
        summed = f['summed_execution_median_ms']
        lines.append(f'| the same, summing allocations | {summed:.1f} | | | '
                     f'| {len(f["summed_execution_ms"])} |')
    if 'limit1000_over_floor' in result:
        pairs = result['limit1000_over_floor_pairs']
        lines.append(f'\nlimit=1000 / floor: {result["limit1000_over_floor"]:.2f}x (interleaved '
                     f'pairs: median {pairs["median"]:.2f}, p10..p90 {pairs["p10"]:.2f}..'
                     f'{pairs["p90"]:.2f})')
    c = result.get('claims')
    if c:
        lines.append(f'claims: {c["claims_per_s"]:.2f}/s ({c["claims"]} in {c["seconds"]} s, '
                     f'{c["clients"]} clients), {c["conflicts_409"]} x 409, gave up '
                     f'{c["gave_up"]}, errors {c["errors"]}, lost {c["lost"]}, violations '
                     f'{c.get("violations", "not checked")}')
    if 'peak_worker_rss_mib' in result:
        lines.append(f'peak worker RSS: {result["peak_worker_rss_mib"]} MiB')
    return '\n'.join(lines)


if __name__ == '__main__':
    sys.exit(main())
