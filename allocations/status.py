"""`manage.py placement_status`: is this cloud's database sound?

Like OpenStack Placement's `placement-status upgrade check`: each check
reads the database (or the configuration) and answers Success, Warning or
Failure with details that name what is wrong (how many, a few examples by
name and uuid) and how to fix it. The command's exit code is the worst
result: 0 all well, 1 a warning to look into, 2 a failure to fix first.

The checks read both apps (providers and their trees, inventories,
consumers and allocations), so they live here. Each one costs a fixed
number of queries whatever the number of providers or consumers: a
count (a window count over the same query, or an aggregate beside it) and
the first few examples, so only a few rows that are wrong leave the
database.
"""
import difflib
import enum
import json
import re
import textwrap
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import os_resource_classes
import os_traits
from django.conf import settings
from django.db import DatabaseError
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.models import Count
from django.db.models import Exists
from django.db.models import F
from django.db.models import OuterRef
from django.db.models import Q
from django.db.models import Window
from oslo_policy import policy as oslo_policy

from allocations import audit
from allocations import usage_totals
from allocations.models import Allocation
from allocations.models import Consumer
from allocations.models import Project
from allocations.models import User
from placement_site import policy
from providers import rules
from providers.models import Inventory
from providers.models import ResourceClass
from providers.models import ResourceProvider
from providers.models import Trait

EXAMPLES = 5  # rows named in a check's details; the rest are counted


class Code(enum.IntEnum):
    """A check's result, and the command's exit code (the worst one)."""
    SUCCESS = 0
    WARNING = 1
    FAILURE = 2

    @property
    def label(self):
        return self.name.capitalize()


@dataclass(frozen=True)
class Result:
    code: Code
    details: str | None = None


def success():
    return Result(Code.SUCCESS)


# ---- counting and naming what is wrong -----------------------------------------------

def _matches(rows):
    """(how many rows the query matched, the first few) from a query whose
    rows carry `match_count`, the window count over all its matches."""
    rows = list(rows[:EXAMPLES])
    return (rows[0]['match_count'] if rows else 0), rows


def _counted(queryset, *fields):
    """`queryset`'s rows as dicts of `fields`, each with `match_count` (one query)."""
    return queryset.values(*fields).annotate(match_count=Window(Count('*'))).order_by('pk')


def _n(count, singular, plural=None):
    return f'{count:,} {singular if count == 1 else plural or singular + "s"}'


def _listed(count, examples):
    """'a, b and c' or 'a, b, c, d, e and 7 more'."""
    more = count - len(examples)
    if more > 0:
        return f'{", ".join(examples)} and {more:,} more'
    if len(examples) == 1:
        return examples[0]
    return f'{", ".join(examples[:-1])} and {examples[-1]}'


def _described(findings, noun):
    """'3 providers have ...: a, b, c; 1 provider ...' of [(count, words,
    examples)]."""
    return '; '.join(f'{_n(count, noun)} {words}: {_listed(count, examples)}'
                     for count, words, examples in findings)


def _with_problems(queryset, problems, fields, example):
    """[(count, words, examples)] of each (words for one, words for several,
    Q) in `problems` that some of `queryset`'s rows have (a query each);
    example(row) names a row of `fields`."""
    findings = []
    for one, several, problem in problems:
        count, rows = _matches(_counted(queryset.filter(problem), *fields))
        if count:
            findings.append((count, one if count == 1 else several, [example(r) for r in rows]))
    return findings


def _verdict(findings, noun, code, message):
    """Success without findings, else `code` saying message(findings
    described)."""
    if not findings:
        return success()
    return Result(code, message(_described(findings, noun)))


def _provider(name, uuid):
    return f'{name} ({uuid})'


def _amount(value):
    return f'{value:,.0f}' if float(value).is_integer() else f'{value:,.2f}'


# ---- the checks ----------------------------------------------------------------------

