"""The orphan audit (`manage.py placement_audit`, allocations.audit): each
kind of orphan, built on its own, is found and nothing else; a clean cloud
with migrations on two trees and instances on a shared pool has nothing to
report; --delete removes only the orphans it names, as the API would
(generations bumped, events written), and its dry run changes nothing."""
import json
import random
import re
import uuid

import pytest
from django.core.management import CommandError
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from allocations import audit
from allocations import services as allocation_services
from allocations import status
from allocations.management.commands import placement_audit
from allocations.models import Allocation
from allocations.models import Consumer
from placement_site import exceptions
from providers import ledger
from providers import services
from providers.models import Event
from providers.models import Inventory
from providers.models import ResourceProvider
from tests.support.factories import add_provider
from tests.support.orphans import POOL_AGGREGATE
from tests.support.orphans import allocate
from tests.support.orphans import build_cloud
from tests.support.orphans import build_orphans
from tests.support.orphans import fresh
from tests.support.orphans import live_file
from tests.support.orphans import remove_inventory_behind_placements_back
from tests.support.orphans import run
from tests.support.orphans import written_long_ago
from tests.support.state import unchanged


@pytest.fixture
def cloud(db):
    return build_cloud()


def found(live=None, listed_at=None):
    """{finding key: rows} of every finding with rows."""
    listed_at = listed_at or timezone.now()
    listed = {finding.key: finding.listed(finding.rows)
              for finding in audit.findings(live, listed_at)}
    return {key: rows for key, rows in listed.items() if rows}


def consumers_of(rows):
    return sorted(row['consumer_uuid'] for row in rows)


# ---- a clean cloud ------------------------------------------------------------------------

def test_a_clean_cloud_has_nothing_to_report(cloud, tmp_path):
    """Migrations on two trees, an instance moving, disks on a shared pool:
    all legitimate."""
    _rps, instances, migrations = cloud
    assert found(set(instances)) == {}
    code, output = run('--live', live_file(tmp_path, instances), '--format', 'json')
    report = json.loads(output)
    assert code == 0 and report['code'] == 0
    assert [(f['finding'], f['count']) for f in report['findings']] == [
        ('several_trees', 0), ('without_inventory', 0), ('without_owner', 0),
        ('over_capacity', 0), ('not_live', 0)]
    assert report['live_list']['servers'] == len(instances)
    code, output = run('--live', live_file(tmp_path, instances), '--delete', '--yes')
    assert code == 0 and 'Nothing found.' in output and 'nothing.' in output


# ---- each orphan kind on its own ------------------------------------------------------------

def test_an_instance_on_two_trees_is_found_and_a_migration_is_not(cloud):
    rps, _instances, _migrations = cloud
    doubled = allocate({rps['numa']: {'VCPU': 1}, rps['cn2']: {'VCPU': 1}})
    untyped = allocate({rps['cn1']: {'MEMORY_MB': 64}, rps['cn2']: {'MEMORY_MB': 64}},
                       consumer_type=None)
    rows = found()
    assert list(rows) == ['several_trees']
    assert consumers_of(rows['several_trees']) == sorted([doubled, untyped])
    by_uuid = {row['consumer_uuid']: row for row in rows['several_trees']}
    assert by_uuid[doubled]['trees'] == 2 and by_uuid[doubled]['consumer_type'] == 'INSTANCE'
    assert by_uuid[untyped]['consumer_type'] == 'unknown'


def test_allocations_whose_inventory_is_gone_are_found_row_by_row(cloud):
    rps, instances, _migrations = cloud
    remove_inventory_behind_placements_back(rps['cn2'], 'DISK_GB')
    rows = found()
    assert list(rows) == ['without_inventory']
    (row,) = rows['without_inventory']
    assert (row['consumer_uuid'], row['provider_uuid'], row['resource_class'], row['used']) == \
        (instances[1], rps['cn2'].uuid, 'DISK_GB', 10)
    # placement_status reads the same selector.
    assert status.check_allocations_without_inventory().code == status.Code.FAILURE


def test_consumers_with_an_empty_project_or_user_are_found(cloud):
    rps, _instances, _migrations = cloud
    no_project = allocate({rps['cn2']: {'VCPU': 1}}, project='')
    no_user = allocate({rps['cn2']: {'VCPU': 1}}, user='')
    rows = found()
    assert list(rows) == ['without_owner']
    assert consumers_of(rows['without_owner']) == sorted([no_project, no_user])


