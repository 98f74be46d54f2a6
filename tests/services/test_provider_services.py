"""providers.services called directly: creating, moving and deleting
providers, replacing their inventories, traits and aggregates, and managing
traits and resource classes. Every refusal raises exactly one domain error
and leaves every row as it was."""
import uuid as uuid_lib

import pytest

from allocations import services as allocation_services
from placement_site import exceptions
from providers import services
from providers.models import Aggregate
from providers.models import Inventory
from providers.models import ProviderAggregate
from providers.models import ProviderTrait
from providers.models import ResourceClass
from providers.models import ResourceProvider
from providers.models import Trait
from tests.services.conftest import CONCURRENT

ROOT_UUID = 'c0c0c0c0-0000-4000-8000-000000000001'
OTHER_UUID = 'c0c0c0c0-0000-4000-8000-000000000002'
AGG_A = 'a0a0a0a0-0000-4000-8000-00000000000a'
AGG_B = 'a0a0a0a0-0000-4000-8000-00000000000b'
AGG_C = 'a0a0a0a0-0000-4000-8000-00000000000c'


# ---- builders and readers ---------------------------------------------------------

def make_provider(name='cn1', *, parent=None, inventories=None, uuid=None):
    """A provider (under `parent`), with `inventories` if given (generation 1)."""
    provider = services.provider_create(
        name=name, uuid=uuid, parent_provider_uuid=parent.uuid if parent else None)
    if inventories:
        services.inventories_replace(provider=provider, inventories=inventories)
    return provider


def allocate(provider, resources):
    """A new consumer holding `resources` of the provider; the provider is
    re-read, since allocating bumps its generation."""
    allocation_services.allocations_replace([allocation_services.ConsumerAllocations(
        consumer_uuid=str(uuid_lib.uuid4()), allocations={provider.uuid: resources},
        project_id='project', user_id='user')])
    provider.refresh_from_db()


def stored(provider):
    return ResourceProvider.objects.get(pk=provider.pk)


def generation_of(provider):
    return ResourceProvider.objects.values_list('generation', flat=True).get(pk=provider.pk)


def record(total, *, reserved=0, min_unit=1, max_unit=2147483647, step_size=1,
           allocation_ratio=1.0):
    """An inventory record as stored, defaults included."""
    return {'total': total, 'reserved': reserved, 'min_unit': min_unit, 'max_unit': max_unit,
            'step_size': step_size, 'allocation_ratio': allocation_ratio}


def inventories_of(provider):
    """{resource class: stored record} of the provider."""
    return {inv.resource_class.name: record(
                inv.total, reserved=inv.reserved, min_unit=inv.min_unit, max_unit=inv.max_unit,
                step_size=inv.step_size, allocation_ratio=inv.allocation_ratio)
            for inv in Inventory.objects.filter(
                resource_provider_id=provider.pk).select_related('resource_class')}


def traits_of(provider):
    return set(ProviderTrait.objects.filter(
        resource_provider_id=provider.pk).values_list('trait__name', flat=True))


def aggregates_of(provider):
    return set(ProviderAggregate.objects.filter(
        resource_provider_id=provider.pk).values_list('aggregate__uuid', flat=True))


def tree_of(*providers):
    """{name: (parent name, root name)} as stored."""
    rows = ResourceProvider.objects.filter(pk__in=[p.pk for p in providers])
    return {p.name: (p.parent_provider.name if p.parent_provider_id else None,
                     p.root_provider.name) for p in rows}


# ---- provider_create -------------------------------------------------------------

def test_create_root_provider_is_its_own_root(db):
    """A provider without parent starts a tree, at generation 0, with its
    uuid stored in the dashed lower-case form."""
    provider = services.provider_create(name='cn1', uuid=ROOT_UUID.replace('-', '').upper())
    assert (provider.uuid, provider.name, provider.generation) == (ROOT_UUID, 'cn1', 0)
    assert (provider.parent_provider_uuid, provider.root_provider_uuid) == (None, ROOT_UUID)
    row = stored(provider)
    assert (row.uuid, row.parent_provider_id, row.root_provider_id) == (ROOT_UUID, None, row.pk)


