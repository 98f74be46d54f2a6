"""Usage trends: snapshots of the books per class for the cloud and each pool
(providers.trends, manage.py snapshot_usage, the notification dispatcher),
their retention, the linear "full in about N days" forecast, and GET
/capacity/trends in JSON and CSV."""
import csv
import functools
import io
import json
import re
from datetime import UTC
from datetime import datetime
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone as dj_timezone

from allocations.models import ProjectUsageSnapshot
from providers import books
from providers import trends
from providers.models import Aggregate
from providers.models import Inventory
from providers.models import UsageSnapshot
from tests.support.admin import assert_admin_read_only
from tests.support.admin import changelist
from tests.support.api import new_uuid
from tests.support.factories import ROW
from tests.support.factories import STORAGE
from tests.support.factories import add_allocation
from tests.support.factories import add_provider
from tests.support.pages import exact
from tests.support.state import count_queries

T0 = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
DAY = timedelta(days=1)
# Before every snapshot the tests take at T0 on: GET /capacity/trends's
# own default is the last week.
EVER = '2026-01-01T00:00:00Z'


def points(*used, capacity=100, start=T0, step=DAY):
    """Points of one class: `used` at start, start + step, ..."""
    return [trends.Point(start + i * step, capacity, 0, float(capacity), u, 1)
            for i, u in enumerate(used)]


# ---- 1. the forecast ----------------------------------------------------------------------

def test_a_linear_fill_is_full_when_the_line_reaches_capacity():
    result = trends.forecast(points(10, 20, 30))
    assert result.status == trends.FILLING
    assert result.slope_per_day == pytest.approx(10)
    assert result.days_to_full == pytest.approx(7)
    assert result.full_at == T0 + 2 * DAY + 7 * DAY
    assert trends.describe_forecast(result) == 'full in about 7 days'


def test_the_line_is_a_least_squares_fit_projected_from_the_newest_use():
    # Through (0, 0), (1, 2), (2, 1), (3, 3): slope 4 / 5; 8 free at 0.8 a day.
    result = trends.forecast(points(0, 2, 1, 3, capacity=11))
    assert result.slope_per_day == pytest.approx(0.8)
    assert result.days_to_full == pytest.approx(10)
    assert result.full_at == T0 + 13 * DAY
    # Hours are fractions of days.
    hourly = trends.forecast(points(10, 11, 12, step=timedelta(hours=1)))
    assert hourly.slope_per_day == pytest.approx(24)
    assert hourly.days_to_full == pytest.approx(88 / 24)
    assert trends.describe_forecast(hourly) == 'full in about 4 days'


@pytest.mark.parametrize('used, slope', [((30, 30, 30), 0), ((30, 20, 10), -10),
                                         ((10, 40, 10), 0)])
def test_flat_or_falling_use_never_fills(used, slope):
    result = trends.forecast(points(*used))
    assert result == trends.Forecast(trends.NOT_FILLING, pytest.approx(slope))
    assert result.days_to_full is None and result.full_at is None
    assert trends.describe_forecast(result) == 'not filling up'


def test_growth_too_slow_to_plan_by_is_not_filling():
    result = trends.forecast(points(0, 1, capacity=10_000, step=timedelta(days=10)))
    assert result.status == trends.NOT_FILLING
    assert result.slope_per_day == pytest.approx(0.1)


def test_used_at_capacity_is_full_now_whatever_the_slope():
    result = trends.forecast(points(100, 90, 100))
    assert (result.status, result.days_to_full, result.full_at) == (
        trends.FULL, 0.0, T0 + 2 * DAY)
    assert trends.describe_forecast(result) == 'full now'
    # Over capacity (an inventory lowered below its allocations) too.
    assert trends.forecast(points(120, capacity=100)).status == trends.FULL


def test_one_snapshot_is_not_enough():
    assert trends.forecast([]) == trends.Forecast(trends.UNKNOWN)
    assert trends.forecast(points(10)) == trends.Forecast(trends.UNKNOWN)
    same_time = points(10, 20, step=timedelta(0))
    assert trends.forecast(same_time).status == trends.UNKNOWN
    assert trends.describe_forecast(trends.Forecast(trends.UNKNOWN)) == \
        'not enough history for a forecast'


