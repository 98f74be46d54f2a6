"""`manage.py placement_status`: each broken state, built on its own, gives
its check's result, the right exit code and a message that names what is
wrong and how to fix it; a healthy cloud passes every check.

States the API and the schema never allow (a missing root, a dangling
project) are written with raw SQL and put back before the test ends, so
the database's deferred foreign keys never see them at commit."""
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from allocations import status
from allocations.models import Allocation
from allocations.models import Consumer
from allocations.models import Project
from allocations.models import User
from providers import services
from providers.models import Inventory
from providers.models import ResourceClass
from providers.models import ResourceProvider
from providers.models import Trait
from tests.support.api import new_uuid
from tests.support.factories import add_allocation
from tests.support.factories import add_provider
from tests.support.state import command_result

ROOT = Path(__file__).resolve().parents[2]
CHECK_NAMES = [name for name, _check in status.CHECKS]
PLACEHOLDER = '00000000-0000-0000-0000-000000000000'


def run(*args):
    """(exit code, output) of `manage.py placement_status ARGS` in-process."""
    return command_result('placement_status', *args)


def results():
    return dict(status.run_checks())


def assert_only(name, code):
    """The check `name` answers `code`, every other one Success; its details."""
    found = results()
    assert {check: result.code for check, result in found.items()} == {
        check: (code if check == name else status.Code.SUCCESS) for check in CHECK_NAMES}
    return found[name].details


def table_cells(table):
    """[(check, result, details)] read back from the table, details unwrapped."""
    cells, current = [], None
    for line in table.splitlines()[3:]:
        if line.startswith('+'):
            cells.append(current)
            continue
        text = line[2:-2].rstrip()
        if text.startswith('Check: '):
            current = [text[len('Check: '):], None, None]
        elif text.startswith('Result: '):
            current[1] = text[len('Result: '):]
        elif text.startswith('Details: '):
            current[2] = text[len('Details: '):]
        else:
            current[2] += ' ' + text.strip()
    return [(check, result, None if details == 'None' else details)
            for check, result, details in cells]


@pytest.fixture
def broken(db):
    """`broken(model, pk, column, value)`: set a column with raw SQL,
    whatever the model's constraints say; the old value is put back at the
    end of the test, before the foreign keys are checked."""
    undo = []

    def breaking(model, pk, column, value):
        table = connection.ops.quote_name(model._meta.db_table)
        column = connection.ops.quote_name(column)
        with connection.cursor() as cursor:
            cursor.execute(f'SELECT {column} FROM {table} WHERE id = %s', [pk])
            (old,) = cursor.fetchone()
            # MySQL checks foreign keys at once, not at commit: off for this write.
            unchecked = connection.vendor == 'mysql'
            if unchecked:
                cursor.execute('SET FOREIGN_KEY_CHECKS = 0')
            cursor.execute(f'UPDATE {table} SET {column} = %s WHERE id = %s', [value, pk])
            if unchecked:
                cursor.execute('SET FOREIGN_KEY_CHECKS = 1')
        undo.append((table, column, old, pk))

    yield breaking
    with connection.cursor() as cursor:
        for table, column, old, pk in reversed(undo):
            cursor.execute(f'UPDATE {table} SET {column} = %s WHERE id = %s', [old, pk])


def set_inventory(provider, inventories):
    """Replace the provider's inventories at its current generation; as in
    Placement, allocations above the new capacity do not stop it."""
    provider.refresh_from_db()
    services.inventories_replace(provider=provider, inventories=inventories)


def missing_id(model):
    """An id no row of `model` has."""
    return (model.objects.order_by('-pk').values_list('pk', flat=True).first() or 0) + 1000


# ---- a healthy cloud --------------------------------------------------------------------

def test_a_healthy_cloud_passes_every_check(small_cloud):
    assert {name: result.code for name, result in results().items()} == {
        name: status.Code.SUCCESS for name in CHECK_NAMES}
    code, table = run()
    assert code == 0
    assert table_cells(table) == [(name, 'Success', None) for name in CHECK_NAMES]
    code, answer = run('--format', 'json')
    assert code == 0
    assert json.loads(answer) == {
        'code': 0, 'result': 'Success',
        'checks': [{'check': name, 'result': 'Success', 'code': 0, 'details': None}
                   for name in CHECK_NAMES]}


