"""Binding tenants to pods through providers.pods.services: a request
keeps the open binding while its pod passes the filters and otherwise
rebinds, ending the old binding with the reason its pod failed (threshold,
maintenance, capacity, zone); admins bind and unbind; the history keeps
every binding; refusals change nothing; the database itself allows one open
binding per tenant and affinity."""
import pytest
from django.db import IntegrityError
from django.db import transaction

from placement_site import exceptions
from providers.pods import services
from providers.pods.models import GENERAL_PURPOSE
from providers.pods.models import Pod
from providers.pods.models import PodBinding
from providers.pods.selection import BindingRequest

GENERAL = BindingRequest('tenant1')
CAD = BindingRequest('tenant1', affinity='resource=CAD')


@pytest.fixture
def groups(cloud):
    """GroupA (Pod1-3, general purpose) and GroupB (Pod4-6, resource=CAD),
    each pod one compute node of 16 VCPU with an 80% VCPU threshold."""
    for name in ('Pod1', 'Pod2', 'Pod3'):
        cloud.pod(name, thresholds={'VCPU': 80})
    for name in ('Pod4', 'Pod5', 'Pod6'):
        cloud.pod(name, thresholds={'VCPU': 80}, affinity_tags={'resource': 'CAD'})
    return cloud


def history(project='tenant1'):
    """(pod, affinity, end reason) of the tenant's bindings, oldest first."""
    return [(b.pod.name, b.affinity, b.end_reason)
            for b in PodBinding.objects.filter(project_id=project).select_related('pod')]


def test_the_first_request_binds_the_first_pod_in_line_and_the_next_keeps_it(groups):
    first = services.binding_request(GENERAL)
    assert (first.binding.pod.name, first.created, first.replaced) == ('Pod1', True, None)
    assert first.binding.is_open and first.binding.affinity == GENERAL_PURPOSE
    again = services.binding_request(GENERAL)
    assert (again.binding.pk, again.created, again.replaced) == (first.binding.pk, False, None)
    cad = services.binding_request(CAD)
    assert (cad.binding.pod.name, cad.created) == ('Pod4', True)
    assert history() == [('Pod1', '', None), ('Pod4', 'resource=CAD', None)]


def test_a_pod_reaching_its_threshold_moves_the_tenant_on(groups):
    services.binding_request(GENERAL)
    services.binding_request(CAD)
    groups.fill('Pod1', VCPU=12)      # 75%: below
    assert services.binding_request(GENERAL).created is False
    groups.fill('Pod1', VCPU=1)       # 81%: reached
    moved = services.binding_request(GENERAL)
    assert (moved.binding.pod.name, moved.created) == ('Pod2', True)
    assert (moved.replaced.pod.name, moved.replaced.end_reason) == ('Pod1', 'threshold')
    assert moved.replaced.ended_at >= moved.replaced.started_at
    # The CAD binding is another affinity: it stays.
    assert services.binding_request(CAD).binding.pod.name == 'Pod4'
    assert history() == [('Pod1', '', 'threshold'), ('Pod4', 'resource=CAD', None),
                         ('Pod2', '', None)]
    # A new tenant is not sent to the full pod either.
    assert services.binding_request(BindingRequest('tenant2')).binding.pod.name == 'Pod2'


def test_maintenance_moves_the_tenant_at_its_next_request(groups):
    bound = services.binding_request(CAD).binding
    pod4 = Pod.objects.get(name='Pod4')
    services.pod_update(pod=pod4, state=Pod.MAINTENANCE)
    # Nothing moves until the tenant asks again.
    bound.refresh_from_db()
    assert bound.is_open
    moved = services.binding_request(CAD)
    assert (moved.binding.pod.name, moved.replaced.end_reason) == ('Pod5', 'maintenance')
    services.pod_update(pod=pod4, state=Pod.ENABLED)
    # Pod4 is back, but the tenant stays where it is now.
    assert services.binding_request(CAD).binding.pod.name == 'Pod5'