def check_migrations():
    """Every migration of every installed app is applied."""
    executor = MigrationExecutor(connection)
    conflicts = executor.loader.detect_conflicts()
    if conflicts:
        named = '; '.join(f'{app}: {", ".join(sorted(names))}'
                          for app, names in sorted(conflicts.items()))
        return Result(Code.FAILURE, (
            f'Conflicting migrations (more than one leaf in an app): {named}. '
            'The installed code is inconsistent: reinstall it before migrating.'))
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    pending = [f'{migration.app_label}.{migration.name}' for migration, _backwards in plan]
    if not pending:
        return success()
    return Result(Code.FAILURE, (
        f'{_n(len(pending), "migration is", "migrations are")} not applied: '
        f'{_listed(len(pending), pending[:EXAMPLES])}. The service expects the '
        'schema migrations make, and the other checks may fail or mislead until then. '
        'Run `manage.py migrate`.'))


def check_over_capacity():
    """No inventory holds more than its capacity, (total - reserved) *
    allocation_ratio. Placement accepts an inventory change that leaves
    allocations above the new capacity, so this is a warning."""
    over = Inventory.objects.over_capacity()
    totals = over.aggregate(inventories=Count('pk'),
                            providers=Count('resource_provider', distinct=True))
    if not totals['inventories']:
        return success()
    rows = over.values('resource_provider__name', 'resource_provider__uuid',
                       'resource_class__name', 'used', 'total', 'reserved',
                       'allocation_ratio').order_by('pk')[:EXAMPLES]
    examples = [
        f'{_provider(row["resource_provider__name"], row["resource_provider__uuid"])} '
        f'{row["resource_class__name"]} {row["used"]:,} used of '
        f'{_amount(rules.capacity(row["total"], row["reserved"], row["allocation_ratio"]))}'
        for row in rows]
    return Result(Code.WARNING, (
        f'{_n(totals["providers"], "provider is", "providers are")} over capacity in '
        f'{_n(totals["inventories"], "inventory", "inventories")}: '
        f'{_listed(totals["inventories"], examples)}. An inventory change (a smaller '
        'total, more reserved, a lower allocation_ratio) left allocations above the '
        'new capacity; no new allocation of that class fits there until enough are '
        'freed. Move or delete consumers on these providers, or raise the inventory '
        '(PUT /resource_providers/{uuid}/inventories).'))


def check_used_counts():
    """Every inventory's `used`, which every capacity check reads, is the
    sum of its allocations (the database's triggers keep it so)."""
    wrong = usage_totals.miscounted(connection)
    if not wrong:
        return success()
    examples = [f'inventory {pk}: used {used:,}, its allocations {actual:,}'
                for pk, used, actual in wrong[:EXAMPLES]]
    return Result(Code.FAILURE, (
        f'{_n(len(wrong), "inventory counts", "inventories count")} usage that is not '
        f'the sum of {"its" if len(wrong) == 1 else "their"} allocations: '
        f'{_listed(len(wrong), examples)}. The triggers that keep the count were dropped '
        '(a table rebuilt by a migration, or rows written with triggers off), so claims '
        'are checked against wrong numbers. Run `manage.py recount_used`: it reinstalls '
        'the triggers and recounts every inventory.'))


def check_consumers_without_allocations():
    """Every consumer holds allocations: Placement deletes a consumer with
    its last allocation."""
    empty = Consumer.objects.filter(~Exists(Allocation.objects.filter(consumer_id=OuterRef('pk'))))
    count, rows = _matches(_counted(empty, 'uuid', 'generation'))
    if not count:
        return success()
    examples = [f'{row["uuid"]} (generation {row["generation"]})' for row in rows]
    return Result(Code.WARNING, (
        f'{_n(count, "consumer holds", "consumers hold")} no allocations: '
        f'{_listed(count, examples)}. Placement deletes a consumer with its last '
        'allocation, so these were left by a writer that was interrupted or by damage '
        'to the database. When nothing is still writing their allocations, delete each '
        'one by writing it empty allocations at its generation: PUT /allocations/{uuid} '
        'with {"allocations": {}, "consumer_generation": N, "project_id": ..., '
        '"user_id": ...} at microversion 1.28 or later (and "consumer_type" from 1.38).'))


