"""The books' change log (providers.changes): every write to what the
books read changes the version, whatever writes it, after the whole
migration chain on every database; results remembered against it are
served until the next change, never inside a transaction, and the
dashboards' and GET /capacity's figures stay those of the moment."""
import uuid

import pytest
from django.contrib.auth.models import User as Account
from django.db import connection, transaction
from django.db.models import F
from django.test import Client

from allocations import ledger as allocation_ledger
from allocations import services as allocation_services
from allocations import usage_totals
from allocations.models import Allocation, Consumer, Project
from providers import changes, services
from providers.models import BooksChange, Inventory, ProviderAggregate, ResourceProvider
from tests.conftest import add_allocation, add_provider

pytestmark = pytest.mark.django_db


@pytest.fixture
def node(db):
    return add_provider('node', inventories={'VCPU': {'total': 16}, 'DISK_GB': {'total': 500}})


def changed_by(write):
    before = changes.version()
    write()
    return changes.version() != before


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
    before = changes.version()
    with transaction.atomic():
        with pytest.raises(RuntimeError), transaction.atomic():
            Inventory.objects.filter(resource_provider=node).update(reserved=1)
            raise RuntimeError('rolled back')
        Inventory.objects.filter(resource_provider=node).update(reserved=2)
    assert changes.version() != before


@COMMITTED
def test_a_generation_bump_changes_nothing_the_books_read(node):
    assert not changed_by(lambda: ResourceProvider.objects.filter(pk=node.pk).update(
        generation=F('generation') + 1))


def test_the_version_reads_a_window_of_the_log_and_old_rows_are_pruned(db, monkeypatch):
    monkeypatch.setattr(changes, 'WINDOW', 3)
    monkeypatch.setattr(changes, 'KEEP', 6)
    monkeypatch.setattr(changes, '_last_pruned', [-changes.PRUNE_SECONDS])
    BooksChange.objects.bulk_create([BooksChange() for _ in range(10)])
    newest = BooksChange.objects.order_by('-id').values_list('id', flat=True)[0]
    assert changes.version() == (newest, 3)
    assert BooksChange.objects.filter(id__lt=newest - 6).count() == 0
    # A row drawn before the newest but committed after it changes the version.
    BooksChange.objects.filter(id=newest - 1).delete()
    before = changes.version()
    BooksChange.objects.create(id=newest - 1)
    assert changes.version() != before


class Counted:
    def __init__(self):
        self.calls = 0

    def __call__(self):
        self.calls += 1
        return self.calls


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_result_is_remembered_until_the_books_change():
    node = add_provider('node', inventories={'VCPU': {'total': 16}})
    compute = Counted()
    assert changes.remembered('default', 'k', compute) == 1
    assert changes.remembered('default', 'k', compute) == 1
    assert changes.remembered('default', 'other', compute) == 2
    add_allocation(node, VCPU=1)
    assert changes.remembered('default', 'k', compute) == 3
    assert changes.remembered('default', 'k', compute) == 3


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_inside_a_transaction_nothing_is_remembered_or_served():
    compute = Counted()
    changes.remembered('default', 'k', compute)
    with transaction.atomic():
        assert changes.remembered('default', 'k', compute) == 2
        assert changes.remembered('default', 'k', compute) == 3
    assert changes.remembered('default', 'k', compute) == 1


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_capacity_read_again_after_a_claim_counts_the_claim(api):
    node = add_provider('node', inventories={'VCPU': {'total': 8}, 'MEMORY_MB': {'total': 8192}})

    def read():
        (group,) = api.get('/capacity?resources=VCPU:2,MEMORY_MB:1024').body['groups']
        return group['fits'], group['resources']['VCPU']['used']

    assert read() == read() == (4, 0)
    owner = str(uuid.uuid4())
    allocation_services.allocations_replace([allocation_services.ConsumerAllocations(
        consumer_uuid=owner, allocations={node.uuid: {'VCPU': 2, 'MEMORY_MB': 1024}},
        project_id='p', user_id='u', generation=None)])
    assert read() == (3, 2)
    allocation_services.allocations_delete(consumer_uuid=owner)
    assert read() == (4, 0)


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
            *changes.WATCHED, *usage_totals.OWNERS_WATCHED, *allocation_ledger.CHANGES_WATCHED}


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_usage_page_read_again_after_an_owner_changes_shows_the_new_owner(api):
    node = add_provider('node', inventories={'VCPU': {'total': 8}})
    owner = str(uuid.uuid4())
    Account.objects.create_user('operator', password='pw', is_staff=True)
    staff = Client()
    assert staff.login(username='operator', password='pw')

    def projects():
        rows = staff.get('/ui/usage/').context['by_project']
        return {row['key'][0]: row['usages']['VCPU'] for row in rows}

    assert api.allocate(owner, {node.uuid: {'VCPU': 2}}, project='alpha').status_code == 204
    assert projects() == projects() == {'alpha': 2}
    assert api.allocate(owner, {node.uuid: {'VCPU': 2}}, project='beta',
                        generation=1).status_code == 204
    assert projects() == {'beta': 2}


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_explorer_read_again_after_a_claim_shows_the_claim(api):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    node = add_provider('node', inventories={'VCPU': {'total': 8}})
    Account.objects.create_user('operator', password='pw', is_staff=True)
    staff = Client()
    assert staff.login(username='operator', password='pw')

    def explored():
        with CaptureQueriesContext(connection) as captured:
            context = staff.get('/ui/explorer/?resources=VCPU:2&limit=5').context
        used = [summary['resources']['VCPU']['used'] for _, _, summary in context['summaries']]
        steps = [(s.constraint, s.remaining) for s in context['funnels'][0].steps]
        return used, steps, len(captured)

    used, steps, first = explored()
    again = explored()
    assert (used, steps) == ([0], [('2 VCPU', 1)]) == again[:2]
    assert again[2] < first   # the search not run again: nothing it reads changed
    assert api.allocate(str(uuid.uuid4()), {node.uuid: {'VCPU': 6}}).status_code == 204
    assert explored()[:2] == ([6], [('2 VCPU', 1)])
    assert api.allocate(str(uuid.uuid4()), {node.uuid: {'VCPU': 2}}).status_code == 204
    assert explored()[:2] == ([], [('2 VCPU', 0)])
