"""Inventory.used, the sum of a (provider, class)'s allocations, is kept by
the database whatever writes the rows: the services, the ORM directly, in
any order, and a stale Inventory saved over it."""
import io
import uuid

import pytest
from django.core.management import call_command
from django.db import connection

from allocations import services as allocation_services
from allocations import status
from allocations import usage_totals
from allocations.models import Allocation
from allocations.models import Consumer
from allocations.models import Project
from allocations.models import User
from providers import services
from providers.models import Inventory
from providers.models import ResourceClass
from tests.support.factories import add_allocation
from tests.support.factories import add_provider


def used(provider, class_name='VCPU'):
    return Inventory.objects.get(resource_provider=provider,
                                 resource_class__name=class_name).used


def consumer():
    return Consumer.objects.create(uuid=str(uuid.uuid4()),
                                   project=Project.objects.get_or_create(external_id='p')[0],
                                   user=User.objects.get_or_create(external_id='u')[0])


def allocate(provider, class_name, amount, holder=None):
    return Allocation.objects.create(
        resource_provider=provider, consumer=holder or consumer(), used=amount,
        resource_class=ResourceClass.objects.get(name=class_name))


@pytest.fixture
def node(db):
    return add_provider('node', inventories={'VCPU': {'total': 16}, 'DISK_GB': {'total': 500}})


def test_claims_replacements_and_deletes_through_the_services(node):
    add_allocation(node, VCPU=2, DISK_GB=10)
    add_allocation(node, VCPU=3)
    assert (used(node), used(node, 'DISK_GB')) == (5, 10)
    owner = str(uuid.uuid4())
    allocation_services.allocations_replace([allocation_services.ConsumerAllocations(
        consumer_uuid=owner, allocations={node.uuid: {'VCPU': 4}}, project_id='p',
        user_id='u', generation=None)])
    assert used(node) == 9
    allocation_services.allocations_replace([allocation_services.ConsumerAllocations(
        consumer_uuid=owner, allocations={node.uuid: {'VCPU': 1, 'DISK_GB': 7}},
        project_id='p', user_id='u', generation=1)])
    assert (used(node), used(node, 'DISK_GB')) == (6, 17)
    allocation_services.allocations_delete(consumer_uuid=owner)
    assert (used(node), used(node, 'DISK_GB')) == (5, 10)
    assert usage_totals.miscounted(connection) == []


def test_rows_written_directly_are_counted(node):
    row = allocate(node, 'VCPU', 4)
    allocate(node, 'VCPU', 2)
    assert used(node) == 6
    row.used = 1
    row.save()
    assert used(node) == 3
    Allocation.objects.filter(pk=row.pk).delete()
    assert used(node) == 2
    Consumer.objects.all().delete()  # the cascade deletes the rest
    assert used(node) == 0


def test_an_allocation_moved_to_another_provider_leaves_the_first(node):
    other = add_provider('other', inventories={'VCPU': {'total': 8}})
    row = allocate(node, 'VCPU', 4)
    row.resource_provider = other
    row.save()
    assert (used(node), used(other)) == (0, 4)


def test_an_inventory_written_after_its_allocations_counts_them(node):
    # A reshape may move allocations first and the inventory after.
    pool = add_provider('pool')
    allocate(pool, 'DISK_GB', 30)
    allocate(pool, 'DISK_GB', 12)
    services.inventories_replace(provider=pool, inventories={'DISK_GB': {'total': 100}})
    assert used(pool, 'DISK_GB') == 42


def test_a_stale_inventory_saved_over_the_count_is_recounted(node):
    stale = Inventory.objects.get(resource_provider=node, resource_class__name='VCPU')
    allocate(node, 'VCPU', 5)
    stale.total = 32
    stale.save()  # writes used=0, read before the allocation
    assert used(node) == 5
    Inventory.objects.filter(pk=stale.pk).update(used=1000)
    assert used(node) == 5


# MySQL commits before and after DDL: a transactional test, so the flush
# after it (not a rollback) leaves the next tests a clean database.
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_install_recounts_what_was_written_without_the_triggers(node):
    allocate(node, 'VCPU', 3)
    with connection.cursor() as cursor:
        cursor.execute('DROP TRIGGER IF EXISTS inventories_used ON inventories'
                       if connection.vendor == 'postgresql' else
                       'DROP TRIGGER IF EXISTS inventories_used_update')
        cursor.execute('UPDATE inventories SET used = 77')
    assert usage_totals.miscounted(connection)
    usage_totals.install(connection)
    assert usage_totals.miscounted(connection) == []
    assert used(node) == 3
    allocate(node, 'VCPU', 1)
    assert used(node) == 4


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_placement_status_finds_a_wrong_count_and_recount_used_fixes_it(node):
    allocate(node, 'VCPU', 3)
    assert status.check_used_counts().code == status.Code.SUCCESS
    with connection.cursor() as cursor:
        cursor.execute('DROP TRIGGER IF EXISTS inventories_used ON inventories'
                       if connection.vendor == 'postgresql' else
                       'DROP TRIGGER IF EXISTS inventories_used_update')
        cursor.execute('UPDATE inventories SET used = 77')
    found = status.check_used_counts()
    assert found.code == status.Code.FAILURE
    assert 'used 77, its allocations 3' in found.details
    assert 'Run `manage.py recount_used`' in found.details
    out = io.StringIO()
    call_command('recount_used', stdout=out)
    assert out.getvalue().strip() == 'Triggers installed; 2 inventories recounted.'
    assert status.check_used_counts().code == status.Code.SUCCESS
    assert used(node) == 3
    allocate(node, 'VCPU', 1)   # the triggers are back
    assert used(node) == 4
