#!/usr/bin/env python3
"""The adoption check (issue 14, acceptance 1 and 2; docs/adoption-check.md).

For each backend (PostgreSQL, MariaDB) it
1. creates a source database on the test server and runs the real
   openstack-placement 16.0.0 on it (placement-manage db sync, gunicorn);
2. fills it through the REST API with a seeded cloud (nested compute trees,
   sharing DISK_GB and IPV4_ADDRESS pools, custom classes and traits,
   consumers of several types, churn so generations are not all 1);
3. records a client's prepared writes (an inventory PUT and an allocation
   PUT, each with the generation the old service gave);
4. imports the source into a fresh database of ours
   (manage.py import_placement), timed, and starts our server beside the
   old one;
5. sends every GET of a list built from the source's own answers to both
   servers and compares status, headers and bodies;
6. sends the prepared writes to ours.

    .venv/bin/python scripts/adoption_check.py [--backend postgresql|mariadb]...
        [--providers 1000] [--seed 14] [--threads 4] [--json OUT] [--keep]
        [--self-check]

--self-check compares the real Placement with a second real Placement on the
same database instead of ours (checks the harness itself). Exit status 0
when every answer is identical and the writes succeed, 1 otherwise.
Standard library plus the drivers in our .venv (psycopg2, MySQLdb).
"""
import argparse
import concurrent.futures as cf
import http.client
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import traceback
import threading
import time
import urllib.parse
import uuid as uuidlib
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime

from harness import api_request, free_port

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUR_PYTHON = os.path.join(ROOT, '.venv', 'bin', 'python')
LATEST = '1.39'

# The tables of Placement's schema (alembic head of 16.0.0), in load order.
SOURCE_TABLES = [
    'resource_classes', 'traits', 'resource_providers', 'inventories',
    'placement_aggregates', 'resource_provider_aggregates', 'resource_provider_traits',
    'projects', 'users', 'consumer_types', 'consumers', 'allocations',
]

# Headers that are per answer by nature (the request id) or per second (Date).
IGNORED_HEADERS = {'date', 'x-openstack-request-id', 'openstack-request-id'}


def log(message):
    print(f'[{time.strftime("%H:%M:%S")}] {message}', file=sys.stderr, flush=True)


# --- HTTP --------------------------------------------------------------------------------------

@dataclass
class Answer:
    status: int
    headers: list          # [(name, value)] as sent
    body: bytes

    def header(self, name):
        for key, value in self.headers:
            if key.lower() == name:
                return value
        return None

    def json(self):
        return json.loads(self.body) if self.body else None


class Server:
    """A Placement endpoint spoken to with noauth2 admin tokens."""

    def __init__(self, base):
        parsed = urllib.parse.urlsplit(base)
        self.base, self.host, self.port = base, parsed.hostname, parsed.port

    def call(self, method, path, body=None, version=LATEST, token='admin'):
        headers, data = api_request(body, version, token)
        for attempt in range(5):
            conn = http.client.HTTPConnection(self.host, self.port, timeout=600)
            try:
                conn.request(method, path, body=data, headers=headers)
                response = conn.getresponse()
                return Answer(response.status, response.getheaders(), response.read())
            except (ConnectionError, http.client.RemoteDisconnected):
                if attempt == 4:
                    raise
                time.sleep(0.2 * (attempt + 1))
            finally:
                conn.close()

    def expect(self, method, path, body=None, version=LATEST, ok=(200, 201, 204)):
        answer = self.call(method, path, body, version)
        if answer.status not in ok:
            raise RuntimeError(f'{method} {path} at {version}: {answer.status} '
                               f'{answer.body[:400]!r}')
        return answer


def wait_until_up(server, process, logfile, seconds=90):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f'server exited ({process.returncode}); log:\n'
                               + open(logfile).read()[-3000:])
        try:
            if server.call('GET', '/', version=None).status == 200:
                return
        except OSError:
            pass
        time.sleep(0.3)
    raise RuntimeError(f'server did not answer in {seconds} s; log:\n' + open(logfile).read()[-3000:])


def start_gunicorn(argv, env, logfile):
    out = open(logfile, 'w')
    return subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT,
                            start_new_session=True)


def stop(process):
    if process and process.poll() is None:
        process.terminate()
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# --- databases ---------------------------------------------------------------------------------

class Backend:
    """A test server (scripts/*-test-server.sh) and databases on it."""

    def __init__(self, kind, url=None):
        self.kind = kind
        if not url:
            script = {'postgresql': 'pg-test-server.sh', 'mariadb': 'mariadb-test-server.sh'}[kind]
            url = subprocess.run([os.path.join(ROOT, 'scripts', script)], check=True,
                                 capture_output=True, text=True).stdout.strip().splitlines()[-1]
        self.url = url
        self.parts = urllib.parse.urlsplit(self.url)

    def connect(self, database=None):
        p = self.parts
        if self.kind == 'postgresql':
            import psycopg2
            conn = psycopg2.connect(host=p.hostname, port=p.port, user=p.username,
                                    password=p.password, dbname=database or p.path[1:])
            conn.autocommit = True
            return conn
        import MySQLdb
        conn = MySQLdb.connect(host=p.hostname, port=p.port, user=p.username,
                               password=p.password, database=database or p.path[1:])
        conn.autocommit(True)
        return conn

    def recreate(self, name):
        conn = self.connect()
        with conn.cursor() as cur:
            if self.kind == 'postgresql':
                cur.execute(f'DROP DATABASE IF EXISTS {name} WITH (FORCE)')
            else:
                cur.execute(f'DROP DATABASE IF EXISTS {name}')
            cur.execute(f'CREATE DATABASE {name}')
        conn.close()

    def drop(self, name):
        conn = self.connect()
        with conn.cursor() as cur:
            cur.execute(f'DROP DATABASE IF EXISTS {name}'
                        + (' WITH (FORCE)' if self.kind == 'postgresql' else ''))
        conn.close()

    def url_for(self, name, dialect=None):
        p = self.parts
        scheme = dialect or p.scheme
        query = '?charset=utf8mb4' if scheme.startswith('mysql+') else ''
        return f'{scheme}://{p.username}:{p.password}@{p.hostname}:{p.port}/{name}{query}'

    def sqlalchemy_url(self, name):
        return self.url_for(name, 'postgresql+psycopg2' if self.kind == 'postgresql'
                            else 'mysql+pymysql')

    def row_counts(self, name):
        conn = self.connect(name)
        counts = {}
        with conn.cursor() as cur:
            for table in SOURCE_TABLES:
                cur.execute(f'SELECT COUNT(*) FROM {table}')
                counts[table] = cur.fetchone()[0]
        conn.close()
        return counts

    def generations(self, name):
        """{table: (rows with generation > 1, highest)} for providers and consumers."""
        conn = self.connect(name)
        out = {}
        with conn.cursor() as cur:
            for table in ('resource_providers', 'consumers'):
                cur.execute(f'SELECT COUNT(*), MAX(generation) FROM {table} WHERE generation > 1')
                out[table] = list(cur.fetchone())
        conn.close()
        return out


# --- the cloud ---------------------------------------------------------------------------------

CUSTOM_CLASSES = ['CUSTOM_BAREMETAL_GOLD', 'CUSTOM_BAREMETAL_SILVER', 'CUSTOM_FPGA_XILINX',
                  'CUSTOM_LICENSE_WINDOWS', 'CUSTOM_PMEM_NAMESPACE_4GB']
