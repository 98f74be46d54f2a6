"""The dashboards benchmark (docs/performance.md, "Dashboards at 100,000
providers"): every dashboard page, detail page type, admin list, GET
/capacity grouping, GET /metrics and the audit page, timed as a signed-in
staff user against a server holding the `manage.py load_scale` dataset, on a
quiet cloud or while claims and deletes land.

    DATABASE_URL=... .venv/bin/python -m scripts.bench.ui [--load N] [--warm]
        [--churn RATE]... [--claims RATE]... [--out DIR] [--port 19060] [--workers 2]
        [--seed 42] [--reps 5] [--seconds 60] [--rounds 3] [--nodes 50] [--writers 4]

It migrates the database DATABASE_URL names (postgresql://...: `PG_TEST_PORT=25450
scripts/dev/pg-test-server.sh` prints one; or sqlite:////abs/path), loads
--load N compute nodes first when asked (manage.py load_scale; the database
must have no providers; 40000 gives ~100,000 providers), prepares what the
pages show beyond them (below), serves it as scripts/run.sh does
(scripts/serve.sh: nginx in front, an API pool of --workers sync workers,
the operator pool of one niced gthread process; FRONT=none: one gunicorn),
runs the modes asked for against the same server, in this order (each
leaving the cloud its size), and stops the server:

  --warm          `measure`: every page timed warm (what runs when no mode is
                  asked for);
  --churn RATE    `churn`: every page's first read after a write while claims
                  and deletes land at RATE writes/s;
  --claims RATE   `claims`: the writes' latency at RATE writes/s alone, then
                  while an admin opens a page a second.

--churn and --claims may be given more than once. --out DIR keeps each
mode's JSON (samples included): measure.json, churn-RATE.json,
claims-RATE.json. The options after those are shared: a mode ignores those
it does not use. With --url the modes measure the server there instead (on
the same database) and nothing is served. E.g. the runs in
docs/performance.md:

    .venv/bin/python -m scripts.bench.ui --load 40000 --churn 2 --churn 10 --claims 2 \
        --out /tmp/ui-bench --seconds 60 --rounds 3

Environment: PLACEMENT_DATA_DIR (${TMPDIR:-/tmp}/ui-bench-PORT: the
pools' sockets, nginx's files and the metrics of this run alone), and
PLACEMENT_OPERATOR_STATEMENT_TIMEOUT_SECONDS (120 here, 10 by default: the
benchmark times the slow reads, an export or /metrics at 40,000 nodes,
rather than the default set-up's 503 at 10 s).

The preparation adds what load_scale does not write and the pages show: a
staff user (bench / bench-password), two pods over host aggregates with
their projects bound, and a usage-trend snapshot. `measure` signs in through the
login form, then for each page: one request to warm it, then `--reps`
timed ones (request sent .. whole body read, one connection per request on
loopback: the server's time plus a loopback round trip), reporting median
and worst, the status and the body's size (as sent, and as gzip would make
it for /metrics). A page that answers anything but 200 is reported, not
skipped. The table goes to stdout, everything to the JSON file.

`churn` writes through the Placement API at --rate writes a second (below)
while it reads every page in turn, each read sent as soon as a write has
landed (answered 204) after the previous read ended: the first read after a
write, which is what an admin gets on a live cloud. Each page is read once
before the writes start, as `measure` warms it. It reads round after round
until --seconds have passed and --rounds are done, finishing the round under
way so that every page has as many reads. Per page: median, p95 and worst
of those reads, their statuses (a 5xx is a finding, printed when it
happens) and the size; then the writes' own numbers. Goals: pages, admin
lists and /capacity 300 ms median and 600 ms p95 (PostgreSQL, MariaDB; 2x on
SQLite), /metrics 1.5 s and the audit page 1 s at p95 (2x on SQLite too);
exports and the explorer none.

`claims` runs --rounds rounds of the writes alone for --seconds, then
--seconds more while an admin opens one page a second (every page in turn
across the rounds, exports and the explorer included; one at a time, each a
second after the previous one started or when it ended, whichever is
later), and compares the writes' latency and rate in the two phases, naming
the pages the slowest browsed claims met.

What it writes: a claim is PUT /allocations/{new consumer} of VCPU:1,
MEMORY_MB:512, DISK_GB:10 on one of --nodes compute nodes drawn at random,
laid out as GET /allocation_candidates lays it out in that node's tree
(in_tree, asked once at start: a nested node's VCPU and MEMORY_MB on a NUMA
child, a diskless node's DISK_GB on a sharing provider of its storage
aggregate), for the big project a fifth of the time, as load_scale's
consumers are; a delete is DELETE /allocations/{one of its own consumers}.
Evenly spaced, open loop: write k is due at start + k/rate whatever the
earlier ones took, up to --writers at once (a write that finds them all
busy starts late: the achieved rate says so). The even ones claim, the odd
ones delete (or claim while it holds nothing), so the cloud keeps its size;
what it still holds at the end is deleted, untimed. Each write's latency
(request sent .. answer read, a new connection each) and status are kept:
409s, 5xx and failed connections counted.
"""
import argparse
import collections
import gzip
import http.client
import json
import os
import random
import re
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid

