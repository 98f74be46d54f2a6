"""Usage trends per project: what each project's consumers hold per
resource class, snapshotted with the cloud's and the pools' books
(providers.trends takes it: PLACEMENT_TREND_SERIES) and kept as long. A
project has no capacity of its own: its chart shows its use and how fast
it grows."""
from django.db.models import Count
from django.db.models import Sum

from allocations.models import Allocation
from allocations.models import ProjectUsageSnapshot
from providers import trends


def snapshot_take(*, at):
    """Write what every project holds per class at `at` (the projects
    holding nothing: no row), and delete the rows past the retention. Two
    queries and a delete. Returns the rows written."""
    rows = [ProjectUsageSnapshot(taken_at=at, project_id=project_id, resource_class_id=class_id,
                                 used=used, consumers=consumers)
            for project_id, class_id, used, consumers in Allocation.objects.values_list(
                'consumer__project_id', 'resource_class_id').annotate(
                used=Sum('used'), consumers=Count('consumer_id', distinct=True)).order_by()]
    ProjectUsageSnapshot.objects.bulk_create(rows)
    trends.snapshot_prune(now=at, snapshots=ProjectUsageSnapshot.objects)
    return len(rows)


def project_trends(project, *, since=None):
    """[ClassTrend] of a project's snapshots from `since`, classes in
    resource class order: points without capacity (their `providers` is
    the project's consumers holding the class) and, for a forecast, the
    growth per day (providers.trends.growth). One query."""
    rows = ProjectUsageSnapshot.objects.filter(project=project)
    if since is not None:
        rows = rows.filter(taken_at__gte=since)
    points_by_class = {}
    for name, taken_at, used, consumers in rows.order_by(
            'resource_class_id', 'taken_at', 'id').values_list(
            'resource_class__name', 'taken_at', 'used', 'consumers'):
        points_by_class.setdefault(name, []).append(
            trends.Point(taken_at, 0, 0, None, used, consumers))
    return [trends.ClassTrend(name, points, trends.growth(points))
            for name, points in points_by_class.items()]
