"""allocations.services called directly: replacing and deleting a consumer's
allocations, and reshaping inventory with its allocations. Every refusal
raises exactly one domain error and leaves every row as it was."""
from types import SimpleNamespace

import pytest
from django.conf import settings

from allocations import services as allocation_services
from allocations.models import Allocation
from allocations.models import Consumer
from allocations.models import ConsumerType
from allocations.models import Project
from allocations.models import User
from placement_site import exceptions
from providers import services as provider_services
from providers.models import Inventory
from providers.models import ResourceProvider
from tests.services.conftest import CONCURRENT

CONSUMER = 'c1c1c1c1-0000-4000-8000-000000000001'
OTHER_CONSUMER = 'c1c1c1c1-0000-4000-8000-000000000002'
UNKNOWN_PROVIDER = 'dead0000-0000-4000-8000-000000000000'


# ---- builders and readers ---------------------------------------------------------

def make_provider(name, *, parent=None, **inventories):
    """A provider with inventories given as VCPU=8 or VCPU={record}
    (generation 1 when it has inventories, else 0)."""
    provider = provider_services.provider_create(
        name=name, parent_provider_uuid=parent.uuid if parent else None)
    if inventories:
        provider_services.inventories_replace(provider=provider, inventories={
            rc: spec if isinstance(spec, dict) else {'total': spec}
            for rc, spec in inventories.items()})
    return provider


def request(allocations, consumer=CONSUMER, **fields):
    """What `consumer` should hold: {provider (or its uuid): {class: amount}}."""
    fields = {'project_id': 'project', 'user_id': 'user', **fields}
    return allocation_services.ConsumerAllocations(
        consumer_uuid=consumer,
        allocations={getattr(p, 'uuid', p): resources for p, resources in allocations.items()},
        **fields)


def allocate(allocations, consumer=CONSUMER, **fields):
    """Replace one consumer's allocations; the request, its consumer filled in."""
    replacing = request(allocations, consumer, **fields)
    allocation_services.allocations_replace([replacing])
    return replacing


def held(consumer=CONSUMER):
    """{provider uuid: {class: used}} of what the consumer holds."""
    found = {}
    for provider_uuid, class_name, used in Allocation.objects.filter(
            consumer__uuid=consumer).values_list(
            'resource_provider__uuid', 'resource_class__name', 'used'):
        found.setdefault(provider_uuid, {})[class_name] = used
    return found


def generations(*providers):
    """The providers' stored generations, in order."""
    stored = dict(ResourceProvider.objects.values_list('pk', 'generation'))
    return tuple(stored[p.pk] for p in providers)


def consumer_row(consumer=CONSUMER):
    """(project, user, consumer type, generation) of the stored consumer."""
    row = Consumer.objects.select_related('project', 'user', 'consumer_type').get(uuid=consumer)
    return (row.project.external_id, row.user.external_id, row.consumer_type_name,
            row.generation)


def exceeded(provider, class_name='VCPU'):
    return (f"Unable to create allocation for '{class_name}' on resource provider "
            f"'{provider.uuid}'. The requested amount would exceed the capacity.")


# ---- allocations_replace: writing ----------------------------------------------------

def test_replace_creates_the_consumer_with_its_project_user_and_type(db):
    cn1 = make_provider('cn1', VCPU=8)
    written = allocate({cn1: {'VCPU': 2}}, consumer_type='INSTANCE')
    assert consumer_row() == ('project', 'user', 'INSTANCE', 1)
    assert (written.consumer.uuid, written.consumer.generation) == (CONSUMER, 1)
    assert held() == {cn1.uuid: {'VCPU': 2}}
    assert generations(cn1) == (2,)
    assert (list(Project.objects.values_list('external_id', flat=True)),
            list(User.objects.values_list('external_id', flat=True)),
            list(ConsumerType.objects.values_list('name', flat=True))) == (
        ['project'], ['user'], ['INSTANCE'])


def test_replace_without_owner_records_the_incomplete_consumer_owner(db):
    """Before microversion 1.8 no project or user is given."""
    cn1 = make_provider('cn1', VCPU=8)
    allocate({cn1: {'VCPU': 2}}, project_id=None, user_id=None)
    assert consumer_row() == (settings.PLACEMENT_INCOMPLETE_CONSUMER_PROJECT_ID,
                              settings.PLACEMENT_INCOMPLETE_CONSUMER_USER_ID, 'unknown', 1)


