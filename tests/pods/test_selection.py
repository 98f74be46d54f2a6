"""The pod selection pipeline read directly: each filter keeps and refuses
the pods it should (and says why), each weigher orders them, multipliers
and normalisation combine the weighers, the settings name the pipeline,
and a pod's books are its pool's, nested trees and sharing providers
included."""
import io
import uuid as uuid_lib

import pytest
from django.core import checks
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.core.management.base import SystemCheckError

from providers.pods import pipeline
from providers.pods import selection
from providers.pods import services
from providers.pods.models import Pod
from providers.pods.models import PodBinding
from providers.pods.selection import AllPodsFilter
from providers.pods.selection import AvailabilityZoneFilter
from providers.pods.selection import BelowThresholdFilter
from providers.pods.selection import BindingRequest
from providers.pods.selection import CapacityFilter
from providers.pods.selection import CreationTimeWeigher
from providers.pods.selection import EnabledFilter
from providers.pods.selection import IdleCapacityWeigher
from providers.pods.selection import ResourceAffinityFilter
from tests.support.factories import add_allocation
from tests.support.factories import add_provider

GENERAL = BindingRequest('tenant1')
CAD = BindingRequest('tenant1', affinity='resource=CAD')


def run(request, filters=None, weighers=None):
    """The selection over every pod with the filters and weighers given
    (every pod, oldest first, by default)."""
    filters = (AllPodsFilter(),) if filters is None else filters
    weighers = ((CreationTimeWeigher(), 1.0),) if weighers is None else weighers
    pods = Pod.objects.with_aggregate().in_line()
    return pipeline.select(request, selection.pod_books(pods, request.resources),
                            filters=list(filters), weighers=list(weighers))


def names(chosen):
    return [r.candidate.pod.name for r in chosen.ranked]


def refusals(chosen):
    return {c.pod.name: (type(f).__name__, why) for c, f, why in chosen.refused.values()}


# ---- filters --------------------------------------------------------------------

def test_all_pods_filter_keeps_every_pod(cloud):
    cloud.pod('Pod1')
    cloud.pod('Pod2', state=Pod.MAINTENANCE, affinity_tags={'resource': 'CAD'})
    chosen = run(GENERAL)
    assert names(chosen) == ['Pod1', 'Pod2']
    assert chosen.refused == {}


def test_availability_zone_filter_keeps_the_zone_asked_for_or_any(cloud):
    cloud.pod('Pod1', availability_zone='az1')
    cloud.pod('Pod2', availability_zone='az2')
    filters = [AvailabilityZoneFilter()]
    chosen = run(BindingRequest('tenant1', availability_zone='az2'), filters)
    assert names(chosen) == ['Pod2']
    assert refusals(chosen) == {
        'Pod1': ('AvailabilityZoneFilter', 'is in availability zone az1, not az2')}
    assert names(run(GENERAL, filters)) == ['Pod1', 'Pod2']
    assert AvailabilityZoneFilter.end_reason == PodBinding.AVAILABILITY_ZONE


def test_resource_affinity_filter_matches_tags_and_general_purpose(cloud):
    cloud.pod('Pod1')
    cloud.pod('Pod4', affinity_tags={'resource': 'CAD'})
    cloud.pod('Pod7', affinity_tags={'resource': 'GPU', 'zone-class': 'fast'})
    filters = [ResourceAffinityFilter()]
    chosen = run(CAD, filters)
    assert names(chosen) == ['Pod4']
    assert refusals(chosen) == {
        'Pod1': ('ResourceAffinityFilter', 'is not tagged resource=CAD'),
        'Pod7': ('ResourceAffinityFilter', 'is not tagged resource=CAD')}
    general = run(GENERAL, filters)
    assert names(general) == ['Pod1']
    assert refusals(general)['Pod7'] == (
        'ResourceAffinityFilter', 'is not general purpose (resource=GPU, zone-class=fast)')
    # A pod with several tags serves each of them.
    assert names(run(BindingRequest('t', affinity='zone-class=fast'), filters)) == ['Pod7']


def test_enabled_filter_refuses_pods_in_maintenance(cloud):
    cloud.pod('Pod1', state=Pod.MAINTENANCE)
    cloud.pod('Pod2')
    chosen = run(GENERAL, [EnabledFilter()])
    assert names(chosen) == ['Pod2']
    assert refusals(chosen) == {'Pod1': ('EnabledFilter', 'is in maintenance')}
    assert EnabledFilter.end_reason == PodBinding.MAINTENANCE


