"""The pool plugin (pool-cli/) in the real `openstack` binary, run as a
subprocess against a live server: what each command does is checked through
the REST API, what it prints through `-f json`."""
import json
import math
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import requests
from django.core.handlers.wsgi import WSGIHandler

from placement_site.wsgi import _with_keystone
from tests.support.keystone import Identity
from tests.support.keystone import keystone_url

pytestmark = [pytest.mark.slow, pytest.mark.any_database,
              pytest.mark.django_db(transaction=True, serialized_rollback=True)]

OPENSTACK = Path(sys.executable).parent / 'openstack'
HEADERS = {'X-Auth-Token': 'admin', 'OpenStack-API-Version': 'placement 1.39'}
POOL_TRAIT = 'MISC_SHARES_VIA_AGGREGATE'
ROW_1_RACKS_6_10 = '6b3a2c1e-0a10-4d6e-9c01-000000000610'
DISK = {'total': 102400, 'reserved': 1024, 'min_unit': 50, 'max_unit': 10000,
        'step_size': 10, 'allocation_ratio': 1.0}
IPV4 = {'total': 254, 'reserved': 5, 'min_unit': 1, 'max_unit': 2147483647,
        'step_size': 1, 'allocation_ratio': 1.0}


class Placement:
    """The live server, through the REST API (setup and checks) and through
    the `openstack` binary (what is tested)."""

    def __init__(self, url):
        self.url = url
        self.http = requests.Session()
        self.http.headers.update(HEADERS)

    def api(self, method, path, body=None, status=200):
        answer = self.http.request(method, self.url + path, json=body, timeout=30)
        assert answer.status_code == status, answer.text
        return answer.json() if answer.content else None

    def openstack(self, *args, auth=None, ok=True):
        """Run `openstack ARGS`; with ok, it must succeed and -f json output is parsed."""
        env = {k: v for k, v in os.environ.items() if not k.startswith('OS_')}
        auth = auth or ['--os-auth-type', 'admin_token', '--os-endpoint', self.url,
                        '--os-token', 'admin']
        done = subprocess.run([str(OPENSTACK), *auth, *args], env=env, check=False,
                              capture_output=True, text=True, timeout=60)
        if not ok:
            assert done.returncode != 0, done.stdout
            assert 'Traceback' not in done.stderr, done.stderr
            return done.stderr
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout) if '-f' in args else done.stdout

    def provider(self, name, *, pool=True, inventories=None, aggregates=(), uuid_=None):
        """A provider made through the REST API; a pool has the pool trait."""
        rp = self.api('POST', '/resource_providers',
                      {'name': name, 'uuid': uuid_ or str(uuid.uuid4())})
        path = f'/resource_providers/{rp["uuid"]}'
        generation = rp['generation']
        if pool:
            generation = self.api('PUT', f'{path}/traits', {
                'traits': [POOL_TRAIT],
                'resource_provider_generation': generation})['resource_provider_generation']
        if aggregates:
            generation = self.api('PUT', f'{path}/aggregates', {
                'aggregates': list(aggregates),
                'resource_provider_generation': generation})['resource_provider_generation']
        if inventories:
            self.api('PUT', f'{path}/inventories', {
                'inventories': inventories, 'resource_provider_generation': generation})
        return rp['uuid']

    def allocate(self, provider, resources):
        consumer = str(uuid.uuid4())
        self.api('PUT', f'/allocations/{consumer}', {
            'allocations': {provider: {'resources': resources}},
            'consumer_generation': None, 'project_id': uuid.uuid4().hex,
            'user_id': uuid.uuid4().hex, 'consumer_type': 'INSTANCE'}, status=204)
        return consumer

    def inventories(self, provider):
        return self.api('GET', f'/resource_providers/{provider}/inventories')['inventories']


@pytest.fixture
def placement(live_server):
    return Placement(live_server.url)


def with_capacity(record, used=0):
    capacity = int((record['total'] - record['reserved']) * record['allocation_ratio'])
    return {**record, 'capacity': capacity, 'used': used, 'free': capacity - used}


def test_create_makes_a_pool_with_the_given_uuid(placement):
    pool = str(uuid.uuid4())
    other = str(uuid.uuid4())
    shown = placement.openstack('resource', 'pool', 'create', 'nfs-row1', '--uuid', pool,
                                '--aggregate-uuid', ROW_1_RACKS_6_10,
                                '--aggregate-uuid', other, '-f', 'json')

    assert shown == {'uuid': pool, 'name': 'nfs-row1', 'generation': 2,
                     'aggregates': sorted([ROW_1_RACKS_6_10, other]),
                     'traits': [POOL_TRAIT], 'inventories': {}}
    path = f'/resource_providers/{pool}'
    assert placement.api('GET', path)['name'] == 'nfs-row1'
    assert placement.api('GET', f'{path}/traits')['traits'] == [POOL_TRAIT]
    assert sorted(placement.api('GET', f'{path}/aggregates')['aggregates']) == sorted(
        [ROW_1_RACKS_6_10, other])