def test_create_child_provider_takes_parent_and_root(db):
    """A grandchild's parent is the child; its root is the tree's root."""
    root = make_provider('root', uuid=ROOT_UUID)
    child = make_provider('child', parent=root)
    grandchild = make_provider('grandchild', parent=child)
    assert (grandchild.parent_provider_uuid, grandchild.root_provider_uuid) == (
        child.uuid, ROOT_UUID)
    assert tree_of(root, child, grandchild) == {
        'root': (None, 'root'), 'child': ('root', 'root'), 'grandchild': ('child', 'root')}


def test_create_refuses_itself_as_parent(db, refused):
    with refused(exceptions.ObjectActionError,
                 'Object action create failed because: parent provider UUID cannot be same '
                 'as UUID. Please set parent provider UUID to None if there is no parent.'):
        services.provider_create(name='cn1', uuid=ROOT_UUID, parent_provider_uuid=ROOT_UUID)


def test_create_refuses_unknown_parent(db, refused):
    with refused(exceptions.ObjectActionError,
                 'Object action create failed because: parent provider UUID does not exist.'):
        services.provider_create(name='cn1', parent_provider_uuid=OTHER_UUID)


@pytest.mark.parametrize('uuid, name, duplicate', [
    (OTHER_UUID, 'first', 'name: first'),
    (ROOT_UUID, 'third', f'uuid: {ROOT_UUID}'),
    (ROOT_UUID, 'second', f'uuid: {ROOT_UUID}'),  # both clash: the uuid is named
], ids=['name', 'uuid', 'both'])
def test_create_refuses_duplicate_provider(db, refused, uuid, name, duplicate):
    make_provider('first', uuid=ROOT_UUID)
    make_provider('second')
    with refused(exceptions.DuplicateProvider,
                 f'Conflicting resource provider {duplicate} already exists.'):
        services.provider_create(name=name, uuid=uuid)


# ---- provider_update -------------------------------------------------------------

def test_update_renames_provider_keeping_generation(db):
    provider = make_provider('cn1')
    updated = services.provider_update(provider=provider, name='cn1-renamed')
    assert (updated.name, updated.generation) == ('cn1-renamed', 0)
    assert (stored(provider).name, stored(provider).generation) == ('cn1-renamed', 0)


def test_update_refuses_rename_to_taken_name(db, refused):
    make_provider('taken')
    provider = make_provider('cn1')
    with refused(exceptions.DuplicateProvider,
                 'Conflicting resource provider name: taken already exists.'):
        services.provider_update(provider=provider, name='taken')


def test_update_gives_a_root_a_parent_and_its_subtree_the_new_root(db):
    """Gaining a parent needs no allow_reparenting; the moved root's
    children follow it into the parent's tree."""
    target = make_provider('target')
    moved = make_provider('moved')
    below = make_provider('below', parent=moved)
    updated = services.provider_update(provider=moved, parent_provider_uuid=target.uuid)
    assert (updated.parent_provider_uuid, updated.root_provider_uuid) == (target.uuid, target.uuid)
    assert tree_of(target, moved, below) == {
        'target': (None, 'target'), 'moved': ('target', 'target'), 'below': ('moved', 'target')}


def test_update_refuses_reparenting_unless_allowed(db, refused):
    first, second = make_provider('first'), make_provider('second')
    child = make_provider('child', parent=first)
    with refused(exceptions.ObjectActionError, 'Object action update failed because: '
                 're-parenting a provider is not currently allowed.'):
        services.provider_update(provider=child, parent_provider_uuid=second.uuid)


