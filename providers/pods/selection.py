"""Choosing a pod for a tenant's binding request: the standard filters and
weighers of the pipeline (providers.pods.pipeline runs those settings
name), the pods' books they read, and choose(), which runs it.

Every pod is looked at with its live books (providers.books.pool_books, as
the pool pages read them), so one selection costs the same few queries
however many pods and providers there are. Selecting reads and writes
nothing; providers.pods.services binds on its answer.
"""
from dataclasses import dataclass
from dataclasses import field

from placement_site import exceptions
from providers import books
from providers.models import Inventory
from providers.models import ResourceClass
from providers.pods.models import GENERAL_PURPOSE
from providers.pods.models import Pod
from providers.pods.models import PodBinding
from providers.pods.pipeline import PodFilter
from providers.pods.pipeline import PodWeigher
from providers.pods.pipeline import normalise
from providers.pods.pipeline import select
from providers.querysets import in_pools


@dataclass(frozen=True)
class BindingRequest:
    """Where should this tenant's new work of this affinity go?

    affinity: 'key=value', or '' for general purpose; availability_zone:
    None for any; resources: {class name: amount} the pod must be able to
    fit (optional)."""
    project_id: str
    affinity: str = GENERAL_PURPOSE
    availability_zone: str = None
    resources: dict = field(default_factory=dict)


@dataclass
class PodBooks:
    """A pod as the pipeline sees it: the pod, its books per class, and
    the requested classes some provider of the pod can take."""
    pod: Pod
    classes: dict                       # {class name: providers.books.ClassUsage}
    fitting: set = field(default_factory=set)

    def percent(self, name):
        """Percent of the class's capacity in use (a pod's thresholds are
        percents); None without capacity."""
        usage = self.classes.get(name)
        return None if usage is None else usage.percent

    def thresholds_reached(self):
        """[(class, percent used, threshold)] for each class at or over its
        threshold, in class order."""
        reached = []
        for name, threshold in sorted(self.pod.thresholds.items()):
            used = self.percent(name)
            if used is not None and used >= threshold:
                reached.append((name, used, threshold))
        return reached

    def free(self, name):
        usage = self.classes.get(name)
        return usage.free if usage is not None else 0.0


def pod_books(pods, resources=None):
    """PodBooks for each pod: one query for the books, and with
    `resources` ({class name: amount}) one more for the classes that fit."""
    pods = list(pods)
    by_aggregate = books.pool_books(p.aggregate_id for p in pods)
    fitting = _fitting(pods, resources) if resources else {}
    return [PodBooks(p, by_aggregate[p.aggregate_id], fitting.get(p.aggregate_id, set()))
            for p in pods]


def _fitting(pods, resources):
    """{aggregate id: class names of `resources` that some inventory of the
    pool can take}, by the rule candidates apply to each provider
    (InventoryQuerySet.able_to_fit: min/max unit, step size, capacity).
    One query."""
    ids = dict(ResourceClass.objects.filter(name__in=list(resources)).values_list('id', 'name'))
    wanted = {class_id: resources[name] for class_id, name in ids.items()}
    if not wanted:
        return {}
    classes_by_pool = {}
    fits = Inventory.objects.able_to_fit_any(wanted)
    first, second = in_pools(fits, [p.aggregate_id for p in pods])
    rows = first.values_list('pool', 'resource_class_id').order_by().union(
        second.values_list('pool', 'resource_class_id').order_by())
    for aggregate_id, class_id in rows:
        classes_by_pool.setdefault(aggregate_id, set()).add(ids[class_id])
    return classes_by_pool


# ---- filters --------------------------------------------------------------------

class AllPodsFilter(PodFilter):
    """Every pod passes (a pipeline's neutral start)."""

    def refusal(self, candidate, request):
        return None