def test_usage_over_capacity_is_found_as_placement_status_finds_it(cloud):
    rps, _instances, _migrations = cloud
    # Accepted with a warning, as OpenStack Placement accepts it.
    services.inventories_replace(provider=fresh(rps['cn2']), inventories={
        'VCPU': {'total': 2}, 'MEMORY_MB': {'total': 4096}, 'DISK_GB': {'total': 100}})
    rows = found()
    assert list(rows) == ['over_capacity']
    (row,) = rows['over_capacity']
    assert (row['provider_uuid'], row['resource_class'], row['used'], row['capacity']) == \
        (rps['cn2'].uuid, 'VCPU', 3, 2.0)
    assert status.check_over_capacity().code == status.Code.WARNING


def test_instances_missing_from_the_live_list_are_found(cloud):
    rps, instances, migrations = cloud
    gone = allocate({rps['cn2']: {'VCPU': 1}})
    untyped = allocate({rps['cn2']: {'VCPU': 1}}, consumer_type=None)
    written_long_ago()
    just_made = allocate({rps['cn2']: {'VCPU': 1}})   # the list may not show it yet
    rows = found(set(instances))
    assert list(rows) == ['not_live']
    (row,) = rows['not_live']
    assert (row['consumer_uuid'], row['allocations']) == (gone, 1)
    assert untyped not in consumers_of(rows['not_live'])
    assert not set(migrations) & set(consumers_of(rows['not_live']))
    # Once the margin has passed, the newer one is judged too.
    later = timezone.now() + audit.LIVE_LIST_MARGIN * 2
    assert consumers_of(found(set(instances), later)['not_live']) == sorted([gone, just_made])


def test_a_consumer_rewritten_since_the_list_was_taken_is_not_judged(cloud):
    rps, instances, _migrations = cloud
    listed_at = timezone.now()
    allocate({rps['cn2']: {'VCPU': 1}}, consumer=instances[1], generation=1)   # just now
    live = {instances[0], instances[2]}
    assert 'not_live' not in found(live, listed_at + audit.LIVE_LIST_MARGIN / 2)
    assert consumers_of(found(live,
                              listed_at + audit.LIVE_LIST_MARGIN * 2)['not_live']) == \
        [instances[1]]


def test_the_audit_costs_a_query_per_finding_whatever_the_cloud(cloud):
    rps, instances, _migrations = cloud

    def queries():
        with CaptureQueriesContext(connection) as captured:
            found(set(instances))
        return len(captured)
    before = queries()
    for _ in range(10):
        allocate({rps['cn1']: {'MEMORY_MB': 1}, rps['cn2']: {'MEMORY_MB': 1}})
        allocate({rps['cn2']: {'DISK_GB': 1}}, project='')
    written_long_ago()
    remove_inventory_behind_placements_back(rps['cn2'], 'DISK_GB')
    assert queries() == before == len(audit.findings(set(instances), timezone.now()))


# ---- the live list --------------------------------------------------------------------------

def test_the_live_list_is_read_from_a_file_or_standard_input(cloud, tmp_path, monkeypatch):
    rps, instances, _migrations = cloud
    gone = allocate({rps['cn2']: {'VCPU': 1}})
    written_long_ago()
    text = (f'# servers\n{instances[0].upper()}\n\n{instances[1].replace("-", "")}  \n'
            f'{instances[2]}\n')
    for args, stdin in [(['--live', '-'], text),
                        (['--live', live_file(tmp_path, [text])], None)]:
        code, output = run(*args, '--format', 'json', stdin=stdin, monkeypatch=monkeypatch)
        report = json.loads(output)
        assert code == 1
        rows = {f['finding']: f['rows'] for f in report['findings']}['not_live']
        assert consumers_of(rows) == [gone]


def test_a_cloud_sized_live_list_is_one_query(cloud):
    """A list of 100,000 servers is bound as one value (PostgreSQL's array,
    SQLite's JSON list; MySQL's IN list is built by the client): no limit
    on SQL variables stands in the way."""
    rps, instances, _migrations = cloud
    gone = allocate({rps['cn2']: {'VCPU': 1}})
    written_long_ago()
    live = {str(uuid.uuid4()) for _ in range(100_000)} | set(instances)
    (finding,) = [f for f in audit.findings(live, timezone.now()) if f.key == 'not_live']
    with CaptureQueriesContext(connection) as captured:
        assert consumers_of(finding.listed(finding.rows)) == [gone]
    assert len(captured) == 1


