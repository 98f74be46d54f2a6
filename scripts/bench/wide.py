"""The wide device tree benchmark (docs/performance.md, "Wide device trees").

    DATABASE_URL=postgresql://... .venv/bin/python -m scripts.bench.wide \
        [--sizes 10,100,1000] [--placement-db URL] [--json OUT]

nova's PCI-in-Placement and vGPU shape, the case behind Placement's bugs
2070257, 2126751 and 2160721: compute nodes (VCPU 64, MEMORY_MB 262144)
with 8 child devices of one unit each (CUSTOM_PCI_8086_1563, total 1), and
requests for VCPU and memory plus 4, 6 or 10 groups of one device each,
with group_policy none and isolate, with and without `limit=1000`. 6 groups
on one node's 8 devices make 8*7*6*5*4*3 = 20,160 candidates (each group's
device named in `mappings`); 10 nodes 201,600.

The trees are created through the API, so the same data goes to this
service and, with --placement-db, to OpenStack Placement 16.0.0 (started
with ../shared/bench/servers/openstack-placement.sh, as the side-by-side
benchmark does); the sizes grow one after the other (10, then 90 more
nodes, ...). Each request runs up to --reps times within --budget seconds
(once when it takes longer than that); Placement's are sent once each, and
a request Placement failed (500 at its 30 s worker timeout, or no answer
within --timeout) is not sent to it again at a larger size. Reported per
request: median seconds, the number of candidates, the answer's bytes, and
the server workers' peak RSS (VmHWM) after each size.
"""
import argparse
import concurrent.futures as cf
import http.client
import json
import os
import statistics
import sys
import tempfile
import time
import uuid

from scripts.harness.api import api_request
from scripts.harness.api import send
from scripts.harness.placement import REPO
from scripts.harness.placement import Server as OurServer
from scripts.harness.process import Process
from scripts.harness.process import children
from scripts.harness.process import free_port
from scripts.harness.process import memory_mib

ROOT = str(REPO)
PLACEMENT_SCRIPT = os.path.join(ROOT, '..', 'shared', 'bench', 'servers',
                                'openstack-placement.sh')
VERSION = '1.39'
DEVICE_CLASS = 'CUSTOM_PCI_8086_1563'
DEVICES_PER_NODE = 8
CANDIDATE_MARK = b'{"allocations":'   # opens each allocation request of the answer
NAMESPACE = uuid.UUID('0b5a7d2e-9c41-4f0e-8a57-1d3c5e7f9b21')


def node_uuid(n, device=None):
    name = f'wide-cn{n:05d}' if device is None else f'wide-cn{n:05d}-dev{device}'
    return str(uuid.uuid5(NAMESPACE, name))


def requests(groups, policy, limit):
    """The query string of a request of `groups` device groups."""
    parts = ['resources=VCPU:1,MEMORY_MB:512']
    parts += [f'resources{i}={DEVICE_CLASS}:1' for i in range(1, groups + 1)]
    parts.append(f'group_policy={policy}')
    if limit:
        parts.append(f'limit={limit}')
    return '/allocation_candidates?' + '&'.join(parts)


def workloads():
    """(name, path, (groups, policy)), the limited request before the
    unlimited one."""
    return [(f'{g} groups, {policy}{", limit=1000" if limit else ""}',
             requests(g, policy, limit), (g, policy))
            for g in (4, 6, 10) for policy in ('none', 'isolate') for limit in (1000, None)]


# ---- loading ----

def check(response, raw, expected):
    if response.status not in expected:
        raise RuntimeError(f'{response.status}: {raw[:300]!r}')


def load_node(port, n):
    """One compute node and its devices, created through the API."""
    root = node_uuid(n)
    r, raw, _ = send(port, 'POST', '/resource_providers',
                     {'uuid': root, 'name': f'wide-cn{n:05d}'}, VERSION)
    check(r, raw, (200,))
    r, raw, _ = send(port, 'PUT', f'/resource_providers/{root}/inventories', {
        'resource_provider_generation': 0,
        'inventories': {'VCPU': {'total': 64}, 'MEMORY_MB': {'total': 262144}}}, VERSION)
    check(r, raw, (200,))
    for d in range(DEVICES_PER_NODE):
        device = node_uuid(n, d)
        r, raw, _ = send(port, 'POST', '/resource_providers', {
            'uuid': device, 'name': f'wide-cn{n:05d}-dev{d}',
            'parent_provider_uuid': root}, VERSION)
        check(r, raw, (200,))
        r, raw, _ = send(port, 'PUT', f'/resource_providers/{device}/inventories', {
            'resource_provider_generation': 0,
            'inventories': {DEVICE_CLASS: {'total': 1, 'max_unit': 1}}}, VERSION)
        check(r, raw, (200,))


def load(port, first, last, threads=8):
    r, raw, _ = send(port, 'PUT', f'/resource_classes/{DEVICE_CLASS}', None, VERSION)
    check(r, raw, (201, 204))
    with cf.ThreadPoolExecutor(threads) as pool:
        for future in [pool.submit(load_node, port, n) for n in range(first, last)]:
            future.result()


# ---- measuring ----

def fetch(port, path, timeout):
    """(status, bytes, candidates, seconds to the whole answer) of one GET,
    read in blocks and counted as it comes: an unlimited answer can be
    gigabytes."""
    headers, _ = api_request(version=VERSION)
    conn = http.client.HTTPConnection('127.0.0.1', port, timeout=timeout)
    try:
        started = time.perf_counter()
        conn.request('GET', path, headers=headers)
        response = conn.getresponse()
        size, candidates, tail = 0, 0, b''
        while True:
            block = response.read(1 << 20)
            if not block:
                break
            size += len(block)
            # A marker cut in two by a block's end is counted in the next.
            window = tail + block
            candidates += window.count(CANDIDATE_MARK)
            tail = window[-(len(CANDIDATE_MARK) - 1):]
        return response.status, size, candidates, time.perf_counter() - started
    finally:
        conn.close()