def test_below_threshold_filter_refuses_a_pod_at_or_over_a_threshold(cloud):
    cloud.pod('Pod1', {'VCPU': {'total': 10}, 'DISK_GB': {'total': 100}},
              thresholds={'VCPU': 80, 'DISK_GB': 90})
    cloud.pod('Pod2', {'VCPU': {'total': 10}}, thresholds={'VCPU': 80})
    cloud.pod('Pod3', {'VCPU': {'total': 10}}, thresholds={'VCPU': 80, 'MEMORY_MB': 50})
    cloud.fill('Pod1', VCPU=8, DISK_GB=95)    # exactly at 80%, and over 90%
    cloud.fill('Pod2', VCPU=7)                # 70%: below
    cloud.fill('Pod3', VCPU=1)                # no MEMORY_MB at all: that threshold is moot
    chosen = run(GENERAL, [BelowThresholdFilter()])
    assert names(chosen) == ['Pod2', 'Pod3']
    assert refusals(chosen) == {'Pod1': (
        'BelowThresholdFilter', 'has reached its DISK_GB threshold (95.0% used, threshold 90%), '
        'VCPU threshold (80.0% used, threshold 80%)')}
    assert BelowThresholdFilter.end_reason == PodBinding.THRESHOLD


def test_thresholds_weigh_capacity_with_allocation_ratio_and_reserved(cloud):
    # capacity (10 - 2) * 2.0 = 16: 12 used is 75%, under an 80% threshold.
    cloud.pod('Pod1', {'VCPU': {'total': 10, 'reserved': 2, 'allocation_ratio': 2.0}},
              thresholds={'VCPU': 80})
    cloud.fill('Pod1', VCPU=12)
    assert names(run(GENERAL, [BelowThresholdFilter()])) == ['Pod1']
    cloud.fill('Pod1', VCPU=1)   # 13 / 16 = 81.25%
    assert refusals(run(GENERAL, [BelowThresholdFilter()]))['Pod1'][1] == (
        'has reached its VCPU threshold (81.2% used, threshold 80%)')


def test_capacity_filter_refuses_what_does_not_fit(cloud):
    cloud.pod('Pod1', {'VCPU': {'total': 8, 'max_unit': 4}, 'MEMORY_MB': {'total': 4096}})
    cloud.pod('Pod2', {'VCPU': {'total': 8, 'step_size': 2}, 'MEMORY_MB': {'total': 4096}})
    cloud.pod('Pod3', {'VCPU': {'total': 8}, 'MEMORY_MB': {'total': 4096}})
    cloud.fill('Pod3', VCPU=4)
    filters = [CapacityFilter()]
    chosen = run(BindingRequest('t', resources={'VCPU': 6, 'MEMORY_MB': 1024}), filters)
    assert names(chosen) == ['Pod2']
    assert refusals(chosen) == {
        'Pod1': ('CapacityFilter', 'cannot fit 6 VCPU'),      # over max_unit
        'Pod3': ('CapacityFilter', 'cannot fit 6 VCPU')}      # only 4 free
    odd = run(BindingRequest('t', resources={'VCPU': 3}), filters)
    assert refusals(odd) == {'Pod2': ('CapacityFilter', 'cannot fit 3 VCPU')}   # step 2
    # A class no pod has, or no provider at all: nothing fits.
    assert refusals(run(BindingRequest('t', resources={'CUSTOM_NOPE': 1, 'PCI_DEVICE': 1}),
                        filters))['Pod1'] == ('CapacityFilter', 'cannot fit 1 CUSTOM_NOPE, 1 '
                                                                'PCI_DEVICE')
    # Without resources every pod passes.
    assert names(run(GENERAL, filters)) == ['Pod1', 'Pod2', 'Pod3']
    assert CapacityFilter.end_reason == PodBinding.CAPACITY


