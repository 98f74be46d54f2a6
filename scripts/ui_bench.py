#!/usr/bin/env python3
"""The dashboards benchmark (docs/performance.md, "Dashboards at 100,000
providers"): every dashboard page, detail page type, admin list, GET
/capacity grouping and GET /metrics, timed as a signed-in staff user against
a server holding the `manage.py load_scale` dataset.

    scripts/ui_bench.py prepare                 # in the database DATABASE_URL names
    scripts/ui_bench.py measure --url http://127.0.0.1:PORT [--reps 5] [--json OUT]

scripts/ui-bench.sh loads the data, runs `prepare`, starts the service as
scripts/run.sh does with one worker, runs `measure` and stops the server.

`prepare` adds what load_scale does not write and the pages show: a staff
user (bench / bench-password), two pods over host aggregates with their
projects bound, and a usage-trend snapshot. `measure` signs in through the
login form, then for each page: one request to warm it, then `--reps`
timed ones (request sent .. whole body read, one connection per request on
loopback: the server's time plus a loopback round trip), reporting median
and worst, the status and the body's size (as sent, and as gzip would make
it for /metrics). A page that answers anything but 200 is reported, not
skipped. The table goes to stdout, everything to the JSON file.
"""
import argparse
import gzip
import json
import os
import re
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STAFF, PASSWORD = 'bench', 'bench-password-7Q'
API = {'X-Auth-Token': 'admin', 'OpenStack-API-Version': 'placement 1.39'}
FLAVOR = 'VCPU:4,MEMORY_MB:8192,DISK_GB:80'
# The goals of issue 25: one worker, warm, server time.
GOALS_MS = {'postgresql': 300, 'sqlite': 600, 'mysql': 300}
METRICS_GOAL_MS = 1500


def django_setup():
    sys.path.insert(0, ROOT)
    os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'placement_site.settings')
    import django
    django.setup()


# ---- prepare ------------------------------------------------------------------------

def prepare(seed):
    django_setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

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
        ('explorer, limit 10', f'/ui/explorer/?resources={FLAVOR}&limit=10', 'page'),
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
        ('GET /capacity?group_by=trait&resources=',
         f'/capacity?group_by=trait&resources={FLAVOR}', 'api'),
        ('GET /capacity?group_by=availability_zone&resources=',
         f'/capacity?group_by=availability_zone&resources={FLAVOR}', 'api'),
        ('GET /capacity/trends', '/capacity/trends', 'api'),
        ('GET /metrics', '/metrics', 'metrics'),
        # Whole lists, streamed (time to the last byte).
        ('export: every tree\'s books (GET /capacity?group_by=root, CSV)',
         '/capacity?group_by=root&format=csv', 'export'),
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
        sys.exit(f'ui_bench: signing in as {STAFF} failed ({answer.status_code}): '
                 'run `ui_bench.py prepare` first')


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
        limit = METRICS_GOAL_MS if kind == 'metrics' else None if kind == 'export' else goal
        note = f'{size / 1e6:.2f} MB' if size >= 100_000 else f'{size / 1e3:.1f} kB'
        if kind == 'metrics':
            note += (f' ({encoding})' if encoding else
                     f' (not compressed; {len(gzip.compress(raw)) / 1e6:.2f} MB gzipped)')
        ok = ('n/a' if limit is None else
              'yes' if status == 200 and median <= limit else 'no')
        print(f'| {name} | {median:.0f} | {worst:.0f} | {status} | {note} | {ok} |', flush=True)
        results.append({'name': name, 'path': path, 'kind': kind, 'status': status,
                        'bytes': size, 'content_encoding': encoding, 'median_ms': median,
                        'worst_ms': worst, 'samples_ms': samples, 'goal_ms': limit})
    if out:
        with open(out, 'w') as f:
            json.dump({'url': url, 'vendor': vendor, 'reps': reps, 'results': results}, f,
                      indent=1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    sub = parser.add_subparsers(dest='command', required=True)
    p = sub.add_parser('prepare')
    p.add_argument('--seed', type=int, default=42)
    m = sub.add_parser('measure')
    m.add_argument('--url', required=True)
    m.add_argument('--reps', type=int, default=5)
    m.add_argument('--seed', type=int, default=42)
    m.add_argument('--vendor', default='postgresql', choices=sorted(GOALS_MS))
    m.add_argument('--json')
    args = parser.parse_args()
    if args.command == 'prepare':
        prepare(args.seed)
    else:
        measure(args.url, args.reps, args.seed, args.vendor, args.json)


if __name__ == '__main__':
    main()