def check_allocations_without_inventory():
    """Every allocation is of a class its provider has inventory of."""
    orphaned = audit.lacking_inventory()
    totals = orphaned.aggregate(allocations=Count('pk'),
                                providers=Count('resource_provider', distinct=True),
                                consumers=Count('consumer', distinct=True))
    if not totals['allocations']:
        return success()
    rows = orphaned.values('resource_provider__name', 'resource_provider__uuid',
                           'resource_class__name', 'used', 'consumer__uuid',
                           ).order_by('pk')[:EXAMPLES]
    examples = [
        f'{_provider(row["resource_provider__name"], row["resource_provider__uuid"])} '
        f'{row["resource_class__name"]}={row["used"]:,} for consumer {row["consumer__uuid"]}'
        for row in rows]
    return Result(Code.FAILURE, (
        f'{_n(totals["allocations"], "allocation")} of '
        f'{_n(totals["consumers"], "consumer")} on '
        f'{_n(totals["providers"], "provider")} {"is" if totals["allocations"] == 1 else "are"} '
        'of a resource class the provider has no inventory of: '
        f'{_listed(totals["allocations"], examples)}. Placement refuses '
        'to delete inventory in use, so the database was changed behind it (or a '
        'reshape was cut short); capacity and usages are wrong until this is fixed. '
        'Restore the inventory (PUT /resource_providers/{uuid}/inventories), or move '
        'the consumers\' allocations off it (PUT /allocations/{consumer_uuid}).'))


def _exists(model, column):
    """A row of `model` has the id the outer row's `column` holds (a join
    would be made inner by Django, and miss exactly the rows looked for)."""
    return Exists(model.objects.filter(pk=OuterRef(column)))


# What makes a provider's place in its tree inconsistent: (what one such
# provider does, what several do, which providers).
_TREE_PROBLEMS = [
    ('has no root provider', 'have no root provider',
     Q(root_provider_id__isnull=True)),
    ('names a root provider that does not exist', 'name a root provider that does not exist',
     Q(root_provider_id__isnull=False) & ~_exists(ResourceProvider, 'root_provider_id')),
    ('has a root that is not its own root', 'have a root that is not its own root',
     Q(root_provider__uuid__isnull=False)
     & ~Q(root_provider__root_provider_id=F('root_provider_id'))),
    ('has no parent but another provider as root', 'have no parent but another provider as root',
     Q(parent_provider_id__isnull=True, root_provider_id__isnull=False)
     & ~Q(root_provider_id=F('pk'))),
    ('names a parent provider that does not exist', 'name a parent provider that does not exist',
     Q(parent_provider_id__isnull=False) & ~_exists(ResourceProvider, 'parent_provider_id')),
    ("has a root other than its parent's", "have a root other than their parent's",
     Q(parent_provider__uuid__isnull=False, root_provider_id__isnull=False)
     & ~Q(parent_provider__root_provider_id=F('root_provider_id'))),
    # Cycles: _CYCLES_SQL.
]

# Providers that following parents from never leads to the top of a tree
# (a provider without a parent, or whose parent is missing, reported above):
# those in a parent cycle and those below one. Recursive SQL, as PostgreSQL
# and SQLite both write it; one query whatever the depth.
_CYCLES_SQL = '''
    WITH RECURSIVE in_a_tree(id) AS (
        SELECT id FROM {table}
        WHERE parent_provider_id IS NULL
           OR NOT EXISTS (SELECT 1 FROM {table} parent WHERE parent.id = {table}.parent_provider_id)
        UNION
        SELECT child.id FROM {table} child JOIN in_a_tree ON child.parent_provider_id = in_a_tree.id
    )
    SELECT uuid, name, COUNT(*) OVER () FROM {table}
    WHERE NOT EXISTS (SELECT 1 FROM in_a_tree WHERE in_a_tree.id = {table}.id)
    ORDER BY id LIMIT %s
'''


