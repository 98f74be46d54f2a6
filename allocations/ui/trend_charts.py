"""The usage-trend charts' context (templates/ui/_trends.html, drawn by
static/js/charts.js): each page's view reads its trends here and hands
them to the template, which only formats them."""
from datetime import timedelta

from django.utils import timezone

from allocations import history
from allocations import project_trends as allocation_project_trends
from providers import trends

# How soon "full in about N days" calls for attention: danger under
# URGENT_DAYS, warning under SOON_DAYS, neutral beyond.
URGENT_DAYS = 30
SOON_DAYS = 90


def urgency(forecast):
    """'danger', 'warning' or 'neutral': a forecast's badge colour."""
    if forecast.status == trends.FULL:
        return 'danger'
    if forecast.status != trends.FILLING or forecast.days_to_full is None:
        return 'neutral'
    if forecast.days_to_full < URGENT_DAYS:
        return 'danger'
    return 'warning' if forecast.days_to_full <= SOON_DAYS else 'neutral'


# The charts show the snapshots of the last month by default (hourly
# snapshots: ~720 points per class), or of the range chosen (?days=); the
# forecast is fitted over the last two weeks.
TREND_DAYS = 30
TREND_RANGES = (7, 30, 90)


# The capacity report's ranges: from the last day on, the last week unless
# asked (a day of hourly snapshots is 24 points per class).
CAPACITY_TREND_DAYS = 7
CAPACITY_TREND_RANGES = (1, 7, 30, 90)


def _trend_days(request, ranges=TREND_RANGES, default=TREND_DAYS):
    days = request.GET.get('days', '')
    return int(days) if days.isdigit() and int(days) in ranges else default


def usage(request, aggregate=None):
    """One chart per resource class of the pool's (an Aggregate) or the
    cloud's snapshots of the last ?days= (7, 30 or 90; TREND_DAYS), with
    the forecast in words. One query, whatever the number of classes. The
    chart data go into the page as JSON (json_script) for static/js/charts.js."""
    days = _trend_days(request)
    class_trends = trends.class_trends(aggregate=aggregate,
                                       since=timezone.now() - timedelta(days=days))
    return _trends_shown(request, days, class_trends,
                         'this pool' if aggregate is not None else 'the whole cloud')


def capacity(request, aggregate=None, class_ids=None):
    """usage() of the capacity report: the cloud's or the pool's
    snapshots of the classes it shows (ids; None: all), over the last
    ?days= of CAPACITY_TREND_RANGES (CAPACITY_TREND_DAYS unless asked)."""
    days = _trend_days(request, CAPACITY_TREND_RANGES, CAPACITY_TREND_DAYS)
    class_trends = trends.class_trends(aggregate=aggregate, class_ids=class_ids,
                                       since=timezone.now() - timedelta(days=days))
    return _trends_shown(request, days, class_trends,
                         f'pool {aggregate.uuid}' if aggregate is not None else 'the whole cloud',
                         ranges=CAPACITY_TREND_RANGES)


def tree(request, root, classes):
    """The tree's used over the last ?days=, replayed from the event log
    (allocations.history), against its capacity now; `classes` its books
    ({class name: ClassUsage})."""
    days = _trend_days(request)
    tree_history = history.tree_history(root, classes, since=timezone.now() - timedelta(days=days))
    return _trends_shown(request, days, tree_history.trends,
                         'this tree, replayed from the event log', starts=tree_history.starts)


def project(request, project):
    """The project's use per class over the last ?days=, from its usage
    snapshots (allocations.project_trends), with its growth in words."""
    days = _trend_days(request)
    class_trends = allocation_project_trends.project_trends(
        project, since=timezone.now() - timedelta(days=days))
    return _trends_shown(request, days, class_trends, 'this project',
                         describe=trends.describe_growth)


def _trends_shown(request, days, class_trends, scope, starts=None,
                  describe=trends.describe_forecast, ranges=TREND_RANGES):
    choices, ranges = ranges, []
    for choice in choices:
        query = request.GET.copy()
        query['days'] = choice
        ranges.append((choice, '?' + query.urlencode() + '#usage-trends'))
    return {
        'days': days, 'ranges': ranges, 'scope': scope,
        'starts': starts,
        # Growth (a project's) has no capacity to fill: no urgency.
        'trends': [(trend, describe(trend.forecast),
                    urgency(trend.forecast) if describe is trends.describe_forecast else 'neutral')
                   for trend in class_trends],
        'chart_data': [{
            'name': trend.name,
            'points': [[_ms(p.taken_at), p.capacity, p.used] for p in trend.points],
            'forecast': {'status': trend.forecast.status,
                         'slope_per_day': trend.forecast.slope_per_day,
                         'full_at': _ms(trend.forecast.full_at)},
        } for trend in class_trends],
    }


def _ms(moment):
    """A time as JavaScript counts it (milliseconds since the epoch)."""
    return None if moment is None else round(moment.timestamp() * 1000)