def test_only_the_recent_window_counts():
    # A steep climb a month ago, flat for the last two weeks.
    old = points(0, 50, start=T0 - 30 * DAY, step=10 * DAY)
    recent = points(*([60] * 15))
    assert trends.forecast(old + recent).status == trends.NOT_FILLING
    assert trends.forecast(old + recent, window=timedelta(days=60)).status == trends.FILLING


def test_the_days_read_in_whole_days():
    assert trends.describe_forecast(trends.Forecast(trends.FILLING, 1.0, 0.4, T0)) == \
        'full within a day'
    assert trends.describe_forecast(trends.Forecast(trends.FILLING, 1.0, 1.2, T0)) == \
        'full in about 1 day'
    assert trends.describe_forecast(trends.Forecast(trends.FILLING, 1.0, 1234.0, T0)) == \
        'full in about 1,234 days'


# ---- 2. snapshots -------------------------------------------------------------------------

POOL = new_uuid()


def fill(used_by_day, *, total=100):
    """A compute node of `total` VCPU in POOL; at day i (from T0) its use
    grows to used_by_day[i] and a snapshot is taken."""
    node = add_provider('cn1', inventories={'VCPU': {'total': total}}, aggregates=[POOL])
    used = 0
    for day, wanted in enumerate(used_by_day):
        if wanted > used:
            add_allocation(node, VCPU=wanted - used)
            used = wanted
        trends.snapshot_take(at=T0 + day * DAY)
    return node


def test_snapshots_of_a_linear_fill_forecast_the_day_it_is_full(db):
    fill([10, 20, 30])
    pool = Aggregate.objects.get(uuid=POOL)
    for aggregate in (pool, None):
        (vcpu,) = trends.class_trends(aggregate=aggregate)
        assert vcpu.name == 'VCPU'
        assert [(p.taken_at, p.used, p.capacity, p.free) for p in vcpu.points] == [
            (T0, 10, 100.0, 90.0), (T0 + DAY, 20, 100.0, 80.0), (T0 + 2 * DAY, 30, 100.0, 70.0)]
        assert vcpu.points[-1].percent == pytest.approx(30.0)
        assert vcpu.forecast.status == trends.FILLING
        assert vcpu.forecast.days_to_full == pytest.approx(7)
        assert vcpu.forecast.full_at == T0 + 9 * DAY


def cloud_books():
    """{class: ClassUsage} of every inventory, summed here in Python."""
    sums = {}
    for inventory in Inventory.objects.select_related('resource_class').order_by(
            'resource_class_id'):
        total, reserved, capacity, used, providers = sums.get(
            inventory.resource_class.name, (0, 0, 0.0, 0, 0))
        sums[inventory.resource_class.name] = (
            total + inventory.total, reserved + inventory.reserved,
            capacity + (inventory.total - inventory.reserved) * inventory.allocation_ratio,
            used + inventory.used, providers + 1)
    return {name: books.ClassUsage(name, *values) for name, values in sums.items()}


def test_cloud_and_pool_snapshots_equal_the_books_at_that_moment(small_cloud):
    def books_now():
        ids = dict(Aggregate.objects.values_list('uuid', 'pk'))
        return {None: cloud_books(),
                **{uuid: classes for uuid, classes in books.pool_books(
                    [ids[ROW], ids[STORAGE]]).items()}}, ids

    def snapshot_rows(at):
        found = {}
        for row in UsageSnapshot.objects.filter(taken_at=at).select_related(
                'aggregate', 'resource_class'):
            key = row.aggregate.pk if row.aggregate else None
            found.setdefault(key, {})[row.resource_class.name] = (
                row.total, row.reserved, row.capacity, row.used, row.providers)
        return found

    def as_rows(classes):
        return {name: (u.total, u.reserved, u.capacity, u.used, u.providers)
                for name, u in classes.items()}

    before, ids = books_now()
    trends.snapshot_take(at=T0)
    add_allocation(small_cloud['nfs'], DISK_GB=200)
    add_allocation(small_cloud['cn2-numa0'], VCPU=2)
    after, _ = books_now()
    trends.snapshot_take(at=T0 + DAY)

    for at, expected in ((T0, before), (T0 + DAY, after)):
        taken = snapshot_rows(at)
        assert set(taken) == {None, ids[ROW], ids[STORAGE]}
        assert taken[None] == as_rows(expected[None])
        for aggregate_id in (ids[ROW], ids[STORAGE]):
            assert taken[aggregate_id] == as_rows(expected[aggregate_id]), aggregate_id
    # The pool of cn2's NUMA child holds the child's tree, the share and its use.
    assert snapshot_rows(T0 + DAY)[ids[STORAGE]]['DISK_GB'][3] == 200
    assert snapshot_rows(T0 + DAY)[ids[STORAGE]]['VCPU'][3] == 2
    assert snapshot_rows(T0)[ids[STORAGE]]['VCPU'][3] == 0
    # A pool with no inventory has no rows, and is no error.
    add_provider('empty', aggregates=[new_uuid()])
    assert trends.snapshot_take(at=T0 + 2 * DAY) - ProjectUsageSnapshot.objects.filter(
        taken_at=T0 + 2 * DAY).count() == UsageSnapshot.objects.filter(
        taken_at=T0 + 2 * DAY).count() == len(after[None]) + sum(
        len(after[ids[a]]) for a in (ROW, STORAGE))