@pytest.mark.parametrize('text, error', [
    ('not-a-uuid\n', "line 1 is not a uuid: 'not-a-uuid'"),
    ('# nothing\n\n', 'the list names no server'),
])
def test_a_live_list_that_is_not_a_list_of_uuids_is_refused(cloud, tmp_path, text, error):
    """A list of names or an empty one would make every instance an orphan."""
    with unchanged(), pytest.raises(CommandError, match=error) as refused:
        run('--live', live_file(tmp_path, [text]), '--delete', '--yes')
    assert refused.value.returncode == 2


def test_yes_without_delete_is_refused(cloud):
    with pytest.raises(CommandError) as refused:
        run('--yes')
    assert refused.value.returncode == 2


# ---- --delete -------------------------------------------------------------------------------

@pytest.fixture
def orphans(cloud):
    return build_orphans(cloud)


def generations():
    return (dict(ResourceProvider.objects.values_list('uuid', 'generation')),
            dict(Consumer.objects.values_list('uuid', 'generation')))


def test_delete_alone_is_a_dry_run_that_changes_nothing(orphans, tmp_path):
    live = live_file(tmp_path, orphans['live'])
    with unchanged():
        code, output = run('--live', live, '--delete', '--format', 'json')
    plan = json.loads(output)['delete']
    assert code == 1 and plan['dry_run'] is True
    assert [(s['consumer_uuid'], s['allocations'], s['outcome']) for s in plan['consumers']] == [
        (orphans['gone'], 'all', 'would delete'),
        (orphans['instances'][1], 'without inventory', 'would delete')]
    with unchanged():
        code, output = run('--live', live, '--delete')
    assert 'Dry run: --delete --yes would delete' in output and orphans['gone'] in output


def test_delete_yes_removes_only_the_orphans_as_the_api_would(orphans, tmp_path):
    rps, gone, trimmed = orphans['rps'], orphans['gone'], orphans['instances'][1]
    providers_before, consumers_before = generations()
    allocations_before = Allocation.objects.count()
    last_event = Event.objects.order_by('-pk').values_list('pk', flat=True).first() or 0
    code, output = run('--live', live_file(tmp_path, orphans['live']), '--delete', '--yes',
                       '--format', 'json')
    report = json.loads(output)
    # The reported kinds remain: over capacity, on two trees, without owner.
    assert code == 1 and report['code'] == 1
    assert [(s['consumer_uuid'], s['outcome'], s['removed'])
            for s in report['delete']['consumers']] == [(gone, 'deleted', 2),
                                                        (trimmed, 'deleted', 1)]
    # The instance and its two allocations, and the disk row alone.
    assert not Consumer.objects.filter(uuid=gone).exists()
    assert Allocation.objects.count() == allocations_before - 3
    assert sorted(Allocation.objects.filter(consumer__uuid=trimmed).values_list(
        'resource_class__name', 'used')) == [('MEMORY_MB', 256), ('VCPU', 1)]
    providers_after, consumers_after = generations()
    assert consumers_after[trimmed] == consumers_before[trimmed] + 1
    # Every provider they left, and only those, stepped on.
    stepped = {uuid_ for uuid_, g in providers_after.items() if g != providers_before[uuid_]}
    assert stepped == {rps['numa'].uuid, rps['nfs'].uuid, rps['cn2'].uuid}
    assert all(providers_after[u] == providers_before[u] + 1 for u in stepped)
    assert {u: g for u, g in consumers_after.items() if u != trimmed} == \
        {u: g for u, g in consumers_before.items() if u not in (gone, trimmed)}
    # An event each, as the API's writes record them, attributed to the command.
    events = {e.consumer_uuid: e for e in Event.objects.filter(pk__gt=last_event)
              .prefetch_related('providers')}
    assert set(events) == {gone, trimmed}
    assert (events[gone].event_type, events[gone].consumer_generation_after) == \
        ('allocation.delete', None)
    assert (events[trimmed].event_type, events[trimmed].consumer_generation_after) == \
        ('allocation.update', consumers_after[trimmed])
    assert {p.provider_uuid: (p.generation_before, p.generation_after)
            for p in events[gone].providers.all()} == {
        u: (providers_before[u], providers_after[u]) for u in (rps['numa'].uuid, rps['nfs'].uuid)}
    assert {e.user_id for e in events.values()} == {placement_audit.ACTOR_USER}
    # What is left is what --delete never removes.
    assert sorted(found(set(orphans['live']))) == ['over_capacity', 'several_trees',
                                                   'without_owner']


