"""A tree's used over time, replayed from the event log
(allocations.history): exact at every event the log covers, consumers
moving in and out included, and known only from where a consumer's
earlier state is missing from the log."""
import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from allocations import history
from allocations import services as allocation_services
from allocations.models import Allocation
from allocations.models import Consumer
from allocations.models import Project
from allocations.models import User
from providers import books
from providers.models import Event
from providers.models import ResourceClass
from tests.support.factories import add_provider

pytestmark = pytest.mark.django_db
NOW = timezone.now()


def days_ago(days):
    return NOW - timedelta(days=days)


def write(consumer, allocations, *, generation=None, at):
    """Allocations through the services, their event dated `at`."""
    newest = Event.objects.order_by('-id').values_list('id', flat=True).first() or 0
    if allocations:
        allocation_services.allocations_replace([allocation_services.ConsumerAllocations(
            consumer_uuid=consumer, allocations={rp.uuid: amounts for rp, amounts in
                                                 allocations.items()},
            project_id='p', user_id='u', generation=generation)])
    else:
        allocation_services.allocations_delete(consumer_uuid=consumer)
    Event.objects.filter(id__gt=newest).update(created_at=at)


@pytest.fixture
def trees(db):
    root = add_provider('cn1', inventories={'DISK_GB': {'total': 100}})
    numa = add_provider('cn1-numa0', parent=root, inventories={'VCPU': {'total': 8}})
    other = add_provider('cn2', inventories={'VCPU': {'total': 8}, 'DISK_GB': {'total': 100}})
    return root, numa, other


def used_lines(root, days=7):
    found = history.tree_history(root, books.tree_books(root.pk), since=days_ago(days))
    return ({trend.name: [(p.taken_at, p.used) for p in trend.points] for trend in found.trends},
            found.starts)


def test_claims_moves_and_deletes_replayed_back_from_now(trees):
    root, numa, other = trees
    a, b, c = (str(uuid.uuid4()) for _ in range(3))
    write(a, {numa: {'VCPU': 2}, root: {'DISK_GB': 10}}, at=days_ago(5))
    write(c, {other: {'VCPU': 4}}, at=days_ago(4.5))          # elsewhere first
    write(b, {numa: {'VCPU': 3}}, at=days_ago(3))
    write(c, {numa: {'VCPU': 1}}, generation=1, at=days_ago(2))   # moves in
    write(a, {}, at=days_ago(1))
    write(b, {other: {'VCPU': 3}}, generation=1, at=days_ago(0.5))  # moves out
    lines, starts = used_lines(root)
    assert starts is None
    times = [days_ago(d) for d in (7, 5, 3, 2, 1, 0.5)]
    assert [used for _, used in lines['VCPU']] == [0, 2, 5, 6, 4, 1, 1]
    assert [used for _, used in lines['DISK_GB']] == [0, 10, 10, 10, 0, 0, 0]
    assert [at for at, _ in lines['VCPU'][:-1]] == times
    # The other tree saw c leave and b arrive.
    other_lines, _ = used_lines(other)
    assert [used for _, used in other_lines['VCPU']] == [0, 4, 0, 3, 3]


def test_only_the_range_asked_for(trees):
    root, numa, _ = trees
    write(str(uuid.uuid4()), {numa: {'VCPU': 2}}, at=days_ago(20))
    write(str(uuid.uuid4()), {numa: {'VCPU': 3}}, at=days_ago(2))
    lines, starts = used_lines(root, days=7)
    assert starts is None
    assert [used for _, used in lines['VCPU']] == [2, 5, 5]


def test_a_consumer_the_log_never_saw_ends_the_history_at_its_event(trees):
    root, numa, _ = trees
    write(str(uuid.uuid4()), {numa: {'VCPU': 2}}, at=days_ago(5))
    unseen = Consumer.objects.create(uuid=str(uuid.uuid4()),
                                     project=Project.objects.get_or_create(external_id='p')[0],
                                     user=User.objects.get_or_create(external_id='u')[0])
    Allocation.objects.create(resource_provider=numa, consumer=unseen, used=3,
                              resource_class=ResourceClass.objects.get(name='VCPU'))
    write(unseen.uuid, {}, at=days_ago(2))
    lines, starts = used_lines(root)
    assert starts == days_ago(2)
    assert [used for _, used in lines['VCPU']] == [2, 2]


def test_a_burst_of_claims_is_forecast_as_snapshots_would_see_it(trees):
    """Fitted through the events' own times, a tree filled in one minute
    would be 'full within a day'; read hourly, as a snapshot series, one
    claim after two quiet weeks is a slow slope."""
    root, numa, _ = trees
    write(str(uuid.uuid4()), {numa: {'VCPU': 2}}, at=NOW - timedelta(minutes=1))
    write(str(uuid.uuid4()), {numa: {'VCPU': 2}}, at=NOW - timedelta(seconds=30))
    found = history.tree_history(root, books.tree_books(root.pk), since=days_ago(30))
    (vcpu,) = [t for t in found.trends if t.name == 'VCPU']
    assert vcpu.forecast.status == 'filling' and vcpu.forecast.days_to_full > 100
