"""GET /metrics: the series only allocations can read, which
providers.metrics writes after its own (settings.PLACEMENT_METRICS_SERIES
names them: providers may not import this app).

openstack_project_usage{project_id, project_name, placement_resource} is
os-capacity's (providers.os_capacity has the rest): what each project's
consumers hold per resource class, as GET /usages?project_id= answers it,
for every project holding anything. Placement knows projects by id alone:
project_name repeats the id (os-capacity takes the name from Keystone).
"""
from django.conf import settings
from django.db.models import Sum

from allocations.models import Allocation, Project
from placement_site.metrics import family, labels, number
from providers import changes
from providers.models import ResourceClass


def project_usage():
    """The family's text, read now and written as it is iterated: three
    queries, none but the books' version while nothing has changed.
    Nothing while os-capacity's series are off (PLACEMENT_METRICS_OS_CAPACITY)."""
    if not settings.PLACEMENT_METRICS_OS_CAPACITY:
        return ()
    usage = Allocation.objects.values_list('consumer__project_id', 'resource_class_id').annotate(
        used=Sum('used')).order_by('consumer__project_id', 'resource_class_id')
    rows = changes.remembered(usage.db, ('project usage series', changes.query_key(usage)),
                              lambda: _named(usage))
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
