"""GET /metrics: openstack-exporter's Placement series and ours, equal to
what the API answers; pool and cloud sums; a fixed number of queries; who
may scrape; request, error, conflict and capacity-refusal counters, in one
process and added up over several gunicorn workers."""
import gzip
import os
import signal
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psycopg2
import pytest
import requests
from django.db import OperationalError
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from providers import services
from providers.models import ResourceProvider
from scripts.harness.placement import Server
from tests.support.api import new_uuid
from tests.support.factories import bulk_trees
from tests.support.metrics import of
from tests.support.metrics import parse
from tests.support.metrics import scrape
from tests.support.metrics import value

POOL_A = str(uuid.uuid4())
POOL_B = str(uuid.uuid4())
COMPAT = ('openstack_placement_resource_total', 'openstack_placement_resource_allocation_ratio',
          'openstack_placement_resource_reserved', 'openstack_placement_resource_usage')
OURS = ('placement_provider_capacity', 'placement_provider_free')


@pytest.fixture
def cloud(api):
    """Nested compute nodes, a sharing NFS provider, two pools and usage.

    Pool A: cn1 (its NUMA nodes come with it, as member_of reads a member
    root's tree) and the NFS provider. Pool B: cn2's NUMA node alone (a
    member whose root is not one)."""
    cn1 = api.create_provider('cn1')['uuid']
    numa0 = api.create_provider('cn1-numa0', parent=cn1)['uuid']
    numa1 = api.create_provider('cn1-numa1', parent=cn1)['uuid']
    cn2 = api.create_provider('cn2')['uuid']
    cn2_numa = api.create_provider('cn2-numa0', parent=cn2)['uuid']
    # A name the text format must escape.
    nfs = api.create_provider('nfs "share" \\ row1')['uuid']
    api.set_inventory(cn1, {'DISK_GB': {'total': 1000, 'reserved': 100}})
    api.set_inventory(numa0, {'VCPU': {'total': 16, 'allocation_ratio': 4.0},
                              'MEMORY_MB': {'total': 65536, 'reserved': 512,
                                            'allocation_ratio': 1.5}})
    api.set_inventory(numa1, {'VCPU': {'total': 16, 'allocation_ratio': 4.0}})
    api.set_inventory(cn2, {'VCPU': {'total': 8}, 'MEMORY_MB': {'total': 16384}})
    api.set_inventory(cn2_numa, {'VCPU': {'total': 4}})
    api.set_inventory(nfs, {'DISK_GB': {'total': 10000}})
    api.set_traits(nfs, ['MISC_SHARES_VIA_AGGREGATE'])
    api.set_aggregates(cn1, [POOL_A])
    api.set_aggregates(nfs, [POOL_A])
    api.set_aggregates(cn2_numa, [POOL_B])
    assert api.allocate(new_uuid(), {numa0: {'VCPU': 4, 'MEMORY_MB': 4096},
                                     nfs: {'DISK_GB': 100}}).status_code == 204
    assert api.allocate(new_uuid(), {cn2: {'VCPU': 2}, cn2_numa: {'VCPU': 1}}).status_code == 204
    return {'cn1': cn1, 'numa0': numa0, 'cn2': cn2, 'nfs': nfs}


# ---- the catalogue's series -----------------------------------------------

def test_every_provider_and_class_as_the_api_answers(api, cloud):
    samples = scrape()
    expected = {name: {} for name in COMPAT + OURS}
    for provider in api.get('/resource_providers').body['resource_providers']:
        inventories = api.get(f"/resource_providers/{provider['uuid']}/inventories").body
        usages = api.get(f"/resource_providers/{provider['uuid']}/usages").body['usages']
        assert set(usages) == set(inventories['inventories'])
        for resource_class, inventory in inventories['inventories'].items():
            key = frozenset({'hostname': provider['name'], 'resourcetype': resource_class}.items())
            capacity = (inventory['total'] - inventory['reserved']) * inventory['allocation_ratio']
            expected['openstack_placement_resource_total'][key] = inventory['total']
            expected['openstack_placement_resource_allocation_ratio'][key] = \
                inventory['allocation_ratio']
            expected['openstack_placement_resource_reserved'][key] = inventory['reserved']
            expected['openstack_placement_resource_usage'][key] = usages[resource_class]
            expected['placement_provider_capacity'][key] = capacity
            expected['placement_provider_free'][key] = capacity - usages[resource_class]
    assert len(expected['openstack_placement_resource_total']) == 8
    for name, series in expected.items():
        assert of(samples, name) == series, name
    assert value(samples, 'openstack_placement_up') == 1
    assert value(samples, 'placement_provider_free', hostname='cn1-numa0',
                 resourcetype='MEMORY_MB') == 65024 * 1.5 - 4096
    assert value(samples, 'openstack_placement_resource_usage',
                 hostname='nfs "share" \\ row1', resourcetype='DISK_GB') == 100


