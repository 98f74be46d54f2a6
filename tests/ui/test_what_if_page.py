"""The what-if page (/ui/what-if/): its form read into POST
/capacity/what-if's body, and the before/after table the API's answer
gives, per flavor, for the cloud and each pool; a bad field is the API's
400 on the page; the capacity report links it."""
import html
import re

import pytest
from django.contrib.auth.models import User
from django.test import Client

from allocations.ui.templatetags import change
from tests.support.factories import add_provider
from tests.support.pages import exact

AGG_A = 'a0000000-0000-4000-8000-00000000000a'
AGG_B = 'b0000000-0000-4000-8000-00000000000b'


def table(html):
    """{(group, shape): (now, after, change)} as the page shows them."""
    found = {}
    tables = re.findall(r'<tbody data-group="([^"]+)">(.*?)</tbody>', exact(html), re.DOTALL)
    for group, body in tables:
        for shape, row in re.findall(r'<tr data-shape="([^"]+)">(.*?)</tr>', body, re.DOTALL):
            cells = dict(re.findall(r'data-field="(\w+)">([^<]*)<', row))
            found[group, shape] = (cells['before'], cells['after'], cells['change'])
    return found


@pytest.fixture
def cloud(db, settings):
    settings.PLACEMENT_CAPACITY_FLAVORS = 'one=VCPU:1,MEMORY_MB:1024;two=VCPU:2,MEMORY_MB:1024'
    add_provider('cn1', inventories={'VCPU': {'total': 4}, 'MEMORY_MB': {'total': 4096}},
                 aggregates=[AGG_A])
    add_provider('cn2', inventories={'VCPU': {'total': 2}, 'MEMORY_MB': {'total': 2048}},
                 aggregates=[AGG_B])


def test_the_page_shows_before_and_after_per_flavor_and_pool(staff, cloud):
    page = staff.get('/ui/what-if/', {
        'add_count': 1000, 'add_inventories': 'VCPU:8,MEMORY_MB:8192', 'add_ratios': 'VCPU:2.0',
        'add_aggregates': AGG_A, 'remove_names': 'cn2'})
    assert page.status_code == 200, page.content
    # Each new host: 16 VCPU at ratio 2, 8 of memory: 8 of `one`, 8 of `two`.
    assert table(page.content.decode()) == {
        ('cloud', 'one'): ('6', '8,004', '+7,998'),
        ('cloud', 'two'): ('3', '8,002', '+7,999'),
        (AGG_A, 'one'): ('4', '8,004', '+8,000'),
        (AGG_A, 'two'): ('2', '8,002', '+8,000'),
        (AGG_B, 'one'): ('2', '0', '\u22122'),
        (AGG_B, 'two'): ('1', '0', '\u22121'),
    }
    assert '1,000 hosts added, 1 drained with 0 consumers' in exact(page.content.decode())


def test_a_ratio_changed_in_a_pool_and_a_shape_of_ones_own(staff, cloud):
    page = staff.get('/ui/what-if/', {'resources': 'VCPU:2', 'set_class': 'VCPU',
                                      'set_aggregate': AGG_A, 'set_ratio': '3'})
    assert table(page.content.decode()) == {
        ('cloud', 'VCPU:2'): ('3', '7', '+4'), (AGG_A, 'VCPU:2'): ('2', '6', '+4'),
        (AGG_B, 'VCPU:2'): ('1', '1', '0')}


@pytest.mark.parametrize('query, message', [
    ({'remove_hosts': 'cn9'}, 'No root provider named cn9'),
    ({'add_count': 1, 'add_inventories': 'VCPU'}, "totals: 'VCPU' is not CLASS:int"),
    ({'add_count': 1, 'add_inventories': 'VCPU:1', 'add_reserved': 'VCPU:2'},
     'capacity below zero'),
    ({'set_class': 'VCPU'}, 'The change is not valid'),
    ({'resources': 'VCPU:x'}, 'VCPU expected positive integer amount'),
])
def test_a_bad_field_is_the_apis_400_on_the_form(staff, cloud, query, message):
    page = staff.get('/ui/what-if/', query)
    assert page.status_code == 400
    error = re.search(r'id="what-if-error"><p>(.*?)</p>', exact(page.content.decode()), re.DOTALL)
    assert message in html.unescape(error.group(1)), error.group(1)


def test_the_capacity_report_links_it_and_only_its_readers_see_it(staff, cloud):
    assert 'href="/ui/what-if/" id="what-if-link"' in staff.get('/ui/capacity/').content.decode()
    assert staff.get('/ui/what-if/').status_code == 200   # the form alone
    someone = Client()
    User.objects.create_user('someone', password='pw')
    assert someone.login(username='someone', password='pw')
    assert someone.get('/ui/what-if/').status_code == 403


def test_changes_read_signed():
    assert [change(v) for v in (2000, -310, 0, None)] == ['+2,000', '\u2212310', '0', '']