def test_update_reparents_a_subtree_into_another_tree_when_allowed(db):
    first, second = make_provider('first'), make_provider('second')
    child = make_provider('child', parent=first)
    grandchild = make_provider('grandchild', parent=child)
    services.provider_update(provider=child, parent_provider_uuid=second.uuid,
                             allow_reparenting=True)
    assert tree_of(first, second, child, grandchild) == {
        'first': (None, 'first'), 'second': (None, 'second'),
        'child': ('second', 'second'), 'grandchild': ('child', 'second')}


def test_update_refuses_unparenting_unless_allowed(db, refused):
    child = make_provider('child', parent=make_provider('root'))
    with refused(exceptions.ObjectActionError, 'Object action update failed because: '
                 'un-parenting a provider is not currently allowed.'):
        services.provider_update(provider=child, parent_provider_uuid=None)


def test_update_unparents_a_subtree_into_its_own_tree_when_allowed(db):
    root = make_provider('root')
    child = make_provider('child', parent=root)
    grandchild = make_provider('grandchild', parent=child)
    updated = services.provider_update(provider=child, parent_provider_uuid=None,
                                       allow_reparenting=True)
    assert (updated.parent_provider_uuid, updated.root_provider_uuid) == (None, child.uuid)
    assert tree_of(root, child, grandchild) == {
        'root': (None, 'root'), 'child': (None, 'child'), 'grandchild': ('child', 'child')}


@pytest.mark.parametrize('new_parent', ['root', 'grandchild'])
def test_update_refuses_a_loop_in_the_tree(db, refused, new_parent):
    """Neither the provider itself nor a descendant can become its parent."""
    root = make_provider('root')
    grandchild = make_provider('grandchild', parent=make_provider('child', parent=root))
    parent = {'root': root, 'grandchild': grandchild}[new_parent]
    with refused(exceptions.ObjectActionError, 'Object action update failed because: '
                 'creating loop in the provider tree is not allowed.'):
        services.provider_update(provider=root, parent_provider_uuid=parent.uuid,
                                 allow_reparenting=True)


def test_update_refuses_unknown_parent(db, refused):
    provider = make_provider('cn1')
    with refused(exceptions.ObjectActionError,
                 'Object action create failed because: parent provider UUID does not exist.'):
        services.provider_update(provider=provider, parent_provider_uuid=OTHER_UUID)


# ---- provider_delete and check_provider_delete -------------------------------------

def test_delete_removes_provider_with_its_inventories_traits_and_aggregate_links(db):
    """The trait and the aggregate themselves stay."""
    provider = make_provider('cn1', inventories={'VCPU': {'total': 8}})
    services.traits_replace(provider=provider, trait_names=['COMPUTE_NODE'])
    services.aggregates_replace(provider=provider, aggregate_uuids=[AGG_A])
    services.provider_delete(provider=provider)
    assert not ResourceProvider.objects.filter(pk=provider.pk).exists()
    assert (inventories_of(provider), traits_of(provider), aggregates_of(provider)) == (
        {}, set(), set())
    assert Trait.objects.filter(name='COMPUTE_NODE').exists()
    assert list(Aggregate.objects.values_list('uuid', flat=True)) == [AGG_A]


def test_delete_child_leaves_its_parent(db):
    root = make_provider('root')
    child = make_provider('child', parent=root)
    services.provider_delete(provider=child)
    assert list(ResourceProvider.objects.values_list('name', flat=True)) == ['root']
    assert tree_of(root) == {'root': (None, 'root')}


def delete(provider):
    services.provider_delete(provider=provider)


def check_delete(provider):
    services.check_provider_delete(provider)


@pytest.mark.parametrize('attempt', [delete, check_delete], ids=['delete', 'check'])
def test_delete_refuses_a_parent_provider(db, refused, attempt):
    root = make_provider('root')
    make_provider('child', parent=root)
    with refused(exceptions.CannotDeleteParentProvider,
                 'Cannot delete resource provider that is a parent of another. '
                 'Delete child providers first.'):
        attempt(root)