from scripts.bench import percentile
from scripts.harness.api import send
from scripts.harness.placement import REPO
from scripts.harness.process import Process

STAFF, PASSWORD = 'bench', 'bench-password-7Q'
MICROVERSION = '1.39'
API = {'X-Auth-Token': 'admin', 'OpenStack-API-Version': f'placement {MICROVERSION}'}
FLAVOR = 'VCPU:4,MEMORY_MB:8192,DISK_GB:80'
# The pages' goals, server time: warm, the median; the first read after a
# write, the median and twice that at p95.
GOALS_MS = {'postgresql': 300, 'sqlite': 600, 'mysql': 300}
METRICS_GOAL_MS = 1500
AUDIT_GOAL_MS = 1000
# What a claim takes: nova's smallest boot request (scripts/bench/scale.py's NOVA).
CLAIM = {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 10}


def django_setup():
    os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'placement_site.settings')
    import django
    django.setup()


# ---- prepare ------------------------------------------------------------------------

def prepare(seed):
    django_setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connections

    from allocations.management.commands.load_scale import Names
    from providers.pods import services as pod_services
    from providers.pods.models import Pod
    from providers.pods.selection import BindingRequest

    user, _ = get_user_model().objects.get_or_create(username=STAFF)
    user.is_staff = user.is_superuser = True
    user.set_password(PASSWORD)
    user.save()
    names = Names(seed)
    for index, aggregate in enumerate(names.host_aggregates[:2]):
        name = f'bench-pod-{index}'
        if not Pod.objects.filter(name=name).exists():
            pod_services.pod_create(name=name, aggregate_uuid=aggregate,
                                    thresholds={'VCPU': 80, 'MEMORY_MB': 85})
    for project in names.projects[:10]:
        pod_services.binding_request(BindingRequest(project_id=project))
    call_command('snapshot_usage')
    print(f'prepared: staff user {STAFF}, {Pod.objects.count()} pods, a usage snapshot',
          file=sys.stderr)
    connections.close_all()   # the server is the database's client from now on


# ---- measure ------------------------------------------------------------------------