def test_capacity_and_zone_end_bindings_with_their_reasons(cloud):
    cloud.pod('Pod1', {'VCPU': {'total': 4}}, availability_zone='az1')
    cloud.pod('Pod2', {'VCPU': {'total': 64}}, availability_zone='az1')
    cloud.pod('Pod3', {'VCPU': {'total': 64}}, availability_zone='az2')
    services.binding_request(GENERAL)
    big = services.binding_request(BindingRequest('tenant1', resources={'VCPU': 8}))
    assert (big.binding.pod.name, big.replaced.end_reason) == ('Pod2', 'capacity')
    elsewhere = services.binding_request(BindingRequest('tenant1', availability_zone='az2'))
    assert (elsewhere.binding.pod.name, elsewhere.replaced.end_reason) == (
        'Pod3', 'availability_zone')
    assert history() == [('Pod1', '', 'capacity'), ('Pod2', '', 'availability_zone'),
                         ('Pod3', '', None)]


def test_changed_tags_end_a_binding_for_affinity(groups):
    services.binding_request(CAD)
    services.pod_update(pod=Pod.objects.get(name='Pod4'), affinity_tags={'resource': 'GPU'})
    moved = services.binding_request(CAD)
    assert (moved.binding.pod.name, moved.replaced.end_reason) == ('Pod5', 'affinity')


def test_no_pod_to_go_to_changes_nothing(groups, refused):
    services.binding_request(GENERAL)
    for name in ('Pod1', 'Pod2'):
        groups.fill(name, VCPU=13)
    services.pod_update(pod=Pod.objects.get(name='Pod3'), state=Pod.MAINTENANCE)
    with refused(exceptions.NoPodAvailable,
                 'No pod can take the general-purpose work of project tenant1: Pod1 has '
                 'reached its VCPU threshold (81.2% used, threshold 80%); Pod2 has reached '
                 'its VCPU threshold (81.2% used, threshold 80%); Pod3 is in maintenance; '
                 'Pod4 is not general purpose (resource=CAD); Pod5 is not general purpose '
                 '(resource=CAD); Pod6 is not general purpose (resource=CAD).'):
        services.binding_request(GENERAL)
    assert history() == [('Pod1', '', None)]   # still bound where it was


def test_no_pods_at_all(db, refused):
    with refused(exceptions.NoPodAvailable, 'No pod can take the resource=CAD work of '
                                            'project tenant1: there are no pods.'):
        services.binding_request(CAD)


def test_an_admin_binds_to_any_pod_serving_the_affinity(groups, refused):
    services.binding_request(GENERAL)
    groups.fill('Pod3', VCPU=16)    # full: selection would never choose it
    pod3 = Pod.objects.get(name='Pod3')
    moved = services.binding_bind(project_id='tenant1', pod=pod3)
    assert (moved.binding.pod.name, moved.created, moved.replaced.end_reason) == (
        'Pod3', True, 'admin')
    same = services.binding_bind(project_id='tenant1', pod=pod3)
    assert (same.binding.pk, same.created, same.replaced) == (moved.binding.pk, False, None)
    with refused(exceptions.PodDoesNotServeAffinity,
                 'Pod Pod3 does not serve resource=CAD work.'):
        services.binding_bind(project_id='tenant1', affinity='resource=CAD', pod=pod3)
    # The override holds only as long as the pod passes: the next request
    # moves the tenant off the full pod.
    assert services.binding_request(GENERAL).replaced.end_reason == 'threshold'
    assert history() == [('Pod1', '', 'admin'), ('Pod3', '', 'threshold'), ('Pod1', '', None)]


def test_an_admin_unbinds_and_the_next_request_binds_anew(groups, refused):
    bound = services.binding_request(GENERAL).binding
    ended = services.binding_end(binding=bound)
    assert (ended.end_reason, ended.is_open) == ('admin', False)
    with refused(exceptions.PodBindingEnded, f'Pod binding {bound.uuid} already ended at '
                                             f'{ended.ended_at.isoformat()} (admin).'):
        services.binding_end(binding=bound)
    again = services.binding_request(GENERAL)
    assert (again.binding.pod.name, again.created, again.replaced) == ('Pod1', True, None)
    assert history() == [('Pod1', '', 'admin'), ('Pod1', '', None)]