def test_create_with_a_taken_name_shows_placements_detail(placement):
    placement.provider('nfs-row1')
    error = placement.openstack('resource', 'pool', 'create', 'nfs-row1',
                                '--aggregate-uuid', ROW_1_RACKS_6_10, ok=False)

    assert 'Conflicting resource provider name: nfs-row1 already exists. (HTTP 409)' in error
    names = [rp['name'] for rp in placement.api('GET', '/resource_providers')['resource_providers']]
    assert names == ['nfs-row1']


def test_create_is_all_or_nothing(placement):
    """Placement refuses the aggregate after the provider was made: the
    command deletes the provider again."""
    error = placement.openstack('resource', 'pool', 'create', 'half-made',
                                '--aggregate-uuid', 'row-1', ok=False)

    assert "JSON does not validate: 'row-1' is not a 'uuid'" in error
    assert error.strip().endswith('(HTTP 400); no pool was created')
    assert placement.api('GET', '/resource_providers?name=half-made')['resource_providers'] == []


def test_list_shows_capacity_used_and_free_of_pools_only(placement):
    nfs = placement.provider('nfs-row1', inventories={'DISK_GB': DISK, 'IPV4_ADDRESS': IPV4})
    overcommitted = placement.provider('ipv4-net', inventories={
        'IPV4_ADDRESS': {**IPV4, 'allocation_ratio': 1.5}})
    empty = placement.provider('empty-pool')
    compute = placement.provider('cn1', pool=False, inventories={'DISK_GB': DISK})
    placement.allocate(nfs, {'DISK_GB': 500})
    placement.allocate(nfs, {'DISK_GB': 100, 'IPV4_ADDRESS': 2})
    placement.allocate(overcommitted, {'IPV4_ADDRESS': 3})
    placement.allocate(compute, {'DISK_GB': 1000})
    generation = {rp: placement.api('GET', f'/resource_providers/{rp}')['generation']
                  for rp in (nfs, overcommitted, empty)}

    rows = placement.openstack('resource', 'pool', 'list', '-f', 'json')

    def row(rp, name, rc, capacity, used):
        return {'uuid': rp, 'name': name, 'generation': generation[rp], 'resource_class': rc,
                'capacity': capacity, 'used': used, 'free': None if capacity is None
                else capacity - used}
    assert rows == [
        row(empty, 'empty-pool', None, None, None),
        row(overcommitted, 'ipv4-net', 'IPV4_ADDRESS', 373, 3),  # int(249 * 1.5)
        row(nfs, 'nfs-row1', 'DISK_GB', 101376, 600),
        row(nfs, 'nfs-row1', 'IPV4_ADDRESS', 249, 2),
    ]


def test_show_by_uuid_and_by_name(placement):
    pool = placement.provider('nfs-row1', inventories={'DISK_GB': DISK},
                              aggregates=[ROW_1_RACKS_6_10])
    placement.allocate(pool, {'DISK_GB': 1000})
    expected = {'uuid': pool, 'name': 'nfs-row1',
                'generation': placement.api('GET', f'/resource_providers/{pool}')['generation'],
                'aggregates': [ROW_1_RACKS_6_10], 'traits': [POOL_TRAIT],
                'inventories': {'DISK_GB': with_capacity(DISK, used=1000)}}

    assert placement.openstack('resource', 'pool', 'show', pool, '-f', 'json') == expected
    table = placement.openstack('resource', 'pool', 'show', 'nfs-row1', '-c', 'inventories')
    assert 'DISK_GB: capacity 101376, used 1000, free 100376' in table
    assert ('  total 102400, reserved 1024, min_unit 50, max_unit 10000, step_size 10, '
            'allocation_ratio 1.0') in table


def test_show_unknown_pool_shows_placements_detail(placement):
    missing = str(uuid.uuid4())
    error = placement.openstack('resource', 'pool', 'show', missing, ok=False)
    assert f'No resource provider with uuid {missing} found (HTTP 404)' in error


def test_set_renames(placement):
    pool = placement.provider('nfs', aggregates=[ROW_1_RACKS_6_10])
    shown = placement.openstack('resource', 'pool', 'set', pool, '--name', 'nfs-row1',
                                '-f', 'json')
    assert (shown['uuid'], shown['name'], shown['aggregates']) == (
        pool, 'nfs-row1', [ROW_1_RACKS_6_10])
    assert placement.api('GET', f'/resource_providers/{pool}')['name'] == 'nfs-row1'