def pages(session, url, seed):
    """(name, path, kind) of every page measured; detail pages of providers,
    pools, pods, projects and consumers picked from the dataset."""
    django_setup()
    from allocations.management.commands.load_scale import Names
    names = Names(seed)

    def api(path):
        answer = session.get(url + path, headers=API, timeout=600)
        answer.raise_for_status()
        return answer.json()

    flat = nested = None
    for rp in api('/resource_providers?name=cn00000')['resource_providers'] + api(
            '/resource_providers?name=cn00001')['resource_providers']:
        tree = api(f'/resource_providers?in_tree={rp["uuid"]}')['resource_providers']
        if len(tree) == 1:
            flat = flat or rp['uuid']
        else:
            nested = nested or rp['uuid']
    sharing = names.sharing[0][0]
    pool = names.host_aggregates[0]
    storage = names.storage_aggregates[0]
    pods = api('/pods')['pods']
    consumer = names.uuid('cn00000-consumer0')
    rows = [
        ('overview', '/ui/', 'page'),
        ('providers', '/ui/providers/', 'page'),
        ('providers, sorted by fullest', '/ui/providers/?sort=-utilization', 'page'),
        ('providers, trait filter', '/ui/providers/?trait=HW_CPU_X86_AVX512F', 'page'),
        ('provider: flat compute node', f'/ui/providers/{flat}/', 'page'),
        ('provider: nested compute node', f'/ui/providers/{nested}/', 'page'),
        ('provider: shared storage', f'/ui/providers/{sharing}/', 'page'),
        ('host: nested compute node tree', f'/ui/trees/{nested}/', 'page'),
        ('host: shared storage tree', f'/ui/trees/{sharing}/', 'page'),
        ('consumer', f'/ui/consumers/{consumer}/', 'page'),
        ('project', f'/ui/projects/{names.big_project}/', 'page'),
        ('providers, sorted by VCPU free', '/ui/providers/?sort=-free:VCPU', 'page'),
        ('providers, by UUID prefix', f'/ui/providers/?name={nested[:8]}', 'page'),
        ('providers, 60-80% utilized', '/ui/providers/?min_utilization=60&max_utilization=80',
         'page'),
        ('pools', '/ui/pools/', 'page'),
        ('pool: host aggregate', f'/ui/pools/{pool}/', 'page'),
        ('pool: storage aggregate', f'/ui/pools/{storage}/', 'page'),
        ('pods', '/ui/pods/', 'page'),
        ('pod', f'/ui/pods/{pods[0]["uuid"]}/' if pods else None, 'page'),
        ('usage', '/ui/usage/', 'page'),
        ('usage of a project', f'/ui/usage/?project={names.big_project}', 'page'),
        ('audit', '/ui/audit/', 'audit'),
        ('explorer, limit 10', f'/ui/explorer/?resources={FLAVOR}&limit=10', 'explorer'),
        ('admin: providers', '/admin/providers/resourceprovider/', 'admin'),
        ('admin: inventories', '/admin/providers/inventory/', 'admin'),
        ('admin: aggregates', '/admin/providers/aggregate/', 'admin'),
        ('admin: consumers', '/admin/allocations/consumer/', 'admin'),
        ('admin: allocations', '/admin/allocations/allocation/', 'admin'),
        ('admin: projects', '/admin/allocations/project/', 'admin'),
        ('admin: events', '/admin/providers/event/', 'admin'),
        ('admin: project usage snapshots', '/admin/allocations/projectusagesnapshot/', 'admin'),
        ('admin: a consumer', f'/admin/allocations/consumer/?q={consumer}', 'admin'),
        ('GET /capacity', '/capacity', 'api'),
        ('GET /capacity?group_by=aggregate', '/capacity?group_by=aggregate', 'api'),
        ('GET /capacity?resources=', f'/capacity?resources={FLAVOR}', 'api'),
        ('GET /capacity?group_by=aggregate&resources=',
         f'/capacity?group_by=aggregate&resources={FLAVOR}', 'api'),
        ('GET /capacity?group_by=trait', '/capacity?group_by=trait', 'api'),
        ('GET /capacity?group_by=trait&resources=',
         f'/capacity?group_by=trait&resources={FLAVOR}', 'api'),
        ('GET /capacity?group_by=availability_zone', '/capacity?group_by=availability_zone',
         'api'),
        ('GET /capacity?group_by=availability_zone&resources=',
         f'/capacity?group_by=availability_zone&resources={FLAVOR}', 'api'),
        ('GET /capacity/trends', '/capacity/trends', 'api'),
        ('GET /metrics', '/metrics', 'metrics'),
        # Whole lists, streamed (time to the last byte).
        ('export: every tree\'s books (GET /capacity?group_by=root, CSV)',
         '/capacity?group_by=root&format=csv', 'export'),
        ('export: every tree\'s books and fits (GET /capacity?group_by=root&resources=, CSV)',
         f'/capacity?group_by=root&resources={FLAVOR}&format=csv', 'export'),
        ('export: every provider (CSV)', '/ui/providers/?export=csv', 'export'),
        ('export: a pool\'s members (JSON)', f'/ui/pools/{pool}/?export=json', 'export'),
        ('export: a project\'s consumers (CSV)',
         f'/ui/projects/{names.big_project}/?export=csv', 'export'),
    ]
    return [row for row in rows if row[1]]


def sign_in(session, url):
    form = session.get(url + '/accounts/login/', timeout=60)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text).group(1)
    answer = session.post(url + '/accounts/login/?next=/ui/', timeout=60, data={
        'csrfmiddlewaretoken': token, 'username': STAFF, 'password': PASSWORD},
        headers={'Referer': url + '/accounts/login/'}, allow_redirects=False)
    if answer.status_code != 302:
        sys.exit(f'ui bench: signing in as {STAFF} failed ({answer.status_code}): '
                 'is the server on the database prepared here?')


def timed(session, url, path, kind):
    # The API's reads (an export among them) sign in with a token.
    headers = dict(API) if not path.startswith(('/ui/', '/admin/')) else {}
    headers['Connection'] = 'close'
    if kind == 'metrics':
        headers['Accept-Encoding'] = 'gzip'  # as Prometheus asks
        if os.environ.get('PLACEMENT_METRICS_TOKEN'):
            headers['Authorization'] = f'Bearer {os.environ["PLACEMENT_METRICS_TOKEN"]}'
    started = time.perf_counter()
    answer = session.get(url + path, headers=headers, timeout=900, stream=True)
    raw = answer.raw.read(decode_content=False)
    elapsed = time.perf_counter() - started
    return elapsed, answer.status_code, raw, answer.headers.get('Content-Encoding')


def size_note(raw, kind, encoding):
    """The body's size as sent; for /metrics, how it was compressed or what
    gzip would make of it."""
    size = len(raw)
    note = f'{size / 1e6:.2f} MB' if size >= 100_000 else f'{size / 1e3:.1f} kB'
    if kind == 'metrics':
        note += (f' ({encoding})' if encoding else
                 f' (not compressed; {len(gzip.compress(raw)) / 1e6:.2f} MB gzipped)')
    return note