def test_replace_bumps_every_provider_written_and_the_consumer_generation(db):
    cn1, cn2 = make_provider('cn1', VCPU=8), make_provider('cn2', DISK_GB=100)
    allocate({cn1: {'VCPU': 1}}, generation=None)
    allocate({cn1: {'VCPU': 2}, cn2: {'DISK_GB': 10}}, generation=1)
    assert held() == {cn1.uuid: {'VCPU': 2}, cn2.uuid: {'DISK_GB': 10}}
    assert generations(cn1, cn2) == (3, 2)
    assert consumer_row()[3] == 2


def test_moving_allocations_keeps_the_generation_of_the_provider_left(db):
    cn1, cn2 = make_provider('cn1', VCPU=8), make_provider('cn2', VCPU=8)
    allocate({cn1: {'VCPU': 2}})
    allocate({cn2: {'VCPU': 2}})
    assert held() == {cn2.uuid: {'VCPU': 2}}
    assert generations(cn1, cn2) == (2, 2)


def test_replace_updates_owner_and_type_of_an_existing_consumer(db):
    cn1 = make_provider('cn1', VCPU=8)
    allocate({cn1: {'VCPU': 2}}, consumer_type='INSTANCE')
    allocate({cn1: {'VCPU': 2}}, project_id='project-2', user_id='user-2',
             consumer_type='MIGRATION')
    assert consumer_row() == ('project-2', 'user-2', 'MIGRATION', 2)


def test_replace_without_type_keeps_the_consumer_type(db):
    cn1 = make_provider('cn1', VCPU=8)
    allocate({cn1: {'VCPU': 2}}, consumer_type='INSTANCE')
    allocate({cn1: {'VCPU': 3}})
    assert consumer_row() == ('project', 'user', 'INSTANCE', 2)


def test_empty_allocations_remove_the_consumer_and_bump_the_providers_it_left(db):
    cn1, cn2 = make_provider('cn1', VCPU=8), make_provider('cn2', DISK_GB=100)
    allocate({cn1: {'VCPU': 2}, cn2: {'DISK_GB': 10}})
    allocate({}, generation=1)
    assert held() == {}
    assert not Consumer.objects.filter(uuid=CONSUMER).exists()
    assert generations(cn1, cn2) == (3, 3)


# ---- allocations_replace: capacity --------------------------------------------------

def test_capacity_is_total_less_reserved_times_allocation_ratio(db, refused):
    cn1 = make_provider('cn1', VCPU={'total': 10, 'reserved': 2, 'allocation_ratio': 1.5})
    allocate({cn1: {'VCPU': 12}})
    with refused(exceptions.InvalidAllocationCapacityExceeded, exceeded(cn1)):
        allocate({cn1: {'VCPU': 1}}, OTHER_CONSUMER)


def test_capacity_exceeded_on_one_provider_writes_nothing_anywhere(db, refused):
    """Not the fitting part, nor the new consumer, project, user or type."""
    cn1, cn2 = make_provider('cn1', VCPU=8), make_provider('cn2', DISK_GB=100)
    allocate({cn1: {'VCPU': 2}})
    with refused(exceptions.InvalidAllocationCapacityExceeded, exceeded(cn2, 'DISK_GB')):
        allocate({cn1: {'VCPU': 2}, cn2: {'DISK_GB': 101}}, OTHER_CONSUMER,
                 project_id='project-2', user_id='user-2', consumer_type='MIGRATION')


def test_replacing_its_own_allocations_does_not_count_them_as_used(db):
    cn1 = make_provider('cn1', VCPU=8)
    allocate({cn1: {'VCPU': 6}})
    allocate({cn1: {'VCPU': 8}})
    assert held() == {cn1.uuid: {'VCPU': 8}}


def test_consumers_written_together_share_the_capacity(db, refused):
    cn1 = make_provider('cn1', VCPU=8)
    with refused(exceptions.InvalidAllocationCapacityExceeded, exceeded(cn1)):
        allocation_services.allocations_replace([
            request({cn1: {'VCPU': 5}}), request({cn1: {'VCPU': 4}}, OTHER_CONSUMER)])


@pytest.fixture
def overcommitted(db):
    """cn1 with VCPU capacity 4 while CONSUMER holds 8 (the inventory shrank
    without a usage check, as in a reshape)."""
    cn1 = make_provider('cn1', VCPU=10)
    allocate({cn1: {'VCPU': 8}})
    cn1.refresh_from_db()
    provider_services.inventories_replace(provider=cn1, inventories={'VCPU': {'total': 4}},
                                          check_usage=False)
    return cn1