def test_a_series_is_one_pool_one_class_and_from_a_time(small_cloud):
    for day in range(4):
        trends.snapshot_take(at=T0 + day * DAY)
    row = Aggregate.objects.get(uuid=ROW)
    assert list(trends.series(aggregate=row)) == ['VCPU', 'DISK_GB']
    assert list(trends.series()) == ['VCPU', 'MEMORY_MB', 'DISK_GB']
    vcpu = small_cloud['cn1'].inventories.get(resource_class__name='VCPU').resource_class_id
    found = trends.series(aggregate=row, class_ids=[vcpu], since=T0 + 2 * DAY)
    assert list(found) == ['VCPU']
    assert [p.taken_at for p in found['VCPU']] == [T0 + 2 * DAY, T0 + 3 * DAY]
    # cn1 (16 of ratio 2) and cn3 (1); 3 used on cn1.
    assert (found['VCPU'][0].capacity, found['VCPU'][0].used, found['VCPU'][0].providers) == (
        17.0, 3, 2)


def test_snapshots_past_the_retention_are_deleted(small_cloud, settings):
    settings.PLACEMENT_TREND_RETENTION_DAYS = 10
    now = dj_timezone.now()
    for age in (20, 11, 9, 1):
        trends.snapshot_take(at=now - timedelta(days=age))
    # Each snapshot pruned what was past the retention at its own time.
    assert sorted({(now - t).days for t in UsageSnapshot.objects.values_list(
        'taken_at', flat=True)}) == [1, 9, 11]
    trends.snapshot_take(at=now)
    assert sorted({(now - t).days for t in UsageSnapshot.objects.values_list(
        'taken_at', flat=True)}) == [0, 1, 9]
    settings.PLACEMENT_TREND_RETENTION_DAYS = 0   # keep everything
    trends.snapshot_take(at=now - timedelta(days=400))
    trends.snapshot_take(at=now + DAY)
    assert UsageSnapshot.objects.filter(taken_at=now - timedelta(days=400)).exists()


def pools_of(count, prefix):
    """`count` pools of a compute node (VCPU, MEMORY_MB, and PCI_DEVICE on a
    child) and a share each."""
    for n in range(count):
        aggregate = new_uuid()
        node = add_provider(f'{prefix}-cn{n}', inventories={'VCPU': {'total': 8},
                                                   'MEMORY_MB': {'total': 1024}},
                            aggregates=[aggregate])
        add_provider(f'{prefix}-cn{n}-numa', parent=node, inventories={'PCI_DEVICE': {'total': 2}})
        add_provider(f'{prefix}-share{n}', inventories={'DISK_GB': {'total': 100}},
                     traits=['MISC_SHARES_VIA_AGGREGATE'], aggregates=[aggregate])
        add_allocation(node, VCPU=n % 8 + 1)


def test_a_snapshot_takes_the_same_queries_for_2_and_20_pools(db):
    def queries(at):
        with CaptureQueriesContext(connection) as captured:
            written = trends.snapshot_take(at=at)
        return len(captured), written

    pools_of(2, 'a')
    small, written_small = queries(T0)
    pools_of(20, 'b')
    large, written_large = queries(T0 + DAY)
    # The cloud's and each pool's classes, and the one project's class.
    assert (written_small, written_large) == (4 + 2 * 4 + 1, 4 + 22 * 4 + 1)
    assert small == large


