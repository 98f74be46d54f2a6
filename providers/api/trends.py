"""GET /capacity/trends (not part of OpenStack Placement): the usage-trend
snapshots of the cloud or of one pool, per resource class, with the
forecast of when each class is full; JSON, or CSV with format=csv or an
Accept header preferring text/csv."""
import io
from datetime import timedelta

from django.http import HttpResponse
from django.utils import timezone

from placement_site import downloads
from placement_site import errors
from placement_site import exceptions
from placement_site import snapshots
from placement_site.api import CSV
from placement_site.api import PlacementViewSet
from placement_site.api import answer_format
from placement_site.api import moment
from placement_site.api import query_params
from placement_site.api import timestamp
from placement_site.errors import worded
from placement_site.openapi import UUID
from placement_site.openapi import Component
from placement_site.openapi import closed
from placement_site.openapi import operation
from placement_site.openapi import query
from placement_site.openapi import resources_map
from placement_site.queries import storable
from providers import querysets
from providers import trends
from providers.models import Aggregate

CLASS_LIST_PATTERN = '^[A-Z0-9_]+(,[A-Z0-9_]+)*$'
TRENDS_QUERY = {
    'type': 'object',
    'properties': {
        'aggregate': {'type': 'string', 'format': 'uuid'},
        # One class or several, comma-separated.
        'resource_class': {'type': 'string', 'pattern': CLASS_LIST_PATTERN},
        # An ISO 8601 time; parsed by the view.
        'since': {'type': 'string', 'minLength': 1},
        'days': {'type': 'string', 'pattern': '^[1-9][0-9]{0,4}$'},
        'format': {'type': 'string', 'enum': ['json', 'csv']},
    },
    'additionalProperties': False,
}
POLICY = 'placement:capacity:trends'
# Without `since` or `days`, the snapshots of the last week: all of them
# (90 days of hourly snapshots, 1.5 MB) only when asked for.
DEFAULT_WINDOW = timedelta(days=7)
CSV_COLUMNS = ('resource_class', 'taken_at', 'total', 'reserved', 'capacity', 'used', 'free',
               'utilization')


# ---- the answer and parameters the operation describes -------------------------------

_MOMENT = {'type': 'string', 'format': 'date-time'}
_CSV_EXAMPLE = (
    ','.join(CSV_COLUMNS) + '\r\n'
    'VCPU,2026-11-20T12:00:00.000000Z,512,0,2048.0,1210,838.0,59.08203125\r\n')

TRENDS = Component('CapacityTrends', closed({
    'type': 'object',
    'properties': {
        'aggregate': {**UUID, 'type': ['string', 'null'],
                      'description': 'The pool asked for; null for the whole cloud.'},
        'since': {**_MOMENT,
                  'description': 'The earliest snapshot asked for: `since`, or now minus '
                                 f'`days` (without either, {DEFAULT_WINDOW.days}).'},
        'resources': resources_map(
            'Per resource class the pool (or cloud) had at a snapshot: its points and '
            'forecast.', {
                'type': 'object',
                'properties': {
                    'points': {
                        'type': 'array',
                        'description': 'One per snapshot, oldest first.',
                        'items': {
                            'type': 'object',
                            'properties': {
                                'taken_at': _MOMENT,
                                'total': {'type': 'integer'},
                                'reserved': {'type': 'integer'},
                                'capacity': {'type': 'number',
                                             'description': '(total - reserved) * '
                                                            'allocation_ratio, summed.'},
                                'used': {'type': 'integer'},
                                'free': {'type': 'number',
                                         'description': 'capacity - used, at least 0.'},
                                'utilization': {
                                    'type': ['number', 'null'],
                                    'description': 'Percent of the capacity in use; null '
                                                   'without capacity.'},
                            },
                            'required': ['taken_at', 'total', 'reserved', 'capacity', 'used',
                                         'free', 'utilization'],
                        },
                    },
                    'forecast': {
                        'type': 'object',
                        'description': 'A least-squares line of used over time through the '
                                       f'points of the last {trends.FORECAST_WINDOW.days} days '
                                       'before the newest, projected from the newest use to '
                                       'the newest capacity.',
                        'properties': {
                            'status': {
                                'type': 'string', 'enum': list(trends.STATUSES),
                                'description': '`full`: used has reached capacity; '
                                               '`filling`: full at `full_at`; `not_filling`: '
                                               'flat, falling, or full only in more than '
                                               f'{trends.FORECAST_HORIZON.days} days; '
                                               '`unknown`: fewer than two snapshots.'},
                            'slope_per_day': {
                                'type': ['number', 'null'],
                                'description': 'Units used more (less, when negative) per '
                                               'day; null with fewer than two snapshots.'},
                            'days_to_full': {
                                'type': ['number', 'null'],
                                'description': 'Days from the newest snapshot until full '
                                               '(0 once full).'},
                            'full_at': {**_MOMENT, 'type': ['string', 'null'],
                                        'description': 'When used reaches capacity at this '
                                                       'pace (the newest snapshot once full).'},
                        },
                        'required': ['status', 'slope_per_day', 'days_to_full', 'full_at'],
                    },
                },
                'required': ['points', 'forecast'],
            }),
    },
    'required': ['aggregate', 'since', 'resources'],
}))


