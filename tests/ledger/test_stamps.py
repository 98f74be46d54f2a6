"""Tree stamps (providers.ledger.stamps): every write to a tree steps its
stamp and no other tree's, whatever writes the rows, after the whole
migration chain on every database; a deleted root takes its stamp along."""
import uuid

import pytest
from django.db import connection

from allocations import ledger as allocation_ledger
from allocations.models import Allocation
from allocations.models import Consumer
from allocations.models import Project
from providers import services
from providers.ledger import stamps
from providers.models import Inventory
from providers.models import ProviderAggregate
from providers.models import ResourceProvider
from providers.models import Trait
from tests.support.factories import add_allocation
from tests.support.factories import add_provider

# Committed, as the ledger reads them; PostgreSQL's triggers run per statement.
pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def read():
    """{root: stamp} of every tree (and the catalogue's row)."""
    return {int(root): int(stamp)
            for root, stamp in (line.split(b'\t') for line in stamps.read(connection))}


def stepped(write):
    """The roots whose stamps a write moved (or removed)."""
    before = read()
    write()
    after = read()
    return {root for root in before.keys() | after.keys() if before.get(root) != after.get(root)}


def fresh(provider):
    return ResourceProvider.objects.get(pk=provider.pk)


@pytest.fixture
def trees(db):
    """Two trees: node (with a child) and other."""
    node = add_provider('node', inventories={'VCPU': {'total': 16}})
    child = add_provider('child', parent=node, inventories={'MEMORY_MB': {'total': 1024}})
    other = add_provider('other', inventories={'VCPU': {'total': 4}})
    return node, child, other


WRITES = {
    'an inventory added': lambda n, c: services.inventory_add(
        provider=fresh(c), resource_class='DISK_GB', record={'total': 10}),
    'an inventory updated': lambda n, c: services.inventory_update(
        provider=fresh(n), resource_class='VCPU', record={'total': 32}),
    'an inventory row written directly': lambda n, c: Inventory.objects.filter(
        resource_provider=c).update(reserved=1),
    'a claim on the child': lambda n, c: add_allocation(fresh(c), MEMORY_MB=10),
    'an allocation row deleted directly': lambda n, c: Allocation.objects.filter(
        resource_provider=n).delete(),
    'a pool joined': lambda n, c: services.aggregates_replace(
        provider=fresh(c), aggregate_uuids=[str(uuid.uuid4())]),
    'a pool left directly': lambda n, c: ProviderAggregate.objects.filter(
        resource_provider=n).delete(),
    'a trait': lambda n, c: services.traits_replace(provider=fresh(c),
                                                     trait_names=['HW_NUMA_ROOT']),
    'a consumer given to another project': lambda n, c: Consumer.objects.update(
        project=Project.objects.get_or_create(external_id='another')[0]),
    'a child added': lambda n, c: add_provider('grandchild', parent=fresh(c)),
}


@pytest.mark.parametrize('write', WRITES)
def test_a_write_steps_its_tree_alone(trees, write):
    node, child, _ = trees
    add_allocation(fresh(node), VCPU=1)
    services.aggregates_replace(provider=fresh(node), aggregate_uuids=[str(uuid.uuid4())])
    assert stepped(lambda: WRITES[write](node, child)) == {node.pk}


def test_a_move_steps_both_trees_and_a_new_root_gets_a_stamp(trees):
    node, child, other = trees
    assert stepped(lambda: services.provider_update(
        provider=fresh(child), parent_provider_uuid=other.uuid,
        allow_reparenting=True)) == {node.pk, other.pk}
    assert stepped(lambda: services.provider_update(
        provider=fresh(child), parent_provider_uuid=None,
        allow_reparenting=True)) == {other.pk, child.pk}
    assert child.pk in read()


def test_a_deleted_root_takes_its_stamp_along(trees):
    *_, other = trees
    assert other.pk in read()
    assert stepped(lambda: services.provider_delete(provider=fresh(other))) == {other.pk}
    assert other.pk not in read()


def test_a_rename_steps_its_tree_and_a_claimed_generation_nothing(trees):
    node, child, _ = trees
    assert stepped(lambda: services.provider_update(provider=fresh(child), name='renamed')) == {
        node.pk}
    assert stepped(lambda: services.claim_generation(fresh(node))) == set()


def test_classes_and_traits_step_the_catalogue(trees):
    assert stepped(lambda: services.resource_class_create(name='CUSTOM_GOLD')) == {
        stamps.CATALOGUE}
    assert stepped(lambda: Trait.objects.create(name='CUSTOM_SILVER')) == {stamps.CATALOGUE}


def test_every_watched_table_has_its_triggers_after_the_migrations(db):
    tables = {w.table for w in [*stamps.WATCHED, *allocation_ledger.STAMPED]}
    with connection.cursor() as cursor:
        if connection.vendor == 'sqlite':
            cursor.execute("SELECT tbl_name FROM sqlite_master WHERE type = 'trigger' "
                           "AND name LIKE 'tree_stamps_%'")
        elif connection.vendor == 'postgresql':
            cursor.execute("SELECT event_object_table FROM information_schema.triggers "
                           "WHERE trigger_name LIKE 'tree_stamps_%'")
        else:
            cursor.execute("SELECT event_object_table FROM information_schema.triggers "
                           "WHERE trigger_schema = DATABASE() "
                           "AND trigger_name LIKE 'tree_stamps_%'")
        assert {table for (table,) in cursor.fetchall()} == tables