def measure(url, reps, seed, vendor, out):
    import requests
    session = requests.Session()
    sign_in(session, url)
    goal = GOALS_MS.get(vendor)
    results = []
    print(f'| page | median ms | worst ms | status | size | within {goal} ms |')
    print('| --- | ---: | ---: | --- | ---: | --- |')
    for name, path, kind in pages(session, url, seed):
        timed(session, url, path, kind)  # warm
        samples, status, size, encoding = [], None, 0, None
        for _ in range(reps):
            elapsed, status, raw, encoding = timed(session, url, path, kind)
            samples.append(elapsed * 1000)
            size = len(raw)
        median, worst = statistics.median(samples), max(samples)
        # An export streams the whole list: its time grows with it, no goal.
        # The explorer keeps a page's goal, warm.
        limit = {'metrics': METRICS_GOAL_MS, 'audit': AUDIT_GOAL_MS, 'export': None}.get(kind, goal)
        ok = ('n/a' if limit is None else
              'yes' if status == 200 and median <= limit else 'no')
        print(f'| {name} | {median:.0f} | {worst:.0f} | {status} | '
              f'{size_note(raw, kind, encoding)} | {ok} |', flush=True)
        results.append({'name': name, 'path': path, 'kind': kind, 'status': status,
                        'bytes': size, 'content_encoding': encoding, 'median_ms': median,
                        'worst_ms': worst, 'samples_ms': samples, 'goal_ms': limit})
    write_json(out, {'mode': 'measure', 'url': url, 'vendor': vendor, 'reps': reps,
                     'results': results})


def write_json(out, result):
    if out:
        with open(out, 'w') as f:
            json.dump(result, f, indent=1)


def spread(values):
    """{n, median_ms, p95_ms, max_ms} of latencies in ms."""
    return {'n': len(values), 'median_ms': statistics.median(values) if values else None,
            'p95_ms': percentile(values, 95), 'max_ms': max(values) if values else None}


def ms(value):
    return '-' if value is None else f'{value:,.0f}'


# ---- writes: claims and deletes through the API ---------------------------------------

def compute_nodes(url, names):
    """How many compute nodes the cloud has: load_scale names them cn00000
    upwards, so a few GET /resource_providers?name= find the last one."""
    def exists(index):
        answer = api_get(url, f'/resource_providers?name={names.node_name(index)}')
        return bool(answer['resource_providers'])

    if not exists(0):
        sys.exit('ui bench: no compute node cn00000: load the cloud with manage.py load_scale')
    low, high = 0, 1
    while exists(high):
        low, high = high, high * 2
    while high - low > 1:  # low exists, high does not
        middle = (low + high) // 2
        low, high = (middle, high) if exists(middle) else (low, middle)
    return low + 1


def api_get(url, path):
    parts = urllib.parse.urlsplit(url)
    response, raw, _ = send(parts.port or 80, 'GET', path, version=MICROVERSION,
                            host=parts.hostname, timeout=600)
    if response.status != 200:
        sys.exit(f'ui bench: GET {path} answered {response.status}: {raw[:300]!r}')
    return json.loads(raw)


def claim_targets(url, names, count, rng):
    """Where claims go: the first allocation request GET
    /allocation_candidates offers for CLAIM in each of `count` compute nodes'
    trees, drawn at random. A diskless node has no candidate in its tree
    alone: its DISK_GB is asked of the sharing providers of the storage
    aggregates, as a group of its own."""
    nodes = compute_nodes(url, names)
    shape = ','.join(f'{name}:{amount}' for name, amount in CLAIM.items())
    rest = ','.join(f'{name}:{amount}' for name, amount in CLAIM.items() if name != 'DISK_GB')
    shared_disk = (f'resources_DISK=DISK_GB:{CLAIM["DISK_GB"]}'
                   f'&member_of_DISK=in:{",".join(names.storage_aggregates)}&group_policy=none')
    targets = []
    for index in rng.sample(range(nodes), min(count, nodes)):
        node = names.uuid(names.node_name(index))
        for query in (f'resources={shape}&in_tree={node}',
                      f'resources={rest}&in_tree={node}&{shared_disk}'):
            offers = api_get(url, f'/allocation_candidates?{query}&limit=1')[
                'allocation_requests']
            if offers:
                targets.append({'node': node, **offers[0]})
                break
    if not targets:
        sys.exit(f'ui bench: no compute node of {nodes} has room for {shape}')
    print(f'ui bench: claims go to {len(targets)} of {nodes} compute nodes', file=sys.stderr)
    return targets