def test_the_snapshot_command_takes_one_and_if_due_only_when_due(small_cloud, settings):
    settings.PLACEMENT_TREND_INTERVAL_MINUTES = 60
    out = io.StringIO()
    call_command('snapshot_usage', stdout=out)
    # 7 of the cloud's and the pools' classes, 2 of the one project's.
    assert 'Took a snapshot: 9 row(s).' in out.getvalue()
    assert UsageSnapshot.objects.values('taken_at').distinct().count() == 1
    call_command('snapshot_usage', '--if-due', stdout=out)
    assert 'A recent snapshot exists; none taken.' in out.getvalue()
    UsageSnapshot.objects.update(taken_at=dj_timezone.now() - timedelta(minutes=61))
    call_command('snapshot_usage', '--if-due', stdout=io.StringIO())
    assert UsageSnapshot.objects.values('taken_at').distinct().count() == 2


# ---- 3. the dispatcher snapshots after sending changes --------------------------------------

def dispatch():
    call_command('send_notifications', '--once', stdout=io.StringIO())


def snapshot_times():
    return sorted(set(UsageSnapshot.objects.values_list('taken_at', flat=True)))


def test_the_dispatcher_snapshots_when_it_sent_events_and_the_interval_passed(db, settings):
    settings.PLACEMENT_NOTIFICATIONS_DRIVER = 'log'
    settings.PLACEMENT_TREND_INTERVAL_MINUTES = 60
    dispatch()
    assert snapshot_times() == []              # nothing sent, nothing taken
    node = add_provider('cn1', inventories={'VCPU': {'total': 8}})
    dispatch()
    (first,) = snapshot_times()
    assert UsageSnapshot.objects.get().used == 0
    add_allocation(node, VCPU=2)
    dispatch()
    assert snapshot_times() == [first]         # sent, but within the interval
    UsageSnapshot.objects.update(taken_at=first - timedelta(minutes=60))
    dispatch()
    assert snapshot_times() == [first - timedelta(minutes=60)]  # due, but nothing sent
    add_allocation(node, VCPU=1)
    dispatch()
    older, newest = snapshot_times()
    assert older == first - timedelta(minutes=60) and newest > first
    assert UsageSnapshot.objects.get(taken_at=newest).used == 3


def test_the_noop_dispatcher_takes_no_snapshot(db, settings):
    settings.PLACEMENT_NOTIFICATIONS_DRIVER = 'noop'
    add_provider('cn1', inventories={'VCPU': {'total': 8}})
    dispatch()
    assert snapshot_times() == []


# ---- 4. GET /capacity/trends ----------------------------------------------------------------

def stamp(moment):
    return moment.strftime('%Y-%m-%dT%H:%M:%S.%fZ')


def trends_of(api, query=''):
    response = api.get(f'/capacity/trends{query}')
    assert response.status_code == 200, response.content
    assert response['Content-Type'] == 'application/json'
    return response.body


def test_the_api_answers_points_and_forecast_per_class(api):
    fill([10, 20, 30])
    expected_vcpu = {
        'points': [{'taken_at': stamp(T0 + d * DAY), 'total': 100, 'reserved': 0,
                    'capacity': 100.0, 'used': used, 'free': 100.0 - used,
                    'utilization': float(used)} for d, used in enumerate((10, 20, 30))],
        'forecast': {'status': 'filling', 'slope_per_day': pytest.approx(10),
                     'days_to_full': pytest.approx(7), 'full_at': stamp(T0 + 9 * DAY)},
    }
    pool = trends_of(api, f'?aggregate={POOL}&since={EVER}')
    ever = '2026-01-01T00:00:00.000000Z'
    assert pool == {'aggregate': POOL, 'since': ever, 'resources': {'VCPU': expected_vcpu}}
    assert trends_of(api, f'?since={EVER}') == {'aggregate': None, 'since': ever,
                                                'resources': {'VCPU': expected_vcpu}}
    since = trends_of(api, f'?aggregate={POOL}&since=2026-03-03T12:00:00Z')
    assert since['since'] == stamp(T0 + DAY)
    assert [p['used'] for p in since['resources']['VCPU']['points']] == [20, 30]
    # A class the pool never had, and a time after every snapshot: nothing.
    assert trends_of(api, f'?aggregate={POOL}&resource_class=DISK_GB')['resources'] == {}
    assert trends_of(api, '?since=2030-01-01T00:00:00%2B02:00')['resources'] == {}


