"""The capacity report (/ui/capacity/): GET /capacity's numbers for every
grouping, a page of groups at a time in a fixed number of queries, its
export, the capacity trend over the range picked, and the API's policy."""
import csv
import io
import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from placement_site.viewers import Viewer
from providers import capacity
from providers import trends
from providers.api import capacity as capacity_api
from providers.pods import services as pod_services
from tests.support.factories import ROW
from tests.support.factories import STORAGE
from tests.support.factories import bulk_trees
from tests.support.pages import exact

FLAVORS = 'small=VCPU:1,DISK_GB:10;big=VCPU:2,MEMORY_MB:512'


@pytest.fixture
def zoned(small_cloud):
    """small_cloud with the row's pool a pod in az1, the storage's in az2."""
    pod_services.pod_create(name='row', aggregate_uuid=ROW, availability_zone='az1')
    pod_services.pod_create(name='storage', aggregate_uuid=STORAGE, availability_zone='az2')
    return small_cloud


def shown(html):
    """{group: ({class: {field: number}}, fits or None)} of the page."""
    found = {}
    for key, attrs, body in re.findall(r'<tbody data-group="([^"]+)"([^>]*)>(.*?)</tbody>',
                                       exact(html), re.S):
        fits = re.search(r'data-fits="(\d+)"', attrs)
        found[key] = ({name: {field: float(value.replace(',', '')) for field, value in
                              re.findall(r'data-field="(\w+)">([^<]*)<', row) if field != 'fits'}
                       for name, row in re.findall(r'<tr data-class="(\w+)">(.*?)</tr>', body,
                                                   re.S)},
                      int(fits.group(1)) if fits else None)
    return found


def answered(api, query):
    """GET /capacity's answer as shown() reads the page."""
    response = api.get(f'/capacity?{query}')
    assert response.status_code == 200, response.content
    return {group['group']: ({name: {field: float(books[field]) for field in (
        'providers', 'capacity', 'used', 'free')} for name, books in group['resources'].items()},
        group['fits']) for group in response.body['groups']}


@pytest.mark.parametrize('group_by', capacity.GROUPINGS)
def test_each_grouping_shows_what_get_capacity_answers(staff, api, zoned, settings, group_by):
    settings.PLACEMENT_CAPACITY_FLAVORS = FLAVORS
    for page_query, api_query in [
            (f'group_by={group_by}', f'group_by={group_by}'),
            (f'group_by={group_by}&flavor=small',
             f'group_by={group_by}&resources=VCPU:1,DISK_GB:10'),
            (f'group_by={group_by}&flavor=small&resources=VCPU:2&resource_class=VCPU,DISK_GB',
             f'group_by={group_by}&resources=VCPU:2&resource_class=VCPU,DISK_GB')]:
        response = staff.get(f'/ui/capacity/?{page_query}')
        assert response.status_code == 200
        expected = answered(api, api_query)
        assert len(expected) > (group_by != capacity.CLOUD)  # several groups, classes
        assert shown(response.content.decode()) == expected, page_query


def test_groups_come_a_page_at_a_time_in_a_fixed_number_of_queries(staff, api, db):
    bulk_trees(3, start=0, name='cn', pool=ROW)

    def page(number):
        with CaptureQueriesContext(connection) as captured:
            response = staff.get(f'/ui/capacity/?group_by=root&resources=VCPU:4&per_page=20'
                                 f'&page={number}')
        assert response.status_code == 200
        return shown(response.content.decode()), len(captured)

    few, few_queries = page(1)
    assert len(few) == 3
    bulk_trees(42, start=3, name='cn', pool=ROW)
    first, queries = page(1)
    second, _ = page(2)
    last, _ = page(3)
    assert (len(first), len(second), len(last)) == (20, 20, 5)
    # The pages together are the API's answer, in its order.
    expected = answered(api, 'group_by=root&resources=VCPU:4')
    assert list(first) + list(second) + list(last) == list(expected)
    assert {**first, **second, **last} == expected
    assert queries <= few_queries   # 20 groups shown, 45 trees: no more than for 3


def test_the_export_is_every_group_in_the_apis_csv_columns(staff, api, zoned):
    query = 'group_by=aggregate&resources=VCPU:1&resource_class=VCPU'
    response = staff.get(f'/ui/capacity/?{query}&per_page=20&export=csv')
    assert response.status_code == 200
    assert response['Content-Disposition'].startswith('attachment')
    exported = list(csv.reader(io.StringIO(b''.join(response.streaming_content).decode())))
    by_api = api.get(f'/capacity?{query}&format=csv')
    assert exported == list(csv.reader(io.StringIO(by_api.bytes.decode())))
    assert exported[0] == capacity_api.CSV_COLUMNS and len(exported) == 3


def points(html):
    """{class: points} of the trend charts, and the range shown."""
    return ({name: int(count) for name, count in re.findall(
        r'<figure class="trend" data-resource-class="(\w+)" data-points="(\d+)"', html)},
        re.search(r'<strong data-days="(\d+)">', html).group(1))


def test_the_range_picker_sets_the_trends_window(staff, small_cloud):
    now = timezone.now()
    for age in (20, 3, 0.5):
        trends.snapshot_take(at=now - timedelta(days=age))
    html = staff.get('/ui/capacity/?resource_class=VCPU').content.decode()
    assert points(html) == ({'VCPU': 2}, '7')          # the last week by default
    assert 'days=30' in html and 'days=1' in html      # the other ranges, linked
    assert points(staff.get('/ui/capacity/?resource_class=VCPU&days=30').content.decode()) == (
        {'VCPU': 3}, '30')
    assert points(staff.get('/ui/capacity/?resource_class=VCPU,DISK_GB&days=1')
                  .content.decode()) == ({'VCPU': 1, 'DISK_GB': 1}, '1')
    # A pool's own trend, from its row's link.
    pool = staff.get(f'/ui/capacity/?group_by=aggregate&pool={STORAGE}&days=90').content.decode()
    assert points(pool) == ({'DISK_GB': 3, 'VCPU': 3}, '90')
    assert f'pool {STORAGE}' in pool


def test_a_signed_in_user_the_policy_refuses_gets_the_not_allowed_page(db):
    User.objects.create_user('someone', password='pw')
    client = Client()
    assert client.login(username='someone', password='pw')
    response = client.get('/ui/capacity/?group_by=root')
    assert response.status_code == 403
    assert 'id="not-allowed"' in response.content.decode()
    assert Client().get('/ui/capacity/').status_code == 302   # signed out: the sign-in form


def test_a_keystone_sign_in_is_judged_by_the_apis_rule(db):
    user = User.objects.create_user('kuser')

    def viewer(roles, **scope):
        return Viewer(user, {'user_id': 'u1', 'roles': roles, **scope})
    assert viewer(['admin'], project_id='p1').may_read(capacity_api.POLICY)
    assert not viewer(['member', 'reader'], project_id='p1').may_read(capacity_api.POLICY)


@pytest.mark.parametrize('query, says', [
    ('resources=VCPU', 'Badly formed resources parameter'),
    ('resources=VCPU:4,NOPE:1', 'Invalid resource class in resources parameter'),
    ('resource_class=NOPE', 'Invalid resource class in resource_class parameter'),
    ('group_by=rack', 'Select a valid choice'),
])
def test_a_bad_question_is_a_400_saying_why(staff, query, says):
    response = staff.get(f'/ui/capacity/?{query}')
    assert response.status_code == 400
    assert says in response.content.decode()
