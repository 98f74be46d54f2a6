"""The cloud an adoption check fills the real Placement with: a seeded plan
(nested compute trees, sharing DISK_GB and IPV4_ADDRESS pools, custom
classes and traits, consumers of several types, every planned allocation
fitting at once), and the Filler that writes it through the REST API, with
churn so generations are not all 1.
"""
import concurrent.futures as cf
import random
import threading
import time
import uuid as uuidlib
from collections import Counter
from collections import defaultdict
from dataclasses import dataclass
from dataclasses import field

from scripts.bench.adoption import LATEST
from scripts.bench.adoption import log

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
        return [p for p in self.pools
                if rc in p.inventories and set(p.aggregates) & set(root.aggregates)]

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
            license_server = self.sharing(root, 'CUSTOM_LICENSE_WINDOWS')[0]
            wanted[license_server.uuid]['CUSTOM_LICENSE_WINDOWS'] = 1
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


# --- filling the source through its API ----------------------------------------------------------

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
            changed = {rc: dict(v, reserved=v['reserved'] + 1)
                       for rc, v in root.inventories.items()}
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