@pytest.mark.parametrize('attempt', [delete, check_delete], ids=['delete', 'check'])
def test_delete_refuses_a_provider_with_allocations(db, refused, attempt):
    provider = make_provider('cn1', inventories={'VCPU': {'total': 8}})
    allocate(provider, {'VCPU': 1})
    with refused(exceptions.ProviderInUse, 'Resource provider has allocations.'):
        attempt(provider)


def test_check_provider_delete_accepts_a_free_leaf_and_writes_nothing(db, db_snapshot):
    provider = make_provider('cn1', inventories={'VCPU': {'total': 8}})
    before = db_snapshot()
    assert services.check_provider_delete(provider) is None
    assert db_snapshot() == before


def test_delete_of_a_provider_already_gone_is_not_found(db, refused):
    provider = make_provider('cn1', uuid=ROOT_UUID)
    services.provider_delete(provider=provider)
    with refused(exceptions.ResourceProviderNotFound,
                 f'No resource provider with uuid {ROOT_UUID} found'):
        services.provider_delete(provider=provider)


# ---- inventories_replace -----------------------------------------------------------

def test_replace_adds_updates_and_deletes_inventories_in_one_generation(db):
    provider = make_provider('cn1', inventories={'VCPU': {'total': 8},
                                                 'DISK_GB': {'total': 100}})
    assert generation_of(provider) == 1
    returned = services.inventories_replace(provider=provider, inventories={
        'VCPU': {'total': 16, 'allocation_ratio': 2.0}, 'MEMORY_MB': {'total': 2048}})
    expected = {'VCPU': record(16, allocation_ratio=2.0), 'MEMORY_MB': record(2048)}
    assert inventories_of(provider) == expected
    assert {inv.resource_class.name: inv.total for inv in returned} == {
        'VCPU': 16, 'MEMORY_MB': 2048}
    assert (generation_of(provider), provider.generation) == (2, 2)


def test_replace_with_the_same_inventories_still_bumps_generation(db):
    provider = make_provider('cn1', inventories={'VCPU': {'total': 8}})
    services.inventories_replace(provider=provider, inventories={'VCPU': {'total': 8}})
    assert inventories_of(provider) == {'VCPU': record(8)}
    assert generation_of(provider) == 2


def test_replace_with_a_stale_generation_is_refused(db, refused):
    provider = make_provider('cn1', inventories={'VCPU': {'total': 8}})
    stale = stored(provider)
    services.traits_replace(provider=provider, trait_names=['COMPUTE_NODE'])
    with refused(exceptions.ProviderConcurrentUpdate, CONCURRENT):
        services.inventories_replace(provider=stale, inventories={'VCPU': {'total': 16}})
    assert stale.generation == 1


def test_replace_refuses_deleting_inventory_in_use(db, refused):
    provider = make_provider('cn1', uuid=ROOT_UUID, inventories={
        'VCPU': {'total': 8}, 'DISK_GB': {'total': 100}})
    allocate(provider, {'VCPU': 2})
    with refused(exceptions.InventoryInUse,
                 f"Inventory for 'VCPU' on resource provider '{ROOT_UUID}' in use."):
        services.inventories_replace(provider=provider, inventories={'DISK_GB': {'total': 50}})


@pytest.fixture
def busy(db):
    """cn1 (ROOT_UUID) with 6 of its 8 VCPU allocated."""
    provider = make_provider('cn1', uuid=ROOT_UUID, inventories={'VCPU': {'total': 8}})
    allocate(provider, {'VCPU': 6})
    return provider


def over_capacity(capacity):
    """The refusal of an inventory that leaves busy's 6 VCPU over `capacity`."""
    return (f"Inventory for 'VCPU' on resource provider '{ROOT_UUID}' would leave its "
            f'allocations over capacity: 6 used, capacity {capacity}.')


def test_replace_may_shrink_inventory_below_usage(busy, caplog):
    services.inventories_replace(provider=busy,
                                 inventories={'VCPU': {'total': 8, 'reserved': 4}})
    assert inventories_of(busy) == {'VCPU': record(8, reserved=4)}
    assert [r.getMessage() for r in caplog.records if r.name == 'placement.inventories'] == [
        f'Resource provider {ROOT_UUID} is now over-capacity for VCPU: 6 used, capacity 4.0']