def test_the_table_is_placement_status_upgrade_checks(small_cloud):
    _code, table = run()
    lines = table.splitlines()
    width = len(lines[0])
    assert lines[0] == '+' + '-' * (width - 2) + '+'
    assert lines[1].startswith('| Upgrade Check Results ') and lines[1].endswith(' |')
    assert all(len(line) == width for line in lines)
    assert lines[3:7] == [f'| {text}'.ljust(width - 1) + '|' for text in [
        'Check: Migrations', 'Result: Success', 'Details: None']] + [lines[0]]


# ---- providers over capacity ----------------------------------------------------------------

def test_an_inventory_shrunk_below_its_allocations_is_a_warning(small_cloud):
    cn1 = small_cloud['cn1']
    # Placement accepts this (PLACEMENT_REFUSE_OVERCOMMITTED_INVENTORY is off).
    set_inventory(cn1, {
        'VCPU': {'total': 2, 'reserved': 1, 'allocation_ratio': 1.5}, 'DISK_GB': {'total': 100}})
    details = assert_only('Providers Over Capacity', status.Code.WARNING)
    assert details.startswith(
        f'1 provider is over capacity in 1 inventory: cn1 ({cn1.uuid}) VCPU 3 used of 1.50. ')
    assert 'raise the inventory (PUT /resource_providers/{uuid}/inventories)' in details
    code, table = run()
    assert code == 1
    assert ('Providers Over Capacity', 'Warning', details) in table_cells(table)


def test_every_over_capacity_inventory_is_counted_and_a_few_named(db):
    nodes = [add_provider(f'cn{i}', inventories={'VCPU': {'total': 4}}) for i in range(7)]
    for node in nodes:
        add_allocation(node, VCPU=4)
        set_inventory(node, {'VCPU': {'total': 3}})
    details = results()['Providers Over Capacity'].details
    assert details.startswith('7 providers are over capacity in 7 inventories: '
                              f'cn0 ({nodes[0].uuid}) VCPU 4 used of 3, ')
    assert f'cn4 ({nodes[4].uuid}) VCPU 4 used of 3 and 2 more. ' in details
    assert 'cn5' not in details


# ---- consumers without allocations ------------------------------------------------------------

def test_a_consumer_left_without_allocations_is_a_warning_until_deleted(api, small_cloud):
    consumer = Consumer.objects.get()
    Allocation.objects.filter(consumer=consumer).delete()  # an interrupted writer's leftover
    details = assert_only('Consumers Without Allocations', status.Code.WARNING)
    assert details.startswith(
        f'1 consumer holds no allocations: {consumer.uuid} (generation 1). ')
    assert run()[0] == 1
    # The fix the details give works.
    response = api.put(f'/allocations/{consumer.uuid}', {
        'allocations': {}, 'consumer_generation': 1, 'project_id': 'p', 'user_id': 'u'},
        version='1.28')
    assert response.status_code == 204, response.content
    assert not Consumer.objects.exists()
    assert run()[0] == 0


# ---- allocations without inventory ----------------------------------------------------------

def test_an_allocation_of_a_class_without_inventory_is_a_failure(small_cloud):
    cn1 = small_cloud['cn1']
    consumer = Consumer.objects.get()
    # Placement refuses to delete inventory in use; only the database can.
    with connection.cursor() as cursor:
        cursor.execute('DELETE FROM inventories WHERE resource_provider_id = %s '
                       'AND resource_class_id = %s',
                       [cn1.pk, ResourceClass.objects.get(name='DISK_GB').pk])
    details = assert_only('Allocations Without Inventory', status.Code.FAILURE)
    assert details.startswith(
        '1 allocation of 1 consumer on 1 provider is of a resource class the provider has no '
        f'inventory of: cn1 ({cn1.uuid}) DISK_GB=40 for consumer {consumer.uuid}. ')
    assert 'Restore the inventory' in details
    code, table = run()
    assert code == 2
    assert ('Allocations Without Inventory', 'Failure', details) in table_cells(table)