def with_csv_answer(decorator):
    """`decorator` (an operation()) whose 200 answer also comes as text/csv
    (format=csv)."""
    def decorate(handler):
        handler = decorator(handler)
        documented = handler.kwargs['schema']

        class CsvSchema(documented):
            def get_operation(self, *args, **kwargs):
                described = super().get_operation(*args, **kwargs)
                if described is not None:
                    answer = described['responses']['200']
                    answer['content']['text/csv'] = {
                        'schema': {'type': 'string'}, 'example': _CSV_EXAMPLE}
                    answer['description'] += (
                        ' As text/csv: a header row, then one row per class '
                        'and snapshot with the columns ' + ', '.join(CSV_COLUMNS) +
                        ' (utilization empty without capacity).')
                return described

        handler.kwargs['schema'] = CsvSchema
        return handler
    return decorate


class UsageTrendViewSet(PlacementViewSet):
    """GET /capacity/trends: admin or service (placement:capacity:trends)."""

    @with_csv_answer(operation(
        'listCapacityTrends', tag='Capacity', summary='Usage trends and forecasts',
        description='Not part of OpenStack Placement; admin or service '
                    '(`placement:capacity:trends`). Snapshots of capacity and use per resource '
                    'class, for the whole cloud or one pool (an aggregate: its members and the '
                    'trees of member roots, as `member_of` reads it), taken by `manage.py '
                    'snapshot_usage` and the notification dispatcher and kept for '
                    'PLACEMENT_TREND_RETENTION_DAYS; with a linear forecast of when each class '
                    'is full. Without `since` or `days`, the last '
                    f'{DEFAULT_WINDOW.days} days (`days=90` for every snapshot kept by '
                    'default).',
        parameters=[
            query('aggregate', "A pool's aggregate uuid; without it, the whole cloud.", UUID),
            query('resource_class', 'Only these resource classes (comma-separated).',
                  {'type': 'string', 'pattern': CLASS_LIST_PATTERN,
                   'example': 'VCPU,MEMORY_MB'}),
            query('since', 'Only snapshots taken at or after this ISO 8601 time (UTC unless it '
                           'says otherwise). Not with `days`.', _MOMENT),
            query('days', 'Only snapshots of the last this many days. Not with `since`; '
                          f'without either, {DEFAULT_WINDOW.days}.',
                  {'type': 'string', 'pattern': '^[1-9][0-9]{0,4}$', 'example': '30'}),
            query('format', '`json` or `csv`; without it, the Accept header decides (JSON '
                            'unless it prefers text/csv).',
                  {'type': 'string', 'enum': ['json', 'csv']}),
        ],
        query_schema=TRENDS_QUERY,
        responses={200: (TRENDS, 'The points and forecast of each resource class.')},
        cached=[], accept_json=False,
        errors={400: 'An invalid uuid, resource class, time or number, or both `since` and '
                     '`days`.',
                404: 'No aggregate with that uuid.',
                406: 'Or, without `format`, an Accept header that takes neither '
                     'application/json nor text/csv.'},
    ))
    @snapshots.snapshot_reads
    def list(self, request):
        self.authorize(POLICY)
        params = query_params(request, TRENDS_QUERY)
        as_csv = answer_format(request, params) == 'csv'
        aggregate = _pool(params.get('aggregate'))
        class_ids = _class_ids(params.get('resource_class'))
        since = _since(params)
        found = trends.class_trends(aggregate=aggregate, class_ids=class_ids, since=since)
        if as_csv:
            return HttpResponse(csv_text(found), content_type=f'{CSV}; charset=utf-8')
        return self.respond({
            'aggregate': aggregate.uuid if aggregate else None,
            'since': timestamp(since),
            'resources': {trend.name: describe(trend) for trend in found},
        }, cache_headers=False)


def _pool(uuid):
    if uuid is None:
        return None
    aggregate = Aggregate.objects.filter(uuid=uuid).first() if storable(uuid) else None
    if aggregate is None:
        raise errors.not_found(f'No pool (aggregate) with uuid {uuid} found')
    return aggregate


def _class_ids(names):
    """The ids of the comma-separated class names; None for every class."""
    if names is None:
        return None
    with worded(exceptions.unknown_class_in('resource_class parameter')):
        return list(querysets.resource_class_ids(
            [name.strip() for name in names.split(',')]).values())


def _since(params):
    if 'since' in params and 'days' in params:
        raise errors.bad_request(
            "Invalid query string parameters: give 'since' or 'days', not both")
    if 'since' in params:
        return moment(params['since'])
    if 'days' in params:
        return timezone.now() - timedelta(days=int(params['days']))
    return timezone.now() - DEFAULT_WINDOW


def describe(trend):
    """One class's points and forecast as the API answers them."""
    result = trend.forecast
    return {
        'points': [{
            'taken_at': timestamp(point.taken_at),
            'total': point.total,
            'reserved': point.reserved,
            'capacity': point.capacity,
            'used': point.used,
            'free': point.free,
            'utilization': point.percent,
        } for point in trend.points],
        'forecast': {
            'status': result.status,
            'slope_per_day': result.slope_per_day,
            'days_to_full': result.days_to_full,
            'full_at': timestamp(result.full_at),
        },
    }


def csv_text(found):
    """One row per class and snapshot, the columns of CSV_COLUMNS."""
    out = io.StringIO()
    writer = downloads.csv_writer(out, lineterminator='\r\n')
    writer.writerow(CSV_COLUMNS)
    for trend in found:
        for point in trend.points:
            writer.writerow([trend.name, timestamp(point.taken_at), point.total, point.reserved,
                             repr(float(point.capacity)), point.used, repr(float(point.free)),
                             '' if point.percent is None else repr(point.percent)])
    return out.getvalue()
