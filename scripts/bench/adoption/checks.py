"""What an adoption check asks of both servers: every GET, built from the
source's own answers (each provider's and consumer's resources, lists with
filters at old and new microversions, allocation candidates), and a
client's prepared writes, which must succeed on ours once and then be
refused as stale.
"""
import urllib.parse
import uuid as uuidlib

from scripts.bench.adoption import LATEST
from scripts.bench.adoption.cloud import CUSTOM_TRAITS

# --- the requests to compare ---------------------------------------------------------------------


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


# --- prepared writes, refused as stale once used ---------------------------------------------

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