# ---- provider trees -----------------------------------------------------------------------

def tree_details():
    details = assert_only('Provider Trees', status.Code.FAILURE)
    assert details.startswith('Provider trees are inconsistent. ')
    assert details.endswith('every other one has its parent\'s root.')
    assert run()[0] == 2
    return details


MISSING = object()  # the id of no provider

# A fault of one provider of the small cloud and what the details say of it:
# (provider, column, set to None, MISSING or the id of the provider named,
# what follows the title at the start of the details, what else they say).
# {cn3} stands for 'cn3 (its uuid)'.
TREE_FAULTS = {
    'a provider without root': (
        'cn3', 'root_provider_id', None, '1 provider has no root provider: {cn3}. ', ()),
    'the children of a provider without root too': (
        'cn2', 'root_provider_id', None, '', (
            '1 provider has no root provider: {cn2}; ',
            '1 provider has a root that is not its own root: {cn2-numa0}; ',
            "1 provider has a root other than its parent's: {cn2-numa0}. ")),
    'a root that does not exist': (
        'cn3', 'root_provider_id', MISSING,
        '1 provider names a root provider that does not exist: {cn3}; '
        '1 provider has no parent but another provider as root: {cn3}. ', ()),
    'a root that is not its own root': (
        'cn2', 'root_provider_id', 'cn1', '', (
            '1 provider has a root that is not its own root: {cn2-numa0}',
            '1 provider has no parent but another provider as root: {cn2}',
            "1 provider has a root other than its parent's: {cn2-numa0}")),
    'a parent that does not exist': (
        'cn2-numa0', 'parent_provider_id', MISSING,
        '1 provider names a parent provider that does not exist: {cn2-numa0}. ', ()),
    "a root other than the parent's": (
        'cn2-numa0', 'root_provider_id', 'cn2-numa0',
        "1 provider has a root other than its parent's: {cn2-numa0}. ", ()),
}


@pytest.mark.parametrize('fault', TREE_FAULTS)
def test_a_broken_provider_tree_is_a_failure(small_cloud, broken, fault):
    name, column, value, starts, says = TREE_FAULTS[fault]
    if value is MISSING:
        value = missing_id(ResourceProvider)
    elif value is not None:
        value = small_cloud[value].pk
    broken(ResourceProvider, small_cloud[name].pk, column, value)
    named = {key: f'{rp.name} ({rp.uuid})' for key, rp in small_cloud.items()}
    details = tree_details()
    assert details.startswith('Provider trees are inconsistent. ' + starts.format(**named))
    for part in says:
        assert part.format(**named) in details


def test_a_parent_cycle_is_a_failure(small_cloud, broken):
    numa = small_cloud['cn2-numa0']
    nic = add_provider('cn2-numa0-nic', parent=numa)
    nic_port = add_provider('cn2-numa0-nic-port', parent=nic)
    # Every root agrees with its parent's, so only walking the parents sees it.
    broken(ResourceProvider, numa.pk, 'parent_provider_id', nic.pk)
    assert tree_details().startswith(
        'Provider trees are inconsistent. 3 providers are in a parent cycle, or below one: '
        f'cn2-numa0 ({numa.uuid}), cn2-numa0-nic ({nic.uuid}) and '
        f'cn2-numa0-nic-port ({nic_port.uuid}). ')


# ---- incomplete consumers -----------------------------------------------------------------

def test_a_consumer_written_before_1_8_is_incomplete_until_rewritten(api, small_cloud):
    cn3, consumer = small_cloud['cn3'], new_uuid()
    old_style = {'allocations': [{'resource_provider': {'uuid': cn3.uuid},
                                  'resources': {'VCPU': 1}}]}
    assert api.put(f'/allocations/{consumer}', old_style, version='1.7').status_code == 204
    details = assert_only('Incomplete Consumers', status.Code.WARNING)
    assert details.startswith(
        'Incomplete consumers: 1 consumer carries the incomplete-consumer project or user '
        f'({PLACEHOLDER} / {PLACEHOLDER}): {consumer}. ')
    assert 'nova-manage placement heal_allocations' in details
    assert run()[0] == 1
    # The fix the details give works.
    assert api.allocate(consumer, {cn3.uuid: {'VCPU': 1}}, project='proj', user='user',
                        generation=1).status_code == 204
    assert run()[0] == 0


