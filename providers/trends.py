"""Usage trends: snapshots of the books (providers.books) per resource class,
for the whole cloud and for every pool, and a linear forecast of when a
class fills up.

Snapshots are taken by `manage.py snapshot_usage` (cron or a systemd timer)
and by the notification dispatcher once it has sent changes and the newest
snapshot is PLACEMENT_TREND_INTERVAL_MINUTES old; they are kept for
PLACEMENT_TREND_RETENTION_DAYS. GET /capacity/trends and the dashboards'
charts read them with class_trends().
"""
import math
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Max
from django.utils import timezone
from django.utils.module_loading import import_string

from providers import books
from providers import scopes
from providers.models import Aggregate
from providers.models import UsageSnapshot

# The forecast fits the snapshots of the last two weeks before the newest:
# recent enough to follow a change of pace, long enough to smooth the daily
# rhythm of hourly snapshots.
FORECAST_WINDOW = timedelta(days=14)
# Growth slower than this is no forecast anyone plans by ("not filling").
FORECAST_HORIZON = timedelta(days=3650)
DAY = 86400.0

FULL = 'full'                # used has reached capacity
FILLING = 'filling'          # growing: days_to_full and full_at say when it is full
NOT_FILLING = 'not_filling'  # flat, falling, or full only beyond the horizon
UNKNOWN = 'unknown'          # fewer than two snapshots in the window
STATUSES = (FULL, FILLING, NOT_FILLING, UNKNOWN)


@dataclass(frozen=True)
class Point(books.Sums):
    """One class's books at one snapshot."""
    taken_at: object
    total: int
    reserved: int
    capacity: float
    used: int
    providers: int


@dataclass(frozen=True)
class Forecast:
    """A straight line through the recent use: `slope_per_day` (units per
    day, None with too little history) and, while filling, when used reaches
    the latest capacity."""
    status: str
    slope_per_day: float = None
    days_to_full: float = None
    full_at: object = None


@dataclass(frozen=True)
class ClassTrend:
    name: str
    points: list
    forecast: Forecast


# ---- taking snapshots ---------------------------------------------------------------------

def snapshot_take(*, at=None):
    """Write one snapshot of every class for the cloud and for every pool
    (its members and the trees of member roots, as the pool pages count
    it), and those of PLACEMENT_TREND_SERIES, taken `at` (now), and delete
    those past the retention, in one transaction and a fixed number of
    queries. Returns the rows written."""
    at = at or timezone.now()
    with transaction.atomic():
        cloud = books.scope_books(scopes.cloud()).get(scopes.CLOUD, {})
        pools = books.pool_books(Aggregate.objects.values_list('pk', flat=True))
        rows = [_snapshot(at, None, usage) for usage in cloud.values()]
        rows += [_snapshot(at, aggregate_id, usage)
                 for aggregate_id, classes in pools.items() for usage in classes.values()]
        UsageSnapshot.objects.bulk_create(rows)
        snapshot_prune(now=at)
        # The apps' own series (a project's usage) at the same moment.
        others = sum(import_string(path)(at=at) for path in settings.PLACEMENT_TREND_SERIES)
    return len(rows) + others


def _snapshot(at, aggregate_id, usage):
    return UsageSnapshot(taken_at=at, aggregate_id=aggregate_id, resource_class_id=usage.class_id,
                         total=usage.total, reserved=usage.reserved, capacity=usage.capacity,
                         used=usage.used, providers=usage.providers)


def snapshot_prune(*, now=None, snapshots=UsageSnapshot.objects):
    """Delete the snapshots (of `snapshots`, a queryset with `taken_at`)
    older than PLACEMENT_TREND_RETENTION_DAYS (0: keep them all). Returns
    how many went."""
    days = settings.PLACEMENT_TREND_RETENTION_DAYS
    if days <= 0:
        return 0
    cutoff = (now or timezone.now()) - timedelta(days=days)
    return snapshots.filter(taken_at__lt=cutoff).delete()[0]


def snapshot_due(*, now=None):
    """Is the newest snapshot PLACEMENT_TREND_INTERVAL_MINUTES old (or is
    there none)? One query."""
    newest = UsageSnapshot.objects.aggregate(newest=Max('taken_at'))['newest']
    interval = timedelta(minutes=settings.PLACEMENT_TREND_INTERVAL_MINUTES)
    return newest is None or newest <= (now or timezone.now()) - interval


