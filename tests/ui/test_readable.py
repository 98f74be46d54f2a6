"""The dashboards read as people read: amounts in their unit with the exact
figure at hand, counts with separators, one time format, a consumer's
history as before and after, forecast badges coloured by urgency."""
import re
import uuid
from datetime import UTC
from datetime import datetime

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from allocations.ui import templatetags
from allocations.ui import trend_charts
from providers import trends
from providers.pods import services as pod_services
from tests.support.factories import bulk_trees

WHEN = re.compile(r'\d{4}-\d\d-\d\d \d\d:\d\d UTC')


@pytest.mark.parametrize('value, resource_class, shown, title', [
    (8192, 'MEMORY_MB', '8 GiB', '8,192 MEMORY_MB'),
    (3 * 1024 * 1024, 'MEMORY_MB', '3 TiB', '3,145,728 MEMORY_MB'),
    (1536, 'DISK_GB', '1.5 TiB', '1,536 DISK_GB'),
    (800, 'DISK_GB', '800 GiB', '800 DISK_GB'),
    (10080, 'VCPU', '10,080', '10,080 VCPU'),
    (1023.75, 'MEMORY_MB', '1,023.75 MiB', '1,023.75 MEMORY_MB'),
])
def test_an_amount_is_shown_in_its_unit_with_the_exact_figure_in_its_title(
        value, resource_class, shown, title):
    html = templatetags.in_unit(value, resource_class)
    assert re.fullmatch(r'<span class="amount" title="([^"]+)" data-exact="([^"]+)">([^<]+)</span>',
                        html).groups() == (title, f'{value:.15g}', shown)


def test_a_count_has_thousands_separators(staff):
    bulk_trees(500, start=0, name='cn', pool=str(uuid.uuid4()))
    html = staff.get('/ui/providers/').content.decode()
    assert '<p class="subtitle">1,000 providers match. ' in html


def test_times_are_one_format_with_the_zone_on_every_page(staff, api):
    assert templatetags.when(datetime(2026, 11, 28, 19, 4, 59, tzinfo=UTC)) == \
        '2026-11-28 19:04 UTC'
    pod_services.pod_create(name='PodA')
    pods = staff.get('/ui/pods/').content.decode()
    (created,) = re.findall(r'<td class="nowrap">([^<]*)</td>', pods)
    assert WHEN.fullmatch(created), created
    host = api.create_provider('cn00000')['uuid']
    api.set_inventory(host, {'VCPU': {'total': 8}})
    consumer = str(uuid.uuid4())
    assert api.allocate(consumer, {host: {'VCPU': 1}}).status_code == 204
    page = staff.get(f'/ui/consumers/{consumer}/').content.decode()
    (at,) = re.findall(r'<tr data-event="\d+"[^>]*><td class="nowrap">([^<]*)</td>', page)
    assert WHEN.fullmatch(at), at


def history(staff, consumer, query=''):
    """The consumer page's history: the change column's words, newest first."""
    html = staff.get(f'/ui/consumers/{consumer}/{query}').content.decode()
    html = re.sub(r'<span class="amount"[^>]*>([^<]*)</span>', r'\1', html)
    return [' '.join(re.sub(r'<[^>]+>', '', cell).split())
            for cell in re.findall(r'<td class="change"[^>]*>(.*?)</td>', html, re.S)]


@pytest.fixture
def hosts(api):
    found = {}
    for name in ('cn00000', 'cn00002'):
        found[name] = api.create_provider(name)['uuid']
        api.set_inventory(found[name], {'VCPU': {'total': 64},
                                        'MEMORY_MB': {'total': 262144}})
    return found


def test_a_consumers_history_says_where_it_moved_and_what_it_resized(staff, api, hosts):
    consumer = str(uuid.uuid4())
    a, b = hosts['cn00000'], hosts['cn00002']
    assert api.allocate(consumer, {a: {'VCPU': 2, 'MEMORY_MB': 2048}}).status_code == 204
    assert api.allocate(consumer, {b: {'VCPU': 4, 'MEMORY_MB': 2048}},
                        generation=1).status_code == 204
    assert api.allocate(consumer, {b: {'VCPU': 4, 'MEMORY_MB': 8192}},
                        generation=2).status_code == 204
    assert history(staff, consumer) == [
        'on cn00002; MEMORY_MB 2 GiB → 8 GiB',
        'moved from cn00000 to cn00002; VCPU 2 → 4',
        'created on cn00000: MEMORY_MB 2 GiB, VCPU 2']


def test_the_oldest_change_of_a_page_reads_its_before_off_the_next_page(staff, api, hosts):
    """Before comes from the events on the page: the queries do not grow
    with them, the page's oldest event reading the one before it."""
    consumer = str(uuid.uuid4())
    host = hosts['cn00000']
    for generation, vcpu in enumerate(range(1, 23)):
        assert api.allocate(consumer, {host: {'VCPU': vcpu}},
                            generation=generation or None).status_code == 204
    first = history(staff, consumer, '?per_page=20')
    assert len(first) == 20 and first[0] == 'on cn00000; VCPU 21 → 22'
    assert first[-1] == 'on cn00000; VCPU 2 → 3'
    assert history(staff, consumer, '?per_page=20&page=2') == [
        'on cn00000; VCPU 1 → 2', 'created on cn00000: VCPU 1']

    def queries(query):
        with CaptureQueriesContext(connection) as captured:
            staff.get(f'/ui/consumers/{consumer}/{query}')
        return len(captured)
    assert queries('?per_page=20') == queries('?per_page=20&page=2') + 1  # + the one before


@pytest.mark.parametrize('forecast, urgency', [
    (trends.Forecast(trends.FILLING, 5.0, 1072.0), 'neutral'),
    (trends.Forecast(trends.FILLING, 5.0, 91.0), 'neutral'),
    (trends.Forecast(trends.FILLING, 5.0, 90.0), 'warning'),
    (trends.Forecast(trends.FILLING, 5.0, 30.0), 'warning'),
    (trends.Forecast(trends.FILLING, 5.0, 29.5), 'danger'),
    (trends.Forecast(trends.FULL), 'danger'),
    (trends.Forecast(trends.NOT_FILLING, -1.0), 'neutral'),
])
def test_a_forecast_badge_is_coloured_by_how_soon_it_is_full(forecast, urgency):
    assert trend_charts.urgency(forecast) == urgency
