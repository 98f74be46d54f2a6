"""os-capacity's series on GET /metrics, from the catalogue.

Clouds deployed with Kayobe run StackHPC's os-capacity exporter beside
Placement, and their Grafana dashboards are built on its series. It asks
GET /allocation_candidates for every flavor (with
required=!COMPUTE_STATUS_DISABLED) and every provider's usages and
inventories; we answer the same questions from the books, with its names,
labels and HELP texts, for the flavors of PLACEMENT_CAPACITY_FLAVORS:

- openstack_free_capacity_by_flavor_total{flavor_name, public}: how many
  more of the flavor fit in the cloud, one after another, counted exactly
  (providers.capacity.fit_counts: each shared slot counted once).
- openstack_free_capacity_hypervisor_by_flavor{hypervisor, flavor_name,
  az_aggregate, project_aggregate}: how many more fit each compute node, a
  tree named by its root, alone with the sharing providers serving it
  (providers.capacity.tree_fit_counts); only where at least one fits, as
  os-capacity writes it.
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

Reads: the flavors' classes, the two fit counts (three queries each, none
but the books' version while nothing has changed), the roots' names, their
pods and the pods' bindings: a fixed number whatever the size of the cloud.
"""
import collections
from dataclasses import dataclass

import os_traits
from django.db.models import Exists, OuterRef

from placement_site.metrics import family, labels, number
from providers import capacity, rules, scopes
from providers.fits import Fit
from providers.flavors import configured_flavors
from providers.models import ProviderAggregate, ProviderTrait, ResourceProvider
from providers.pods.models import PodBinding

# A pod's name stands for os-capacity's project-isolation aggregate; a
# node in several such pods says so, as os-capacity does.
SEVERAL_POD_NAMES = 'multiple'


@dataclass
class FlavorCapacity:
    """What the os-capacity series show, read inside the request."""
    flavors: tuple
    totals: dict        # flavor name -> Fit in the cloud
    hypervisors: list   # (rendered labels but the flavor's, {flavor name: Fit}), by name
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
    in_cloud = capacity.fit_counts(scopes.cloud().excluding_trees(disabled_roots()), shapes)
    totals = {flavor.name: Fit(0) for flavor in flavors}
    totals.update(zip((flavor.name for flavor in counted), in_cloud[scopes.CLOUD]))
    per_tree = capacity.tree_fit_counts(scopes.trees().excluding_trees(disabled_roots()), shapes)
    zones, pods = _pods_of_roots()
    hypervisors = []
    for root, name in ResourceProvider.objects.roots().values_list('id', 'name').order_by('name'):
        fits = {flavor.name: fit for flavor, fit in zip(counted, per_tree.get(root, ()))
                if fit.count}
        if fits:
            names = pods.get(root, ())
            pod = names[0] if len(names) == 1 else SEVERAL_POD_NAMES if names else ''
            head = labels(hypervisor=name, az_aggregate=zones.get(root, ''), project_aggregate=pod)
            hypervisors.append((head[:-1], fits))
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


def hypervisor_labels(label):
    """openstack-exporter's '{hostname="..",resourcetype=".."}' as
    os-capacity labels it, '{hypervisor="..",resource=".."}': the class
    comes last and has no quotes, so the last separator is the real one."""
    host, _, resource_class = label.rpartition(',resourcetype=')
    return '{hypervisor=' + host[len('{hostname='):] + ',resource=' + resource_class


def series(found, rows):
    """The os-capacity families, in chunks; rows: GET /metrics' inventory
    rows (labels, total, reserved, allocation ratio, used)."""
    yield from family(
        'openstack_free_capacity_by_flavor_total',
        'Free capacity if you fill the cloud full of each flavor',
        ((labels(flavor_name=flavor.name, public='True'),
          number(found.totals[flavor.name].count)) for flavor in found.flavors))
    flavor_labels = {flavor.name: labels(flavor_name=flavor.name)[1:] for flavor in found.flavors}
    yield from family(
        'openstack_free_capacity_hypervisor_by_flavor',
        'Free capacity for each hypervisor if you fill remaining space full of each flavor',
        ((f'{head},{flavor_labels[name]}', number(fit.count))
         for head, fits in found.hypervisors for name, fit in fits.items()))
    yield from family(
        'openstack_project_filter_aggregate',
        'Mapping of project_ids to aggregates in the host free capacity info.',
        ((labels(project_id=project, aggregate=pod), '1') for project, pod in found.bindings))
    yield from family(
        'openstack_hypervisor_placement_allocated',
        'Currently allocated resource for each provider in placement.',
        ((hypervisor_labels(label), str(used)) for label, _, _, _, used in rows))
    yield from family(
        'openstack_hypervisor_placement_allocatable_capacity',
        'The total allocatable resource in the placement inventory.',
        ((hypervisor_labels(label), number(rules.capacity(total, reserved, ratio)))
         for label, total, reserved, ratio, _ in rows))

