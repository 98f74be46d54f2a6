"""GET /capacity: books per group for every grouping, JSON and CSV saying
the same, Placement's 400s for bad input, admin or service only, and a
constant number of queries whatever the size of the cloud."""
import csv
import io

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from allocations.management.commands.load_scale import refresh_statistics
from providers.pods import services as pod_services
from providers.pods.models import Pod
from tests.support.api import assert_error
from tests.support.factories import add_allocation
from tests.support.factories import add_provider

ROW = 'a0000000-0000-4000-8000-00000000000a'
STORAGE = 'b0000000-0000-4000-8000-00000000000b'
SHARES = 'MISC_SHARES_VIA_AGGREGATE'


@pytest.fixture
def cloud(db):
    """cn1 (ROW): 8 VCPU at ratio 2 (3 used), 100 DISK_GB; cn2 (STORAGE
    through its NUMA child) 1024 MB, the child 4 VCPU; nfs (STORAGE):
    1000 DISK_GB (50 reserved), sharing. Pods: ROW in az1, STORAGE in az2."""
    rps = {}
    rps['cn1'] = add_provider('cn1', inventories={
        'VCPU': {'total': 8, 'allocation_ratio': 2.0}, 'DISK_GB': {'total': 100}},
        traits=['HW_CPU_X86_AVX2'], aggregates=[ROW])
    rps['cn2'] = add_provider('cn2', inventories={'MEMORY_MB': {'total': 1024}})
    rps['numa'] = add_provider('cn2-numa0', parent=rps['cn2'],
                               inventories={'VCPU': {'total': 4}}, aggregates=[STORAGE])
    rps['nfs'] = add_provider('nfs', inventories={'DISK_GB': {'total': 1000, 'reserved': 50}},
                              traits=[SHARES], aggregates=[STORAGE])
    add_allocation(rps['cn1'], VCPU=3, DISK_GB=40)
    pod_services.pod_create(name='row', aggregate_uuid=ROW, availability_zone='az1')
    pod_services.pod_create(name='storage', aggregate_uuid=STORAGE, availability_zone='az2')
    return rps


def books(answer):
    return {g['group']: {rc: (b['capacity'], b['used']) for rc, b in g['resources'].items()}
            for g in answer.body['groups']}


def test_the_cloud_by_default(api, cloud):
    answer = api.get('/capacity')
    assert answer.status_code == 200, answer.content
    assert answer['Content-Type'] == 'application/json'
    assert answer.body == {'group_by': 'cloud', 'resources': None, 'groups': [{
        'group': 'cloud', 'name': None, 'fits': None, 'fits_exact': None, 'resources': {
            'VCPU': {'total': 12, 'reserved': 0, 'capacity': 20, 'used': 3, 'free': 17,
                     'utilization': 15.0, 'providers': 2},
            'MEMORY_MB': {'total': 1024, 'reserved': 0, 'capacity': 1024, 'used': 0,
                          'free': 1024, 'utilization': 0.0, 'providers': 1},
            'DISK_GB': {'total': 1100, 'reserved': 50, 'capacity': 1050, 'used': 40,
                        'free': 1010, 'utilization': 100.0 * 40 / 1050, 'providers': 2}}}]}
    assert list(answer.body['groups'][0]['resources']) == ['VCPU', 'MEMORY_MB', 'DISK_GB']