def test_replace_refuses_shrinking_inventory_below_usage_when_the_site_does(busy, refused,
                                                                            settings):
    settings.PLACEMENT_REFUSE_OVERCOMMITTED_INVENTORY = True
    with refused(exceptions.InventoryBelowUsage, over_capacity('4.0')):
        services.inventories_replace(provider=busy,
                                     inventories={'VCPU': {'total': 8, 'reserved': 4}})


def test_replace_without_usage_check_may_shrink_below_usage(busy):
    services.inventories_replace(provider=busy, inventories={'VCPU': {'total': 4}},
                                 check_usage=False)
    assert inventories_of(busy) == {'VCPU': record(4)}
    assert generation_of(busy) == 3


def test_replace_without_usage_check_still_refuses_deleting_inventory_in_use(busy, refused):
    with refused(exceptions.InventoryInUse,
                 f"Inventory for 'VCPU' on resource provider '{ROOT_UUID}' in use."):
        services.inventories_replace(provider=busy, inventories={}, check_usage=False)


def test_replace_refuses_an_unknown_resource_class(db, refused):
    provider = make_provider('cn1', inventories={'VCPU': {'total': 8}})
    with refused(exceptions.ResourceClassNotFound, 'No such resource class CUSTOM_NOPE.'):
        services.inventories_replace(provider=provider, inventories={
            'VCPU': {'total': 16}, 'CUSTOM_NOPE': {'total': 1}})


@pytest.mark.parametrize('reserved, reserved_can_be_total, error, ending', [
    (9, True, exceptions.InvalidInventoryCapacityReservedCanBeTotal, 'greater than total.'),
    (8, False, exceptions.InvalidInventoryCapacity, 'greater than or equal to total.'),
], ids=['above-total', 'equal-total-before-1.26'])
def test_replace_refuses_reserved_beyond_total(db, refused, reserved, reserved_can_be_total,
                                               error, ending):
    provider = make_provider('cn1', uuid=ROOT_UUID)
    with refused(error, f"Invalid inventory for 'VCPU' on resource provider '{ROOT_UUID}'. "
                        f"The reserved value is {ending}"):
        services.inventories_replace(
            provider=provider, inventories={'VCPU': {'total': 8, 'reserved': reserved}},
            reserved_can_be_total=reserved_can_be_total)


def test_replace_accepts_reserved_equal_to_total_from_1_26(db):
    provider = make_provider('cn1')
    services.inventories_replace(provider=provider,
                                 inventories={'VCPU': {'total': 8, 'reserved': 8}})
    assert inventories_of(provider) == {'VCPU': record(8, reserved=8)}


# ---- inventory_add, inventory_update, inventory_delete ------------------------------

def test_add_inventory_bumps_generation(db):
    provider = make_provider('cn1', inventories={'VCPU': {'total': 8}})
    added = services.inventory_add(provider=provider, resource_class='DISK_GB',
                                   record={'total': 100, 'step_size': 10})
    assert (added.resource_class_id, added.total) == (
        ResourceClass.objects.get(name='DISK_GB').pk, 100)
    assert inventories_of(provider) == {'VCPU': record(8), 'DISK_GB': record(100, step_size=10)}
    assert (generation_of(provider), provider.generation) == (2, 2)


def test_add_inventory_the_provider_has_is_refused(db, refused):
    provider = make_provider('cn1', uuid=ROOT_UUID, inventories={'VCPU': {'total': 8}})
    with refused(exceptions.ConcurrentUpdate,
                 f'Inventory of class VCPU already exists on provider {ROOT_UUID}'):
        services.inventory_add(provider=provider, resource_class='VCPU', record={'total': 4})