def test_names_types_and_help_as_openstack_exporter_writes_them(cloud):
    response = Client().get('/metrics')
    _, families = parse(b''.join(response.streaming_content).decode())
    for name in ('up', 'resource_total', 'resource_allocation_ratio', 'resource_reserved',
                 'resource_usage'):
        assert families[f'openstack_placement_{name}'] == ('gauge', name)
    for name in ('requests', 'generation_conflicts', 'capacity_refusals'):
        assert families[f'placement_{name}'][0] == 'counter'
    assert families['placement_request_duration_seconds'][0] == 'histogram'


def test_pool_and_cloud_sums(api, cloud):
    samples = scrape()

    def books(prefix, **labels):
        return {field: value(samples, f'{prefix}_{field}', **labels)
                for field in ('total', 'reserved', 'capacity', 'used', 'free')}

    # Pool A: cn1's tree (its DISK_GB, both NUMA nodes' VCPU and memory) and the NFS share.
    assert books('placement_pool', aggregate=POOL_A, resourcetype='DISK_GB') == {
        'total': 11000, 'reserved': 100, 'capacity': 10900, 'used': 100, 'free': 10800}
    assert books('placement_pool', aggregate=POOL_A, resourcetype='VCPU') == {
        'total': 32, 'reserved': 0, 'capacity': 128, 'used': 4, 'free': 124}
    assert books('placement_pool', aggregate=POOL_A, resourcetype='MEMORY_MB') == {
        'total': 65536, 'reserved': 512, 'capacity': 97536, 'used': 4096, 'free': 93440}
    # Pool B: the NUMA node alone, not its root's VCPU.
    assert books('placement_pool', aggregate=POOL_B, resourcetype='VCPU') == {
        'total': 4, 'reserved': 0, 'capacity': 4, 'used': 1, 'free': 3}
    assert {dict(labels)['aggregate'] for labels in of(samples, 'placement_pool_total')} == {
        POOL_A, POOL_B}
    assert len(of(samples, 'placement_pool_total')) == 4

    assert books('placement_cloud', resourcetype='VCPU') == {
        'total': 44, 'reserved': 0, 'capacity': 140, 'used': 7, 'free': 133}
    assert books('placement_cloud', resourcetype='MEMORY_MB') == {
        'total': 81920, 'reserved': 512, 'capacity': 113920, 'used': 4096, 'free': 109824}
    assert books('placement_cloud', resourcetype='DISK_GB') == {
        'total': 11000, 'reserved': 100, 'capacity': 10900, 'used': 100, 'free': 10800}
    # The cloud's sums are the providers' sums.
    for field, per_provider in (('total', 'openstack_placement_resource_total'),
                                ('used', 'openstack_placement_resource_usage'),
                                ('capacity', 'placement_provider_capacity')):
        for resource_class in ('VCPU', 'MEMORY_MB', 'DISK_GB'):
            assert value(samples, f'placement_cloud_{field}', resourcetype=resource_class) == sum(
                v for labels, v in of(samples, per_provider).items()
                if dict(labels)['resourcetype'] == resource_class)


