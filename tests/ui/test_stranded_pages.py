"""The overview and a pool's page show the free capacity no configured
flavor can use (providers.stranded), per class, with the numbers
GET /capacity?view=stranded gives."""
import re

import pytest

from tests.support.factories import add_allocation
from tests.support.factories import add_provider
from tests.support.pages import exact

FLAVORS = 'small=VCPU:1,MEMORY_MB:512,DISK_GB:10;big=VCPU:4,MEMORY_MB:2048,DISK_GB:40'
POOL = 'a0000000-0000-4000-8000-00000000000a'


@pytest.fixture
def cloud(db, settings):
    """full: memory all but 256 MB used, its VCPU and disk stranded;
    diskless (pool A): 2 small fit (memory), 2 of its 4 VCPU stranded;
    nfs (pool A, sharing): 20 of its 1,000 GB usable by the diskless host."""
    settings.PLACEMENT_CAPACITY_FLAVORS = FLAVORS
    full = add_provider('full', inventories={'VCPU': {'total': 8}, 'MEMORY_MB': {'total': 4096},
                                             'DISK_GB': {'total': 100}})
    add_allocation(full, MEMORY_MB=4096 - 256)
    add_provider('diskless', inventories={'VCPU': {'total': 4}, 'MEMORY_MB': {'total': 1024}},
                 aggregates=[POOL])
    add_provider('nfs', inventories={'DISK_GB': {'total': 1000}},
                 traits=['MISC_SHARES_VIA_AGGREGATE'], aggregates=[POOL])


def stranded_rows(html):
    body = re.search(r'<table id="stranded">.*?</table>', exact(html), re.DOTALL).group(0)
    return {name: dict(re.findall(r'data-field="([\w-]+)"[^>]*>([^<]*)<', row))
            for name, row in re.findall(r'<tr data-class="(\w+)">(.*?)</tr>', body, re.DOTALL)}


def test_the_overview_shows_stranded_capacity(staff, cloud):
    found = stranded_rows(staff.get('/ui/').content.decode())
    assert found == {
        'DISK_GB': {'free': '1,100', 'stranded': '1,080', 'usable': '20', 'share': '98%'},
        'MEMORY_MB': {'free': '1,280', 'stranded': '256', 'usable': '1,024', 'share': '20%'},
        'VCPU': {'free': '12', 'stranded': '10', 'usable': '2', 'share': '83%'}}


def test_a_pools_page_shows_its_own(staff, api, cloud):
    found = stranded_rows(staff.get(f'/ui/pools/{POOL}/').content.decode())
    assert found == {
        'DISK_GB': {'free': '1,000', 'stranded': '980', 'usable': '20', 'share': '98%'},
        'MEMORY_MB': {'free': '1,024', 'stranded': '0', 'usable': '1,024', 'share': '0%'},
        'VCPU': {'free': '4', 'stranded': '2', 'usable': '2', 'share': '50%'}}
    answer = api.get('/capacity?view=stranded&group_by=aggregate').body
    (pool,) = answer['groups']
    assert {name: f"{numbers['stranded']:,}" for name, numbers in pool['resources'].items()} \
        == {name: row['stranded'] for name, row in found.items()}