def snapshot_if_due(*, at=None):
    """Take a snapshot if one is due (see snapshot_due); the rows written,
    None when none was due."""
    at = at or timezone.now()
    return snapshot_take(at=at) if snapshot_due(now=at) else None


# ---- reading them -------------------------------------------------------------------------

def series(*, aggregate=None, class_ids=None, since=None):
    """{class name: [Point] oldest first}, classes in resource class order,
    for a pool (an Aggregate) or the cloud (None), optionally only classes
    of `class_ids` and only from `since`. One query."""
    rows = UsageSnapshot.objects.filter(aggregate=aggregate)
    if class_ids is not None:
        rows = rows.filter(resource_class_id__in=class_ids)
    if since is not None:
        rows = rows.filter(taken_at__gte=since)
    points_by_class = {}
    for row in rows.order_by('resource_class_id', 'taken_at', 'id').values_list(
            'resource_class__name', 'taken_at', 'total', 'reserved', 'capacity', 'used',
            'providers'):
        points_by_class.setdefault(row[0], []).append(Point(*row[1:]))
    return points_by_class


def class_trends(*, aggregate=None, class_ids=None, since=None):
    """[ClassTrend] per class of the series (see series()), each with its
    forecast over the points read. One query."""
    return [ClassTrend(name, points, forecast(points))
            for name, points in series(aggregate=aggregate, class_ids=class_ids,
                                       since=since).items()]


def forecast(points, *, window=FORECAST_WINDOW):
    """When used reaches capacity, by a least-squares line of used over time
    through the points (oldest first) of the last `window` before the
    newest: at the line's slope from the newest point's use up to the
    newest capacity."""
    if not points:
        return Forecast(UNKNOWN)
    latest = points[-1]
    recent = [p for p in points if p.taken_at >= latest.taken_at - window]
    slope = _slope_per_day(recent)
    if latest.used >= latest.capacity:
        return Forecast(FULL, slope, 0.0, latest.taken_at)
    if slope is None:
        return Forecast(UNKNOWN)
    if slope <= 0:
        return Forecast(NOT_FILLING, slope)
    days = latest.free / slope
    if days > FORECAST_HORIZON / timedelta(days=1):
        return Forecast(NOT_FILLING, slope)
    return Forecast(FILLING, slope, days, latest.taken_at + timedelta(days=days))


def growth(points, *, window=FORECAST_WINDOW):
    """For a series without capacity (a project's use): the least-squares
    slope of used per day over the last `window` before the newest point,
    as a Forecast that says no more (status UNKNOWN)."""
    if not points:
        return Forecast(UNKNOWN)
    recent = [p for p in points if p.taken_at >= points[-1].taken_at - window]
    return Forecast(UNKNOWN, _slope_per_day(recent))


def describe_growth(result):
    """growth()'s slope in words, as the dashboards print it."""
    slope = result.slope_per_day
    if slope is None:
        return 'not enough history for a trend'
    if abs(slope) < 0.5:
        return 'flat'
    return f'{"growing" if slope > 0 else "shrinking"} by about {abs(slope):,.0f} a day'


def _slope_per_day(points):
    """The least-squares slope of used over time, per day; None without two
    distinct times."""
    if len(points) < 2:
        return None
    origin = points[0].taken_at
    xs = [(p.taken_at - origin).total_seconds() / DAY for p in points]
    ys = [float(p.used) for p in points]
    mean_x, mean_y = math.fsum(xs) / len(xs), math.fsum(ys) / len(ys)
    spread = math.fsum((x - mean_x) ** 2 for x in xs)
    if spread == 0:
        return None
    return math.fsum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys)) / spread


def describe_forecast(result):
    """The forecast in words, as the dashboards print it."""
    if result.status == FULL:
        return 'full now'
    if result.status == FILLING:
        if result.days_to_full < 1:
            return 'full within a day'
        days = round(result.days_to_full)
        return f'full in about {days:,} day{"s" if days != 1 else ""}'
    if result.status == NOT_FILLING:
        return 'not filling up'
    return 'not enough history for a forecast'