def test_delete_yes_exits_0_once_all_it_found_is_deleted(cloud, tmp_path):
    rps, instances, _migrations = cloud
    allocate({rps['cn2']: {'VCPU': 1}})
    written_long_ago()
    live = live_file(tmp_path, instances)
    code, output = run('--live', live, '--delete', '--yes')
    assert code == 0 and 'Deleted' in output and 'Everything found was deleted.' in output
    assert run('--live', live)[0] == 0


def test_a_consumer_written_since_the_audit_read_it_keeps_its_allocations(orphans):
    """Between the audit's read and the delete nova wrote the instance
    again (it was not gone after all): left, with the reason."""
    rps, gone = orphans['rps'], orphans['gone']
    report = [(f, f.listed(f.rows)) for f in audit.findings(set(orphans['live']),
                                                            timezone.now())]
    plan = placement_audit.planned(report)
    generation = Consumer.objects.get(uuid=gone).generation
    allocation_services.allocations_replace([allocation_services.ConsumerAllocations(
        consumer_uuid=gone, allocations={rps['cn2'].uuid: {'VCPU': 2}}, project_id='p',
        user_id='u', generation=generation, consumer_type='INSTANCE')])
    placement_audit.delete(plan)
    step = plan['consumers'][0]
    assert (step['consumer_uuid'], step['outcome']) == (gone, 'left')
    assert 'consumer generation conflict' in step['reason']
    assert list(Allocation.objects.filter(consumer__uuid=gone).values_list(
        'resource_class__name', 'used')) == [('VCPU', 2)]
    assert placement_audit.exit_code({'findings': [], 'delete': plan}) == 1


def test_inventory_restored_since_the_audit_read_it_keeps_the_allocation(orphans):
    rps, trimmed = orphans['rps'], orphans['instances'][1]
    generation = Consumer.objects.get(uuid=trimmed).generation
    services.inventories_replace(provider=fresh(rps['cn2']),
                                 inventories={'VCPU': {'total': 8}, 'MEMORY_MB': {'total': 4096},
                                              'DISK_GB': {'total': 100}})
    with unchanged():
        assert allocation_services.allocations_remove_orphaned(
            consumer_uuid=trimmed, generation=generation, lacking_inventory_only=True) == 0
    with unchanged(), pytest.raises(exceptions.ConsumerGenerationConflict):
        allocation_services.allocations_remove_orphaned(
            consumer_uuid=trimmed, generation=generation - 1)


# The inventory rules an allocation was made under, moved since (each
# accepted by Placement with the allocations in place): {provider: its
# inventories now}. `victim` holds 4 VCPU on cn2 (7 used there) and 20
# DISK_GB on the pool (40 used there).
RULES_MOVED = {
    'max_unit lowered': {'cn2': {'VCPU': {'total': 8, 'max_unit': 2}}},
    'min_unit raised': {'cn2': {'VCPU': {'total': 8, 'min_unit': 6}}},
    'step_size changed': {'cn2': {'VCPU': {'total': 8, 'step_size': 3}}},
    'total lowered under used': {'cn2': {'VCPU': {'total': 2}}},
    'on another provider': {'nfs': {'DISK_GB': {'total': 1000, 'max_unit': 10}}},
    'all at once': {'cn2': {'VCPU': {'total': 6, 'reserved': 1, 'min_unit': 5, 'max_unit': 5,
                                     'step_size': 5}},
                    'nfs': {'DISK_GB': {'total': 30, 'min_unit': 25}}},
}


def move_the_rules(rps, moved):
    for name, changed in moved.items():
        current = {inv.resource_class.name: {'total': inv.total}
                   for inv in Inventory.objects.filter(resource_provider=rps[name])
                   .select_related('resource_class')}
        services.inventories_replace(provider=fresh(rps[name]), inventories={**current, **changed})