def test_a_consumer_of_a_missing_project_is_incomplete(small_cloud, broken):
    consumer = Consumer.objects.get()
    broken(Consumer, consumer.pk, 'project_id', missing_id(Project))
    details = assert_only('Incomplete Consumers', status.Code.WARNING)
    assert details.startswith('Incomplete consumers: 1 consumer names a project or user that '
                              f'does not exist: {consumer.uuid}. ')


# ---- standard names -----------------------------------------------------------------------

def test_missing_standard_names_are_a_warning_until_synced(db):
    Trait.objects.filter(name__in=['HW_CPU_X86_AVX2', 'COMPUTE_VOLUME_MULTI_ATTACH']).delete()
    ResourceClass.objects.filter(name='PCPU').delete()
    details = assert_only('Standard Resource Classes and Traits', status.Code.WARNING)
    assert re.match(
        r'The database lacks 1 standard resource class \(PCPU\) and 2 standard traits '
        r'\(COMPUTE_VOLUME_MULTI_ATTACH and HW_CPU_X86_AVX2\) that the installed '
        r'os-resource-classes [\d.]+ and os-traits [\d.]+ define: requests naming them '
        r'get 400\. Run `manage\.py sync_standards`\.$', details), details
    assert run()[0] == 1
    call_command('sync_standards', stdout=io.StringIO())
    assert run()[0] == 0


# ---- the policy file -----------------------------------------------------------------------

@pytest.fixture
def policy_file(settings, tmp_path):
    def writing(text, name='policy.yaml'):
        path = tmp_path / name
        path.write_text(text)
        settings.PLACEMENT_POLICY_FILE = str(path)
        return path
    return writing


def test_a_policy_file_of_known_rules_passes(db, policy_file):
    policy_file('"placement:resource_providers:list": "role:reader"\n'
                '"admin_api": "role:admin or role:operator"\n'
                '"placement:usages": "rule:admin_api"\n')
    assert results()['Policy File'] == status.success()


def test_a_policy_file_naming_unknown_rules_is_a_warning(db, policy_file):
    path = policy_file('"placement:resource_provider:list": "role:reader"\n'
                       '"placement:usages": "rule:admin_apii or role:reader"\n'
                       '"placement:nothing_like_it": "@"\n')
    details = assert_only('Policy File', status.Code.WARNING)
    assert details == (
        f'The policy file {path}: it sets 2 rules the service does not define, which '
        'change nothing: placement:nothing_like_it and placement:resource_provider:list '
        '(did you mean placement:resource_providers:list?); its check strings refer to 1 '
        'rule defined nowhere, so those checks never pass: admin_apii (did you mean '
        'admin_api?). Use the rule names the service defines (placement_site/policy.py, '
        'e.g. placement:resource_providers:list), and correct or remove these entries.')
    assert run()[0] == 1


@pytest.mark.parametrize('text, error', [
    ('"placement:usages": [unclosed\n', 'cannot be loaded'),
    ('- placement:usages\n- role:reader\n', 'cannot be loaded'),
    ('"placement:usages":\n  nested: mapping\n', 'is not a mapping of rule names'),
])
def test_an_invalid_policy_file_is_a_failure(db, policy_file, text, error):
    path = policy_file(text)
    details = assert_only('Policy File', status.Code.FAILURE)
    assert details.startswith(f'The policy file {path} ')
    assert error in details
    assert run()[0] == 2


def test_a_policy_file_that_is_not_found_is_a_failure(db, settings, tmp_path):
    settings.PLACEMENT_POLICY_FILE = str(tmp_path / 'missing.yaml')
    details = assert_only('Policy File', status.Code.FAILURE)
    assert details.startswith(f'PLACEMENT_POLICY_FILE names {tmp_path}/missing.yaml, which is '
                              'not found: the service ignores it and applies the default rules.')


# ---- migrations -----------------------------------------------------------------------------