CUSTOM_TRAITS = ['CUSTOM_PHYSNET_TENANT', 'CUSTOM_PHYSNET_PROVIDER', 'CUSTOM_GOLD',
                 'CUSTOM_RAID1', 'CUSTOM_VNIC_TYPE_DIRECT', 'CUSTOM_MAINTENANCE_WINDOW_SAT']
ROOT_TRAITS = ['HW_CPU_X86_AVX2', 'HW_CPU_X86_AVX512F', 'COMPUTE_VOLUME_MULTI_ATTACH',
               'CUSTOM_GOLD', 'COMPUTE_STATUS_DISABLED', 'CUSTOM_MAINTENANCE_WINDOW_SAT']
CONSUMER_TYPES = ['INSTANCE', 'MIGRATION', 'SHARE_RESERVATION']


@dataclass
class Provider:
    uuid: str
    name: str
    parent: str = None
    inventories: dict = field(default_factory=dict)
    traits: list = field(default_factory=list)
    aggregates: list = field(default_factory=list)
    kind: str = 'compute'
    children: list = field(default_factory=list)


@dataclass
class Consumer:
    uuid: str
    project: str
    user: str
    type: str               # None: written before 1.38, no type
    allocations: dict       # {rp uuid: {rc: amount}}


class Cloud:
    """The seeded plan: every provider, inventory and consumer, with the
    capacity bookkeeping that lets every planned allocation fit at once."""

    def __init__(self, providers, seed):
        self.rng = random.Random(seed)
        self.providers = {}
        self.trees = []                 # root Provider objects
        self.pools = []                 # sharing providers
        self.used = defaultdict(int)    # (rp, rc) -> planned use
        self.projects = [self.new_uuid() for _ in range(6)]
        self.users = [self.new_uuid() for _ in range(15)]
        self.az_aggs = [self.new_uuid() for _ in range(3)]
        self.plan(providers)

    def new_uuid(self):
        return str(uuidlib.UUID(int=self.rng.getrandbits(128), version=4))

    def add(self, name, parent=None, kind='compute', **kw):
        rp = Provider(self.new_uuid(), name, parent.uuid if parent else None, kind=kind, **kw)
        self.providers[rp.uuid] = rp
        if parent:
            parent.children.append(rp)
        return rp

    def inv(self, total, reserved=0, ratio=1.0, min_unit=1, max_unit=None, step=1):
        return {'total': total, 'reserved': reserved, 'allocation_ratio': ratio,
                'min_unit': min_unit, 'max_unit': max_unit or total, 'step_size': step}

    def plan(self, target):
        rng = self.rng
        n_disk_pools = max(2, target // 120)
        n_ip_pools = max(2, target // 150)
        racks = []
        for r in range(max(2, target // 40)):
            racks.append({'agg': self.new_uuid(), 'az': self.az_aggs[r % 3],
                          'disk_pool': r % n_disk_pools, 'segment': r % n_ip_pools})
        disk_aggs = [self.new_uuid() for _ in range(n_disk_pools)]
        segment_aggs = [self.new_uuid() for _ in range(n_ip_pools)]
        for i, agg in enumerate(disk_aggs):
            traits = ['MISC_SHARES_VIA_AGGREGATE'] + (['STORAGE_DISK_SSD'] if i % 2 else [])
            self.pools.append(self.add(
                f'disk-pool-{i:02d}', kind='disk_pool', traits=traits, aggregates=[agg],
                inventories={'DISK_GB': self.inv(rng.choice([100000, 250000, 500000]),
                                                 reserved=1000, max_unit=20000)}))
        for i, agg in enumerate(segment_aggs):
            self.pools.append(self.add(
                f'segment-{i:02d}-ipv4', kind='ip_pool', aggregates=[agg],
                traits=['MISC_SHARES_VIA_AGGREGATE'],
                inventories={'IPV4_ADDRESS': self.inv(254, reserved=rng.choice([2, 10]),
                                                      max_unit=1)}))
        self.pools.append(self.add(
            'license-server-windows', kind='license', aggregates=[self.az_aggs[0]],
            traits=['MISC_SHARES_VIA_AGGREGATE'],
            inventories={'CUSTOM_LICENSE_WINDOWS': self.inv(100, max_unit=4)}))
        index = 0
        while len(self.providers) < target:
            rack = racks[index % len(racks)]
            name = f'r{index % len(racks):02d}-cn{index // len(racks):03d}'
            self.plan_tree(name, rack, disk_aggs[rack['disk_pool']],
                           segment_aggs[rack['segment']])
            index += 1

    def plan_tree(self, name, rack, disk_agg, segment_agg):
        rng = self.rng
        kind = rng.choices(['flat', 'numa', 'baremetal', 'fpga'], [35, 45, 10, 10])[0]
        traits = sorted({t for t in ROOT_TRAITS if rng.random() < {
            'HW_CPU_X86_AVX2': 0.6, 'HW_CPU_X86_AVX512F': 0.2, 'COMPUTE_VOLUME_MULTI_ATTACH': 0.5,
            'CUSTOM_GOLD': 0.1, 'COMPUTE_STATUS_DISABLED': 0.05,
            'CUSTOM_MAINTENANCE_WINDOW_SAT': 0.1}[t]})
        aggs = [rack['agg'], rack['az'], segment_agg]
        local_disk = rng.random() < 0.5
        if not local_disk:
            aggs.append(disk_agg)
        if kind == 'baremetal':
            rc = rng.choice(['CUSTOM_BAREMETAL_GOLD', 'CUSTOM_BAREMETAL_SILVER'])
            root = self.add(name.replace('cn', 'bm'), kind='baremetal',
                            traits=sorted(set(traits) | {'CUSTOM_RAID1'}) if rng.random() < .5
                            else traits, aggregates=[rack['agg'], rack['az']],
                            inventories={rc: self.inv(1, min_unit=1, max_unit=1)})
            self.trees.append(root)
            return
        vcpus = rng.choice([32, 48, 64, 96, 128])
        memory = rng.choice([131072, 262144, 524288])
        vcpu_inv = dict(ratio=rng.choice([16.0, 4.0, 1.0]), reserved=rng.choice([0, 2]))
        mem_inv = dict(ratio=rng.choice([1.5, 1.0]), reserved=rng.choice([512, 4096]),
                       **rng.choice([{}, {'min_unit': 256, 'step': 256}]))
        inventories = {}
        if local_disk:
            inventories['DISK_GB'] = self.inv(rng.choice([1800, 3600, 7200]),
                                              reserved=rng.choice([0, 100]),
                                              ratio=rng.choice([1.0, 1.2]), max_unit=1800)
        root = self.add(name, traits=traits, aggregates=aggs, inventories=inventories)
        self.trees.append(root)
        if kind in ('flat', 'fpga'):
            root.inventories['VCPU'] = self.inv(vcpus, **vcpu_inv)
            root.inventories['MEMORY_MB'] = self.inv(memory, **mem_inv)
            if kind == 'fpga':
                self.add(f'{name}-fpga0', parent=root, kind='fpga', traits=['CUSTOM_GOLD'],
                         inventories={'CUSTOM_FPGA_XILINX': self.inv(rng.choice([1, 2, 4]))})
            return
        for n in range(2):
            numa = self.add(f'{name}-numa{n}', parent=root, kind='numa', traits=['HW_NUMA_ROOT'],
                            inventories={'VCPU': self.inv(vcpus // 2, **vcpu_inv),
                                         'MEMORY_MB': self.inv(memory // 2, **mem_inv)})
            if rng.random() < 0.2:
                numa.inventories['CUSTOM_PMEM_NAMESPACE_4GB'] = self.inv(8, reserved=1)
            for p in range(rng.choice([0, 1, 1, 2])):
                physnet = rng.choice(['CUSTOM_PHYSNET_TENANT', 'CUSTOM_PHYSNET_PROVIDER'])
                self.add(f'{name}-numa{n}-pf{p}', parent=numa, kind='pf',
                         traits=sorted([physnet, 'CUSTOM_VNIC_TYPE_DIRECT', 'HW_NIC_SRIOV']),
                         inventories={
                             'SRIOV_NET_VF': self.inv(rng.choice([8, 16, 32]), max_unit=8),
                             'NET_BW_EGR_KILOBIT_PER_SEC': self.inv(
                                 10000000, reserved=rng.choice([0, 1000000])),
                             'NET_BW_IGR_KILOBIT_PER_SEC': self.inv(10000000)})

    # allocation planning: amounts that respect min/max/step and fit
    def capacity(self, rp, rc):
        inv = self.providers[rp].inventories[rc]
        return int((inv['total'] - inv['reserved']) * inv['allocation_ratio'])

    def fits(self, wanted):
        for rp, resources in wanted.items():
            for rc, amount in resources.items():
                inv = self.providers[rp].inventories[rc]
                if not (inv['min_unit'] <= amount <= inv['max_unit']
                        and amount % inv['step_size'] == 0
                        and self.used[rp, rc] + amount <= self.capacity(rp, rc)):
                    return False
        return True

    def take(self, wanted, sign=1):
        for rp, resources in wanted.items():
            for rc, amount in resources.items():
                self.used[rp, rc] += sign * amount

    def sharing(self, root, rc):
        return [p for p in self.pools if rc in p.inventories and set(p.aggregates) & set(root.aggregates)]

    def instance_allocations(self, root, scale=1):
        """What nova would claim for a flavor on this tree (None: does not fit)."""
        rng = self.rng
        wanted = defaultdict(dict)
        flavor = rng.choice([(1, 512, 10), (2, 2048, 20), (4, 8192, 40), (8, 16384, 80)])
        vcpu, mem, disk = (int(x * scale) or 1 for x in flavor)
        if root.kind == 'baremetal':
            rc = next(iter(root.inventories))
            return {root.uuid: {rc: 1}} if self.used[root.uuid, rc] == 0 else None
        compute = root
        numas = [c for c in root.children if c.kind == 'numa']
        if numas:
            compute = rng.choice(numas)
        step = compute.inventories['MEMORY_MB']['step_size']
        wanted[compute.uuid].update(VCPU=vcpu, MEMORY_MB=max(mem // step, 1) * step)
        if 'DISK_GB' in root.inventories:
            wanted[root.uuid]['DISK_GB'] = disk
        else:
            pools = self.sharing(root, 'DISK_GB')
            if pools:
                wanted[rng.choice(pools).uuid]['DISK_GB'] = disk
        pfs = [c for c in compute.children if c.kind == 'pf']
        if pfs and rng.random() < 0.5:
            wanted[rng.choice(pfs).uuid].update(SRIOV_NET_VF=1, NET_BW_EGR_KILOBIT_PER_SEC=100000)
        if rng.random() < 0.3:
            ip_pools = self.sharing(root, 'IPV4_ADDRESS')
            if ip_pools:
                wanted[rng.choice(ip_pools).uuid]['IPV4_ADDRESS'] = 1
        if rng.random() < 0.1 and self.sharing(root, 'CUSTOM_LICENSE_WINDOWS'):
            wanted[self.sharing(root, 'CUSTOM_LICENSE_WINDOWS')[0].uuid]['CUSTOM_LICENSE_WINDOWS'] = 1
        fpgas = [c for c in root.children if c.kind == 'fpga']
        if fpgas and rng.random() < 0.5:
            wanted[fpgas[0].uuid]['CUSTOM_FPGA_XILINX'] = 1
        wanted = dict(wanted)
        return wanted if self.fits(wanted) else None

    def consumers(self):
        """Instances on about 60% of the trees, some trees with several,
        shares on the disk pools; typeless ones were written before 1.38."""
        rng = self.rng
        planned = []
        for root in self.trees:
            for _ in range(rng.choice([0, 0, 1, 1, 2, 3])):
                wanted = self.instance_allocations(root)
                if wanted:
                    self.take(wanted)
                    planned.append(Consumer(self.new_uuid(), rng.choice(self.projects),
                                            rng.choice(self.users),
                                            None if rng.random() < 0.1 else 'INSTANCE', wanted))
        for pool in self.pools:
            if 'DISK_GB' in pool.inventories:
                for _ in range(3):
                    wanted = {pool.uuid: {'DISK_GB': rng.choice([500, 1000, 5000])}}
                    if self.fits(wanted):
                        self.take(wanted)
                        planned.append(Consumer(self.new_uuid(), self.projects[0],
                                                rng.choice(self.users), 'SHARE_RESERVATION',
                                                wanted))
        return planned


# --- filling the source through its API ---------------------------------------------------------

class Filler:
    def __init__(self, server, cloud, threads):
        self.api, self.cloud, self.threads = server, cloud, threads
        self.requests = Counter()
        self.lock = threading.Lock()

    def call(self, method, path, body=None, version=LATEST, ok=(200, 201, 204)):
        """A write losing a race on a provider's generation inside Placement
        (placement.concurrent_update) rolled back: send it again, as nova does."""
        for attempt in range(20):
            with self.lock:
                self.requests[method] += 1
            answer = self.api.call(method, path, body, version)
            if (answer.status == 409 and 409 not in ok
                    and b'placement.concurrent_update' in answer.body):
                time.sleep(0.05 * attempt)
                continue
            break
        if answer.status not in ok:
            raise RuntimeError(f'{method} {path} at {version}: {answer.status} '
                               f'{answer.body[:400]!r}')
        return answer

    def parallel(self, fn, items):
        with cf.ThreadPoolExecutor(self.threads) as pool:
            for future in [pool.submit(fn, item) for item in items]:
                future.result()

    def put_at_generation(self, rp, what, body, version=LATEST):
        """PUT with the provider's current generation, again on a 409 (a
        concurrent allocation bumped it), as a client does."""
        for _ in range(10):
            generation = self.call('GET', f'/resource_providers/{rp}', version=version).json()[
                'generation']
            answer = self.call('PUT', f'/resource_providers/{rp}/{what}',
                               dict(body, resource_provider_generation=generation),
                               version=version, ok=(200, 409))
            if answer.status == 200:
                return answer.json()
        raise RuntimeError(f'PUT {rp}/{what}: still conflicting')

    def create_provider(self, rp):
        body = {'name': rp.name, 'uuid': rp.uuid}
        if rp.parent:
            body['parent_provider_uuid'] = rp.parent
        generation = self.call('POST', '/resource_providers', body).json()['generation']
        if rp.inventories:
            generation = self.call('PUT', f'/resource_providers/{rp.uuid}/inventories', {
                'resource_provider_generation': generation,
                'inventories': rp.inventories}).json()['resource_provider_generation']
        if rp.traits:
            generation = self.call('PUT', f'/resource_providers/{rp.uuid}/traits', {
                'resource_provider_generation': generation,
                'traits': rp.traits}).json()['resource_provider_generation']
        if rp.aggregates:
            self.call('PUT', f'/resource_providers/{rp.uuid}/aggregates', {
                'resource_provider_generation': generation, 'aggregates': rp.aggregates})
        for child in rp.children:
            self.create_provider(child)

    def allocate(self, consumer, generation=None):
        body = {'allocations': {rp: {'resources': res}
                                for rp, res in consumer.allocations.items()},
                'project_id': consumer.project, 'user_id': consumer.user,
                'consumer_generation': generation}
        version = '1.28'
        if consumer.type:
            body['consumer_type'], version = consumer.type, '1.38'
        self.call('PUT', f'/allocations/{consumer.uuid}', body, version=version)

    def fill(self):
        cloud, rng = self.cloud, self.cloud.rng
        started = time.time()
        for rc in CUSTOM_CLASSES + ['CUSTOM_RETIRED_GPU']:
            self.call('PUT', f'/resource_classes/{rc}', version='1.7')
        for trait in CUSTOM_TRAITS + ['CUSTOM_OLD_RACK_LABEL']:
            self.call('PUT', f'/traits/{trait}')
        # A retired class and trait: ids have gaps, as in a cloud with history.
        self.call('DELETE', '/resource_classes/CUSTOM_RETIRED_GPU')
        self.call('DELETE', '/traits/CUSTOM_OLD_RACK_LABEL')
        self.parallel(self.create_provider, cloud.pools + cloud.trees)
        log(f'  {len(cloud.providers)} providers in {time.time() - started:.0f} s')

        consumers = cloud.consumers()
        self.parallel(self.allocate, consumers)
        log(f'  {len(consumers)} consumers in {time.time() - started:.0f} s')
        self.churn(consumers, rng)
        self.consumers = consumers
        log(f'  churn done in {time.time() - started:.0f} s '
            f'({sum(self.requests.values())} requests)')

    def churn(self, consumers, rng):
        """History: resizes, deletions and re-creations, migrations, and
        repeated inventory, trait and aggregate writes."""
        cloud = self.cloud
        instances = [c for c in consumers if c.type == 'INSTANCE']
        rng.shuffle(instances)
        cut = len(instances) // 10
        resized, deleted, migrated = (instances[:cut], instances[cut:2 * cut],
                                      instances[2 * cut:3 * cut])

        def resize(consumer):
            # Shrink every amount to the smallest step the inventory allows;
            # the consumer's generation goes to 2.
            current = self.call('GET', f'/allocations/{consumer.uuid}').json()
            cloud_inv = cloud.providers
            for rp, resources in consumer.allocations.items():
                for rc in resources:
                    inv = cloud_inv[rp].inventories[rc]
                    resources[rc] = max(inv['min_unit'], inv['step_size'])
            self.allocate(consumer, current['consumer_generation'])

        # Half of the deleted come back under the same uuid, as a rebuild
        # (decided here, not in the threads, so the seed fixes the cloud).
        rebuilt = {c.uuid for c in deleted if rng.random() < 0.5}

        def delete_and_recreate(consumer):
            self.call('DELETE', f'/allocations/{consumer.uuid}')
            if consumer.uuid in rebuilt:
                self.allocate(consumer)

        # A move, as nova makes it: the instance's allocations on the source
        # go to a migration record and the instance claims the destination,
        # in one POST /allocations.
        destinations = {}
        for consumer in migrated:
            dest = cloud.instance_allocations(rng.choice(cloud.trees))
            if dest:
                cloud.take(dest)
                destinations[consumer.uuid] = dest

        def migrate(consumer):
            migration = str(uuidlib.uuid5(uuidlib.NAMESPACE_OID, consumer.uuid))
            current = self.call('GET', f'/allocations/{consumer.uuid}').json()
            dest = destinations.get(consumer.uuid, {})
            self.call('POST', '/allocations', {
                migration: {'allocations': {rp: {'resources': a['resources']}
                                            for rp, a in current['allocations'].items()},
                            'project_id': consumer.project, 'user_id': consumer.user,
                            'consumer_generation': None, 'consumer_type': 'MIGRATION'},
                consumer.uuid: {'allocations': {rp: {'resources': r} for rp, r in dest.items()},
                                'project_id': consumer.project, 'user_id': consumer.user,
                                'consumer_generation': current['consumer_generation'],
                                'consumer_type': 'INSTANCE'}})

        self.parallel(resize, resized)
        self.parallel(delete_and_recreate, sorted(deleted, key=lambda c: c.uuid))
        self.parallel(migrate, migrated)

        roots = list(cloud.trees)
        rng.shuffle(roots)
        sample = roots[:max(3, len(roots) // 8)]

        def provider_history(root):
            # Inventories written twice (a class added, then removed again),
            # traits and aggregates rewritten: generations well above 1.
            changed = {rc: dict(v, reserved=v['reserved'] + 1) for rc, v in root.inventories.items()}
            pmem = {'CUSTOM_PMEM_NAMESPACE_4GB': cloud.inv(4)}
            self.put_at_generation(root.uuid, 'inventories', {'inventories': {**changed, **pmem}})
            self.put_at_generation(root.uuid, 'inventories', {'inventories': changed})
            self.put_at_generation(root.uuid, 'traits',
                                   {'traits': sorted(set(root.traits) | {'CUSTOM_GOLD'})})
            self.put_at_generation(root.uuid, 'aggregates', {'aggregates': root.aggregates[:-1]})

        self.parallel(provider_history, sample)
        # Retired trees: deleted (leaf first) and a new node of the same name
        # registered with a new uuid.
        for root in roots[-2:]:
            if any(self.call('GET', f'/resource_providers/{rp}/allocations').json()['allocations']
                   for rp in self.tree_uuids(root)):
                continue
            for rp in reversed(self.tree_uuids(root)):
                self.call('DELETE', f'/resource_providers/{rp}')
            self.call('POST', '/resource_providers', {'name': root.name, 'uuid': cloud.new_uuid()})

    def tree_uuids(self, root):
        out = [root.uuid]
        for child in root.children:
            out += self.tree_uuids(child)
        return out


# --- the requests to compare --------------------------------------------------------------------

def get_requests(source, cloud, rng):
    """(path, microversion) for every GET, built from the source's answers."""
    reqs = [('/', None), ('/', LATEST)]
    providers = source.expect('GET', '/resource_providers').json()['resource_providers']
    by_name = {p['name']: p for p in providers}
    uuids = sorted(p['uuid'] for p in providers)
    roots = sorted({p['root_provider_uuid'] for p in providers})
    children = sorted(p['uuid'] for p in providers if p['parent_provider_uuid'])
    aggs = sorted({a for rp in cloud.providers.values() for a in rp.aggregates})
    some = rng.sample(uuids, min(len(uuids), 5))
    for version in ('1.0', '1.14', '1.20', LATEST):
        reqs.append(('/resource_providers', version))
    filters = [
        (f'name={urllib.parse.quote(next(iter(sorted(by_name))))}', '1.0'),
        (f'uuid={some[0]}', '1.0'),
        (f'member_of={aggs[0]}', '1.3'),
        (f'member_of=in:{aggs[0]},{aggs[1]}', '1.3'),
        (f'member_of={aggs[0]}&member_of={aggs[2]}', '1.24'),
        (f'member_of=!{aggs[0]}', '1.32'),
        (f'in_tree={roots[0]}', '1.14'),
        (f'in_tree={children[0]}', LATEST),
        ('resources=VCPU:2,MEMORY_MB:1024', '1.4'),
        ('resources=VCPU:2,MEMORY_MB:1024', LATEST),
        ('resources=DISK_GB:5000', LATEST),
        ('resources=SRIOV_NET_VF:2', LATEST),
        ('required=HW_CPU_X86_AVX2', '1.18'),
        ('required=HW_CPU_X86_AVX2,!COMPUTE_STATUS_DISABLED', '1.22'),
        ('required=in:HW_CPU_X86_AVX2,HW_CPU_X86_AVX512F', LATEST),
        ('required=CUSTOM_GOLD&resources=VCPU:1', LATEST),
        ('resources=CUSTOM_BAREMETAL_GOLD:1', LATEST),
        ('resources=NOPE:1', LATEST),                  # 400
        ('in_tree=' + str(uuidlib.UUID(int=1)), LATEST),
    ]
    reqs += [(f'/resource_providers?{q}', v) for q, v in filters]
    for rp in uuids:
        base = f'/resource_providers/{rp}'
        reqs += [(base, LATEST), (f'{base}/inventories', LATEST), (f'{base}/usages', LATEST),
                 (f'{base}/traits', LATEST), (f'{base}/aggregates', LATEST),
                 (f'{base}/allocations', LATEST)]
        if rng.random() < 0.1:
            old = rng.choice(['1.0', '1.14', '1.19'])
            reqs += [(base, old), (f'{base}/aggregates', old), (f'{base}/inventories', old)]
    reqs.append((f'/resource_providers/{uuidlib.UUID(int=2)}', LATEST))     # 404
    reqs.append((f'/resource_providers/{uuidlib.UUID(int=2)}/inventories', LATEST))
    # every inventory by class, from the source's inventories
    for rp in uuids:
        for rc in sorted(cloud.providers[rp].inventories if rp in cloud.providers else []):
            reqs.append((f'/resource_providers/{rp}/inventories/{rc}', LATEST))
        if rp in cloud.providers and rng.random() < 0.1:        # 404: no such inventory
            reqs.append((f'/resource_providers/{rp}/inventories/CUSTOM_FPGA_XILINX', LATEST))
    classes = source.expect('GET', '/resource_classes').json()['resource_classes']
    reqs += [('/resource_classes', '1.2'), ('/resource_classes', LATEST)]
    reqs += [(f'/resource_classes/{c["name"]}', LATEST) for c in classes]
    reqs += [('/resource_classes/CUSTOM_RETIRED_GPU', LATEST), ('/resource_classes/VCPU', '1.2')]
    reqs += [('/traits', '1.6'), ('/traits', LATEST),
             ('/traits?name=startswith:CUSTOM_', LATEST),
             ('/traits?name=startswith:HW_CPU', LATEST),
             ('/traits?name=in:CUSTOM_GOLD,HW_CPU_X86_AVX2,MISC_SHARES_VIA_AGGREGATE', LATEST),
             ('/traits?associated=true', LATEST), ('/traits?associated=false', LATEST),
             ('/traits?name=startswith:CUSTOM_&associated=true', LATEST),
             ('/traits?name=in:CUSTOM_GOLD,NOPE', LATEST),
             ('/traits?associated=maybe', LATEST)]                   # 400
    reqs += [(f'/traits/{t}', LATEST) for t in CUSTOM_TRAITS
             + ['HW_CPU_X86_AVX2', 'MISC_SHARES_VIA_AGGREGATE', 'CUSTOM_OLD_RACK_LABEL', 'NOPE']]
    # every consumer, as the providers' allocations name them
    consumers = set()
    for rp in uuids:
        answer = source.expect('GET', f'/resource_providers/{rp}/allocations').json()
        consumers.update(answer['allocations'])
    consumers = sorted(consumers)
    for c in consumers:
        reqs.append((f'/allocations/{c}', LATEST))
        if rng.random() < 0.1:
            reqs += [(f'/allocations/{c}', v) for v in ('1.0', '1.12', '1.28', '1.37')]
    reqs.append((f'/allocations/{uuidlib.UUID(int=3)}', LATEST))
    for project in cloud.projects:
        reqs += [(f'/usages?project_id={project}', '1.9'),
                 (f'/usages?project_id={project}', '1.37'),
                 (f'/usages?project_id={project}&user_id={cloud.users[0]}', '1.37')]
        for ctype in ('', '&consumer_type=INSTANCE', '&consumer_type=all',
                      '&consumer_type=unknown', '&consumer_type=MIGRATION,SHARE_RESERVATION'):
            reqs.append((f'/usages?project_id={project}{ctype}', LATEST))
    reqs.append(('/usages', LATEST))                                  # 400
    reqs += [(f'/allocation_candidates?{q}', v) for q, v in candidate_queries(cloud, aggs, roots)]
    return reqs, len(uuids), len(consumers)


def candidate_queries(cloud, aggs, roots):
    numa_root = next((r.uuid for r in cloud.trees if any(c.kind == 'numa' for c in r.children)),
                     roots[0])
    disk_agg = cloud.pools[0].aggregates[0]
    nested = ('resources_COMPUTE=VCPU:2,MEMORY_MB:2048&required_COMPUTE=HW_NUMA_ROOT'
              '&resources_NET=SRIOV_NET_VF:1&required_NET=CUSTOM_PHYSNET_TENANT')
    return [
        ('resources=VCPU:1,MEMORY_MB:512,DISK_GB:10&limit=50', LATEST),
        ('resources=VCPU:1,MEMORY_MB:512,DISK_GB:10', LATEST),
        ('resources=VCPU:2,MEMORY_MB:2048', LATEST),
        ('resources=VCPU:1,MEMORY_MB:1024,DISK_GB:20&required=HW_CPU_X86_AVX2&limit=20', LATEST),
        ('resources=VCPU:1,MEMORY_MB:1024&required=!COMPUTE_STATUS_DISABLED', LATEST),
        ('resources=VCPU:1,MEMORY_MB:1024&required=in:HW_CPU_X86_AVX2,HW_CPU_X86_AVX512F',
         LATEST),
        (f'resources=VCPU:1,MEMORY_MB:512&member_of={aggs[0]}', LATEST),
        (f'resources=VCPU:1,MEMORY_MB:512&member_of=in:{aggs[0]},{aggs[1]}', LATEST),
        (f'resources=VCPU:1,MEMORY_MB:512&member_of=!{aggs[0]}&limit=30', LATEST),
        (f'resources=VCPU:1,MEMORY_MB:512&in_tree={numa_root}', LATEST),
        (f'{nested}&group_policy=isolate&same_subtree=_COMPUTE,_NET', LATEST),
        (f'{nested}&group_policy=none', LATEST),
        ('resources1=VCPU:1&resources2=VCPU:1&group_policy=isolate&limit=40', LATEST),
        ('resources1=VCPU:1&resources2=VCPU:1&group_policy=none&limit=40', LATEST),
        ('resources=VCPU:1,MEMORY_MB:512&root_required=HW_CPU_X86_AVX2&limit=40', LATEST),
        ('resources=VCPU:1,MEMORY_MB:512&root_required=!COMPUTE_STATUS_DISABLED,CUSTOM_GOLD',
         LATEST),
        ('resources=DISK_GB:500', LATEST),
        (f'resources=DISK_GB:100&member_of={disk_agg}', LATEST),
        ('resources=VCPU:1,MEMORY_MB:256,DISK_GB:10,IPV4_ADDRESS:1&limit=60', LATEST),
        ('resources=VCPU:1,CUSTOM_LICENSE_WINDOWS:1', LATEST),
        ('resources=CUSTOM_BAREMETAL_GOLD:1', LATEST),
        ('resources=CUSTOM_FPGA_XILINX:1,VCPU:1', LATEST),
        ('resources=VCPU:100000', LATEST),
        ('resources=NOPE:1', LATEST),
        ('resources=VCPU:1,MEMORY_MB:512,DISK_GB:10&limit=10', '1.10'),
        ('resources=VCPU:1,MEMORY_MB:512,DISK_GB:10&limit=10', '1.17'),
        ('resources1=VCPU:1,MEMORY_MB:512&resources2=SRIOV_NET_VF:1&group_policy=isolate'
         '&limit=25', '1.25'),
        ('resources=VCPU:1,MEMORY_MB:512&limit=25', '1.29'),
        (f'{nested}&group_policy=isolate&limit=25', '1.33'),
        ('resources=VCPU:1,MEMORY_MB:512&root_required=HW_CPU_X86_AVX2&limit=25', '1.35'),
        (f'{nested}&group_policy=isolate&same_subtree=_COMPUTE,_NET', '1.36'),
    ]


# --- comparing -----------------------------------------------------------------------------------

def request_id_free(answer):
    """The body with the answer's own request id (error bodies carry it) blanked."""
    rid = answer.header('x-openstack-request-id')
    return answer.body.replace(rid.encode(), b'<request-id>') if rid else answer.body


def is_now(answer):
    """Last-Modified equal to the answer's Date (within 2 s): dated 'now'."""
    modified, date = answer.header('last-modified'), answer.header('date')
    if not (modified and date):
        return False
    return abs((parsedate_to_datetime(modified) - parsedate_to_datetime(date)).total_seconds()) <= 2


def canonical_request(areq):
    """An allocation request with its lists (mappings, pre-1.12 allocations)
    in a fixed order: Placement builds them from sets."""
    areq = dict(areq)
    if isinstance(areq.get('allocations'), list):
        areq['allocations'] = sorted(areq['allocations'], key=lambda a: json.dumps(a, sort_keys=True))
    if 'mappings' in areq:
        areq['mappings'] = {k: sorted(v) for k, v in areq['mappings'].items()}
    return json.dumps(areq, sort_keys=True)


def canonical_summaries(summaries):
    return {rp: dict(s, traits=sorted(s['traits'])) if 'traits' in s else s
            for rp, s in summaries.items()}


def providers_of(areq):
    allocations = areq['allocations']
    if isinstance(allocations, dict):
        return list(allocations)
    return [a['resource_provider']['uuid'] for a in allocations]


def sorted_deep(value):
    """The JSON value with every list sorted: Placement 16 has no ORDER BY in
    any list query, so its lists come in the order the database returns rows."""
    if isinstance(value, dict):
        return {k: sorted_deep(v) for k, v in value.items()}
    if isinstance(value, list):
        return sorted((sorted_deep(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
    return value


def deliberate(path, version, old, new):
    """A difference README lists as deliberate, with its reason, or None."""
    if (path.startswith('/usages') and old.status == 500 and new.status == 200
            and version and tuple(map(int, version.split('.'))) >= (1, 38)
            and b'GroupingError' in old.body):
        return ('GET /usages at 1.38+ on PostgreSQL: Placement 16.0.0 answers 500 '
                '(a GROUP BY its SQL lacks); ours answers 200 (README, deliberate differences)')
    return None


def same_candidates(a, b):
    """The same allocation requests and summaries, in any order."""
    return (sorted(map(canonical_request, a['allocation_requests']))
            == sorted(map(canonical_request, b['allocation_requests']))
            and canonical_summaries(a['provider_summaries'])
            == canonical_summaries(b['provider_summaries'])
            and {k: v for k, v in a.items() if k not in ('allocation_requests',
                                                         'provider_summaries')}
            == {k: v for k, v in b.items() if k not in ('allocation_requests',
                                                        'provider_summaries')})


def valid_sample(answer, full, limit, roots):
    """A limited answer as Placement makes it from the full one: `limit`
    distinct requests of the full answer, and the summaries of every
    provider in the trees those requests use (research_context.limit_results)."""
    reqs = [canonical_request(a) for a in answer['allocation_requests']]
    pool = {canonical_request(a) for a in full['allocation_requests']}
    if len(reqs) != min(limit, len(pool)) or len(set(reqs)) != len(reqs) or not set(reqs) <= pool:
        return False
    used = {roots.get(rp) for a in answer['allocation_requests'] for rp in providers_of(a)}
    expected = {rp: s for rp, s in full['provider_summaries'].items() if roots.get(rp) in used}
    return canonical_summaries(answer['provider_summaries']) == canonical_summaries(expected)


def compare(path, version, old, new, full=None, roots=None):
    """(verdict, problems, now): verdict is bytes, json (the same JSON
    written differently), order (the same members, lists in another order),
    sample (limited candidates: both valid samples of the source's full
    answer `full`), deliberate (a documented difference) or different."""
    problems = []
    if old.status != new.status:
        problems.append(f'status {old.status} != {new.status}')
    headers = {}
    for side, answer in (('old', old), ('new', new)):
        headers[side] = Counter((k.lower(), v) for k, v in answer.headers
                                if k.lower() not in IGNORED_HEADERS | {'content-length',
                                                                       'last-modified'})
        if int(answer.header('content-length') or len(answer.body)) != len(answer.body):
            problems.append(f'{side} content-length does not match its body')
    if headers['old'] != headers['new']:
        only_old = headers['old'] - headers['new']
        only_new = headers['new'] - headers['old']
        problems.append(f'headers: only old {sorted(only_old.elements())}, '
                        f'only new {sorted(only_new.elements())}')
    lm_old, lm_new = old.header('last-modified'), new.header('last-modified')
    now = False
    if lm_old != lm_new:
        if lm_old and lm_new and is_now(old) and is_now(new):
            now = True
        else:
            problems.append(f'last-modified {lm_old} != {lm_new}')
    reason = deliberate(path, version, old, new)
    if reason:
        return 'deliberate', [reason], now
    body_old, body_new = request_id_free(old), request_id_free(new)
    verdict = 'bytes'
    if body_old != body_new:
        try:
            j_old, j_new = json.loads(body_old), json.loads(body_new)
        except ValueError:
            j_old, j_new = body_old, body_new
        if j_old == j_new:
            verdict = 'json'
        elif (path.startswith('/allocation_candidates') and old.status == new.status == 200
              and same_candidates(j_old, j_new)):
            verdict = 'order'
        elif (full is not None and old.status == new.status == 200
              and valid_sample(j_old, full, limit_of(path), roots)
              and valid_sample(j_new, full, limit_of(path), roots)):
            verdict = 'sample'
        elif old.status == new.status and sorted_deep(j_old) == sorted_deep(j_new):
            verdict = 'order'
        else:
            problems.append('body differs')
    if problems:
        return 'different', problems, now
    return verdict, [], now


def diff_text(old, new, limit=1500):
    def show(a):
        heads = '\n'.join(f'  {k}: {v}' for k, v in sorted(a.headers))
        return f'{a.status}\n{heads}\n  {a.body[:limit].decode(errors="replace")}'
    return f'--- old\n{show(old)}\n--- ours\n{show(new)}'


def limit_of(path):
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(path).query)
    return int(query['limit'][0]) if 'limit' in query else None


def without_limit(path):
    parts = urllib.parse.urlsplit(path)
    query = [(k, v) for k, v in urllib.parse.parse_qsl(parts.query) if k != 'limit']
    return parts.path + '?' + urllib.parse.urlencode(query, safe=':,!')


def compare_all(source, ours, reqs, threads, roots):
    results = []

    def one(req):
        path, version = req
        old = source.call('GET', path, version=version)
        new = ours.call('GET', path, version=version)
        full = None
        if path.startswith('/allocation_candidates') and limit_of(path) and old.status == 200:
            full = source.expect('GET', without_limit(path), version=version).json()
        verdict, problems, now = compare(path, version, old, new, full, roots)
        return path, version, verdict, problems, now, old, new

    with cf.ThreadPoolExecutor(threads) as pool:
        for result in pool.map(one, reqs):
            results.append(result)
    return results


# --- prepared writes (acceptance 2) ---------------------------------------------------------------

def prepare_writes(source, cloud, consumers):
    """An inventory PUT and an allocation PUT built from the old service's
    answers, with the generations it gave: what a nova-compute holds in its
    cache at the moment of the switch."""
    root = next(r for r in cloud.trees if 'VCPU' in r.inventories
                and source.call('GET', f'/resource_providers/{r.uuid}').status == 200)
    inventories = source.expect('GET', f'/resource_providers/{root.uuid}/inventories').json()
    body = {'resource_provider_generation': inventories['resource_provider_generation'],
            'inventories': {rc: dict(v, reserved=v['reserved'] + 1)
                            for rc, v in inventories['inventories'].items()}}
    inventory_put = {'path': f'/resource_providers/{root.uuid}/inventories', 'body': body,
                     'version': LATEST}
    consumer = None
    for c in consumers:
        current = source.call('GET', f'/allocations/{c.uuid}').json()
        if current['allocations'] and current.get('consumer_generation', 0) > 1:
            consumer = (c, current)     # a consumer with history: generation 2 or more
            break
    if consumer is None:
        c = next(c for c in consumers
                 if source.call('GET', f'/allocations/{c.uuid}').json()['allocations'])
        consumer = (c, source.call('GET', f'/allocations/{c.uuid}').json())
    c, current = consumer
    allocation_put = {'path': f'/allocations/{c.uuid}', 'version': LATEST, 'body': {
        'allocations': {rp: {'resources': a['resources']}
                        for rp, a in current['allocations'].items()},
        'project_id': current['project_id'], 'user_id': current['user_id'],
        'consumer_generation': current['consumer_generation'],
        'consumer_type': current.get('consumer_type') or 'INSTANCE'}}
    return [inventory_put, allocation_put]


def send_writes(ours, writes):
    """Each prepared write must succeed on ours; sent again, its generation is
    stale and it must be refused with a 409, as the old service would."""
    report = []
    for write in writes:
        first = ours.call('PUT', write['path'], write['body'], write['version'])
        again = ours.call('PUT', write['path'], write['body'], write['version'])
        generation = write['body'].get('resource_provider_generation',
                                       write['body'].get('consumer_generation'))
        report.append({'path': write['path'], 'generation': generation,
                       'status': first.status, 'again_status': again.status,
                       'ok': first.status in (200, 204) and again.status == 409,
                       'body': first.body[:300].decode(errors='replace')})
    return report


# --- one backend ---------------------------------------------------------------------------------

class Run:
    def __init__(self, args, kind):
        self.args, self.kind = args, kind
        self.processes = []
        self.workdir = tempfile.mkdtemp(prefix=f'adoption-{kind}-')
        self.src_db = f'{args.db_prefix}_src'
        self.our_db = f'{args.db_prefix}_ours'
        self.report = {'backend': kind, 'providers_requested': args.providers, 'seed': args.seed}

    def placement_env(self, backend):
        confdir = os.path.join(self.workdir, 'placement-conf')
        os.makedirs(confdir, exist_ok=True)
        open(os.path.join(confdir, 'placement.conf'), 'w').close()   # empty: all from env
        env = dict(os.environ, OS_PLACEMENT_CONFIG_DIR=confdir, OS_API__AUTH_STRATEGY='noauth2',
                   OS_PLACEMENT_DATABASE__CONNECTION=backend.sqlalchemy_url(self.src_db))
        return env

    def start_placement(self, venv, env, name):
        port = free_port()
        logfile = os.path.join(self.workdir, f'{name}.log')
        process = start_gunicorn(
            [os.path.join(venv, 'bin', 'gunicorn'), '--workers', '2', '--timeout', '600',
             '--bind', f'127.0.0.1:{port}', 'placement.wsgi.api:application'], env, logfile)
        self.processes.append(process)
        server = Server(f'http://127.0.0.1:{port}')
        wait_until_up(server, process, logfile)
        return server

    def start_ours(self, backend):
        port = free_port()
        logfile = os.path.join(self.workdir, 'ours.log')
        env = dict(os.environ, DATABASE_URL=backend.url_for(self.our_db),
                   PLACEMENT_AUTH_STRATEGY='noauth2', DJANGO_SECRET_KEY='adoption-check',
                   PLACEMENT_DATA_DIR=self.workdir)
        process = start_gunicorn(
            [OUR_PYTHON, '-m', 'gunicorn', 'placement_site.wsgi:application', '--workers', '2',
             '--timeout', '600', '--bind', f'127.0.0.1:{port}'], env, logfile)
        self.processes.append(process)
        server = Server(f'http://127.0.0.1:{port}')
        wait_until_up(server, process, logfile)
        return server

    def import_into_ours(self, backend):
        env = dict(os.environ, DATABASE_URL=backend.url_for(self.our_db),
                   DJANGO_SECRET_KEY='adoption-check', PLACEMENT_DATA_DIR=self.workdir)
        backend.recreate(self.our_db)
        subprocess.run([OUR_PYTHON, 'manage.py', 'migrate', '--noinput', '-v0'], cwd=ROOT,
                       env=env, check=True)
        started = time.time()
        done = subprocess.run([OUR_PYTHON, 'manage.py', 'import_placement', '--source-url',
                               backend.url_for(self.src_db)], cwd=ROOT, env=env,
                              capture_output=True, text=True)
        self.report['import_seconds'] = round(time.time() - started, 2)
        self.report['import_output'] = (done.stdout + done.stderr)[-4000:]
        if done.returncode:
            raise RuntimeError(f'import_placement failed ({done.returncode}):\n'
                               + self.report['import_output'])

    def run(self):
        args, kind = self.args, self.kind
        venv = subprocess.run([os.path.join(ROOT, 'scripts', 'placement-venv.sh')], check=True,
                              capture_output=True, text=True).stdout.strip().splitlines()[-1]
        backend = Backend(kind, args.server_url)
        log(f'{kind}: source database {self.src_db} on {backend.parts.hostname}:'
            f'{backend.parts.port}')
        backend.recreate(self.src_db)
        env = self.placement_env(backend)
        subprocess.run([os.path.join(venv, 'bin', 'placement-manage'), 'db', 'sync'], env=env,
                       check=True, capture_output=True)
        source = self.start_placement(venv, env, 'placement')
        log(f'{kind}: filling {source.base} with about {args.providers} providers')
        cloud = Cloud(args.providers, args.seed)
        filler = Filler(source, cloud, args.threads)
        started = time.time()
        filler.fill()
        self.report['fill_seconds'] = round(time.time() - started, 1)
        self.report['fill_requests'] = dict(filler.requests)
        self.report['rows'] = backend.row_counts(self.src_db)
        self.report['generations_above_1'] = backend.generations(self.src_db)
        writes = prepare_writes(source, cloud, filler.consumers)

        if args.self_check:
            log(f'{kind}: self-check: a second real Placement on the same database')
            ours = self.start_placement(venv, env, 'placement-twin')
            self.report['import_seconds'] = None
        else:
            log(f'{kind}: importing into {self.our_db}')
            self.import_into_ours(backend)
            log(f'{kind}: imported in {self.report["import_seconds"]} s')
            ours = self.start_ours(backend)

        reqs, n_providers, n_consumers = get_requests(source, cloud, random.Random(args.seed))
        roots = {p['uuid']: p['root_provider_uuid'] for p in source.expect(
            'GET', '/resource_providers').json()['resource_providers']}
        log(f'{kind}: comparing {len(reqs)} GETs ({n_providers} providers, '
            f'{n_consumers} consumers)')
        started = time.time()
        results = compare_all(source, ours, reqs, args.threads, roots)
        self.report['compare_seconds'] = round(time.time() - started, 1)
        self.report['providers'], self.report['consumers'] = n_providers, n_consumers
        self.summarise(results)
        if args.self_check:
            self.report['writes'] = []
        else:
            self.report['writes'] = send_writes(ours, writes)
        return self.report

    def summarise(self, results):
        verdicts = Counter(r[2] for r in results)
        self.report['answers'] = len(results)
        self.report['verdicts'] = dict(verdicts)
        self.report['now_dated'] = sum(1 for r in results if r[4])
        self.report['statuses'] = dict(Counter(str(r[5].status) for r in results))
        differences = [r for r in results if r[2] == 'different']
        self.report['differences'] = [
            {'path': p, 'version': v, 'problems': probs, 'detail': diff_text(o, n)}
            for p, v, _, probs, _, o, n in differences]
        self.report['json_only'] = [f'{v} {p}' for p, v, verdict, *_ in results
                                    if verdict == 'json'][:20]
        self.report['json_by_endpoint'] = dict(Counter(
            endpoint_kind(p) for p, v, verdict, *_ in results if verdict == 'json'))
        self.report['order_only'] = [f'{v} {p}' for p, v, verdict, *_ in results
                                     if verdict == 'order']
        self.report['order_by_endpoint'] = dict(Counter(
            endpoint_kind(p) for p, v, verdict, *_ in results if verdict == 'order'))
        self.report['deliberate'] = dict(Counter(
            probs[0] for p, v, verdict, probs, *_ in results if verdict == 'deliberate'))
        self.report['sample_only'] = [f'{v} {p}' for p, v, verdict, *_ in results
                                      if verdict == 'sample']
        self.report['server_errors'] = sorted({f'{r[1]} {r[0]}: {r[5].status}/{r[6].status}'
                                               for r in results if max(r[5].status, r[6].status) >= 500})

    def cleanup(self):
        for process in reversed(self.processes):
            stop(process)
        if not self.args.keep:
            try:
                backend = Backend(self.kind, self.args.server_url)
                backend.drop(self.src_db)
                backend.drop(self.our_db)
            except Exception as exc:      # the report matters more than the cleanup
                log(f'cleanup: {exc}')
            shutil.rmtree(self.workdir, ignore_errors=True)
        else:
            log(f'kept databases {self.src_db}, {self.our_db} and {self.workdir}')


def endpoint_kind(path):
    """/resource_providers/{uuid}/inventories -> /resource_providers/{u}/inventories"""
    path = path.split('?')[0]
    return re.sub(r'/[0-9a-f]{8}-[0-9a-f-]{27}', '/{u}', path)


def print_report(report, shown=3):
    out = sys.stdout
    print(f'\n== adoption check: {report["backend"]} ==', file=out)
    print(f'{"table":32} {"rows":>8}', file=out)
    for table, rows in report.get('rows', {}).items():
        print(f'{table:32} {rows:>8}', file=out)
    lines = [
        ('providers / consumers', f'{report.get("providers")} / {report.get("consumers")}'),
        ('generation > 1 (count, max)', report.get('generations_above_1')),
        ('fill (s, requests)', f'{report.get("fill_seconds")} s, '
                               f'{sum(report.get("fill_requests", {}).values())}'),
        ('import (s)', report.get('import_seconds')),
        ('answers compared', report.get('answers')),
        ('  byte-identical', report.get('verdicts', {}).get('bytes', 0)),
        ('  JSON-equal only', report.get('verdicts', {}).get('json', 0)),
        ('  lists in another order', report.get('verdicts', {}).get('order', 0)),
        ('  limited candidates, other sample', report.get('verdicts', {}).get('sample', 0)),
        ('  Last-Modified "now", apart', report.get('now_dated')),
        ('  deliberate (README)', report.get('verdicts', {}).get('deliberate', 0)),
        ('differences', report.get('verdicts', {}).get('different', 0)),
        ('statuses', report.get('statuses')),
        ('compare (s)', report.get('compare_seconds')),
    ]
    for label, value in lines:
        print(f'{label:32} {value}', file=out)
    for write in report.get('writes', []):
        print(f'prepared PUT {write["path"]} (generation {write["generation"]}): '
              f'{write["status"]}, again {write["again_status"]} '
              f'{"ok" if write["ok"] else "FAILED " + write["body"]}', file=out)
    for kind, count in sorted(report.get('json_by_endpoint', {}).items()):
        print(f'JSON-equal, keys in another order: {kind} ({count} answers)', file=out)
    for kind, count in sorted(report.get('order_by_endpoint', {}).items()):
        print(f'lists in another order: {kind} ({count} answers)', file=out)
    for reason, count in report.get('deliberate', {}).items():
        print(f'deliberate ({count} answers): {reason}', file=out)
    for d in report.get('differences', [])[:shown]:
        print(f'\nDIFFERENCE {d["version"]} {d["path"]}: {"; ".join(d["problems"])}\n'
              f'{d["detail"]}', file=out)
    if report.get('error'):
        print(f'\nERROR: {report["error"]}', file=out)


def passed(report):
    return (not report.get('error') and report.get('answers')
            and not report.get('verdicts', {}).get('different')
            and all(w['ok'] for w in report.get('writes', [])))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--backend', action='append', choices=['postgresql', 'mariadb'])
    parser.add_argument('--providers', type=int, default=1000)
    parser.add_argument('--seed', type=int, default=14)
    parser.add_argument('--threads', type=int, default=4)
    parser.add_argument('--db-prefix', default='adopt',
                        help='databases <prefix>_src and <prefix>_ours (dropped afterwards)')
    parser.add_argument('--server-url',
                        help='a database URL on the server to use (its user creates and drops '
                             'databases) instead of the test server script; one backend only')
    parser.add_argument('--json', help='write the full report (every difference) here')
    parser.add_argument('--keep', action='store_true', help='keep databases and logs')
    parser.add_argument('--self-check', action='store_true',
                        help='compare Placement with a second Placement (tests the harness)')
    args = parser.parse_args(argv)
    reports = []
    for kind in args.backend or ['postgresql', 'mariadb']:
        run = Run(args, kind)
        try:
            report = run.run()
        except Exception as exc:       # reported with the rest, then the next backend
            traceback.print_exc()
            report = dict(run.report, error=f'{type(exc).__name__}: {exc}')
        finally:
            run.cleanup()
        print_report(report)
        reports.append(report)
    if args.json:
        with open(args.json, 'w') as f:
            json.dump(reports, f, indent=1)
    return 0 if all(passed(r) for r in reports) else 1


if __name__ == '__main__':
    sys.exit(main())