@pytest.mark.parametrize('moved', RULES_MOVED.values(), ids=RULES_MOVED.keys())
def test_removing_an_orphan_keeps_allocations_the_rules_moved_away_from(cloud, moved):
    """An allocation without inventory goes, and the consumer's others stay
    as they are, though the inventory's min_unit, max_unit, step_size or
    capacity would refuse them today: a repair that only removes is not
    judged by rules the allocations it keeps predate."""
    rps, instances, _migrations = cloud
    kept = {'cn2': {'VCPU': 4, 'MEMORY_MB': 1024}, 'nfs': {'DISK_GB': 20}}
    victim = allocate({rps['cn2']: {**kept['cn2'], 'DISK_GB': 10}, rps['nfs']: kept['nfs']})
    written_long_ago()
    remove_inventory_behind_placements_back(rps['cn2'], 'DISK_GB')   # and instances[1]'s disk
    move_the_rules(rps, moved)
    inventories = list(Inventory.objects.order_by('pk').values())
    generation = Consumer.objects.get(uuid=victim).generation
    last_event = Event.objects.order_by('-pk').values_list('pk', flat=True).first()

    code, output = run('--delete', '--yes', '--format', 'json')
    steps = {s['consumer_uuid']: s for s in json.loads(output)['delete']['consumers']}
    assert {u: (steps[u]['outcome'], steps[u].get('removed'), steps[u].get('reason'))
            for u in (victim, instances[1])} == {u: ('deleted', 1, None)
                                                 for u in (victim, instances[1])}
    held = {}
    for provider, class_name, used in Allocation.objects.filter(consumer__uuid=victim).values_list(
            'resource_provider__uuid', 'resource_class__name', 'used'):
        held.setdefault(provider, {})[class_name] = used
    assert held == {rps[name].uuid: amounts for name, amounts in kept.items()}
    assert Consumer.objects.get(uuid=victim).generation == generation + 1
    (event,) = Event.objects.filter(pk__gt=last_event, consumer_uuid=victim)
    assert event.event_type == 'allocation.update'
    assert event.payload['allocations'] == {rps[name].uuid: {'resources': amounts}
                                            for name, amounts in kept.items()}
    # The repair changed no rule, and left nothing without inventory.
    assert list(Inventory.objects.order_by('pk').values()) == inventories
    left = found()
    assert 'without_inventory' not in left
    assert code == (1 if left else 0)


def test_a_repair_still_judges_what_it_does_not_keep_unchanged(cloud):
    """The rules are set aside only for an allocation the consumer holds
    now, at the amount it holds: asked for more, or for something new, the
    write is judged as any other."""
    rps, _instances, _migrations = cloud
    victim = allocate({rps['cn2']: {'VCPU': 4, 'MEMORY_MB': 1024}})
    move_the_rules(rps, {'cn2': {'VCPU': {'total': 8, 'max_unit': 2}},
                         'numa': {'VCPU': {'total': 8, 'max_unit': 2}}})
    generation = Consumer.objects.get(uuid=victim).generation

    def repair(allocations):
        allocation_services.allocations_replace([allocation_services.ConsumerAllocations(
            consumer_uuid=victim, allocations=allocations, project_id='p', user_id='u',
            generation=generation, consumer_type='INSTANCE', repair=True)])
    for allocations in ({rps['cn2'].uuid: {'VCPU': 3, 'MEMORY_MB': 1024}},      # changed
                        {rps['cn2'].uuid: {'VCPU': 4, 'MEMORY_MB': 1024},
                         rps['numa'].uuid: {'VCPU': 4}}):                        # something new
        with unchanged(), pytest.raises(exceptions.InvalidAllocationConstraintsViolated):
            repair(allocations)
    with unchanged(), pytest.raises(exceptions.InvalidAllocationCapacityExceeded):
        repair({rps['cn2'].uuid: {'VCPU': 4, 'MEMORY_MB': 1024}, rps['cn1'].uuid: {
            'MEMORY_MB': 4096}})
    repair({rps['cn2'].uuid: {'VCPU': 4}})   # what it keeps, as it holds it
    assert list(Allocation.objects.filter(consumer__uuid=victim).values_list(
        'resource_class__name', 'used')) == [('VCPU', 4)]


# ---- output ---------------------------------------------------------------------------------

def test_the_table_names_each_finding_and_its_rows(orphans, tmp_path):
    code, output = run('--live', live_file(tmp_path, orphans['live']))
    assert code == 1
    summary = output.split('\n\n')[0].splitlines()
    assert summary[0] == 'Placement Audit'
    counts = {cells[0]: cells[1] for line in summary[4:-1]
              for cells in [[c.strip() for c in line.strip('|').split('|')]]}
    assert counts == {'Consumers on more than one tree': '1', 'Allocations without inventory': '1',
                      'Consumers without project or user': '1', 'Usage over capacity': '1',
                      'Instances not in the live list': '1'}
    assert 'Instances not in the live list: 1' in output and orphans['gone'] in output
    assert 'Findings remain (exit code 1)' in output
    # Without a live list the page of findings says how to give one.
    code, output = run()
    assert code == 1 and '(give the live servers with --live FILE)' in output