class AvailabilityZoneFilter(PodFilter):
    """The pod is in the requested availability zone (any without one)."""
    end_reason = PodBinding.AVAILABILITY_ZONE

    def refusal(self, candidate, request):
        zone = request.availability_zone
        if zone and candidate.pod.availability_zone != zone:
            return f'is in availability zone {candidate.pod.availability_zone}, not {zone}'
        return None


class ResourceAffinityFilter(PodFilter):
    """A tagged request goes to pods with its tag, a general-purpose one to
    pods without tags."""
    end_reason = PodBinding.AFFINITY

    def refusal(self, candidate, request):
        if candidate.pod.serves(request.affinity):
            return None
        if request.affinity == GENERAL_PURPOSE:
            return f'is not general purpose ({", ".join(candidate.pod.tags)})'
        return f'is not tagged {request.affinity}'


class EnabledFilter(PodFilter):
    """The pod is enabled (not in maintenance)."""
    end_reason = PodBinding.MAINTENANCE

    def refusal(self, candidate, request):
        if candidate.pod.state != Pod.ENABLED:
            return f'is in {candidate.pod.state}'
        return None


class BelowThresholdFilter(PodFilter):
    """Every class with a threshold is used below it."""
    end_reason = PodBinding.THRESHOLD

    def refusal(self, candidate, request):
        reached = candidate.thresholds_reached()
        if not reached:
            return None
        return 'has reached its ' + ', '.join(
            f'{name} threshold ({used:.1f}% used, threshold {threshold:g}%)'
            for name, used, threshold in reached)


class CapacityFilter(PodFilter):
    """Some provider of the pod can take each requested amount (none
    requested: every pod passes)."""
    end_reason = PodBinding.CAPACITY

    def refusal(self, candidate, request):
        missing = [f'{amount} {name}' for name, amount in request.resources.items()
                   if name not in candidate.fitting]
        if missing:
            return f'cannot fit {", ".join(missing)}'
        return None


# ---- weighers -------------------------------------------------------------------

class CreationTimeWeigher(PodWeigher):
    """Older pods first: the "first pod in line" policy."""

    def weights(self, candidates, request):
        return [-c.pod.created_at.timestamp() for c in candidates]


class IdleCapacityWeigher(PodWeigher):
    """The most free capacity first: per class (those requested, or every
    class of the pods left) the free amount normalised over the pods,
    averaged over the classes."""

    def weights(self, candidates, request):
        names = list(request.resources) or sorted(
            {name for c in candidates for name in c.classes})
        if not names:
            return [0.0] * len(candidates)
        per_class = [normalise([c.free(name) for c in candidates]) for name in names]
        return [sum(column) / len(names) for column in zip(*per_class)]


def choose(request, pods=None):
    """The Selection for `request` over every pod (or `pods`), with their
    live books."""
    pods = Pod.objects.with_aggregate().in_line() if pods is None else pods
    return select(request, pod_books(pods, request.resources))


def pod_for(project_id, affinity=GENERAL_PURPOSE, resources=None, availability_zone=None):
    """Where the tenant's work of this affinity goes now, reading only:
    (pod, binding, selection) with the tenant's open binding and its pod,
    or, without one, binding None and the pod a binding request would bind
    it to (None when no pod passes; the selection says why). The selection
    is run either way, so a caller can tell whether a bound pod still
    passes. A fixed number of queries; nothing is written."""
    binding = PodBinding.objects.open().of(project_id, affinity).select_related(
        'pod__aggregate').first()
    chosen = choose(BindingRequest(project_id, affinity, availability_zone,
                                   dict(resources or {})))
    if binding is not None:
        return binding.pod, binding, chosen
    return chosen.best, None, chosen


def no_pod_available(project_id, affinity, chosen):
    """The refusal of a binding request no pod of the selection `chosen`
    can take, saying why each pod was refused."""
    return exceptions.NoPodAvailable(
        affinity=describe_affinity(affinity), project_id=project_id,
        reasons=chosen.refusal_text() or 'there are no pods')


def describe_affinity(affinity):
    return affinity or 'general-purpose'
