"""Writes to pods and pod bindings, one transaction each, shared by the
API, the admin and the dashboards.

A binding request is answered in one transaction: the tenant's open
binding (locked) stands if its pod still passes the selection's filters;
otherwise it ends, with the reason of the filter its pod failed, and the
best pod is bound. The partial unique constraint pod_bindings_one_open
makes two open bindings of one tenant and affinity impossible: a
concurrent request that loses the insert starts again and finds the
winner's binding.
"""
import uuid as uuid_lib
from dataclasses import dataclass

from django.db import connection
from django.db import transaction
from django.utils import timezone

from placement_site import exceptions
from placement_site.retries import retried
from placement_site.retries import retried_write
from placement_site.validation import normalize_uuid
from providers import querysets
from providers import services as provider_services
from providers.pods import selection
from providers.pods.models import GENERAL_PURPOSE
from providers.pods.models import Pod
from providers.pods.models import PodBinding

POD_FIELDS = ('name', 'availability_zone', 'affinity_tags', 'thresholds', 'state')


# ---- pods -------------------------------------------------------------------------

def check_thresholds(thresholds):
    """ResourceClassNotFound for a threshold of an unknown class."""
    querysets.resource_class_ids(list(thresholds or {}))


def pod_create(*, name, uuid=None, aggregate_uuid=None, availability_zone='nova',
               affinity_tags=None, thresholds=None, state=Pod.ENABLED):
    """A pod of the aggregate (created if new; a new one without a uuid)."""
    pod_uuid = normalize_uuid(uuid) if uuid else str(uuid_lib.uuid4())
    aggregate_uuid = aggregate_uuid or str(uuid_lib.uuid4())
    check_thresholds(thresholds)

    def write():
        _refuse_duplicates(pod_uuid, name)
        aggregate_id = provider_services.aggregate_ensure(aggregate_uuid)
        _refuse_aggregate_of_another(aggregate_id, aggregate_uuid)
        return Pod.objects.create(
            uuid=pod_uuid, name=name, aggregate_id=aggregate_id,
            availability_zone=availability_zone, affinity_tags=dict(affinity_tags or {}),
            thresholds=dict(thresholds or {}), state=state)
    pod = retried(write)
    return Pod.objects.with_aggregate().get(pk=pod.pk)


def pod_update(*, pod, aggregate_uuid=None, **changes):
    """Change a pod's name, aggregate, zone, tags, thresholds or state.
    Bindings are not touched: a tenant moves at its next binding request
    if its pod no longer passes the filters (maintenance, a threshold)."""
    unknown = set(changes) - set(POD_FIELDS)
    if unknown:
        raise TypeError(f'not pod fields: {sorted(unknown)}')
    if 'thresholds' in changes:
        check_thresholds(changes['thresholds'])

    def write():
        if changes.get('name', pod.name) != pod.name:
            _refuse_duplicates(None, changes['name'], exclude_pk=pod.pk)
        fields = dict(changes)
        if aggregate_uuid is not None:
            aggregate_id = provider_services.aggregate_ensure(aggregate_uuid)
            _refuse_aggregate_of_another(aggregate_id, aggregate_uuid, exclude_pk=pod.pk)
            fields['aggregate_id'] = aggregate_id
        Pod.objects.filter(pk=pod.pk).update(updated_at=timezone.now(), **fields)
    if changes or aggregate_uuid is not None:
        retried(write)
    return Pod.objects.with_aggregate().get(pk=pod.pk)


def _locked(row, missing):
    """`row` read again and locked until the transaction ends; `missing`
    (a not-found error) when it is gone meanwhile."""
    locked = type(row).objects.select_for_update().filter(pk=row.pk).first()
    if locked is None:
        raise missing(uuid=row.uuid)
    return locked


@retried_write
def pod_delete(*, pod):
    """Delete a pod that nobody was ever bound to (bindings are history)."""
    with transaction.atomic():
        locked = _locked(pod, exceptions.PodNotFound)
        if PodBinding.objects.filter(pod_id=pod.pk).exists():
            raise exceptions.PodInUse(name=pod.name)
        locked.delete()


def check_pod_delete(pod):
    """Why the pod may not be deleted now (the admin asks first), or None."""
    if PodBinding.objects.filter(pod_id=pod.pk).exists():
        return str(exceptions.PodInUse(name=pod.name))
    return None