def test_queries_do_not_grow_with_providers(db):
    def counted():
        with CaptureQueriesContext(connection) as captured:
            samples = scrape()
        return len(captured), samples

    bulk_trees(5, start=0, name='bulk', pool=POOL_A)
    small, samples = counted()
    assert len(of(samples, 'openstack_placement_resource_total')) == 10
    bulk_trees(245, start=5, name='bulk', pool=POOL_A)
    large, samples = counted()
    assert ResourceProvider.objects.count() == 500
    assert len(of(samples, 'openstack_placement_resource_total')) == 500
    assert value(samples, 'placement_pool_total', aggregate=POOL_A, resourcetype='VCPU') == 4000
    # Inside the test's transaction the rows are read as the ledger's image
    # is (6: providers, traits, aggregates, inventories, the classes' and
    # traits' names), the pools and the cloud (2), os-capacity's 5
    # (providers.os_capacity), the per-project usage's 3, and the stranded
    # capacity of the cloud and of the pools (2 each: the flavors' class ids,
    # the per-tree slots); sharing providers add some (query_counts.json).
    # From the ledger, a scrape reads the books' version and what changed.
    assert small == large == 21


# ---- access -----------------------------------------------------------------

OUTSIDE = '192.0.2.7'  # TEST-NET-1: a documentation address, never a real client


def refused(response):
    assert response.status_code == 403
    body = response.json()
    assert body['errors'][0]['status'] == 403
    assert body['errors'][0]['title'] == 'Forbidden'
    assert 'PLACEMENT_METRICS_ALLOWED_NETWORKS' in body['errors'][0]['detail']
    return True


@pytest.mark.parametrize('accept', ['gzip', 'gzip, deflate', 'deflate, gzip;q=1.0'])
def test_gzip_when_the_scraper_accepts_it(cloud, accept):
    plain = Client().get('/metrics')
    packed = Client().get('/metrics', HTTP_ACCEPT_ENCODING=accept)
    assert 'Content-Encoding' not in plain
    assert packed['Content-Encoding'] == 'gzip'
    for response in (plain, packed):
        assert 'Accept-Encoding' in [v.strip() for v in response['Vary'].split(',')]
    text = b''.join(plain.streaming_content)
    body = b''.join(packed.streaming_content)
    # The process and request series move between scrapes; the catalogue's do not.
    ours = (b'openstack_placement_resource', b'placement_provider_', b'placement_pool_',
            b'placement_cloud_')
    catalogue = [line for line in gzip.decompress(body).splitlines() if line.startswith(ours)]
    assert catalogue == [line for line in text.splitlines() if line.startswith(ours)]
    assert len(catalogue) > 50


def test_no_gzip_unless_asked(db):
    for accept in ('', 'identity', 'deflate, br'):
        assert 'Content-Encoding' not in Client().get('/metrics', HTTP_ACCEPT_ENCODING=accept)


def test_loopback_may_scrape_without_placement_credentials(db):
    # No X-Auth-Token: /metrics is not a Placement path, the API's auth does not apply.
    assert value(scrape(REMOTE_ADDR='127.0.0.1'), 'openstack_placement_up') == 1
    assert value(scrape(REMOTE_ADDR='::1'), 'openstack_placement_up') == 1


def test_other_networks_are_refused(db):
    assert refused(Client().get('/metrics', REMOTE_ADDR=OUTSIDE))
    assert refused(Client().get('/metrics', REMOTE_ADDR=OUTSIDE,
                                HTTP_AUTHORIZATION='Bearer anything'))


def test_configured_networks(db, settings):
    settings.PLACEMENT_METRICS_ALLOWED_NETWORKS = ['192.0.2.0/28', '2001:db8::/32']
    assert scrape(REMOTE_ADDR=OUTSIDE)
    assert scrape(REMOTE_ADDR='::ffff:192.0.2.9')  # an IPv4 client of a dual-stack socket
    assert scrape(REMOTE_ADDR='2001:db8::1')
    assert refused(Client().get('/metrics', REMOTE_ADDR='127.0.0.1'))
    assert refused(Client().get('/metrics', REMOTE_ADDR='192.0.2.16'))


def test_bearer_token(db, settings):
    settings.PLACEMENT_METRICS_TOKEN = 's3cret'
    assert scrape(REMOTE_ADDR=OUTSIDE, HTTP_AUTHORIZATION='Bearer s3cret')
    assert scrape(REMOTE_ADDR=OUTSIDE, HTTP_AUTHORIZATION='bearer s3cret')
    assert refused(Client().get('/metrics', REMOTE_ADDR=OUTSIDE,
                                HTTP_AUTHORIZATION='Bearer s3cret2'))
    assert refused(Client().get('/metrics', REMOTE_ADDR=OUTSIDE,
                                HTTP_AUTHORIZATION='Basic s3cret'))
    assert refused(Client().get('/metrics', REMOTE_ADDR=OUTSIDE))
    # The allowed networks still need no token.
    assert scrape(REMOTE_ADDR='127.0.0.1')