def test_days_counts_back_from_now(api):
    node = add_provider('cn1', inventories={'VCPU': {'total': 10}})
    now = dj_timezone.now()
    for age, _used in ((9, 1), (5, 2), (1, 3)):
        add_allocation(node, VCPU=1)
        trends.snapshot_take(at=now - timedelta(days=age, hours=1))
    body = trends_of(api, '?days=6&resource_class=VCPU')
    assert [p['used'] for p in body['resources']['VCPU']['points']] == [2, 3]
    assert body['resources']['VCPU']['forecast']['status'] == 'filling'
    assert body['resources']['VCPU']['forecast']['days_to_full'] == pytest.approx(28)
    assert [p['used'] for p in trends_of(api, '?days=30')['resources']['VCPU']['points']] == \
        [1, 2, 3]


def test_without_a_range_the_last_week_is_answered(api):
    node = add_provider('cn1', inventories={'VCPU': {'total': 10}})
    now = dj_timezone.now()
    for age, _used in ((30, 1), (8, 2), (6, 3), (1, 4)):
        add_allocation(node, VCPU=1)
        trends.snapshot_take(at=now - timedelta(days=age))
    body = trends_of(api)
    assert [p['used'] for p in body['resources']['VCPU']['points']] == [3, 4]
    since = datetime.strptime(body['since'], '%Y-%m-%dT%H:%M:%S.%fZ').replace(tzinfo=UTC)
    assert now - timedelta(days=7) <= since <= dj_timezone.now() - timedelta(days=7)
    # Explicit ranges answer as before: every snapshot of the range asked.
    assert [p['used'] for p in trends_of(api, '?days=90')['resources']['VCPU']['points']] == \
        [1, 2, 3, 4]
    since = stamp(now - timedelta(days=31))
    assert [p['used'] for p in trends_of(api, f'?since={since}')['resources']['VCPU']['points']] \
        == [1, 2, 3, 4]
    csv_rows = api.get('/capacity/trends?format=csv').content.decode().splitlines()[1:]
    assert [row.split(',')[5] for row in csv_rows] == ['3', '4']


def test_flat_full_and_unknown_forecasts_in_the_api(api):
    node = add_provider('cn1', inventories={'VCPU': {'total': 4}, 'MEMORY_MB': {'total': 64},
                                            'DISK_GB': {'total': 10}})
    add_allocation(node, VCPU=4, MEMORY_MB=32)
    trends.snapshot_take(at=T0)
    trends.snapshot_take(at=T0 + DAY)
    classes = trends_of(api, f'?since={EVER}')['resources']
    forecasts = {name: trend['forecast'] for name, trend in classes.items()}
    assert forecasts == {
        'VCPU': {'status': 'full', 'slope_per_day': 0.0, 'days_to_full': 0.0,
                 'full_at': stamp(T0 + DAY)},
        'MEMORY_MB': {'status': 'not_filling', 'slope_per_day': 0.0, 'days_to_full': None,
                      'full_at': None},
        'DISK_GB': {'status': 'not_filling', 'slope_per_day': 0.0, 'days_to_full': None,
                    'full_at': None},
    }
    one = trends_of(api, '?since=2026-03-03T00:00:00Z&resource_class=MEMORY_MB')
    assert one['resources']['MEMORY_MB']['forecast'] == {
        'status': 'unknown', 'slope_per_day': None, 'days_to_full': None, 'full_at': None}


def test_csv_holds_the_json_points(api, small_cloud):
    for day in range(3):
        add_allocation(small_cloud['cn1'], VCPU=1)
        trends.snapshot_take(at=T0 + day * DAY)
    for query in (f'&since={EVER}', f'&aggregate={ROW}&since={EVER}',
                  f'&aggregate={STORAGE}&resource_class=DISK_GB&days=3650'):
        response = api.get(f'/capacity/trends?format=csv{query}')
        assert response.status_code == 200, response.content
        assert response['Content-Type'] == 'text/csv; charset=utf-8'
        header, *rows = list(csv.reader(io.StringIO(response.content.decode())))
        assert header == ['resource_class', 'taken_at', 'total', 'reserved', 'capacity', 'used',
                          'free', 'utilization']
        body = trends_of(api, f'?{query[1:]}')
        expected = [[name, p['taken_at'], p['total'], p['reserved'], p['capacity'], p['used'],
                     p['free'], p['utilization']]
                    for name, trend in body['resources'].items() for p in trend['points']]
        assert rows and len(rows) == len(expected)
        assert [[r[0], r[1], int(r[2]), int(r[3]), float(r[4]), int(r[5]), float(r[6]),
                 float(r[7]) if r[7] else None] for r in rows] == expected