def test_update_inventory_replaces_the_record_and_bumps_generation(db):
    provider = make_provider('cn1', inventories={'VCPU': {'total': 8, 'reserved': 2}})
    updated = services.inventory_update(provider=provider, resource_class='VCPU',
                                        record={'total': 16, 'max_unit': 4})
    assert (updated.total, updated.reserved, updated.max_unit) == (16, 0, 4)
    assert inventories_of(provider) == {'VCPU': record(16, max_unit=4)}
    assert (generation_of(provider), provider.generation) == (2, 2)


def test_update_inventory_the_provider_lacks_is_refused(db, refused):
    provider = make_provider('cn1', inventories={'DISK_GB': {'total': 100}})
    with refused(exceptions.InventoryNotFound, 'No inventory of class VCPU found.'):
        services.inventory_update(provider=provider, resource_class='VCPU', record={'total': 4})


def test_update_inventory_below_usage_is_accepted(busy):
    services.inventory_update(provider=busy, resource_class='VCPU', record={'total': 5})
    assert inventories_of(busy) == {'VCPU': record(5)}


def test_update_inventory_below_usage_is_refused_when_the_site_does(busy, refused, settings):
    settings.PLACEMENT_REFUSE_OVERCOMMITTED_INVENTORY = True
    with refused(exceptions.InventoryBelowUsage, over_capacity('5.0')):
        services.inventory_update(provider=busy, resource_class='VCPU', record={'total': 5})


def test_delete_inventory_bumps_generation(db):
    provider = make_provider('cn1', inventories={'VCPU': {'total': 8},
                                                 'DISK_GB': {'total': 100}})
    services.inventory_delete(provider=provider, resource_class='DISK_GB')
    assert inventories_of(provider) == {'VCPU': record(8)}
    assert (generation_of(provider), provider.generation) == (2, 2)


def test_delete_inventory_in_use_is_refused(db, refused):
    provider = make_provider('cn1', uuid=ROOT_UUID, inventories={'VCPU': {'total': 8}})
    allocate(provider, {'VCPU': 1})
    with refused(exceptions.InventoryInUse,
                 f"Inventory for 'VCPU' on resource provider '{ROOT_UUID}' in use."):
        services.inventory_delete(provider=provider, resource_class='VCPU')


def test_delete_inventory_the_provider_lacks_is_not_found(db, refused):
    provider = make_provider('cn1', inventories={'VCPU': {'total': 8}})
    with refused(exceptions.NotFound, 'No inventory of class DISK_GB found for delete'):
        services.inventory_delete(provider=provider, resource_class='DISK_GB')


# ---- check_inventories -----------------------------------------------------------

@pytest.mark.parametrize('inventories, error, message', [
    ({'DISK_GB': {'total': 100}}, exceptions.InventoryInUse,
     f"Inventory for 'VCPU' on resource provider '{ROOT_UUID}' in use."),
    ({'VCPU': {'total': 3}, 'DISK_GB': {'total': 100}}, exceptions.InventoryBelowUsage,
     (f"Inventory for 'VCPU' on resource provider '{ROOT_UUID}' would leave its allocations "
      "over capacity: 4 used, capacity 3.0.")),
    ({'VCPU': {'total': 8}, 'CUSTOM_NOPE': {'total': 1}}, exceptions.ResourceClassNotFound,
     'No such resource class CUSTOM_NOPE.'),
    ({'VCPU': {'total': 8, 'reserved': 9}}, exceptions.InvalidInventoryCapacityReservedCanBeTotal,
     (f"Invalid inventory for 'VCPU' on resource provider '{ROOT_UUID}'. "
      "The reserved value is greater than total.")),
], ids=['deleting-used', 'below-usage', 'unknown-class', 'reserved-above-total'])
def test_check_inventories_refuses_what_replace_refuses_and_writes_nothing(
        db, refused, settings, inventories, error, message):
    settings.PLACEMENT_REFUSE_OVERCOMMITTED_INVENTORY = True
    provider = make_provider('cn1', uuid=ROOT_UUID, inventories={'VCPU': {'total': 8}})
    allocate(provider, {'VCPU': 4})
    with refused(error, message):
        services.check_inventories(provider=provider, inventories=inventories)
    assert provider.generation == 2
    with refused(error, message):
        services.inventories_replace(provider=provider, inventories=inventories)


