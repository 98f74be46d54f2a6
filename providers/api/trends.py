"""GET /capacity/trends (not part of OpenStack Placement): the usage-trend
snapshots of the cloud or of one pool, per resource class, with the
forecast of when each class is full; JSON, or CSV with format=csv or an
Accept header preferring text/csv."""
import io
from datetime import timedelta

from django.http import HttpResponse
from django.utils import timezone

from placement_site import downloads, errors, exceptions, snapshots
from placement_site.api import CSV, PlacementViewSet, answer_format, moment, query_params, timestamp
from placement_site.errors import worded
from placement_site.queries import storable
from providers import querysets, trends
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


class UsageTrendViewSet(PlacementViewSet):
    """GET /capacity/trends: admin or service (placement:capacity:trends)."""

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