def test_a_pods_books_take_in_nested_trees_and_sharing_members(cloud, django_assert_num_queries):
    """Members, every provider of a member root's tree, a child that is a
    member without its root, and a sharing provider in the aggregate."""
    aggregate = str(uuid_lib.uuid4())
    root = add_provider('cn1', inventories={'DISK_GB': {'total': 100}}, aggregates=[aggregate])
    numa = add_provider('cn1-numa0', parent=root, inventories={'VCPU': {'total': 8}})
    other_root = add_provider('cn2')
    member_child = add_provider('cn2-numa0', parent=other_root,
                                inventories={'VCPU': {'total': 4}}, aggregates=[aggregate])
    add_provider('cn2-numa1', parent=other_root, inventories={'VCPU': {'total': 100}})
    nfs = add_provider('nfs', inventories={'DISK_GB': {'total': 1000}},
                       traits=['MISC_SHARES_VIA_AGGREGATE'], aggregates=[aggregate])
    # A root and its child both members: the child counts once.
    both = add_provider('cn3', inventories={'VCPU': {'total': 2}}, aggregates=[aggregate])
    add_provider('cn3-numa0', parent=both, inventories={'VCPU': {'total': 2}},
                 aggregates=[aggregate])
    add_allocation(numa, VCPU=3)
    add_allocation(member_child, VCPU=1)
    add_allocation(nfs, DISK_GB=200)
    pod = services.pod_create(name='Pod1', aggregate_uuid=aggregate)
    with django_assert_num_queries(1):
        (books,) = selection.pod_books([pod])
    assert {name: (u.capacity, u.used, u.providers) for name, u in books.classes.items()} == {
        'VCPU': (8 + 4 + 2 + 2, 4, 4), 'DISK_GB': (1100, 200, 2)}
    assert list(books.classes) == ['VCPU', 'DISK_GB']   # resource class order


# ---- weighers -------------------------------------------------------------------

def test_creation_time_weigher_puts_the_oldest_first(cloud):
    for name in ('Pod1', 'Pod2', 'Pod3'):
        cloud.pod(name)
    # Pod3 made older than the others: the order follows creation time, not ids.
    Pod.objects.filter(name='Pod3').update(
        created_at=Pod.objects.get(name='Pod1').created_at.replace(year=2020))
    chosen = run(GENERAL)
    assert names(chosen) == ['Pod3', 'Pod1', 'Pod2']
    # Normalised over the span of creation times: Pod1 and Pod2 are years from Pod3.
    assert [r.weight for r in chosen.ranked] == [1.0, pytest.approx(0.0, abs=1e-6), 0.0]


def test_idle_capacity_weigher_puts_the_most_free_first(cloud):
    cloud.pod('Pod1', {'VCPU': {'total': 16}, 'DISK_GB': {'total': 1000}})
    cloud.pod('Pod2', {'VCPU': {'total': 64}, 'DISK_GB': {'total': 100}})
    cloud.pod('Pod3', {'VCPU': {'total': 32}, 'DISK_GB': {'total': 500}})
    cloud.fill('Pod3', VCPU=30)
    idle = [(IdleCapacityWeigher(), 1.0)]
    # Over both classes: Pod1 (VCPU 0, DISK 1) and Pod2 (1, 0) tie at 0.5, Pod3
    # (0, 0.44) trails; a tie goes to the older pod.
    chosen = run(GENERAL, weighers=idle)
    assert names(chosen) == ['Pod1', 'Pod2', 'Pod3']
    # Only the classes asked for count.
    assert names(run(BindingRequest('t', resources={'VCPU': 1}), weighers=idle)) == [
        'Pod2', 'Pod1', 'Pod3']
    assert names(run(BindingRequest('t', resources={'DISK_GB': 1}), weighers=idle)) == [
        'Pod1', 'Pod3', 'Pod2']


def test_multipliers_decide_which_weigher_dominates(cloud):
    cloud.pod('Pod1', {'VCPU': {'total': 16}})
    cloud.pod('Pod2', {'VCPU': {'total': 64}})
    by_age = [(CreationTimeWeigher(), 1.0), (IdleCapacityWeigher(), 0.5)]
    by_room = [(CreationTimeWeigher(), 1.0), (IdleCapacityWeigher(), 2.0)]
    assert names(run(GENERAL, weighers=by_age)) == ['Pod1', 'Pod2']
    chosen = run(GENERAL, weighers=by_room)
    assert names(chosen) == ['Pod2', 'Pod1']
    assert [r.weight for r in chosen.ranked] == [2.0, 1.0]
    # A negative multiplier inverts a weigher: the newest pod first.
    assert names(run(GENERAL, weighers=[(CreationTimeWeigher(), -1.0)])) == ['Pod2', 'Pod1']


def test_normalise():
    assert pipeline.normalise([5, 10, 7.5]) == [0.0, 1.0, 0.5]
    assert pipeline.normalise([3, 3]) == [0.0, 0.0]
    assert pipeline.normalise([]) == []