def check_provider_trees():
    """Every provider's root is a root of its own, the same as its parent's
    root, and following parents from it reaches that root."""
    findings = _with_problems(ResourceProvider.objects, _TREE_PROBLEMS, ('uuid', 'name'),
                              lambda row: _provider(row['name'], row['uuid']))
    table = connection.ops.quote_name(ResourceProvider._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(_CYCLES_SQL.format(table=table), [EXAMPLES])
        rows = cursor.fetchall()
    if rows:
        count = rows[0][2]
        findings.append((count, 'is in a parent cycle, or below one' if count == 1
                         else 'are in a parent cycle, or below one',
                         [_provider(name, uuid) for uuid, name, _count in rows]))
    return _verdict(findings, 'provider', Code.FAILURE, lambda described: (
        f'Provider trees are inconsistent. {described}. The API never writes such '
        'trees: the database was changed behind it. Tree searches (in_tree, nested '
        'candidates, root_required) give wrong answers for them. Set each provider\'s '
        'parent_provider_id and root_provider_id in the database so that a provider '
        'without a parent is its own root and every other one has its parent\'s root.'))


def check_incomplete_consumers():
    """Every consumer has a real project and user: not the placeholders
    written for clients before microversion 1.8, nor a missing record."""
    placeholder = (Q(project__external_id=settings.PLACEMENT_INCOMPLETE_CONSUMER_PROJECT_ID)
                   | Q(user__external_id=settings.PLACEMENT_INCOMPLETE_CONSUMER_USER_ID))
    missing = (~_exists(Project, 'project_id')
               | ~_exists(User, 'user_id'))
    placeholders = (f'({settings.PLACEMENT_INCOMPLETE_CONSUMER_PROJECT_ID} / '
                    f'{settings.PLACEMENT_INCOMPLETE_CONSUMER_USER_ID})')
    findings = _with_problems(Consumer.objects, [
        (f'carries the incomplete-consumer project or user {placeholders}',
         f'carry the incomplete-consumer project or user {placeholders}', placeholder),
        ('names a project or user that does not exist',
         'name a project or user that does not exist', missing),
    ], ('uuid',), lambda row: row['uuid'])
    return _verdict(findings, 'consumer', Code.WARNING, lambda described: (
        f'Incomplete consumers: {described}. Their usages count for no real project '
        'or user (GET /usages, quotas). Write each one\'s allocations again with its '
        'project_id and user_id (PUT /allocations/{uuid}, microversion 1.8 or later; '
        'for instances, `nova-manage placement heal_allocations` does it).'))


def check_standard_names():
    """The standard resource classes and traits of the installed
    os-resource-classes and os-traits are all in the database."""
    standard_classes = list(os_resource_classes.STANDARDS)
    standard_traits = sorted(os_traits.get_traits())
    known_classes = set(ResourceClass.objects.filter(
        name__in=standard_classes).values_list('name', flat=True))
    known_traits = set(Trait.objects.filter(
        name__in=standard_traits).values_list('name', flat=True))
    missing_classes = [name for name in standard_classes if name not in known_classes]
    missing_traits = [name for name in standard_traits if name not in known_traits]
    if not missing_classes and not missing_traits:
        return success()
    missing = [f'{_n(len(names), "standard " + kind, "standard " + plural)} '
               f'({_listed(len(names), names[:EXAMPLES])})'
               for kind, plural, names in [('resource class', 'resource classes', missing_classes),
                                           ('trait', 'traits', missing_traits)] if names]
    return Result(Code.WARNING, (
        f'The database lacks {" and ".join(missing)} that the installed '
        f'os-resource-classes {metadata.version("os-resource-classes")} and os-traits '
        f'{metadata.version("os-traits")} define: requests naming them get 400. '
        'Run `manage.py sync_standards`.'))


# `rule:NAME` in a check string refers to another rule.
_RULE_REFERENCE = re.compile(r'\brule:([^\s()]+)')


def check_policy_file():
    """PLACEMENT_POLICY_FILE, when set, is found, parses, and names only
    rules the service defines."""
    configured = settings.PLACEMENT_POLICY_FILE
    if not configured:
        return success()
    try:
        # The service's own enforcer, so the file is looked for where the
        # service looks (an absolute path, or oslo.policy's config dirs).
        enforcer = policy.get_enforcer()
    except Exception as error:  # noqa: BLE001 - whatever oslo.policy raises, the service fails too
        return Result(Code.FAILURE, (
            f'The policy file {configured} cannot be loaded ({_error(error)}): every '
            'request the service authorizes fails until it is fixed.'))
    if not enforcer.policy_path:
        return Result(Code.FAILURE, (
            f'PLACEMENT_POLICY_FILE names {configured}, which is not found: the service '
            'ignores it and applies the default rules. Give the file\'s absolute path.'))
    path = Path(enforcer.policy_path)
    try:
        rules = oslo_policy.parse_file_contents(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as error:
        return Result(Code.FAILURE, (
            f'The policy file {path} cannot be read ({_error(error)}). Fix it or unset '
            'PLACEMENT_POLICY_FILE.'))
    if not isinstance(rules, dict) or not all(
            isinstance(name, str) and isinstance(rule, str) for name, rule in rules.items()):
        return Result(Code.FAILURE, (
            f'The policy file {path} is not a mapping of rule names to check strings '
            '(e.g. "placement:resource_providers:list": "role:reader").'))
    defined = {rule.name for rule in policy.rule_defaults()}
    unknown = sorted(set(rules) - defined)
    undefined = sorted({name for rule in rules.values() for name in _RULE_REFERENCE.findall(rule)}
                       - defined - set(rules))
    if not unknown and not undefined:
        return success()
    problems = []
    if unknown:
        named = [_with_suggestion(name, defined) for name in unknown]
        problems.append(f'it sets {_n(len(unknown), "rule")} the service does not define, '
                        f'{"which changes" if len(unknown) == 1 else "which change"} nothing: '
                        f'{_listed(len(unknown), named[:EXAMPLES])}')
    if undefined:
        named = [_with_suggestion(name, defined) for name in undefined]
        problems.append(f'its check strings refer to {_n(len(undefined), "rule")} defined '
                        'nowhere, so those checks never pass: '
                        f'{_listed(len(undefined), named[:EXAMPLES])}')
    return Result(Code.WARNING, (
        f'The policy file {path}: {"; ".join(problems)}. Use the rule names the service '
        'defines (placement_site/policy.py, e.g. placement:resource_providers:list), and '
        'correct or remove these entries.'))


def _with_suggestion(name, defined):
    close = difflib.get_close_matches(name, defined, n=1, cutoff=0.85)
    return f'{name} (did you mean {close[0]}?)' if close else name


def _error(error):
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


# The checks in the order they are reported: migrations first, since the
# others read the schema they make.
CHECKS = [
    ('Migrations', check_migrations),
    ('Providers Over Capacity', check_over_capacity),
    ('Inventory Used Counts', check_used_counts),
    ('Consumers Without Allocations', check_consumers_without_allocations),
    ('Allocations Without Inventory', check_allocations_without_inventory),
    ('Provider Trees', check_provider_trees),
    ('Incomplete Consumers', check_incomplete_consumers),
    ('Standard Resource Classes and Traits', check_standard_names),
    ('Policy File', check_policy_file),
]


def run_checks(checks=None):
    """[(check name, Result)] for every check (or those given). A check
    that cannot run (a table missing on an unmigrated database) is a
    failure saying why; the others still run."""
    results = []
    for name, check in CHECKS if checks is None else checks:
        try:
            result = check()
        except DatabaseError as error:
            result = Result(Code.FAILURE, f'The check could not run: {_error(error)}.')
        results.append((name, result))
    return results


def worst(results):
    return max((result.code for _name, result in results), default=Code.SUCCESS)


# ---- output --------------------------------------------------------------------------

TITLE = 'Upgrade Check Results'
DETAILS_WIDTH = 60


def as_table(results):
    """The table `placement-status upgrade check` prints: one cell per check
    with its name, result and details (wrapped at 60 columns)."""
    cells = []
    for name, result in results:
        # Long words (a policy file's path) are kept whole: the table widens.
        details = textwrap.wrap(result.details or 'None', DETAILS_WIDTH, subsequent_indent='  ',
                                break_long_words=False, break_on_hyphens=False)
        cells.append([f'Check: {name}', f'Result: {result.code.label}',
                      f'Details: {details[0]}', *details[1:]])
    width = max(len(line) for cell in [[TITLE], *cells] for line in cell)
    rule = f'+{"-" * (width + 2)}+'
    lines = [rule, f'| {TITLE.ljust(width)} |', rule]
    for cell in cells:
        lines += [f'| {line.ljust(width)} |' for line in cell] + [rule]
    return '\n'.join(lines)


def as_json(results):
    return json.dumps({
        'code': int(worst(results)),
        'result': worst(results).label,
        'checks': [{'check': name, 'result': result.code.label, 'code': int(result.code),
                    'details': result.details} for name, result in results],
    }, indent=2)