def measure(port, path, reps, budget, timeout):
    """{seconds: [...], candidates, bytes, status} of up to `reps` runs."""
    samples, started, found = [], time.monotonic(), {}
    for _ in range(reps):
        try:
            status, size, candidates, seconds = fetch(port, path, timeout)
        except OSError as exc:  # no answer within the timeout
            return {'status': f'no answer ({type(exc).__name__})', 'seconds': [timeout]}
        samples.append(seconds)
        found = {'status': status, 'bytes': size}
        if status != 200:
            break
        found['candidates'] = candidates
        if time.monotonic() - started + seconds > budget:
            break
    return {**found, 'seconds': samples}


def peak_rss(master):
    """The largest VmHWM of the server's workers, MiB."""
    return max((memory_mib(pid, ('VmHWM',)) or {}).get('VmHWM', 0)
               for pid in children(master.pid) or [master.pid])


class TheirServer(Process):
    """OpenStack Placement 16.0.0 as the side-by-side benchmark serves it
    (its own script), on a free port."""

    def __init__(self, base, database_url, workers):
        self.port = free_port()
        self.url = f'http://127.0.0.1:{self.port}'
        super().__init__(['bash', PLACEMENT_SCRIPT], os.path.join(base, 'placement.log'),
                         cwd=ROOT, env={**os.environ, 'PORT': str(self.port),
                                        'DATABASE_URL': database_url, 'WORKERS': str(workers),
                                        'PLACEMENT_LOG_LEVEL': 'warning'})

    def start(self, timeout=600):
        super().start()
        return self.wait_answering(self.url + '/', timeout)


class Measured:
    """A server measured (ours or OpenStack Placement), by its label; the
    requests it could not answer at a smaller size."""

    def __init__(self, label, server):
        self.label, self.server, self.port = label, server, server.port
        self.failed = set()     # (groups, policy)
        self.start()

    @property
    def process(self):
        return self.server.process

    def start(self):
        self.server.start(timeout=600)

    def restart(self):
        """A worker still busy with a request given up on would take the
        CPU from whatever is measured next."""
        self.stop()
        self.start()

    def stop(self):
        self.server.stop(timeout=5)


def start_servers(args):
    base = tempfile.mkdtemp(prefix='wide-bench-')
    ours = OurServer(base, database_url=args.database_url, workers=args.workers, threads=None,
                     env={'PLACEMENT_AUTH_STRATEGY': 'noauth2'},
                     gunicorn_args=['--timeout', '900'])
    ours.manage('migrate', '--noinput', '-v0')
    print(f'# ours: {ours.url} (log: {ours.log_path})', flush=True)
    servers = [Measured('ours', ours)]
    if args.placement_db:
        servers.append(Measured('placement', TheirServer(base, args.placement_db, args.workers)))
    return servers


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m scripts.bench.wide', description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--database-url', default=os.environ.get('DATABASE_URL'),
                        help="this service's database, empty (default: $DATABASE_URL)")
    parser.add_argument('--placement-db', help="an empty PostgreSQL database for Placement's "
                        'side (omit to measure this service alone)')
    parser.add_argument('--sizes', default='10,100,1000')
    parser.add_argument('--workers', type=int, default=2)
    parser.add_argument('--reps', type=int, default=5)
    parser.add_argument('--budget', type=float, default=20, help='seconds per request and size')
    parser.add_argument('--timeout', type=float, default=60, help='seconds to wait for an answer')
    parser.add_argument('--json', help='write every sample here')
    args = parser.parse_args(argv)
    if not args.database_url:
        parser.error('--database-url or DATABASE_URL is required')
    sizes = [int(s) for s in args.sizes.split(',')]
    servers = start_servers(args)
    results, loaded = [], 0
    try:
        for size in sizes:
            for server in servers:
                started = time.monotonic()
                load(server.port, loaded, size)
                print(f'# {server.label}: {size} nodes loaded '
                      f'({time.monotonic() - started:.0f} s)', flush=True)
            loaded = size
            for server in servers:   # one server at a time: nothing else runs meanwhile
                for name, path, kind in workloads():
                    if server.label == 'placement':
                        if kind in server.failed:
                            continue
                        found = measure(server.port, path, 1, 0, args.timeout)
                        if found['status'] != 200:
                            # Unlimited, or with more nodes, it takes longer still.
                            server.failed.add(kind)
                            if found['status'] != 500:
                                server.restart()
                    else:
                        found = measure(server.port, path, args.reps, args.budget, args.timeout)
                    row = {'nodes': size, 'server': server.label, 'request': name,
                           'path': path, 'median_s': statistics.median(found['seconds']),
                           **found}
                    results.append(row)
                    print(f"{size:>5} {server.label:<9} {name:<30} "
                          f"{row['median_s']:8.3f} s  {found.get('candidates', '-'):>8} "
                          f"candidates {found.get('bytes', 0):>11} B  {found['status']}",
                          flush=True)
            for server in servers:
                rss = peak_rss(server.process)
                results.append({'nodes': size, 'server': server.label, 'peak_rss_mib': rss})
                print(f'{size:>5} {server.label:<9} peak worker RSS {rss:.0f} MiB', flush=True)
    finally:
        for server in servers:
            server.stop()
    if args.json:
        with open(args.json, 'w') as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == '__main__':
    sys.exit(main())