# ---- the configured pipeline ----------------------------------------------------

def test_settings_name_the_filters_and_weighers(cloud, settings):
    cloud.pod('Pod1', {'VCPU': {'total': 16}})
    cloud.pod('Pod2', {'VCPU': {'total': 64}}, state=Pod.MAINTENANCE)
    cloud.pod('Pod3', {'VCPU': {'total': 64}})
    settings.PLACEMENT_POD_FILTERS = [
        'AllPodsFilter', 'providers.pods.selection.EnabledFilter']
    settings.PLACEMENT_POD_WEIGHERS = ['CreationTimeWeigher:1', 'IdleCapacityWeigher:3']
    assert [type(f).__name__ for f in pipeline.configured_filters()] == [
        'AllPodsFilter', 'EnabledFilter']
    assert [(type(w).__name__, m) for w, m in pipeline.configured_weighers()] == [
        ('CreationTimeWeigher', 1.0), ('IdleCapacityWeigher', 3.0)]
    chosen = selection.choose(GENERAL)
    assert names(chosen) == ['Pod3', 'Pod1']
    assert refusals(chosen) == {'Pod2': ('EnabledFilter', 'is in maintenance')}
    settings.PLACEMENT_POD_WEIGHERS = ['CreationTimeWeigher']   # multiplier 1 by default
    assert names(selection.choose(GENERAL)) == ['Pod1', 'Pod3']


@pytest.mark.parametrize('filters, weighers, message', [
    (['NoSuchFilter'], [], "Unknown pod filter 'NoSuchFilter'"),
    (['CreationTimeWeigher'], [], "Pod filter 'CreationTimeWeigher' is not a PodFilter"),
    ([], ['EnabledFilter:1'], "Pod weigher 'EnabledFilter' is not a PodWeigher"),
    ([], ['CreationTimeWeigher:lots'], "Pod weigher 'CreationTimeWeigher:lots': the "
                                       'multiplier must be a finite number'),
    ([], ['CreationTimeWeigher:inf'], 'the multiplier must be a finite number'),
])
def test_a_misconfigured_pipeline_is_named(settings, filters, weighers, message):
    settings.PLACEMENT_POD_FILTERS = filters
    settings.PLACEMENT_POD_WEIGHERS = weighers
    with pytest.raises(ImproperlyConfigured, match=message.replace('(', r'\(')):
        pipeline.configured_filters()
        pipeline.configured_weighers()


def test_manage_py_check_names_a_misconfigured_pipeline(settings):
    settings.PLACEMENT_POD_WEIGHERS = ['CreationTimeWeigher:1', 'OldestFirst:2']
    errors = [e for e in checks.run_checks() if e.id == 'pods.E001']
    assert [e.msg.split(':')[0] for e in errors] == ["Unknown pod weigher 'OldestFirst'"]
    with pytest.raises(SystemCheckError, match='pods.E001'):
        call_command('check', stdout=io.StringIO(), stderr=io.StringIO())
    settings.PLACEMENT_POD_WEIGHERS = ['CreationTimeWeigher:1']
    assert [e for e in checks.run_checks() if e.id == 'pods.E001'] == []


def test_default_pipeline_is_every_filter_and_first_pod_in_line(settings):
    assert [type(f).__name__ for f in pipeline.configured_filters()] == [
        'AllPodsFilter', 'AvailabilityZoneFilter', 'ResourceAffinityFilter', 'EnabledFilter',
        'BelowThresholdFilter', 'CapacityFilter']
    assert [(type(w).__name__, m) for w, m in pipeline.configured_weighers()] == [
        ('CreationTimeWeigher', 1.0), ('IdleCapacityWeigher', 0.0)]


def test_choosing_costs_the_same_queries_for_any_number_of_pods(cloud,
                                                                django_assert_num_queries):
    request = BindingRequest('t', resources={'VCPU': 1})
    cloud.pod('Pod1')
    # The pods, their books (two), the classes asked for, where they fit.
    with django_assert_num_queries(4) as few:
        selection.choose(request)
    for n in range(2, 12):
        cloud.pod(f'Pod{n}', {'VCPU': {'total': 8}}, {'VCPU': {'total': 8}})
    with django_assert_num_queries(len(few.captured_queries)):
        assert len(selection.choose(request).ranked) == 11