def test_check_inventories_accepts_a_valid_change_and_writes_nothing(db, db_snapshot):
    provider = make_provider('cn1', inventories={'VCPU': {'total': 8}})
    allocate(provider, {'VCPU': 4})
    before = db_snapshot()
    assert services.check_inventories(provider=provider, inventories={
        'VCPU': {'total': 4}, 'DISK_GB': {'total': 100}}) is None
    assert db_snapshot() == before
    assert provider.generation == 2


# ---- traits ------------------------------------------------------------------------

def test_replace_traits_sets_exactly_those_in_one_generation(db):
    provider = make_provider('cn1')
    services.traits_replace(provider=provider, trait_names=['COMPUTE_NODE', 'HW_CPU_X86_AVX2'])
    services.traits_replace(provider=provider, trait_names=['COMPUTE_NODE', 'HW_NUMA_ROOT'])
    assert traits_of(provider) == {'COMPUTE_NODE', 'HW_NUMA_ROOT'}
    assert (generation_of(provider), provider.generation) == (2, 2)


def test_replace_traits_unchanged_writes_nothing_and_keeps_generation(db, db_snapshot):
    provider = make_provider('cn1')
    services.traits_replace(provider=provider, trait_names=['COMPUTE_NODE', 'HW_NUMA_ROOT'])
    before = db_snapshot()
    services.traits_replace(provider=provider, trait_names=['HW_NUMA_ROOT', 'COMPUTE_NODE'])
    assert db_snapshot() == before
    assert (generation_of(provider), provider.generation) == (1, 1)


def test_replace_traits_names_every_unknown_trait(db, refused):
    provider = make_provider('cn1')
    services.traits_replace(provider=provider, trait_names=['COMPUTE_NODE'])
    with refused(exceptions.TraitNotFound, 'No such trait(s): CUSTOM_B, CUSTOM_A.'):
        services.traits_replace(provider=provider,
                                trait_names=['CUSTOM_B', 'HW_NUMA_ROOT', 'CUSTOM_A'])


def test_trait_ensure_creates_a_custom_trait_once(db):
    created, was_created = services.trait_ensure(name='CUSTOM_GOLD')
    found, found_created = services.trait_ensure(name='CUSTOM_GOLD')
    assert (was_created, found_created, found.pk) == (True, False, created.pk)
    assert Trait.objects.filter(name='CUSTOM_GOLD').count() == 1


def test_trait_delete_removes_a_custom_trait(db):
    trait, _ = services.trait_ensure(name='CUSTOM_GOLD')
    services.trait_delete(trait=trait)
    assert not Trait.objects.filter(name='CUSTOM_GOLD').exists()


def test_trait_delete_refuses_a_standard_trait(db, refused):
    with refused(exceptions.TraitCannotDeleteStandard,
                 'Cannot delete standard trait HW_CPU_X86_AVX2.'):
        services.trait_delete(trait=Trait.objects.get(name='HW_CPU_X86_AVX2'))


def test_trait_delete_refuses_a_trait_a_provider_carries(db, refused):
    trait, _ = services.trait_ensure(name='CUSTOM_GOLD')
    services.traits_replace(provider=make_provider('cn1'), trait_names=['CUSTOM_GOLD'])
    with refused(exceptions.TraitInUse, 'The trait CUSTOM_GOLD is in use by a resource provider.'):
        services.trait_delete(trait=trait)


# ---- aggregates ---------------------------------------------------------------------