def test_history_is_never_overwritten(groups):
    services.binding_request(GENERAL)
    groups.fill('Pod1', VCPU=13)
    services.binding_request(GENERAL)
    first = PodBinding.objects.order_by('pk').values()[0]
    groups.fill('Pod2', VCPU=13)
    services.binding_request(GENERAL)
    services.binding_end(binding=PodBinding.objects.open().get())
    rows = list(PodBinding.objects.order_by('pk').values())
    assert rows[0] == first
    assert [(r['pod_id'], r['end_reason']) for r in rows] == [
        (Pod.objects.get(name=n).pk, reason) for n, reason in (
            ('Pod1', 'threshold'), ('Pod2', 'threshold'), ('Pod3', 'admin'))]
    for older, newer in zip(rows, rows[1:]):
        assert older['ended_at'] <= newer['started_at']


def test_the_database_refuses_a_second_open_binding(groups):
    bound = services.binding_request(GENERAL).binding
    with pytest.raises(IntegrityError), transaction.atomic():
        PodBinding.objects.create(uuid='x', project_id='tenant1', pod=bound.pod)
    # Ended bindings of the same tenant are any number; so are other affinities.
    PodBinding.objects.create(uuid='y', project_id='tenant1', pod=bound.pod,
                              ended_at=bound.started_at, end_reason='admin')
    PodBinding.objects.create(uuid='z', project_id='tenant1', affinity='resource=CAD',
                              pod=bound.pod)
    with pytest.raises(IntegrityError), transaction.atomic():  # an end needs its reason
        PodBinding.objects.create(uuid='w', project_id='t2', pod=bound.pod,
                                  ended_at=bound.started_at)


# ---- pods ---------------------------------------------------------------------------

def test_a_pod_with_history_is_never_deleted(groups, refused):
    pod1 = Pod.objects.get(name='Pod1')
    services.binding_end(binding=services.binding_request(GENERAL).binding)
    assert services.check_pod_delete(pod1) == (
        'Pod Pod1 has bindings, whose history is kept: put it into maintenance instead.')
    with refused(exceptions.PodInUse, services.check_pod_delete(pod1)):
        services.pod_delete(pod=pod1)
    pod6 = Pod.objects.get(name='Pod6')
    assert services.check_pod_delete(pod6) is None
    services.pod_delete(pod=pod6)
    assert not Pod.objects.filter(name='Pod6').exists()


def test_pod_refusals_change_nothing(groups, refused):
    pod1 = Pod.objects.get(name='Pod1')
    with refused(exceptions.DuplicatePod, 'Conflicting pod name: Pod1 already exists.'):
        services.pod_create(name='Pod1')
    with refused(exceptions.DuplicatePod, f'Conflicting pod uuid: {pod1.uuid} already exists.'):
        services.pod_create(name='Pod9', uuid=pod1.uuid)
    with refused(exceptions.AggregateIsAnotherPod,
                 f'Aggregate {pod1.aggregate.uuid} is already the pod Pod1.'):
        services.pod_create(name='Pod9', aggregate_uuid=pod1.aggregate.uuid)
    with refused(exceptions.ResourceClassNotFound, 'No such resource class CUSTOM_NOPE.'):
        services.pod_create(name='Pod9', thresholds={'CUSTOM_NOPE': 50})
    pod2 = Pod.objects.get(name='Pod2')
    with refused(exceptions.DuplicatePod, 'Conflicting pod name: Pod1 already exists.'):
        services.pod_update(pod=pod2, name='Pod1')
    with refused(exceptions.AggregateIsAnotherPod,
                 f'Aggregate {pod1.aggregate.uuid} is already the pod Pod1.'):
        services.pod_update(pod=pod2, aggregate_uuid=pod1.aggregate.uuid)


def test_a_pod_of_a_new_aggregate_and_its_changes(db):
    pod = services.pod_create(name='Pod1')
    assert (pod.availability_zone, pod.state, pod.affinity_tags, pod.thresholds) == (
        'nova', 'enabled', {}, {})
    assert pod.aggregate.providers.count() == 0
    changed = services.pod_update(pod=pod, name='Pod-1', availability_zone='az1',
                                  thresholds={'VCPU': 75.5}, aggregate_uuid=pod.aggregate.uuid)
    assert (changed.name, changed.availability_zone, changed.thresholds) == (
        'Pod-1', 'az1', {'VCPU': 75.5})
    assert changed.updated_at is not None