def test_delete_pools_but_never_other_providers(placement):
    first, second = placement.provider('nfs-a'), placement.provider('nfs-b')
    placement.openstack('resource', 'pool', 'delete', first, 'nfs-b')
    for pool in (first, second):
        placement.api('GET', f'/resource_providers/{pool}', status=404)

    compute = placement.provider('cn1', pool=False)
    error = placement.openstack('resource', 'pool', 'delete', compute, ok=False)
    assert f'Resource provider cn1 ({compute}) is not a pool' in error
    placement.api('GET', f'/resource_providers/{compute}')


def test_delete_pool_with_allocations_is_refused(placement):
    pool = placement.provider('nfs-row1', inventories={'DISK_GB': DISK})
    placement.allocate(pool, {'DISK_GB': 100})
    error = placement.openstack('resource', 'pool', 'delete', pool, ok=False)
    assert '1 of 1 pools not deleted' in error
    assert (f'Unable to delete resource provider {pool}: Resource provider has allocations. '
            '(HTTP 409)') in error
    placement.api('GET', f'/resource_providers/{pool}')


def test_inventory_set_list_and_delete(placement):
    pool = placement.provider('nfs-row1', inventories={'IPV4_ADDRESS': IPV4})
    inventory = ['resource', 'pool', 'inventory']

    added = placement.openstack(*inventory, 'set', pool, '--resource-class', 'DISK_GB',
                                '--total', '102400', '--reserved', '1024', '--min-unit', '50',
                                '--max-unit', '10000', '--step-size', '10', '-f', 'json')
    assert added == {'resource_class': 'DISK_GB', **with_capacity(DISK)}
    assert placement.inventories(pool) == {'DISK_GB': DISK, 'IPV4_ADDRESS': IPV4}

    placement.allocate(pool, {'DISK_GB': 500})
    updated = placement.openstack(*inventory, 'set', pool, '--resource-class', 'DISK_GB',
                                  '--total', '204800', '--allocation-ratio', '1.5',
                                  '-f', 'json')
    grown = {**DISK, 'total': 204800, 'allocation_ratio': 1.5}
    assert updated == {'resource_class': 'DISK_GB', **with_capacity(grown, used=500)}
    assert placement.inventories(pool) == {'DISK_GB': grown, 'IPV4_ADDRESS': IPV4}

    listed = placement.openstack(*inventory, 'list', 'nfs-row1', '-f', 'json')
    assert listed == [{'resource_class': 'DISK_GB', **with_capacity(grown, used=500)},
                      {'resource_class': 'IPV4_ADDRESS', **with_capacity(IPV4)}]

    placement.openstack(*inventory, 'delete', pool, '--resource-class', 'IPV4_ADDRESS')
    assert placement.inventories(pool) == {'DISK_GB': grown}


def test_inventory_set_of_a_new_class_needs_a_total(placement):
    pool = placement.provider('nfs-row1')
    error = placement.openstack('resource', 'pool', 'inventory', 'set', pool,
                                '--resource-class', 'DISK_GB', '--reserved', '10', ok=False)
    assert 'The pool has no DISK_GB inventory yet: give --total' in error
    assert placement.inventories(pool) == {}


def test_aggregate_add_and_remove(placement):
    pool = placement.provider('nfs-row1', aggregates=[ROW_1_RACKS_6_10])
    row_2 = str(uuid.uuid4())
    path = f'/resource_providers/{pool}/aggregates'

    added = placement.openstack('resource', 'pool', 'aggregate', 'add', pool, row_2,
                                '-f', 'json')
    assert added['aggregates'] == sorted([ROW_1_RACKS_6_10, row_2])
    now = placement.api('GET', path)
    assert sorted(now['aggregates']) == added['aggregates']
    assert now['resource_provider_generation'] == added['generation']

    removed = placement.openstack('resource', 'pool', 'aggregate', 'remove', pool,
                                  ROW_1_RACKS_6_10, '-f', 'json')
    assert removed['aggregates'] == [row_2]
    assert placement.api('GET', path)['aggregates'] == [row_2]


def statvfs_in(path, unit):
    stats = os.statvfs(path)
    return (stats.f_blocks * stats.f_frsize // unit,
            math.ceil((stats.f_blocks - stats.f_bfree) * stats.f_frsize / unit))