def test_replace_aggregates_creates_unknown_ones_in_one_generation(db):
    provider = make_provider('cn1')
    services.aggregates_replace(provider=provider, aggregate_uuids=[AGG_A, AGG_B])
    services.aggregates_replace(provider=provider, aggregate_uuids=[AGG_B, AGG_C])
    assert aggregates_of(provider) == {AGG_B, AGG_C}
    assert set(Aggregate.objects.values_list('uuid', flat=True)) == {AGG_A, AGG_B, AGG_C}
    assert (generation_of(provider), provider.generation) == (2, 2)


def test_replace_aggregates_without_bump_keeps_generation(db):
    provider = make_provider('cn1')
    services.aggregates_replace(provider=provider, aggregate_uuids=[AGG_A],
                                bump_generation=False)
    assert aggregates_of(provider) == {AGG_A}
    assert (generation_of(provider), provider.generation) == (0, 0)


# ---- resource classes ----------------------------------------------------------------

def test_resource_class_create_numbers_custom_classes_from_10000(db):
    first = services.resource_class_create(name='CUSTOM_FPGA')
    second = services.resource_class_create(name='CUSTOM_GPU')
    assert (first.pk, second.pk) == (10000, 10001)
    assert ResourceClass.objects.get(pk=10001).name == 'CUSTOM_GPU'
    assert (first.is_custom, ResourceClass.objects.get(name='VCPU').is_custom) == (True, False)


@pytest.mark.parametrize('name', ['CUSTOM_FPGA', 'VCPU'])
def test_resource_class_create_refuses_an_existing_name(db, refused, name):
    services.resource_class_create(name='CUSTOM_FPGA')
    with refused(exceptions.ResourceClassExists, f'Resource class {name} already exists.'):
        services.resource_class_create(name=name)


def test_resource_class_ensure_creates_once(db):
    created, was_created = services.resource_class_ensure(name='CUSTOM_FPGA')
    found, found_created = services.resource_class_ensure(name='CUSTOM_FPGA')
    assert (created.pk, was_created, found.pk, found_created) == (10000, True, 10000, False)


def test_resource_class_rename_keeps_the_id(db):
    resource_class = services.resource_class_create(name='CUSTOM_FPGA')
    renamed = services.resource_class_rename(resource_class=resource_class, name='CUSTOM_GPU')
    assert (renamed.pk, renamed.name) == (10000, 'CUSTOM_GPU')
    assert ResourceClass.objects.get(pk=10000).name == 'CUSTOM_GPU'


def test_resource_class_rename_refuses_a_standard_class(db, refused):
    with refused(exceptions.ResourceClassCannotUpdateStandard,
                 'Cannot update standard resource class VCPU.'):
        services.resource_class_rename(resource_class=ResourceClass.objects.get(name='VCPU'),
                                       name='CUSTOM_VCPU')


def test_resource_class_rename_refuses_a_taken_name(db, refused):
    resource_class = services.resource_class_create(name='CUSTOM_FPGA')
    services.resource_class_create(name='CUSTOM_GPU')
    with refused(exceptions.ResourceClassExists, 'Resource class CUSTOM_GPU already exists.'):
        services.resource_class_rename(resource_class=resource_class, name='CUSTOM_GPU')


def test_resource_class_delete_removes_a_custom_class(db):
    resource_class = services.resource_class_create(name='CUSTOM_FPGA')
    services.resource_class_delete(resource_class=resource_class)
    assert not ResourceClass.objects.filter(pk=10000).exists()


def test_resource_class_delete_refuses_a_standard_class(db, refused):
    with refused(exceptions.ResourceClassCannotDeleteStandard,
                 'Cannot delete standard resource class VCPU.'):
        services.resource_class_delete(resource_class=ResourceClass.objects.get(name='VCPU'))


def test_resource_class_delete_refuses_a_class_with_inventory(db, refused):
    resource_class = services.resource_class_create(name='CUSTOM_FPGA')
    make_provider('cn1', inventories={'CUSTOM_FPGA': {'total': 2}})
    with refused(exceptions.ResourceClassInUse,
                 'Cannot delete resource class CUSTOM_FPGA. Class is in use in inventory.'):
        services.resource_class_delete(resource_class=resource_class)