def test_csv_leaves_utilization_empty_without_capacity(api):
    add_provider('cn1', inventories={'VCPU': {'total': 4, 'reserved': 4}})
    trends.snapshot_take(at=T0)
    response = api.get(f'/capacity/trends?format=csv&since={EVER}')
    assert response.content.decode().splitlines()[1] == \
        f'VCPU,{stamp(T0)},4,4,0.0,0,0.0,'
    assert trends_of(api, f'?since={EVER}')['resources']['VCPU']['points'][0]['utilization'] is None


def assert_error(response, status, text=None):
    assert response.status_code == status, response.content
    assert response['Content-Type'] == 'application/json'
    (error,) = response.body['errors']
    assert error['status'] == status
    if text:
        assert text in error['detail'], error['detail']


@pytest.mark.parametrize('query, text', [
    ('aggregate=not-a-uuid', "'not-a-uuid' is not a 'uuid'"),
    ('resource_class=vcpu', 'does not match'),
    ('resource_class=VCPU,', 'does not match'),
    ('resource_class=VCPU,CUSTOM_NOPE',
     'Invalid resource class in resource_class parameter: No such resource class CUSTOM_NOPE'),
    ('since=yesterday', "'since' must be an ISO 8601 time"),
    ('since=0001-01-01T00:00:00%2B01:00', "'since' must be an ISO 8601 time"),
    ('days=0', 'does not match'),
    ('days=ten', 'does not match'),
    ('days=3&since=2026-01-01T00:00:00Z', "give 'since' or 'days', not both"),
    ('format=xml', "'xml' is not one of"),
    ('colour=red', 'Additional properties are not allowed'),
])
def test_bad_queries_are_400(api, query, text):
    assert_error(api.get(f'/capacity/trends?{query}'), 400, text)


def test_an_unknown_pool_is_404(api):
    missing = new_uuid()
    assert_error(api.get(f'/capacity/trends?aggregate={missing}'), 404,
                 f'No pool (aggregate) with uuid {missing} found')


def test_trends_are_for_admins_and_services(api):
    assert_error(api.get('/capacity/trends', token='alice:proj1'), 403)
    assert_error(api.get('/capacity/trends?format=csv', token='alice:proj1'), 403)
    assert api.get('/capacity/trends', token='nova:service',
                   headers={'X-Roles': 'service'}).status_code == 200
    assert api.get('/capacity/trends', token=False).status_code == 401


def test_format_or_else_the_accept_header_chooses_json_or_csv(api):
    add_provider('cn1', inventories={'VCPU': {'total': 4}})
    trends.snapshot_take(at=T0)

    def kind(query='', accept=None):
        response = api.get(f'/capacity/trends{query}', headers={'Accept': accept} if accept
                           else {})
        return response.status_code, response['Content-Type']

    as_json, as_csv = (200, 'application/json'), (200, 'text/csv; charset=utf-8')
    assert kind() == as_json
    assert kind('?format=csv') == as_csv
    assert kind('?format=json', 'text/csv') == as_json
    assert kind('', 'text/csv') == as_csv
    assert kind('', 'text/csv;q=0.5, application/json') == as_json
    assert kind('', 'text/*') == as_csv
    assert kind('', '*/*') == as_json
    refused = api.get('/capacity/trends', headers={'Accept': 'image/png'})
    assert refused.status_code == 406
    assert b'Only application/json and text/csv are provided' in refused.content


def test_several_classes_at_once(api):
    add_provider('cn1', inventories={'VCPU': {'total': 4}, 'MEMORY_MB': {'total': 64},
                                     'DISK_GB': {'total': 10}})
    trends.snapshot_take(at=T0)
    assert list(trends_of(api, f'?resource_class=DISK_GB,VCPU&since={EVER}')['resources']) == [
        'VCPU', 'DISK_GB']


def test_trend_queries_are_the_same_for_2_and_20_pools(api):
    def queries(query):
        with CaptureQueriesContext(connection) as captured:
            response = api.get(f'/capacity/trends?{query}')
        assert response.status_code == 200, response.content
        return len(captured)

    def counts():
        pool = Aggregate.objects.order_by('pk').last().uuid
        return [queries(q) for q in ('', f'aggregate={pool}',
                                     f'aggregate={pool}&resource_class=VCPU&days=3650',
                                     f'aggregate={pool}&format=csv')]

    pools_of(2, 'a')
    for day in range(3):
        trends.snapshot_take(at=T0 + day * DAY)
    small = counts()
    pools_of(20, 'b')
    for day in range(3, 10):
        trends.snapshot_take(at=T0 + day * DAY)
    assert counts() == small