def test_only_get(db):
    response = Client().post('/metrics')
    assert response.status_code == 405
    assert response['Allow'] == 'GET'
    assert response.json()['errors'][0]['status'] == 405


# ---- request series ---------------------------------------------------------

def delta(before, after, name, **labels):
    return value(after, name, **labels) - value(before, name, **labels)


def test_requests_are_counted_and_timed_by_route_and_status(api, cloud):
    before = scrape()
    for _ in range(3):
        assert api.get('/resource_providers').status_code == 200
    assert api.get(f'/resource_providers/{cloud["cn1"]}/inventories').status_code == 200
    assert api.get(f'/resource_providers/{new_uuid()}/inventories').status_code == 404
    assert api.get('/resource_providers', token=False).status_code == 401
    assert api.get(f'/no/such/path/{new_uuid()}').status_code == 404
    after = scrape()

    count = 'placement_requests_total'
    histogram = 'placement_request_duration_seconds'
    assert delta(before, after, count, route='/resource_providers', method='GET',
                 status='200') == 3
    assert delta(before, after, count, route='/resource_providers/{uuid}/inventories',
                 method='GET', status='200') == 1
    assert delta(before, after, count, route='/resource_providers/{uuid}/inventories',
                 method='GET', status='404') == 1
    # Refused by the auth middleware, before the view: still its route.
    assert delta(before, after, count, route='/resource_providers', method='GET',
                 status='401') == 1
    assert delta(before, after, count, route='unmatched', method='GET', status='404') == 1
    # The scrape before this one.
    assert delta(before, after, count, route='/metrics', method='GET', status='200') == 1
    # No raw paths, whatever was asked for.
    routes = {dict(labels)['route'] for labels in of(after, count)}
    assert not [route for route in routes if cloud['cn1'] in route or 'no/such' in route]

    labels = {'route': '/resource_providers', 'method': 'GET', 'status': '200'}
    assert delta(before, after, f'{histogram}_count', **labels) == 3
    assert delta(before, after, f'{histogram}_bucket', le='+Inf', **labels) == 3
    assert delta(before, after, f'{histogram}_sum', **labels) > 0
    buckets = sorted((float(dict(k)['le']), v)
                     for k, v in of(after, f'{histogram}_bucket').items()
                     if set(labels.items()) <= k)
    assert [v for _, v in buckets] == sorted(v for _, v in buckets)  # cumulative


def test_generation_conflicts_are_counted_at_every_microversion(api, cloud):
    before = scrape()
    for version in ('1.39', '1.14'):
        answer = api.put(f'/resource_providers/{cloud["cn2"]}/inventories', {
            'resource_provider_generation': 0, 'inventories': {'VCPU': {'total': 9}}},
            version=version)
        assert answer.status_code == 409
    # Only from 1.23 does the body say which conflict it was.
    assert answer.body['errors'][0].get('code') is None
    # A stale consumer generation is one too.
    consumer = new_uuid()
    assert api.allocate(consumer, {cloud['cn2']: {'VCPU': 1}}).status_code == 204
    stale = api.allocate(consumer, {cloud['cn2']: {'VCPU': 2}}, generation=None)
    assert stale.status_code == 409
    assert stale.body['errors'][0]['code'] == 'placement.concurrent_update'
    # Other 409s are not.
    assert api.delete(f'/resource_providers/{cloud["cn1"]}').status_code == 409
    after = scrape()
    assert delta(before, after, 'placement_generation_conflicts_total',
                 route='/resource_providers/{uuid}/inventories') == 2
    assert delta(before, after, 'placement_generation_conflicts_total',
                 route='/allocations/{consumer_uuid}') == 1
    assert sum(of(after, 'placement_generation_conflicts_total').values()) - sum(
        of(before, 'placement_generation_conflicts_total').values()) == 3
    assert sum(of(after, 'placement_capacity_refusals_total').values()) == sum(
        of(before, 'placement_capacity_refusals_total').values())


