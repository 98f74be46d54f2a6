"""GET /metrics: the series only allocations can read, which
providers.metrics writes after its own (settings.PLACEMENT_METRICS_SERIES
names them: providers may not import this app).

openstack_project_usage{project_id, project_name, placement_resource} is
os-capacity's (providers.os_capacity has the rest): what each project's
consumers hold per resource class, as GET /usages?project_id= answers it,
for every project holding anything. Placement knows projects by id alone:
project_name repeats the id (os-capacity takes the name from Keystone).
"""
import collections

from django.conf import settings
from django.db.models import Sum

from allocations import ledger
from allocations.models import Allocation
from allocations.models import Project
from placement_site.metrics import family
from placement_site.metrics import labels
from placement_site.metrics import number
from providers.models import ResourceClass


def project_usage():
    """The family's text, read now and written as it is iterated: the sums
    from the ledger's owners' usage (allocations.ledger) and two queries
    for the names, or three queries inside a writing transaction. Nothing
    while os-capacity's series are off (PLACEMENT_METRICS_OS_CAPACITY)."""
    if not settings.PLACEMENT_METRICS_OS_CAPACITY:
        return ()
    if ledger.serves(Allocation.objects.db):
        sums, _ = ledger.owner_usage(Allocation.objects.db, lambda owner: True)
        per_project = collections.Counter()
        for (project, _user, _type), by_class in sums.items():
            for class_id, used in by_class.items():
                per_project[project, class_id] += used
        rows = _named(sorted((project, class_id, used)
                             for (project, class_id), used in per_project.items()))
    else:
        rows = _named(Allocation.objects.values_list(
            'consumer__project_id', 'resource_class_id').annotate(used=Sum('used')).order_by(
            'consumer__project_id', 'resource_class_id'))
    return family('openstack_project_usage', 'Current placement allocations per project.',
                  ((labels(project_id=project, project_name=project, placement_resource=name),
                    number(used)) for project, name, used in rows))


def _named(usage):
    """[(project id, class name, used)]: the sums grouped by ids, joining
    only consumers, then the names."""
    sums = list(usage)
    projects = dict(Project.objects.values_list('pk', 'external_id'))
    classes = dict(ResourceClass.objects.values_list('pk', 'name'))
    return [(projects[project], classes[class_id], used) for project, class_id, used in sums]