PODS_UNMIGRATED = ('2 migrations are not applied: pods.0001_initial and '
                   'pods.0002_mysql_binary_collation_one_open_binding. The service expects the '
                   'schema migrations make, and the other checks may fail or mislead until '
                   'then. Run `manage.py migrate`.')


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_an_unapplied_migration_is_a_failure():
    call_command('migrate', 'pods', 'zero', verbosity=0)
    try:
        details = assert_only('Migrations', status.Code.FAILURE)
        code, table = run()
    finally:
        call_command('migrate', 'pods', verbosity=0)
    assert details == PODS_UNMIGRATED
    assert code == 2
    assert ('Migrations', 'Failure', details) in table_cells(table)
    assert run()[0] == 0


# ---- output --------------------------------------------------------------------------------

def test_json_says_what_the_table_says(small_cloud, api, policy_file, broken):
    set_inventory(small_cloud['cn1'], {'VCPU': {'total': 1}, 'DISK_GB': {'total': 100}})
    broken(ResourceProvider, small_cloud['cn3'].pk, 'root_provider_id', None)
    policy_file('"placement:resource_provider:list": "role:reader"\n')
    code, table = run()
    json_code, answer = run('--format', 'json')
    answer = json.loads(answer)
    assert code == json_code == answer['code'] == 2
    assert answer['result'] == 'Failure'
    assert table_cells(table) == [(c['check'], c['result'], c['details'])
                                  for c in answer['checks']]
    assert {c['check']: c['result'] for c in answer['checks'] if c['result'] != 'Success'} == {
        'Providers Over Capacity': 'Warning', 'Provider Trees': 'Failure',
        'Policy File': 'Warning'}
    assert all(c['code'] == {'Success': 0, 'Warning': 1, 'Failure': 2}[c['result']]
               for c in answer['checks'])


def test_details_are_wrapped_at_60_columns_keeping_long_words_whole(small_cloud, policy_file):
    set_inventory(small_cloud['cn1'], {'VCPU': {'total': 1}, 'DISK_GB': {'total': 100}})
    path = policy_file('"placement:resource_provider:list": "role:reader"\n',
                       name='a-policy-file-with-a-name-longer-than-sixty-columns.yaml')
    _code, table = run()
    wrapped = [line[2:-2].rstrip().removeprefix('Details: ') for line in table.splitlines()
               if line.startswith(('|  ', '| Details: '))]
    assert len(wrapped) > 10
    assert [line for line in wrapped if len(line) > 60] == [f'  {path}:']


def test_a_check_that_breaks_exits_255_not_a_result(db, monkeypatch):
    def broken_check():
        raise RuntimeError('a bug in a check')
    monkeypatch.setattr(status, 'CHECKS', [*status.CHECKS, ('Broken', broken_check)])
    err = io.StringIO()
    with pytest.raises(SystemExit) as exit:
        call_command('placement_status', stdout=io.StringIO(), stderr=err)
    assert exit.value.code == 255
    assert err.getvalue().startswith('Error:\nTraceback')
    assert 'RuntimeError: a bug in a check' in err.getvalue()


# ---- queries ---------------------------------------------------------------------------------

def broken_cloud(nodes, broken):
    """`nodes` compute nodes with a NUMA child each, every child over
    capacity, and as many empty consumers of the incomplete-consumer
    placeholders; a tree without root, an allocation without inventory and
    a missing standard trait: every check that reads the database finds
    something, more of it the larger the cloud."""
    project = Project.objects.create(external_id=PLACEHOLDER)
    user = User.objects.create(external_id=PLACEHOLDER)
    for i in range(nodes):
        node = add_provider(f'cn{i:03d}', inventories={'DISK_GB': {'total': 100}})
        numa = add_provider(f'cn{i:03d}-numa0', parent=node, inventories={'VCPU': {'total': 4}})
        add_allocation(numa, VCPU=4)
        set_inventory(numa, {'VCPU': {'total': 2}})
        Consumer.objects.create(uuid=new_uuid(), project=project, user=user)
    Inventory.objects.filter(resource_class__name='VCPU').order_by('pk').first().delete()
    broken(ResourceProvider, ResourceProvider.objects.last().pk, 'root_provider_id', None)
    Trait.objects.filter(name='HW_CPU_X86_AVX2').delete()