def test_json_lists_every_finding_with_its_rows(orphans, tmp_path):
    code, output = run('--live', live_file(tmp_path, orphans['live']), '--format', 'json')
    report = json.loads(output)
    by_key = {f['finding']: f for f in report['findings']}
    assert code == report['code'] == 1
    assert {key: f['count'] for key, f in by_key.items()} == {
        'several_trees': 1, 'without_inventory': 1, 'without_owner': 1, 'over_capacity': 1,
        'not_live': 1}
    assert by_key['not_live']['rows'][0]['consumer_uuid'] == orphans['gone']
    assert by_key['over_capacity']['rows'][0]['resource_class'] == 'MEMORY_MB'
    assert by_key['several_trees']['deleted_by_delete'] is None
    assert by_key['not_live']['deleted_by_delete']
    assert 'delete' not in report


# ---- the dashboards' audit page: consumers on several trees sought among the ledger's -------

COMMITTED = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def several_trees(from_ledger):
    (finding,) = [f for f in audit.findings(None, timezone.now(), from_ledger=from_ledger)
                  if f.key == audit.SEVERAL_TREES]
    return finding.count(), finding.listed(finding.rows)


@COMMITTED
@pytest.mark.slow
def test_the_ledgers_consumers_on_several_trees_are_the_databases(staff):
    """held_on_several_trees (a fold over the ledger's trees, moved by the
    trees each write touched) narrows the search of the audit page to
    exactly what a grouping of every allocation finds, on random committed
    writes: claims on one tree, two or a share, migrations, moves back to
    one tree, deletes, a provider starting or ceasing to share, a
    consumer's type changed, inventory taken away."""
    rng = random.Random(7)
    rps, instances, migrations = build_cloud()
    cn3 = add_provider('cn3', inventories={'VCPU': {'total': 64}, 'MEMORY_MB': {'total': 8192}},
                       aggregates=[POOL_AGGREGATE])
    rps['cn3'] = cn3
    services.inventories_replace(provider=fresh(rps['numa']), inventories={
        'VCPU': {'total': 1000}})
    consumers = list(instances + migrations)
    held = [({rps['numa']: {'VCPU': 1}}), ({rps['cn2']: {'MEMORY_MB': 8}}),
            ({rps['cn3']: {'VCPU': 1}}), ({rps['nfs']: {'DISK_GB': 1}}),
            ({rps['cn1']: {'MEMORY_MB': 8}})]

    def claim(consumer=None):
        parts = rng.sample(held, rng.randint(1, 3))
        wanted = {rp: amounts for part in parts for rp, amounts in part.items()}
        generation = None
        if consumer is not None:
            generation = Consumer.objects.get(uuid=consumer).generation
        return allocate(wanted, consumer=consumer, generation=generation,
                        consumer_type=rng.choice(['INSTANCE', 'MIGRATION', None]))

    def toggle_sharing(rp):
        traits = set(ResourceProvider.objects.get(pk=rp.pk).traits.values_list('name', flat=True))
        traits ^= {'MISC_SHARES_VIA_AGGREGATE'}
        services.traits_replace(provider=fresh(rp), trait_names=sorted(traits))

    seen = set()
    for step in range(60):
        action = rng.random()
        if action < 0.45 or not consumers:
            consumers.append(claim())
        elif action < 0.65:
            claim(rng.choice(consumers))                 # moved, or spread again
        elif action < 0.8:
            gone = consumers.pop(rng.randrange(len(consumers)))
            allocation_services.allocations_delete(consumer_uuid=gone)
        elif action < 0.9:
            toggle_sharing(rng.choice([rps['nfs'], rps['cn3']]))
        else:
            Consumer.objects.filter(uuid=rng.choice(consumers)).update(
                consumer_type=None)                      # as a hand edit would
        expected = several_trees(from_ledger=False)
        assert several_trees(from_ledger=True) == expected, step
        seen.add(expected[0])
        if step % 15 == 14:   # and the page, in its read snapshot
            html = staff.get('/ui/audit/?finding=several_trees').content.decode()
            assert re.search(r'<tr data-finding="several_trees"[^>]*>\s*<td>.*?</td>\s*'
                             rf'<td class="num">{expected[0]}</td>', html, re.S), step
            assert sorted(re.findall(r'<td data-column="consumer_uuid">(?:<a[^>]*>)?([^<]*)',
                                     html)) == sorted(row['consumer_uuid'] for row in expected[1])
    assert len(seen) > 3   # the answer moved
    assert ('audit: trees held',) in ledger.ledger(connection.alias).folds
