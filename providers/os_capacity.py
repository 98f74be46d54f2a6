"""os-capacity's series on GET /metrics, from the catalogue.

Clouds deployed with Kayobe run StackHPC's os-capacity exporter beside
Placement, and their Grafana dashboards are built on its series. It asks
GET /allocation_candidates for every flavor (with
required=!COMPUTE_STATUS_DISABLED) and every provider's usages and
inventories; we answer the same questions from the books, with its names,
labels and HELP texts, for the flavors of PLACEMENT_CAPACITY_FLAVORS:

- openstack_free_capacity_by_flavor_total{flavor_name, public}: how many
  more of the flavor fit in the cloud, one after another, counted exactly
  (each shared slot once, as the dashboards count it).
- openstack_free_capacity_hypervisor_by_flavor{hypervisor, flavor_name,
  az_aggregate, project_aggregate}: how many more fit each compute node, a
  tree named by its root, alone with the sharing providers serving it;
  only where at least one fits, as os-capacity writes it. Both counts come
  from providers.capacity.tree_fit_counts.
- openstack_project_filter_aggregate{project_id, aggregate}: the pods
  projects are bound to (our tenant isolation: os-capacity reads nova's
  aggregates with filter_tenant_id).
- openstack_hypervisor_placement_allocated and
  openstack_hypervisor_placement_allocatable_capacity{hypervisor,
  resource}: every provider's usage and capacity per class, from the
  inventory rows GET /metrics reads anyway. Capacity is Placement's (total
  - reserved) * allocation_ratio, not os-capacity's int(total *
  allocation_ratio) - reserved.

A compute node whose root has COMPUTE_STATUS_DISABLED (nova sets it on a
disabled service's node) counts for no flavor, as os-capacity's request
forbids it. Nova's availability zones are not Placement's: az_aggregate is
the zone of the pod whose aggregate the root is in. openstack_project_usage
needs the allocations (allocations.metrics writes it);
openstack_project_quota needs nova's quotas and is left out.
docs/metrics.md says where and why our numbers differ from os-capacity's.

Reads: the flavors' classes, the counts (three queries, none but the
books' version while nothing has changed), the roots' names, their pods and
the pods' bindings: a fixed number whatever the size of the cloud.
"""
import collections
from dataclasses import dataclass

import os_traits
from django.db.models import Exists
from django.db.models import OuterRef

from placement_site.metrics import family
from placement_site.metrics import labels
from providers import capacity
from providers import scopes
from providers.flavors import configured_flavors
from providers.models import ProviderAggregate
from providers.models import ProviderTrait
from providers.pods.models import PodBinding

# A pod's name stands for os-capacity's project-isolation aggregate; a
# node in several such pods says so, as os-capacity does.
SEVERAL_POD_NAMES = 'multiple'


@dataclass
class FlavorCapacity:
    """What the os-capacity series show, read inside the request."""
    flavors: tuple
    totals: dict        # flavor name -> how many more fit the cloud
    hypervisors: dict   # root id -> ((zone, pod), {flavor name: count}): hypervisor_labels
    bindings: list      # (project id, pod name), sorted


def disabled_roots():
    """The providers nova marked disabled, as a subquery: a tree whose root
    is one of them takes no new instances."""
    return ProviderTrait.objects.filter(
        trait__name=os_traits.COMPUTE_STATUS_DISABLED).values('resource_provider_id')


def read():
    """FlavorCapacity of the configured flavors over the enabled trees."""
    flavors = configured_flavors()
    counted, shapes = capacity.flavor_shapes(flavors)   # a flavor of unknown classes fits none
    tree_fits = capacity.tree_fit_counts(
        scopes.trees().without_trees_whose_root_has(os_traits.COMPUTE_STATUS_DISABLED), shapes)
    totals = {flavor.name: 0 for flavor in flavors}
    totals.update(zip((flavor.name for flavor in counted), (fit.count for fit in tree_fits.total)))
    flavor_names = [flavor.name for flavor in counted]
    zones, pods = _pods_of_roots()
    hypervisors = {}
    for root, counts in tree_fits.trees.items():
        fits = {flavor: n for flavor, n in zip(flavor_names, counts) if n}
        if fits:
            bound = pods.get(root, ())
            hypervisors[root] = ((zones.get(root, ''), bound[0] if len(bound) == 1
                                  else SEVERAL_POD_NAMES if bound else ''), fits)
    bindings = sorted(set(PodBinding.objects.open().values_list('project_id', 'pod__name')))
    return FlavorCapacity(flavors, totals, hypervisors, bindings)


def _pods_of_roots():
    """({root id: availability zone}, {root id: names of the pods with
    tenants bound}) of the roots that are members of pods' aggregates (a
    pod holds the trees of its member roots). One query."""
    bound = PodBinding.objects.open().filter(pod=OuterRef('aggregate__pod'))
    zones, pods = {}, collections.defaultdict(list)
    for root, pod, zone, has_tenants in ProviderAggregate.objects.filter(
            resource_provider__parent_provider__isnull=True, aggregate__pod__isnull=False,
    ).values_list('resource_provider_id', 'aggregate__pod__name',
                  'aggregate__pod__availability_zone', Exists(bound)).order_by(
            'aggregate__pod__name'):
        zones.setdefault(root, zone)   # nova puts a host in one zone; else the first pod's
        if has_tenants:
            pods[root].append(pod)
    return zones, pods


def hypervisor_head(name, where):
    """A hypervisor sample's labels but the flavor's, '{hypervisor="..",
    az_aggregate="..",project_aggregate=".."' (unclosed): the root's name,
    and the zone and pod (FlavorCapacity.hypervisors) it is in."""
    zone, pod = where
    return labels(hypervisor=name, az_aggregate=zone, project_aggregate=pod)[:-1]


def hypervisor_labels(label):
    """openstack-exporter's '{hostname="..",resourcetype=".."}' as
    os-capacity labels it, '{hypervisor="..",resource=".."}': the class
    comes last and has no quotes, so the last separator is the real one."""
    host, _, resource_class = label.rpartition(',resourcetype=')
    return '{hypervisor=' + host[len('{hostname='):] + ',resource=' + resource_class


HYPERVISOR_FLAVORS_HELP = ('Free capacity for each hypervisor if you fill remaining space '
                           'full of each flavor')


def flavor_totals(flavor_capacity):
    """openstack_free_capacity_by_flavor_total, in chunks (the hypervisors'
    samples and the per-provider ones are providers.metrics' to write)."""
    return family(
        'openstack_free_capacity_by_flavor_total',
        'Free capacity if you fill the cloud full of each flavor',
        ((labels(flavor_name=flavor.name, public='True'),
          str(flavor_capacity.totals[flavor.name])) for flavor in flavor_capacity.flavors))


def project_filters(flavor_capacity):
    """openstack_project_filter_aggregate, in chunks."""
    return family(
        'openstack_project_filter_aggregate',
        'Mapping of project_ids to aggregates in the host free capacity info.',
        ((labels(project_id=project, aggregate=pod), '1')
         for project, pod in flavor_capacity.bindings))