def test_every_grouping(api, cloud):
    by = {g: api.get(f'/capacity?group_by={g}') for g in
          ('aggregate', 'trait', 'root', 'availability_zone')}
    assert all(a.status_code == 200 for a in by.values())
    # A pool: its members and the trees of member roots (cn2-numa0 is a
    # member without its root: only itself).
    assert books(by['aggregate']) == {
        ROW: {'VCPU': (16, 3), 'DISK_GB': (100, 40)},
        STORAGE: {'VCPU': (4, 0), 'DISK_GB': (950, 0)}}
    # A pool goes by its name (here its pod's: AggregateQuerySet.with_names).
    assert {g['group']: g['name'] for g in by['aggregate'].body['groups']} == {
        ROW: 'row', STORAGE: 'storage'}
    assert books(by['trait']) == {'HW_CPU_X86_AVX2': {'VCPU': (16, 3), 'DISK_GB': (100, 40)},
                                  SHARES: {'DISK_GB': (950, 0)}}
    roots = {g['group']: g['name'] for g in by['root'].body['groups']}
    assert roots == {cloud[n].uuid: n for n in ('cn1', 'cn2', 'nfs')}
    assert books(by['root'])[cloud['cn2'].uuid] == {'VCPU': (4, 0), 'MEMORY_MB': (1024, 0)}
    zones = books(by['availability_zone'])
    assert zones == {'az1': books(by['aggregate'])[ROW], 'az2': books(by['aggregate'])[STORAGE]}


def test_a_zone_counts_a_provider_of_two_of_its_pools_once(api, cloud):
    api.set_aggregates(cloud['cn1'].uuid, [ROW, STORAGE])
    pod_services.pod_update(pod=Pod.objects.get(name='storage'),
                            availability_zone='az1')
    zone = books(api.get('/capacity?group_by=availability_zone'))
    assert zone == {'az1': {'VCPU': (20, 3), 'DISK_GB': (1050, 40)}}


def test_fits_per_group(api, cloud):
    answer = api.get('/capacity?group_by=aggregate&resources=VCPU:2,DISK_GB:100')
    assert answer.body['resources'] == {'VCPU': 2, 'DISK_GB': 100}
    fits = {g['group']: (g['fits'], g['fits_exact']) for g in answer.body['groups']}
    # ROW: cn1 has 6 VCPU slots but 0 of disk (60 free); STORAGE: the NUMA
    # node's 2 with nfs's 9.
    assert fits == {ROW: (0, True), STORAGE: (2, True)}
    cloud_fit = api.get('/capacity?resources=VCPU:2,DISK_GB:100').body['groups'][0]
    assert (cloud_fit['fits'], cloud_fit['fits_exact']) == (2, True)


def test_resource_class_narrows_the_books_not_the_fits(api, cloud):
    answer = api.get('/capacity?resource_class=DISK_GB,MEMORY_MB&resources=VCPU:1')
    (group,) = answer.body['groups']
    assert list(group['resources']) == ['MEMORY_MB', 'DISK_GB']
    assert group['fits'] == 17   # cn1 13 + the NUMA node 4: VCPU alone


def parsed_csv(text):
    return list(csv.DictReader(io.StringIO(text)))


@pytest.mark.parametrize('group_by', ['cloud', 'aggregate', 'trait', 'root',
                                      'availability_zone'])
def test_csv_says_what_json_says(api, cloud, group_by):
    query = f'/capacity?group_by={group_by}&resources=VCPU:1,MEMORY_MB:256'
    as_json = api.get(query).body
    as_csv = api.get(query + '&format=csv')
    assert as_csv.status_code == 200
    assert as_csv['Content-Type'] == 'text/csv; charset=utf-8'
    assert as_csv.streaming  # written a group at a time, not built whole
    text = as_csv.bytes
    rows = parsed_csv(text.decode())
    expected = []
    for group in as_json['groups']:
        for rc, b in (group['resources'].items() or [('', None)]):
            numbers = {k: '' if b is None or b[k] is None else str(b[k]) for k in (
                'total', 'reserved', 'capacity', 'used', 'free', 'utilization', 'providers')}
            expected.append({'group_by': group_by, 'group': group['group'],
                             'name': group['name'] or '', 'resource_class': rc, **numbers,
                             'fits': str(group['fits']),
                             'fits_exact': str(group['fits_exact']).lower()})
    assert rows == expected
    assert rows
    # Accept: text/csv asks for the same.
    accepted = api.get(f'/capacity?group_by={group_by}&resources=VCPU:1,MEMORY_MB:256',
                       headers={'Accept': 'text/csv'})
    assert accepted.bytes == text