class Writer:
    """Claims and deletes through the API at `rate` writes a second (the
    module's docstring says how); `landed` counts the writes answered 204,
    and wait_landed() waits for the next one."""

    def __init__(self, url, targets, names, rate, seed, writers, big_project_share):
        parts = urllib.parse.urlsplit(url)
        self.host, self.port = parts.hostname, parts.port or 80
        self.targets, self.names, self.rate = targets, names, rate
        self.big_project_share = big_project_share
        self.random = random.Random(seed)
        self.threads = [threading.Thread(target=self._run, daemon=True) for _ in range(writers)]
        self.stopping = threading.Event()
        self.changed = threading.Condition()  # guards everything below
        self.landed = self.slot = 0
        self.held = []     # consumers claimed and not deleted
        self.records = []  # one per write, in the order they ended
        self.phase = None  # what the writes started now are labelled with

    def start(self):
        self.started = time.monotonic()
        for thread in self.threads:
            thread.start()

    def stop(self):
        """Starts no more writes, waits for those under way; the seconds it wrote."""
        self.stopping.set()
        for thread in self.threads:
            thread.join()
        return time.monotonic() - self.started

    def wait_landed(self, seen, timeout):
        """Until more than `seen` writes have landed; False after `timeout` s."""
        with self.changed:
            return self.changed.wait_for(lambda: self.landed > seen, timeout)

    def release(self):
        """Deletes the consumers it still holds (untimed): the cloud as it was."""
        for consumer in self.held:
            send(self.port, 'DELETE', f'/allocations/{consumer}', version=MICROVERSION,
                 host=self.host, timeout=600)
        released, self.held = len(self.held), []
        return released

    def _run(self):
        while True:
            with self.changed:
                slot = self.slot
                self.slot += 1
            due = self.started + slot / self.rate
            if self.stopping.wait(max(0.0, due - time.monotonic())):
                return
            self._write(slot, due)

    def _write(self, slot, due):
        with self.changed:
            phase = self.phase
            if slot % 2 and self.held:
                op, consumer = 'delete', self.held.pop(self.random.randrange(len(self.held)))
                body = None
            else:
                op, consumer, body = 'claim', str(uuid.uuid4()), self._claim()
        started = time.monotonic()
        try:
            response, raw, seconds = send(
                self.port, 'PUT' if op == 'claim' else 'DELETE', f'/allocations/{consumer}',
                body, MICROVERSION, host=self.host, timeout=600)
            status = response.status
        except (OSError, http.client.HTTPException) as error:
            status, raw, seconds = 0, str(error).encode(), time.monotonic() - started
        record = {'op': op, 'phase': phase, 'at_s': round(started - self.started, 3),
                  'late_ms': max(0.0, started - due) * 1000, 'ms': seconds * 1000,
                  'status': status}
        if status != 204:
            record['answer'] = raw[:300].decode(errors='replace')
        if status >= 500 or status == 0:
            print(f'ui bench: FINDING: {op} of {consumer} answered {status or "nothing"}: '
                  f'{record["answer"]}', file=sys.stderr, flush=True)
        with self.changed:
            self.records.append(record)
            if status == 204:
                if op == 'claim':
                    self.held.append(consumer)
                self.landed += 1
                self.changed.notify_all()
            elif op == 'delete':
                self.held.append(consumer)  # may still be there: release() tries again

    def _claim(self):
        """A claim's body (with the lock held: self.random is shared)."""
        target = self.random.choice(self.targets)
        projects = self.names.projects
        project = 0 if self.random.random() < self.big_project_share else \
            self.random.randrange(1, len(projects))
        return {'allocations': target['allocations'], 'mappings': target.get('mappings', {}),
                'project_id': projects[project],
                'user_id': self.random.choice(self.names.users[project]),
                'consumer_generation': None, 'consumer_type': 'INSTANCE'}


def write_numbers(records, seconds):
    """What the writes achieved in `seconds`: counts, rates, latencies."""
    claims = [r for r in records if r['op'] == 'claim']
    deletes = [r for r in records if r['op'] == 'delete']
    statuses = collections.Counter(r['status'] for r in records)
    made = collections.Counter(r['op'] for r in records if r['status'] == 204)
    return {'seconds': seconds, 'writes': len(records), 'claims_made': made['claim'],
            'deletes_made': made['delete'], 'claims_per_s': made['claim'] / seconds,
            'writes_per_s': (made['claim'] + made['delete']) / seconds,
            # Every write sent, whatever its answer: the scheduler waits for each.
            'claim': spread([r['ms'] for r in claims]),
            'delete': spread([r['ms'] for r in deletes]),
            'write': spread([r['ms'] for r in records]),
            'late_p95_ms': percentile([r['late_ms'] for r in records], 95),
            'conflicts_409': statuses[409],
            'errors_5xx': sum(n for status, n in statuses.items() if status >= 500),
            'no_answer': statuses[0], 'statuses': dict(statuses)}