@pytest.mark.parametrize('amount', [6, 8])
def test_over_capacity_is_allowed_when_no_worse_than_before(overcommitted, amount):
    allocate({overcommitted: {'VCPU': amount}})
    assert held() == {overcommitted.uuid: {'VCPU': amount}}


@pytest.mark.parametrize('consumer, amount', [(CONSUMER, 9), (OTHER_CONSUMER, 1)],
                         ids=['growing', 'another-consumer'])
def test_over_capacity_is_refused_when_it_grows_the_overage(overcommitted, refused,
                                                            consumer, amount):
    with refused(exceptions.InvalidAllocationCapacityExceeded, exceeded(overcommitted)):
        allocate({overcommitted: {'VCPU': amount}}, consumer)


# ---- allocations_replace: refusals -----------------------------------------------------

@pytest.mark.parametrize('amount', [1, 8, 3], ids=['below-min-unit', 'above-max-unit',
                                                   'off-step'])
def test_amount_outside_the_inventory_constraints_is_refused(db, refused, amount):
    cn1 = make_provider('cn1', VCPU={'total': 10, 'min_unit': 2, 'max_unit': 6, 'step_size': 2})
    with refused(exceptions.InvalidAllocationConstraintsViolated,
                 f"Unable to create allocation for 'VCPU' on resource provider '{cn1.uuid}'. "
                 "The requested amount would violate inventory constraints."):
        allocate({cn1: {'VCPU': amount}})


def test_amount_inside_the_inventory_constraints_is_accepted(db):
    cn1 = make_provider('cn1', VCPU={'total': 10, 'min_unit': 2, 'max_unit': 6, 'step_size': 2})
    allocate({cn1: {'VCPU': 6}})
    assert held() == {cn1.uuid: {'VCPU': 6}}


def test_allocation_on_a_provider_without_inventory_is_invalid(db, refused):
    """As in OpenStack Placement, a provider with no inventory of any class
    requested is named with every class requested."""
    cn1, bare = make_provider('cn1', VCPU=8), make_provider('bare')
    with refused(exceptions.InvalidInventory,
                 f"Inventory for 'DISK_GB, VCPU' on resource provider '{bare.uuid}' invalid."):
        allocate({cn1: {'VCPU': 1}, bare: {'DISK_GB': 10}})


def test_allocation_of_a_class_the_provider_lacks_is_invalid(db, refused):
    cn1 = make_provider('cn1', VCPU=8)
    with refused(exceptions.InvalidInventory,
                 f"Inventory for 'DISK_GB' on resource provider '{cn1.uuid}' invalid."):
        allocate({cn1: {'VCPU': 1, 'DISK_GB': 10}})


def test_allocation_on_an_unknown_provider_is_refused(db, refused):
    cn1 = make_provider('cn1', VCPU=8)
    with refused(exceptions.ProviderForAllocationNotFound,
                 f"Allocation for resource provider '{UNKNOWN_PROVIDER}' that does not exist."):
        allocate({cn1: {'VCPU': 1}, UNKNOWN_PROVIDER: {'VCPU': 1}})


def test_allocation_of_an_unknown_resource_class_is_refused(db, refused):
    cn1 = make_provider('cn1', VCPU=8)
    with refused(exceptions.ResourceClassNotFound, 'No such resource class CUSTOM_NOPE.'):
        allocate({cn1: {'VCPU': 1, 'CUSTOM_NOPE': 1}})


@pytest.mark.parametrize('consumer, given, expected', [
    (CONSUMER, 0, 1), (CONSUMER, None, 1), (OTHER_CONSUMER, 1, 'null'),
], ids=['stale', 'null-for-existing', 'given-for-new'])
def test_consumer_generation_mismatch_is_refused(db, refused, consumer, given, expected):
    cn1 = make_provider('cn1', VCPU=8)
    allocate({cn1: {'VCPU': 1}})
    with refused(exceptions.ConsumerGenerationConflict,
                 f'consumer generation conflict - expected {expected} but got {given}'):
        allocate({cn1: {'VCPU': 2}}, consumer, generation=given)


# ---- allocations_delete ----------------------------------------------------------------

def test_delete_removes_allocations_and_consumer_keeping_provider_generations(db):
    cn1, cn2 = make_provider('cn1', VCPU=8), make_provider('cn2', DISK_GB=100)
    allocate({cn1: {'VCPU': 2}, cn2: {'DISK_GB': 10}})
    allocate({cn1: {'VCPU': 1}}, OTHER_CONSUMER)
    assert allocation_services.allocations_delete(consumer_uuid=CONSUMER) is True
    assert (held(), held(OTHER_CONSUMER)) == ({}, {cn1.uuid: {'VCPU': 1}})
    assert list(Consumer.objects.values_list('uuid', flat=True)) == [OTHER_CONSUMER]
    assert generations(cn1, cn2) == (3, 2)