def test_sync_sets_total_and_reserved_from_the_filesystem(placement, tmp_path):
    """Only total and reserved change; the unit limits and ratio stay."""
    kept = {'min_unit': 2, 'max_unit': 64, 'step_size': 2, 'allocation_ratio': 1.0}
    pool = placement.provider('nfs-row1', inventories={
        'DISK_GB': {'total': 100, 'reserved': 0, **kept},
        'IPV4_ADDRESS': IPV4})
    mib = 1024 ** 2
    total, used_before = statvfs_in(tmp_path, mib)

    synced = placement.openstack('resource', 'pool', 'sync', pool, '--path', str(tmp_path),
                                 '--unit', 'MB', '--reserved-from-used', '-f', 'json')

    used_after = statvfs_in(tmp_path, mib)[1]
    inventory = placement.inventories(pool)
    # Something else (a database server of the suite, say) may write to the
    # filesystem meanwhile, and remove it again before the second reading:
    # allow a few MiB around the two readings, far less than a wrong unit.
    low, high = sorted((used_before, used_after))
    assert low - 64 <= inventory['DISK_GB']['reserved'] <= high + 64
    assert inventory == {'DISK_GB': {'total': total, 'reserved': inventory['DISK_GB']['reserved'],
                                     **kept},
                         'IPV4_ADDRESS': IPV4}
    assert synced == {'resource_class': 'DISK_GB', **with_capacity(inventory['DISK_GB']),
                      'unit': 'MB'}


def test_sync_adds_a_missing_class_and_reports_unreadable_paths(placement, tmp_path):
    pool = placement.provider('nfs-row1')
    # A custom class must exist first: Placement's answer says so.
    error = placement.openstack('resource', 'pool', 'sync', pool, '--path', str(tmp_path),
                                '--unit', 'KB', '--resource-class', 'CUSTOM_SHARE_KB', ok=False)
    assert (f'Unable to create inventory for resource provider {pool}: No such resource class '
            'CUSTOM_SHARE_KB. (HTTP 400)') in error
    placement.api('PUT', '/resource_classes/CUSTOM_SHARE_KB', status=201)
    assert placement.inventories(pool) == {}

    placement.openstack('resource', 'pool', 'sync', pool, '--path', str(tmp_path),
                        '--unit', 'KB', '--resource-class', 'CUSTOM_SHARE_KB')
    assert placement.inventories(pool) == {'CUSTOM_SHARE_KB': {
        'total': statvfs_in(tmp_path, 1024)[0], 'reserved': 0, 'min_unit': 1,
        'max_unit': 2147483647, 'step_size': 1, 'allocation_ratio': 1.0}}

    error = placement.openstack('resource', 'pool', 'sync', pool, '--path',
                                str(tmp_path / 'missing'), ok=False)
    assert f'Cannot read the filesystem at {tmp_path / "missing"}: No such file or directory' \
        in error


@pytest.fixture
def keystone(placement, live_server, settings):
    """The live server in keystone mode (keystonemiddleware in front),
    validating against a real Keystone whose catalogue lists it, with a
    project admin for the CLI and the service user auth_token uses."""
    identity = Identity(keystone_url())
    identity.region = identity.region_with('placement', placement.url)
    service_project = identity.project('service')
    _, service_user = identity.user('placement', project_roles=[(service_project, 'service')])
    identity.project_id = identity.project('operators')
    _, identity.admin_name = identity.user('pool-admin',
                                           project_roles=[(identity.project_id, 'admin')])
    settings.PLACEMENT_AUTH_STRATEGY = 'keystone'
    settings.KEYSTONE_AUTHTOKEN = {
        'auth_url': identity.url, 'www_authenticate_uri': identity.url,
        'auth_type': 'password', 'username': service_user, 'password': service_user,
        'project_id': service_project, 'user_domain_id': 'default'}
    httpd = live_server.thread.httpd
    noauth = httpd.get_app()
    httpd.set_app(_with_keystone(WSGIHandler()))
    try:
        yield identity
    finally:
        httpd.set_app(noauth)


def test_keystone_password_auth_finds_placement_in_the_catalog(placement, keystone):
    # No --os-endpoint: the CLI finds Placement in Keystone's catalogue.
    auth = ['--os-auth-type', 'password', '--os-auth-url', keystone.url,
            '--os-username', keystone.admin_name, '--os-password', keystone.admin_name,
            '--os-project-id', keystone.project_id, '--os-user-domain-id', 'default',
            '--os-region-name', keystone.region]
    pool = str(uuid.uuid4())

    placement.openstack('resource', 'pool', 'create', 'nfs-row1', '--uuid', pool,
                        '--aggregate-uuid', ROW_1_RACKS_6_10, auth=auth)
    rows = placement.openstack('resource', 'pool', 'list', '-f', 'json', auth=auth)

    assert [(r['uuid'], r['name']) for r in rows] == [(pool, 'nfs-row1')]
    # A wrong password: Keystone refuses, nothing reaches Placement.
    wrong = [*auth[:7], 'wrong', *auth[8:]]
    assert 'The request you have made requires authentication' in placement.openstack(
        'resource', 'pool', 'list', auth=wrong, ok=False)
    # keystonemiddleware is really in front: the noauth2 token is refused.
    refused = placement.http.get(placement.url + '/resource_providers', timeout=30)
    assert refused.status_code == 401