def writes_table(rows, rate):
    print(f'\n| writes at {rate:g}/s | seconds | writes/s | claims/s | claim median ms '
          '| claim p95 ms | claim max ms | delete median ms | delete p95 ms | 409 | 5xx '
          '| no answer | started late, p95 ms |')
    print('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: '
          '| ---: |')
    for label, n in rows:
        print(f'| {label} | {n["seconds"]:.0f} | {n["writes_per_s"]:.2f} | '
              f'{n["claims_per_s"]:.2f} | {ms(n["claim"]["median_ms"])} | '
              f'{ms(n["claim"]["p95_ms"])} | {ms(n["claim"]["max_ms"])} | '
              f'{ms(n["delete"]["median_ms"])} | {ms(n["delete"]["p95_ms"])} | '
              f'{n["conflicts_409"]} | {n["errors_5xx"]} | {n["no_answer"]} | '
              f'{ms(n["late_p95_ms"])} |', flush=True)


# ---- churn and claims: pages read while the writes land -------------------------------

def churn_goal(kind, vendor):
    """(median ms or None, p95 ms) a first read after a write should be
    within (the explorer's is a page's), or
    None for no goal (exports)."""
    factor = 2 if vendor == 'sqlite' else 1
    if kind == 'export':
        return None
    if kind in ('metrics', 'audit'):
        return None, factor * (METRICS_GOAL_MS if kind == 'metrics' else AUDIT_GOAL_MS)
    return factor * GOALS_MS['postgresql'], factor * 2 * GOALS_MS['postgresql']


def read_page(session, url, page, result):
    """One timed read of page (name, path, kind) into result (its dict of
    samples); a 5xx, or no answer, is printed as a finding."""
    import requests
    name, path, kind = page
    started = time.perf_counter()
    try:
        elapsed, status, raw, encoding = timed(session, url, path, kind)
    except requests.RequestException as error:
        elapsed, status, raw, encoding = time.perf_counter() - started, 0, str(error).encode(), None
    result['samples_ms'].append(elapsed * 1000)
    result['statuses'].append(status)
    result['bytes'], result['content_encoding'] = len(raw), encoding
    result['size'] = size_note(raw, kind, encoding)
    if status != 200:
        answer = raw[:300].decode(errors='replace')
        result['answers'].append({'status': status, 'answer': answer})
        if status >= 500 or status == 0:
            print(f'ui bench: FINDING: {name} ({path}) answered {status or "nothing"}: {answer}',
                  file=sys.stderr, flush=True)
    return elapsed


def page_results(rows):
    return [{'name': name, 'path': path, 'kind': kind, 'samples_ms': [], 'statuses': [],
             'answers': []} for name, path, kind in rows]


def statuses_note(statuses):
    counts = collections.Counter(statuses)
    if len(counts) == 1:
        return str(statuses[0])
    return ', '.join(f'{status} x{n}' for status, n in sorted(counts.items()))


def set_up_writes(url, seed, nodes, rate, writers):
    """A signed-in session, the pages, the dataset's names and a Writer."""
    import requests

    session = requests.Session()
    sign_in(session, url)
    rows = pages(session, url, seed)  # sets Django up, for load_scale's names
    from allocations.management.commands.load_scale import BIG_PROJECT_SHARE
    from allocations.management.commands.load_scale import Names
    names = Names(seed)
    targets = claim_targets(url, names, nodes, random.Random(seed))
    return session, rows, Writer(url, targets, names, rate, seed, writers, BIG_PROJECT_SHARE)


def churn(url, rate, seconds, rounds, seed, vendor, out, nodes, writers):
    session, rows, writer = set_up_writes(url, seed, nodes, rate, writers)
    results = page_results(rows)
    for page in rows:
        timed(session, url, page[1], page[2])  # warm, as measure does
    writer.start()
    started, done, seen = time.monotonic(), 0, 0
    while done < rounds or time.monotonic() - started < seconds:
        for page, result in zip(rows, results):
            # A write lands every 1/rate s: waiting many times that means none will.
            patience = max(30.0, 20 / rate)
            if not writer.wait_landed(seen, patience):
                writer.stop()
                sys.exit(f'ui bench: no write landed for {patience:.0f} s; the writes answered '
                         f'{collections.Counter(r["status"] for r in writer.records)}')
            read_page(session, url, page, result)
            seen = writer.landed
        done += 1
    numbers = write_numbers(writer.records, writer.stop())
    released = writer.release()

    print(f'\nFirst read after a write, {rate:g} writes/s, {done} reads of each page '
          f'({vendor}):\n')
    print('| page | median ms | p95 ms | worst ms | status | size | goal ms (median / p95) '
          '| within |')
    print('| --- | ---: | ---: | ---: | --- | ---: | --- | --- |')
    for result in results:
        samples, statuses = result['samples_ms'], result['statuses']
        result.update(spread(samples))
        goal = churn_goal(result['kind'], vendor)
        result['goal_ms'] = goal
        if goal is None:
            within, goal_note = 'n/a', '-'
        else:
            median_goal, p95_goal = goal
            within = 'yes' if (all(status == 200 for status in statuses)
                               and (median_goal is None or result['median_ms'] <= median_goal)
                               and result['p95_ms'] <= p95_goal) else 'no'
            goal_note = f'{median_goal} / {p95_goal}' if median_goal else f'p95 {p95_goal:,}'
        result['within'] = within
        print(f'| {result["name"]} | {ms(result["median_ms"])} | {ms(result["p95_ms"])} | '
              f'{ms(result["max_ms"])} | {statuses_note(statuses)} | {result["size"]} | '
              f'{goal_note} | {within} |')
    writes_table([('while the pages are read', numbers)], rate)
    failures = [r for r in results if any(s >= 500 or s == 0 for s in r['statuses'])]
    print(f'\n{numbers["claims_made"]} claims and {numbers["deletes_made"]} deletes made '
          f'({released} held at the end, deleted after); pages answering 5xx or '
          f'nothing: {", ".join(r["name"] for r in failures) or "none"}')
    write_json(out, {'mode': 'churn', 'url': url, 'vendor': vendor, 'rate': rate,
                     'rounds': done, 'seconds': numbers['seconds'], 'writers': writers,
                     'claim': CLAIM, 'targets': len(writer.targets), 'writes': numbers,
                     'released': released, 'results': results,
                     'write_samples': writer.records})


