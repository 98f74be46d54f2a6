"""OpenAPI description of GET /capacity/trends (not part of OpenStack
Placement): the usage-trend snapshots and their forecasts, as JSON or CSV."""
from drf_spectacular.utils import extend_schema_view

from placement_site.openapi import UUID, Component, closed, operation, query, resources_map
from providers import trends
from providers.api import trends as views

_MOMENT = {'type': 'string', 'format': 'date-time'}
_CSV_EXAMPLE = (
    ','.join(views.CSV_COLUMNS) + '\r\n'
    'VCPU,2026-11-20T12:00:00.000000Z,512,0,2048.0,1210,838.0,59.08203125\r\n')

TRENDS = Component('CapacityTrends', closed({
    'type': 'object',
    'properties': {
        'aggregate': {**UUID, 'type': ['string', 'null'],
                      'description': 'The pool asked for; null for the whole cloud.'},
        'since': {**_MOMENT,
                  'description': 'The earliest snapshot asked for: `since`, or now minus '
                                 f'`days` (without either, {views.DEFAULT_WINDOW.days}).'},
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
                        'and snapshot with the columns ' + ', '.join(views.CSV_COLUMNS) +
                        ' (utilization empty without capacity).')
                return described

        handler.kwargs['schema'] = CsvSchema
        return handler
    return decorate


extend_schema_view(
    list=with_csv_answer(operation(
        'listCapacityTrends', tag='Capacity', summary='Usage trends and forecasts',
        description='Not part of OpenStack Placement; admin or service '
                    '(`placement:capacity:trends`). Snapshots of capacity and use per resource '
                    'class, for the whole cloud or one pool (an aggregate: its members and the '
                    'trees of member roots, as `member_of` reads it), taken by `manage.py '
                    'snapshot_usage` and the notification dispatcher and kept for '
                    'PLACEMENT_TREND_RETENTION_DAYS; with a linear forecast of when each class '
                    'is full. Without `since` or `days`, the last '
                    f'{views.DEFAULT_WINDOW.days} days (`days=90` for every snapshot kept by '
                    'default).',
        parameters=[
            query('aggregate', "A pool's aggregate uuid; without it, the whole cloud.", UUID),
            query('resource_class', 'Only these resource classes (comma-separated).',
                  {'type': 'string', 'pattern': views.CLASS_LIST_PATTERN,
                   'example': 'VCPU,MEMORY_MB'}),
            query('since', 'Only snapshots taken at or after this ISO 8601 time (UTC unless it '
                           'says otherwise). Not with `days`.', _MOMENT),
            query('days', 'Only snapshots of the last this many days. Not with `since`; '
                          f'without either, {views.DEFAULT_WINDOW.days}.',
                  {'type': 'string', 'pattern': '^[1-9][0-9]{0,4}$', 'example': '30'}),
            query('format', '`json` or `csv`; without it, the Accept header decides (JSON '
                            'unless it prefers text/csv).',
                  {'type': 'string', 'enum': ['json', 'csv']}),
        ],
        query_schema=views.TRENDS_QUERY,
        responses={200: (TRENDS, 'The points and forecast of each resource class.')},
        cached=[], accept_json=False,
        errors={400: 'An invalid uuid, resource class, time or number, or both `since` and '
                     '`days`.',
                404: 'No aggregate with that uuid.',
                406: 'Or, without `format`, an Accept header that takes neither '
                     'application/json nor text/csv.'},
    )),
)(views.UsageTrendViewSet)