def queries_per_check():
    counts = {}
    for name, check in status.CHECKS:
        with CaptureQueriesContext(connection) as queries:
            status.run_checks([(name, check)])
        counts[name] = len(queries)
    return counts


@pytest.mark.parametrize('nodes', [3, 30])
def test_each_check_costs_the_same_queries_at_any_size(db, broken, nodes, settings, tmp_path):
    policy = tmp_path / 'policy.yaml'
    policy.write_text('"placement:resource_provider:list": "role:reader"\n')
    settings.PLACEMENT_POLICY_FILE = str(policy)
    broken_cloud(nodes, broken)
    assert {name: result.code for name, result in status.run_checks()} == {
        'Migrations': status.Code.SUCCESS,
        'Providers Over Capacity': status.Code.WARNING,
        'Inventory Used Counts': status.Code.SUCCESS,
        'Consumers Without Allocations': status.Code.WARNING,
        'Allocations Without Inventory': status.Code.FAILURE,
        'Provider Trees': status.Code.FAILURE,
        'Incomplete Consumers': status.Code.WARNING,
        'Standard Resource Classes and Traits': status.Code.WARNING,
        'Policy File': status.Code.WARNING}
    assert queries_per_check() == QUERIES


# Pinned: the same at 3 and 30 compute nodes, with every finding present.
QUERIES = {
    'Migrations': 2,
    'Providers Over Capacity': 2,
    'Inventory Used Counts': 1,
    'Consumers Without Allocations': 1,
    'Allocations Without Inventory': 2,
    'Provider Trees': 7,
    'Incomplete Consumers': 2,
    'Standard Resource Classes and Traits': 2,
    'Policy File': 0,
}


# ---- the real command ------------------------------------------------------------------------

def manage(*args, database):
    env = {k: v for k, v in os.environ.items() if not k.startswith(('DJANGO_', 'PLACEMENT_'))}
    env['DATABASE_URL'] = f'sqlite:///{database}'
    return subprocess.run([sys.executable, 'manage.py', *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120, check=False)


OVERCOMMIT = '''
from providers import services
rp = services.provider_create(name='cn1')
services.inventories_replace(provider=rp, inventories={'VCPU': {'total': 4}})
from allocations import services as allocations
allocations.allocations_replace([allocations.ConsumerAllocations(
    consumer_uuid='2a1c3a4e-2f68-4b7b-9d57-6a2f0c1e9b10', allocations={rp.uuid: {'VCPU': 3}},
    project_id='p', user_id='u', generation=None)])
rp.refresh_from_db()
services.inventories_replace(provider=rp, inventories={'VCPU': {'total': 2}})
'''


@pytest.mark.slow
def test_manage_py_placement_status_exits_with_the_worst_result(tmp_path):
    database = tmp_path / 'placement.sqlite3'
    assert manage('migrate', '-v0', database=database).returncode == 0
    healthy = manage('placement_status', database=database)
    assert healthy.returncode == 0, healthy.stdout + healthy.stderr
    assert table_cells(healthy.stdout) == [(name, 'Success', None) for name in CHECK_NAMES]

    assert manage('shell', '-c', OVERCOMMIT, database=database).returncode == 0
    warned = manage('placement_status', database=database)
    assert warned.returncode == 1, warned.stderr
    cells = table_cells(warned.stdout)
    assert cells[1][:2] == ('Providers Over Capacity', 'Warning')
    assert cells[1][2].startswith('1 provider is over capacity in 1 inventory: cn1 (')
    as_json = manage('placement_status', '--format', 'json', database=database)
    assert as_json.returncode == 1
    assert [(c['check'], c['result'], c['details']) for c in json.loads(as_json.stdout)['checks']
            ] == cells

    assert manage('migrate', 'pods', 'zero', '-v0', database=database).returncode == 0
    failed = manage('placement_status', database=database)
    assert failed.returncode == 2, failed.stderr
    assert table_cells(failed.stdout)[0] == ('Migrations', 'Failure', PODS_UNMIGRATED)