def claims(url, rate, seconds, rounds, seed, vendor, out, nodes, writers):
    session, rows, writer = set_up_writes(url, seed, nodes, rate, writers)
    results = page_results(rows)
    # Rounds of the writes alone then browsed, interleaved: the machine's
    # drift (another tenant, a checkpoint) falls on both phases alike, and
    # a p95 over rounds x seconds of claims is not a handful's maximum.
    opened, spans, phase_seconds = 0, [], collections.Counter()
    writer.phase = 'alone'
    writer.start()
    for _ in range(rounds):
        writer.phase, began = 'alone', time.monotonic()
        time.sleep(seconds)
        writer.phase, switched = 'browsed', time.monotonic()
        phase_seconds['alone'] += switched - began
        # An admin: one page a second, in turn, each after the previous one ended.
        due = switched
        while time.monotonic() - switched < seconds:
            time.sleep(max(0.0, due - time.monotonic()))
            due = time.monotonic() + 1
            index = opened % len(rows)
            began_page = time.monotonic() - writer.started
            read_page(session, url, rows[index], results[index])
            spans.append((began_page, time.monotonic() - writer.started, rows[index][0]))
            opened += 1
        phase_seconds['browsed'] += time.monotonic() - switched
    writer.stop()
    released = writer.release()
    alone = write_numbers([r for r in writer.records if r['phase'] == 'alone'],
                          phase_seconds['alone'])
    browsed = write_numbers([r for r in writer.records if r['phase'] == 'browsed'],
                            phase_seconds['browsed'])
    writes_table([('alone', alone), ('an admin opening a page a second', browsed)], rate)
    ratio = (browsed['claim']['p95_ms'] / alone['claim']['p95_ms']
             if alone['claim']['p95_ms'] and browsed['claim']['p95_ms'] else None)
    statuses = [s for result in results for s in result['statuses']]
    failures = [r['name'] for r in results if any(s >= 500 or s == 0 for s in r['statuses'])]
    print(f'\nclaims\' p95 with pages browsed / without: '
          f'{"-" if ratio is None else f"{ratio:.2f}"} (goal: within 1.2; {rounds} rounds of '
          f'{seconds:g} s each); pages opened: '
          f'{opened} ({statuses_note(statuses) if statuses else "none"}); answering 5xx or '
          f'nothing: {", ".join(failures) or "none"}; {released} held at the end, deleted '
          'after')
    # Which page each of the slowest browsed claims met (what to look at next).
    slowest = sorted((r for r in writer.records if r['phase'] == 'browsed'
                      and r['op'] == 'claim'), key=lambda r: -r['ms'])[:10]
    for record in slowest:
        met = [name for began, ended, name in spans
               if began < record['at_s'] + record['ms'] / 1000 and ended > record['at_s']]
        print(f'  a claim of {record["ms"]:.0f} ms met: {", ".join(met) or "no page"}')
    for result in results:
        result.update(spread(result['samples_ms']))
    write_json(out, {'mode': 'claims', 'url': url, 'vendor': vendor, 'rate': rate,
                     'seconds': seconds, 'rounds': rounds, 'writers': writers, 'claim': CLAIM,
                     'targets': len(writer.targets), 'alone': alone, 'browsed': browsed,
                     'claim_p95_ratio': ratio, 'pages_opened': opened, 'released': released,
                     'results': results, 'pages_opened_s': spans,
                     'write_samples': writer.records})


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m scripts.bench.ui',
                                     description=__doc__.split('\n\n')[0])
    parser.add_argument('--load', type=int, metavar='N',
                        help='migrate and load N compute nodes first (manage.py load_scale)')
    parser.add_argument('--warm', action='store_true',
                        help='every page timed warm (the default when no mode is asked for)')
    parser.add_argument('--churn', type=float, action='append', default=[], metavar='RATE',
                        help='first reads after a write, writes landing at RATE a second')
    parser.add_argument('--claims', type=float, action='append', default=[], metavar='RATE',
                        help='the writes at RATE a second, alone and while pages are read')
    parser.add_argument('--out', help="each mode's JSON in this directory")
    parser.add_argument('--url', help='measure the server there (default: serve one here)')
    parser.add_argument('--port', type=int, default=19060, help='where to serve (19060)')
    parser.add_argument('--workers', type=int, default=2, help="the API pool's (2, as run.sh)")
    parser.add_argument('--seed', type=int, default=42)
    parser.add_argument('--reps', type=int, default=5, help='measure: timed reads per page')
    parser.add_argument('--seconds', type=float, default=60,
                        help='churn: at least this long; claims: each phase of a round')
    parser.add_argument('--rounds', type=int, default=3,
                        help='churn: at least this many; claims: this many, alone then browsed')
    parser.add_argument('--nodes', type=int, default=50,
                        help='churn, claims: compute nodes the claims go to')
    parser.add_argument('--writers', type=int, default=4,
                        help='churn, claims: writes under way at most at once')
    args = parser.parse_args(argv)
    database = os.environ.get('DATABASE_URL')
    if not database:
        parser.error('DATABASE_URL names the database to load, prepare and serve')
    if any(rate <= 0 for rate in args.churn + args.claims):
        parser.error('--churn and --claims take a rate above 0, writes a second')
    vendor = ('postgresql' if database.startswith('postgres') else
              'mysql' if database.startswith(('mysql', 'mariadb')) else 'sqlite')
    os.environ.setdefault('PLACEMENT_DATA_DIR', os.path.join(
        os.environ.get('TMPDIR', '/tmp'), f'ui-bench-{args.port}'))
    os.environ.setdefault('PLACEMENT_OPERATOR_STATEMENT_TIMEOUT_SECONDS', '120')
    # Plain HTTP on loopback: the session cookie must not be HTTPS-only.
    os.environ['DJANGO_SECURE_COOKIES'] = 'false'
    if args.out:
        os.makedirs(args.out, exist_ok=True)

    manage('migrate', '--noinput', '-v0')
    if args.load:
        manage('load_scale', '--compute-nodes', str(args.load), '--seed', str(args.seed))
    prepare(args.seed)
    server = None if args.url else serve(args.port, args.workers)
    url = args.url or server.url
    try:
        def out(name):
            return os.path.join(args.out, f'{name}.json') if args.out else None

        def announce(mode, rate=None):
            print(f'\nui bench: {mode}' + (f' at {rate:g} writes/s' if rate else ''),
                  file=sys.stderr, flush=True)
        if args.warm or not (args.churn or args.claims):
            announce('measure')
            measure(url, args.reps, args.seed, vendor, out('measure'))
        for rate in args.churn:
            announce('churn', rate)
            churn(url, rate, args.seconds, args.rounds, args.seed, vendor,
                  out(f'churn-{rate:g}'), args.nodes, args.writers)
        for rate in args.claims:
            announce('claims', rate)
            claims(url, rate, args.seconds, args.rounds, args.seed, vendor,
                   out(f'claims-{rate:g}'), args.nodes, args.writers)
    finally:
        if server is not None:
            server.stop(timeout=60)
    return 0


def manage(*args):
    subprocess.run([sys.executable, 'manage.py', *args], cwd=REPO, check=True)


def serve(port, workers):
    """scripts/serve.sh (as run.sh serves) on `port`, answering; its log in
    the data directory."""
    data = os.environ['PLACEMENT_DATA_DIR']
    os.makedirs(data, exist_ok=True)
    # serve.sh keeps the metrics of every process in the data directory's
    # own, not in one the caller's environment may name.
    env = {name: value for name, value in os.environ.items()
           if name not in ('PROMETHEUS_MULTIPROC_DIR', 'DJANGO_SETTINGS_MODULE')}
    server = Process([REPO / 'scripts' / 'serve.sh'], os.path.join(data, 'serve.log'), cwd=REPO,
                     env={**env, 'HOST': '127.0.0.1', 'PORT': str(port), 'WORKERS': str(workers)})
    server.url = f'http://127.0.0.1:{port}'
    server.start().wait_answering(server.url + '/', 60)
    print(f'ui bench: serving on {server.url} (log: {server.log_path})', file=sys.stderr)
    return server


if __name__ == '__main__':
    sys.exit(main())