def test_accept_decides_without_format(api, cloud):
    assert api.get('/capacity', headers={'Accept': '*/*'})['Content-Type'] == 'application/json'
    both = api.get('/capacity', headers={'Accept': 'application/json;q=0.5, text/csv'})
    assert both['Content-Type'].startswith('text/csv')
    assert api.get('/capacity?format=json', headers={'Accept': 'text/csv'}).body['groups']
    refused = api.get('/capacity', headers={'Accept': 'image/png'})
    assert refused.status_code == 406
    assert b'Only application/json and text/csv are provided' in refused.content


@pytest.mark.parametrize('query, detail', [
    ('group_by=pool', "'pool' is not one of"),
    ('format=xml', "'xml' is not one of"),
    ('bogus=1', 'Additional properties are not allowed'),
    ('resources=', 'Badly formed resources parameter'),
    ('resources=VCPU', 'Badly formed resources parameter'),
    ('resources=VCPU:0', 'Requested resource VCPU requires amount >= 1. Got: 0.'),
    ('resources=VCPU:x', 'Requested resource VCPU expected positive integer amount. Got: x.'),
    ('resources=CUSTOM_NOPE:1',
     'Invalid resource class in resources parameter: No such resource class CUSTOM_NOPE.'),
    ('resource_class=VCPU,CUSTOM_NOPE',
     'Invalid resource class in resource_class parameter: No such resource class CUSTOM_NOPE.'),
    ('resource_class=', 'Invalid query string parameters'),
])
def test_bad_parameters_are_400s(api, cloud, query, detail):
    assert_error(api.get(f'/capacity?{query}'), 400, detail)


def test_admin_or_service_only(make_api, cloud):
    assert_error(make_api(token='user:proj').get('/capacity'), 403, 'placement:capacity:show')
    service = make_api(token='nova:service-project').get(
        '/capacity', headers={'X-Roles': 'service'})
    assert service.status_code == 200
    assert make_api(token=False).get('/capacity').status_code == 401


def grow(count, start):
    """`count` compute trees (root with disk, NUMA child with VCPU) in
    ROW, and another sharing disk pool per ten."""
    for i in range(start, start + count):
        root = add_provider(f'grown{i}', inventories={'DISK_GB': {'total': 100}},
                            traits=['HW_CPU_X86_AVX2'], aggregates=[ROW])
        add_provider(f'grown{i}-numa0', parent=root, inventories={'VCPU': {'total': 8}})
        if i % 10 == 0:
            add_provider(f'pool{i}', inventories={'DISK_GB': {'total': 500}},
                         traits=[SHARES], aggregates=[ROW])


def count_queries(api, url):
    with CaptureQueriesContext(connection) as captured:
        assert api.get(url).status_code == 200
    return len(captured)


URLS = ['/capacity', '/capacity?resources=VCPU:1,DISK_GB:10',
        '/capacity?group_by=aggregate&resources=VCPU:1,DISK_GB:10',
        '/capacity?group_by=trait&format=csv',
        '/capacity?group_by=root&resources=VCPU:2',
        '/capacity?group_by=availability_zone&resources=VCPU:1&resource_class=VCPU']


def test_queries_do_not_grow_with_the_cloud(api, cloud):
    # Fresh planner statistics after each growth, as load_scale takes them:
    # PostgreSQL's, left from the larger clouds earlier tests of this worker
    # built, once planned a pool's books here past the 10 s statement budget.
    grow(3, 0)
    refresh_statistics()
    small = {url: count_queries(api, url) for url in URLS}
    grow(40, 3)
    refresh_statistics()
    large = {url: count_queries(api, url) for url in URLS}
    assert large == small
    assert max(small.values()) <= 10, small
