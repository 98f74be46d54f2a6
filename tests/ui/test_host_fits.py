"""A host's page: how many more of each flavor fit there, the class that
limits it, and the free capacity no flavor can use - the same counts as
claiming them one after another through the real candidate search."""
import re

import pytest

from providers import host_fits
from providers.flavors import parse_flavors
from tests.support.api import new_uuid
from tests.support.factories import add_allocation
from tests.support.factories import add_provider
from tests.support.pages import exact

FLAVORS = 'small=VCPU:1,MEMORY_MB:1024;big=VCPU:2,MEMORY_MB:3000;disk=DISK_GB:60'


@pytest.fixture
def host(db, settings):
    """cn1: 100 DISK_GB on the root, two NUMA nodes of 8 VCPU and 4,096
    MEMORY_MB, numa0's memory 3,072 used; cn2, another host, is never
    counted in cn1's figures."""
    settings.PLACEMENT_CAPACITY_FLAVORS = FLAVORS
    root = add_provider('cn1', inventories={'DISK_GB': {'total': 100}})
    numa = [add_provider(f'cn1-numa{i}', parent=root, inventories={
        'VCPU': {'total': 8}, 'MEMORY_MB': {'total': 4096}}) for i in range(2)]
    add_allocation(numa[0], MEMORY_MB=3072)
    add_provider('cn2', inventories={'VCPU': {'total': 64}, 'MEMORY_MB': {'total': 65536},
                                     'DISK_GB': {'total': 1000}})
    return root


def claimed_one_after_another(api, root, shape):
    """How many claims of the shape the candidate search grants in the
    host's tree before it answers none (each one really written)."""
    claims = 0
    while True:
        found = api.get(f'/allocation_candidates?resources={shape}&in_tree={root.uuid}&limit=1')
        assert found.status_code == 200, found.content
        if not found.body['allocation_requests']:
            return claims
        (request,) = found.body['allocation_requests']
        written = api.put(f'/allocations/{new_uuid()}', {
            **request, 'project_id': 'p', 'user_id': 'u', 'consumer_generation': None,
            'consumer_type': 'INSTANCE'})
        assert written.status_code == 204, written.content
        claims += 1


def rows(html, table):
    body = re.search(rf'<table id="{table}">.*?</table>', html, re.S).group(0)
    return {key: dict(re.findall(r'data-field="([\w-]+)"[^>]*>([^<]*)<', row))
            for key, row in re.findall(r'<tr data-(?:flavor|class)="(\w+)">(.*?)</tr>', body, re.S)}


def test_the_host_page_says_how_many_more_fit_and_what_limits_them(staff, host):
    html = exact(staff.get(f'/ui/trees/{host.uuid}/').content.decode())
    fits = rows(html, 'host-fits')
    # small: VCPU 16, MEMORY_MB 1 + 4 slots; big: MEMORY_MB 0 + 1; disk: 1 of 60 in 100.
    assert {name: (row['fits'], row['limited-by']) for name, row in fits.items()} == {
        'small': ('5', 'MEMORY_MB'), 'big': ('1', 'MEMORY_MB'), 'disk': ('1', 'DISK_GB')}
    # VCPU: 16 free, small takes 5 of it at most; DISK_GB: 100, disk takes 60.
    unusable = rows(html, 'unusable')
    assert {name: row['unusable'] for name, row in unusable.items()} == {
        'VCPU': '11', 'MEMORY_MB': '0', 'DISK_GB': '40'}


@pytest.mark.parametrize('flavor', ['small', 'big', 'disk'])
def test_each_count_is_what_the_candidate_search_grants(api, host, flavor):
    (shape,) = [f for f in parse_flavors(FLAVORS) if f.name == flavor]
    (fit,) = host_fits.host_fits(host.pk, [shape])
    assert fit.count == claimed_one_after_another(api, host, shape.query)
    # And once they are claimed, none is left.
    (after,) = host_fits.host_fits(host.pk, [shape])
    assert after.count == 0