def test_capacity_refusals_are_counted(api, cloud):
    before = scrape()
    # cn2 has 8 VCPU at ratio 1.0, 2 of them allocated.
    refused_claim = api.allocate(new_uuid(), {cloud['cn2']: {'VCPU': 7}})
    assert refused_claim.status_code == 409
    assert 'exceed the capacity' in refused_claim.body['errors'][0]['detail']
    many = api.post('/allocations', {new_uuid(): {
        'allocations': {cloud['nfs']: {'resources': {'DISK_GB': 20000}}},
        'project_id': 'p', 'user_id': 'u', 'consumer_generation': None,
        'consumer_type': 'INSTANCE'}})
    assert many.status_code == 409
    # Not refusals for capacity: a class the provider has none of; a
    # claim that fits.
    assert api.allocate(new_uuid(), {cloud['nfs']: {'VCPU': 1}}).status_code == 409
    assert api.allocate(new_uuid(), {cloud['cn2']: {'VCPU': 6}}).status_code == 204
    after = scrape()
    assert delta(before, after, 'placement_capacity_refusals_total',
                 route='/allocations/{consumer_uuid}') == 1
    assert delta(before, after, 'placement_capacity_refusals_total', route='/allocations') == 1
    assert sum(of(after, 'placement_capacity_refusals_total').values()) - sum(
        of(before, 'placement_capacity_refusals_total').values()) == 2
    assert sum(of(after, 'placement_generation_conflicts_total').values()) == sum(
        of(before, 'placement_generation_conflicts_total').values())
    # The accepted claim shows in the next scrape's usage.
    assert value(after, 'openstack_placement_resource_usage', hostname='cn2',
                 resourcetype='VCPU') == 8
    assert value(after, 'placement_provider_free', hostname='cn2', resourcetype='VCPU') == 0


def database_away(**kwargs):
    """A service meeting a database that is away, as the driver says it."""
    try:
        raise psycopg2.OperationalError('server closed the connection unexpectedly')
    except psycopg2.Error as exc:
        raise OperationalError('server closed the connection unexpectedly') from exc


def test_every_error_answer_is_counted_by_route_status_and_code(api, monkeypatch):
    """Errors answered before any view (no credentials, a microversion
    this server does not serve, a scraper from elsewhere), outages and
    unknown paths too: every error goes through the one renderer."""
    monkeypatch.setattr(services, 'trait_ensure', database_away)
    before = scrape()
    assert api.get('/resource_providers', token=False).status_code == 401
    assert api.get('/resource_providers', version='9.99').status_code == 406
    assert api.get('/resource_providers', version='1.abc').status_code == 400
    assert api.put('/traits/CUSTOM_AWAY').status_code == 503
    assert api.get(f'/no/such/path/{new_uuid()}').status_code == 404
    assert api.put(f'/resource_providers/{new_uuid()}', {'name': 'x'}).status_code == 404
    assert Client().get('/metrics', REMOTE_ADDR=OUTSIDE).status_code == 403
    after = scrape()
    count = 'placement_errors_total'
    undefined = 'placement.undefined_code'
    for route, status in (('/resource_providers', '401'), ('/resource_providers', '406'),
                          ('/resource_providers', '400'), ('/traits/{name}', '503'),
                          ('unmatched', '404'), ('/resource_providers/{uuid}', '404'),
                          ('/metrics', '403')):
        assert delta(before, after, count, route=route, status=status, code=undefined) == 1, (
            route, status)
    assert sum(of(after, count).values()) - sum(of(before, count).values()) == 7
    # A conflict is counted by its code as well as a conflict.
    provider = api.create_provider('cn')['uuid']
    stale = api.put(f'/resource_providers/{provider}/traits',
                    {'traits': [], 'resource_provider_generation': 7})
    assert stale.status_code == 409
    again = scrape()
    assert delta(after, again, count, route='/resource_providers/{uuid}/traits', status='409',
                 code='placement.concurrent_update') == 1
    assert delta(after, again, 'placement_generation_conflicts_total',
                 route='/resource_providers/{uuid}/traits') == 1