@pytest.mark.parametrize('consumer', [OTHER_CONSUMER, 'c1c1\x00'], ids=['unknown', 'nul'])
def test_delete_for_a_consumer_without_allocations_is_false(db, db_snapshot, consumer):
    allocate({make_provider('cn1', VCPU=8): {'VCPU': 2}})
    before = db_snapshot()
    assert allocation_services.allocations_delete(consumer_uuid=consumer) is False
    assert db_snapshot() == before


# ---- reshape ----------------------------------------------------------------------------

@pytest.fixture
def tree(db):
    """A root with VCPU 8 and DISK_GB 100 (generation 2), an empty child
    (generation 0), and CONSUMER holding 2 VCPU and 10 DISK_GB of the root
    (consumer generation 1)."""
    root = make_provider('root', VCPU=8, DISK_GB=100)
    child = make_provider('child', parent=root)
    allocate({root: {'VCPU': 2, 'DISK_GB': 10}}, generation=None)
    root.refresh_from_db()
    return SimpleNamespace(root=root, child=child)


def reshape(tree, *, root_inventories=None, child_inventories=None, allocations=None,
            generation=1):
    """By default: VCPU, with its allocation, moves from the root to the child."""
    allocation_services.reshape(
        inventories={
            tree.root: root_inventories or {'DISK_GB': {'total': 100}},
            tree.child: child_inventories or {'VCPU': {'total': 8}}},
        requests=[request(allocations or {tree.root: {'DISK_GB': 10}, tree.child: {'VCPU': 2}},
                          generation=generation)])


def test_reshape_moves_inventory_and_allocations_to_the_child(tree):
    reshape(tree)
    assert (Inventory.objects.filter(resource_provider=tree.root)
            .values_list('resource_class__name', 'total').get()) == ('DISK_GB', 100)
    assert (Inventory.objects.filter(resource_provider=tree.child)
            .values_list('resource_class__name', 'total').get()) == ('VCPU', 8)
    assert held() == {tree.root.uuid: {'DISK_GB': 10}, tree.child.uuid: {'VCPU': 2}}
    assert generations(tree.root, tree.child) == (5, 3)
    assert consumer_row()[3] == 2


@pytest.mark.parametrize('change, error, message', [
    (lambda tree: {'child_inventories': {'VCPU': {'total': 1}}},
     exceptions.InvalidAllocationCapacityExceeded,
     ("Unable to create allocation for 'VCPU' on resource provider '{child}'. "
      "The requested amount would exceed the capacity.")),
    (lambda tree: {'allocations': {tree.root: {'VCPU': 2, 'DISK_GB': 10}}},
     exceptions.InventoryInUse, "Inventory for 'VCPU' on resource provider '{root}' in use."),
    (lambda tree: {'generation': 0}, exceptions.ConsumerGenerationConflict,
     'consumer generation conflict - expected 1 but got 0'),
], ids=['child-capacity', 'root-inventory-in-use', 'consumer-generation'])
def test_reshape_failing_late_changes_nothing(tree, refused, change, error, message):
    """Inventories were already written when these refusals come."""
    with refused(error, message.format(root=tree.root.uuid, child=tree.child.uuid)):
        reshape(tree, **change(tree))


def test_reshape_with_a_stale_provider_generation_changes_nothing(tree, refused):
    tree.root.generation = 1
    with refused(exceptions.ProviderConcurrentUpdate, CONCURRENT):
        reshape(tree)


def test_reshape_emptying_a_provider_changed_meanwhile_is_refused(tree, refused):
    """The child was checked at generation 0; then a writer gave it VCPU
    inventory (generation 1). Emptying it at generation 0 must be refused,
    not delete that writer's inventory."""
    provider_services.inventories_replace(provider=ResourceProvider.objects.get(pk=tree.child.pk),
                                          inventories={'VCPU': {'total': 4}})
    with refused(exceptions.ProviderConcurrentUpdate, CONCURRENT):
        allocation_services.reshape(
            inventories={tree.root: {'VCPU': {'total': 8}, 'DISK_GB': {'total': 100}},
                         tree.child: {}},
            requests=[request({tree.root: {'VCPU': 2, 'DISK_GB': 10}}, generation=1)])
