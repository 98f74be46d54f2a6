"""The books' change log (providers.change_log): every write to what the
books read changes the version, whatever writes it, after the whole
migration chain on every database."""
import uuid

import pytest
from django.db import connection
from django.db import transaction
from django.db.models import F

from allocations import ledger as allocation_ledger
from allocations import usage_totals
from allocations.models import Allocation
from allocations.models import Consumer
from allocations.models import Project
from providers import change_log
from providers import services
from providers.models import BooksChange
from providers.models import Inventory
from providers.models import ProviderAggregate
from providers.models import ResourceProvider
from tests.support.factories import add_allocation
from tests.support.factories import add_provider

pytestmark = pytest.mark.django_db


@pytest.fixture
def node(db):
    return add_provider('node', inventories={'VCPU': {'total': 16}, 'DISK_GB': {'total': 500}})


def changed_by(write):
    before = change_log.version()
    write()
    return change_log.version() != before


def fresh(provider):
    return ResourceProvider.objects.get(pk=provider.pk)


WRITES = {
    'an inventory added': lambda n: services.inventory_add(
        provider=fresh(n), resource_class='MEMORY_MB', record={'total': 1024}),
    'an inventory updated': lambda n: services.inventory_update(
        provider=fresh(n), resource_class='VCPU',
        record={'total': 32}),
    'an inventory deleted': lambda n: services.inventory_delete(
        provider=fresh(n), resource_class='DISK_GB'),
    'an inventory row written directly': lambda n: Inventory.objects.filter(
        resource_provider=n).update(reserved=1),
    'a claim': lambda n: add_allocation(n, VCPU=2),
    'an allocation row deleted directly': lambda n: Allocation.objects.filter(
        resource_provider=n).delete(),
    'a provider joining a pool': lambda n: services.aggregates_replace(
        provider=fresh(n), aggregate_uuids=[str(uuid.uuid4())]),
    'a provider leaving its pools': lambda n: ProviderAggregate.objects.filter(
        resource_provider=n).delete(),
    'a trait': lambda n: services.traits_replace(
        provider=fresh(n),
        trait_names=['MISC_SHARES_VIA_AGGREGATE']),
    'a provider renamed': lambda n: services.provider_update(provider=fresh(n), name='renamed'),
    'a consumer given to another project': lambda n: Consumer.objects.update(
        project=Project.objects.get_or_create(external_id='another')[0]),
    'a provider moved under another': lambda n: services.provider_update(
        provider=fresh(n),
        parent_provider_uuid=add_provider('new parent').uuid, allow_reparenting=True),
}


# Committed writes, as readers see them: PostgreSQL logs one row per
# transaction, so a version read inside the writing transaction may not move.
COMMITTED = pytest.mark.django_db(transaction=True, serialized_rollback=True)


@COMMITTED
@pytest.mark.parametrize('write', WRITES)
def test_every_write_the_books_read_changes_the_version(node, write):
    add_allocation(node, VCPU=1)
    services.aggregates_replace(provider=fresh(node),
                                aggregate_uuids=[str(uuid.uuid4())])
    assert changed_by(lambda: WRITES[write](node))


@COMMITTED
def test_a_write_after_a_rolled_back_savepoint_still_changes_the_version(node):
    """PostgreSQL notes the transaction that already logged its change:
    a savepoint rolled back takes the note with its row."""
    before = change_log.version()
    with transaction.atomic():
        with pytest.raises(RuntimeError), transaction.atomic():
            Inventory.objects.filter(resource_provider=node).update(reserved=1)
            raise RuntimeError('rolled back')
        Inventory.objects.filter(resource_provider=node).update(reserved=2)
    assert change_log.version() != before


@COMMITTED
def test_a_generation_bump_changes_nothing_the_books_read(node):
    assert not changed_by(lambda: ResourceProvider.objects.filter(pk=node.pk).update(
        generation=F('generation') + 1))


def test_the_version_reads_a_window_of_the_log_and_old_rows_are_pruned(db, monkeypatch):
    monkeypatch.setattr(change_log, 'WINDOW', 3)
    monkeypatch.setattr(change_log, 'KEEP', 6)
    monkeypatch.setattr(change_log, '_last_pruned', [-change_log.PRUNE_SECONDS])
    BooksChange.objects.bulk_create([BooksChange() for _ in range(10)])
    newest = BooksChange.objects.order_by('-id').values_list('id', flat=True)[0]
    assert change_log.version() == (newest, 3)
    assert BooksChange.objects.filter(id__lt=newest - 6).count() == 0
    # A row drawn before the newest but committed after it changes the version.
    BooksChange.objects.filter(id=newest - 1).delete()
    before = change_log.version()
    BooksChange.objects.create(id=newest - 1)
    assert change_log.version() != before


def test_every_watched_table_has_its_triggers_after_the_migrations(db):
    with connection.cursor() as cursor:
        if connection.vendor == 'sqlite':
            cursor.execute("SELECT tbl_name FROM sqlite_master WHERE type = 'trigger' "
                           "AND name LIKE 'books_changed_%'")
        elif connection.vendor == 'postgresql':
            cursor.execute("SELECT event_object_table FROM information_schema.triggers "
                           "WHERE trigger_name = 'books_changed'")
        else:
            cursor.execute("SELECT event_object_table FROM information_schema.triggers "
                           "WHERE trigger_schema = DATABASE() "
                           "AND trigger_name LIKE 'books_changed_%'")
        assert {table for (table,) in cursor.fetchall()} == {
            *change_log.WATCHED, *usage_totals.OWNERS_WATCHED, *allocation_ledger.CHANGES_WATCHED}