# ---- 5. the dashboards' charts ----------------------------------------------------------------

def trends_section(html):
    return exact(html[html.index('<section id="usage-trends"'):html.index('</section>')])


def test_pages_carry_the_chart_data_and_the_forecast_in_words(staff):
    now = dj_timezone.now()
    node = add_provider('cn1', inventories={'VCPU': {'total': 100}, 'DISK_GB': {'total': 50}},
                        aggregates=[POOL])
    for day, _used in ((3, 10), (2, 20), (1, 30)):
        add_allocation(node, VCPU=10)
        trends.snapshot_take(at=now - timedelta(days=day))
    # Older than the charts' month: not drawn.
    trends.snapshot_take(at=now - timedelta(days=40))
    for url in ('/ui/', f'/ui/pools/{POOL}/'):
        response = staff.get(url)
        assert response.status_code == 200
        section = trends_section(response.content.decode())
        assert re.findall(r'data-resource-class="(\w+)" data-points="(\d+)" data-status="(\w+)"',
                          section) == [('VCPU', '3', 'filling'), ('DISK_GB', '3', 'not_filling')]
        assert 'full in about 7 days' in section and 'not filling up' in section
        assert 'now 30 of 100 used (30%)' in section
        data = json.loads(re.search(r'<script id="usage-trends-data" type="application/json">'
                                    r'(.*?)</script>', section, re.S).group(1))
        vcpu = data[0]
        assert [p[1:] for p in vcpu['points']] == [[100.0, 10], [100.0, 20], [100.0, 30]]
        assert vcpu['points'][-1][0] == round((now - DAY).timestamp() * 1000)
        assert vcpu['forecast']['full_at'] == round((now + 6 * DAY).timestamp() * 1000)
        assert '/static/js/charts.js' in section
    # A pool without snapshots says how to take them.
    add_provider('cn2', aggregates=[other := new_uuid()])
    assert 'No usage snapshots in the last 30 days' in trends_section(
        staff.get(f'/ui/pools/{other}/').content.decode())


def test_the_charts_cost_one_query_whatever_the_classes_and_pools(staff):
    def queries(url):
        with CaptureQueriesContext(connection) as captured:
            assert staff.get(url).status_code == 200
        return len(captured)

    def counts(pool):
        return queries('/ui/'), queries(f'/ui/pools/{pool}/')

    # Three pools: at least the overview's ten fullest inventories from the
    # start (with fewer, it asks a second time for those without a
    # utilization), so only the charts could add queries.
    pools_of(3, 'a')
    pool = Aggregate.objects.order_by('pk').first().uuid
    trends.snapshot_take(at=dj_timezone.now() - DAY)
    small = counts(pool)
    pools_of(20, 'b')
    add_provider('gpu', inventories={'VGPU': {'total': 4}, 'PGPU': {'total': 1}},
                 aggregates=[pool])
    for hours in (20, 10, 1):
        trends.snapshot_take(at=dj_timezone.now() - timedelta(hours=hours))
    assert counts(pool) == small
    assert 'data-resource-class="VGPU"' in trends_section(
        staff.get(f'/ui/pools/{pool}/').content.decode())


def test_the_admin_lists_snapshots_read_only(small_cloud, admin_client):
    trends.snapshot_take(at=T0)
    trends.snapshot_take(at=T0 + DAY)
    url = '/admin/providers/usagesnapshot/'
    listed = functools.partial(changelist, admin_client, url)
    assert len(listed()) == 14
    assert [s.taken_at for s in listed()][:7] == [T0 + DAY] * 7     # newest first
    assert {s.aggregate for s in listed('?cloud=yes')} == {None}
    assert {s.aggregate.uuid for s in listed(f'?q={ROW}')} == {ROW}
    assert 'whole cloud' in admin_client.get(url).content.decode()
    assert_admin_read_only(admin_client, url, UsageSnapshot.objects.first())
    assert UsageSnapshot.objects.count() == 14
    few = count_queries(listed)
    pools_of(5, 'admin')
    trends.snapshot_take(at=T0 + 2 * DAY)
    assert count_queries(listed) == few