# ---- several gunicorn workers -----------------------------------------------

REQUESTS = 60
HEADERS = {'X-Auth-Token': 'admin', 'OpenStack-API-Version': 'placement 1.39'}


@pytest.fixture
def workers(tmp_path):
    """Placement under gunicorn, 3 workers sharing a multiprocess directory,
    on an SQLite file of its own."""
    multiproc = tmp_path / 'prometheus'
    multiproc.mkdir()
    server = Server(tmp_path, database_url=f'sqlite:///{tmp_path / "placement.sqlite3"}',
                    workers=3, threads=None, env={'PROMETHEUS_MULTIPROC_DIR': str(multiproc)})
    server.manage('migrate', '--noinput')
    server.start()
    yield server.url, multiproc, server.process
    server.stop()


def live_scrape(url):
    answer = requests.get(url + '/metrics', timeout=30)
    assert answer.status_code == 200, answer.text
    return parse(answer.text)[0]


def worker_pids(multiproc):
    return {int(path.stem.rsplit('_', 1)[1]) for path in multiproc.glob('counter_*.db')}


@pytest.mark.slow
@pytest.mark.any_database  # its server is on an SQLite file of its own
def test_several_workers_add_up(workers):
    url, multiproc, server = workers
    sent = 0
    # A batch, and more until more than one worker has served (the root
    # requests of the start-up wait too; on a busy machine one worker may
    # win every accept of a batch).
    while not sent or len(worker_pids(multiproc)) < 2:
        assert sent < 10 * REQUESTS, 'one worker served every request'
        with ThreadPoolExecutor(6) as pool:
            statuses = list(pool.map(
                lambda _: requests.get(url + '/resource_providers', headers=HEADERS,
                                       timeout=30).status_code, range(REQUESTS)))
        assert statuses == [200] * REQUESTS
        sent += REQUESTS
    labels = {'route': '/resource_providers', 'method': 'GET', 'status': '200'}
    # Whichever worker answers the scrape, it counts every worker's requests.
    for _ in range(4):
        samples = live_scrape(url)
        assert value(samples, 'placement_requests_total', **labels) == sent
        assert value(samples, 'placement_request_duration_seconds_count', **labels) == sent
        assert value(samples, 'openstack_placement_up') == 1
    # A worker that exits (and is replaced) leaves its counts behind.
    pid = max(worker_pids(multiproc), key=lambda p: (multiproc / f'counter_{p}.db').stat().st_size)
    assert f'PPid:\t{server.pid}\n' in Path(f'/proc/{pid}/status').read_text()  # our worker
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 30
    while Path(f'/proc/{pid}').exists():  # until the master has reaped it
        assert time.monotonic() < deadline, f'worker {pid} did not exit'
        time.sleep(0.05)
    assert value(live_scrape(url), 'placement_requests_total', **labels) == sent


def test_stranded_per_pool_and_cloud(api, cloud, settings):
    """placement_cloud_stranded and placement_pool_stranded say what
    GET /capacity?view=stranded says, for each class and pool."""
    settings.PLACEMENT_CAPACITY_FLAVORS = 'small=VCPU:1,MEMORY_MB:512,DISK_GB:10;ram=MEMORY_MB:4096'
    response = Client().get('/metrics')
    samples, families = parse(b''.join(response.streaming_content).decode())
    for kind in ('pool', 'cloud'):
        assert families[f'placement_{kind}_stranded'][0] == 'gauge'
        assert 'no configured flavor' in families[f'placement_{kind}_stranded'][1]
    expected = {}
    for group_by, name in (('cloud', 'placement_cloud_stranded'),
                           ('aggregate', 'placement_pool_stranded')):
        for group in api.get(f'/capacity?view=stranded&group_by={group_by}').body['groups']:
            for resource_class, numbers in group['resources'].items():
                labels = {'resourcetype': resource_class}
                if group_by == 'aggregate':
                    labels['aggregate'] = group['group']
                expected[name, frozenset(labels.items())] = numbers['stranded']
    found = {key: v for key, v in samples.items() if key[0].endswith('_stranded')}
    assert found == expected
    assert len(found) == 3 + 4 and any(found.values())