def _refuse_duplicates(pod_uuid, name, exclude_pk=None):
    clashes = Pod.objects.filter(name=name)
    if pod_uuid is not None:
        clashes = clashes | Pod.objects.filter(uuid=pod_uuid)
    if exclude_pk is not None:
        clashes = clashes.exclude(pk=exclude_pk)
    clashing = list(clashes.values('uuid', 'name'))
    if any(row['uuid'] == pod_uuid for row in clashing):
        raise exceptions.DuplicatePod(duplicate=f'uuid: {pod_uuid}')
    if clashing:
        raise exceptions.DuplicatePod(duplicate=f'name: {name}')


def _refuse_aggregate_of_another(aggregate_id, aggregate_uuid, exclude_pk=None):
    other = Pod.objects.filter(aggregate_id=aggregate_id).exclude(pk=exclude_pk).first()
    if other is not None:
        raise exceptions.AggregateIsAnotherPod(aggregate=aggregate_uuid, pod=other.name)


# ---- bindings ---------------------------------------------------------------------

@dataclass
class BindingAnswer:
    """The tenant's open binding after a request, whether it is new, and
    the binding it replaced (None if none ended)."""
    binding: PodBinding
    created: bool
    replaced: PodBinding = None


def _open_binding(project_id, affinity):
    """The open binding of the tenant and affinity, locked, or None."""
    # Only the binding's row: locking the pod too would make every tenant of
    # a pod wait for each other.
    bindings = PodBinding.objects.open().of(project_id, affinity)
    features = connection.features
    if features.has_select_for_update_of or not features.has_select_for_update:
        return bindings.select_for_update(of=('self',)).select_related('pod__aggregate').first()
    # MySQL locks every row a locking read joins: lock the binding alone first.
    locked = bindings.select_for_update().values_list('pk', flat=True).first()
    if locked is None:
        return None
    return PodBinding.objects.select_related('pod__aggregate').get(pk=locked)


def _end(binding, reason):
    ended = PodBinding.objects.filter(pk=binding.pk, ended_at__isnull=True).update(
        ended_at=timezone.now(), end_reason=reason)
    if ended != 1:
        raise exceptions.ConcurrentUpdate()
    binding.refresh_from_db(fields=['ended_at', 'end_reason'])
    return binding


def _bind(project_id, affinity, pod):
    """A new open binding (IntegrityError if the tenant has one: retried)."""
    with transaction.atomic():
        binding = PodBinding.objects.create(
            uuid=str(uuid_lib.uuid4()), project_id=project_id, affinity=affinity, pod=pod)
    return PodBinding.objects.select_related('pod__aggregate').get(pk=binding.pk)


def binding_request(request):
    """Answer a selection.BindingRequest: the tenant's open binding if its
    pod still passes the filters, otherwise a new binding to the best pod
    (ending the old one with the reason its pod failed). NoPodAvailable,
    changing nothing, when no pod passes; ResourceClassNotFound for a
    resource of no class."""
    querysets.resource_class_ids(list(request.resources))

    def write():
        current = _open_binding(request.project_id, request.affinity)
        chosen = selection.choose(request)
        if current is not None and chosen.passes(current.pod):
            return BindingAnswer(current, created=False)
        if chosen.best is None:
            raise selection.no_pod_available(request.project_id, request.affinity, chosen)
        replaced = None
        if current is not None:
            _candidate, pod_filter, _why = chosen.refused[current.pod_id]
            replaced = _end(current, pod_filter.end_reason or PodBinding.ADMIN)
        return BindingAnswer(_bind(request.project_id, request.affinity, chosen.best),
                             created=True, replaced=replaced)
    return retried(write)


def binding_bind(*, project_id, affinity=GENERAL_PURPOSE, pod):
    """An admin binds the tenant to `pod`, whatever the filters say but for
    the affinity the pod must serve; the open binding, if to another pod,
    ends with the reason 'admin'."""
    if not pod.serves(affinity):
        raise exceptions.PodDoesNotServeAffinity(name=pod.name,
                                                 affinity=selection.describe_affinity(affinity))

    def write():
        current = _open_binding(project_id, affinity)
        if current is not None and current.pod_id == pod.pk:
            return BindingAnswer(current, created=False)
        replaced = _end(current, PodBinding.ADMIN) if current is not None else None
        return BindingAnswer(_bind(project_id, affinity, pod), created=True, replaced=replaced)
    return retried(write)


@retried_write
def binding_end(*, binding):
    """An admin unbinds: the binding ends with the reason 'admin'."""
    with transaction.atomic():
        locked = _locked(binding, exceptions.PodBindingNotFound)
        if locked.ended_at is not None:
            raise exceptions.PodBindingEnded(uuid=locked.uuid, ended_at=locked.ended_at.isoformat(),
                                             reason=locked.end_reason)
        return _end(locked, PodBinding.ADMIN)
