"""The survey: what the source holds, rows per table, and every problem
in it, found by queries on the source before anything is written. Errors
are rows that cannot be carried exactly (an allocation of a missing
provider, consumer or class, a provider whose root or parent is missing):
the import refuses to start. Warnings are states both services hold and
answer alike, which an operator should still look at (a provider over
capacity, which Placement itself accepts after an inventory change; an
allocation of a class its provider has no inventory of): they are reported
and carried. And the target: what ours holds that an import would collide
with, and emptying it (--replace).
"""
from dataclasses import dataclass

from django.db import connection
from django.db import transaction

from allocations.importer.source import TABLES
from allocations.importer.source import check_revision
from allocations.models import Allocation
from allocations.models import Consumer
from allocations.models import ConsumerType
from allocations.models import Project
from allocations.models import User
from providers.models import Aggregate
from providers.models import Event
from providers.models import EventProvider
from providers.models import Inventory
from providers.models import PoolLabel
from providers.models import ProviderAggregate
from providers.models import ProviderTrait
from providers.models import ResourceClass
from providers.models import ResourceProvider
from providers.models import Trait
from providers.models import UsageSnapshot
from providers.pods.models import Pod
from providers.pods.models import PodBinding

ERROR, WARNING = 'ERROR', 'WARNING'


@dataclass(frozen=True)
class Check:
    """One kind of problem: a query on the source returning one row per
    instance, and how to say it."""
    code: str
    severity: str
    sql: str
    say: str  # formatted with the row's columns by position: {0}, {1}, ...


CHECKS = (
    Check('allocation-provider-missing', ERROR,
          'SELECT a.id, a.consumer_id, a.resource_provider_id FROM allocations a '
          'LEFT JOIN resource_providers rp ON rp.id = a.resource_provider_id '
          'WHERE rp.id IS NULL ORDER BY a.id',
          'allocation {0} of consumer {1} names resource provider id {2}, which does not exist'),
    Check('allocation-consumer-missing', ERROR,
          'SELECT a.id, a.consumer_id FROM allocations a '
          'LEFT JOIN consumers c ON c.uuid = a.consumer_id WHERE c.id IS NULL ORDER BY a.id',
          'allocation {0} names consumer {1}, which does not exist'),
    Check('allocation-class-missing', ERROR,
          'SELECT a.id, a.consumer_id, a.resource_class_id FROM allocations a '
          'LEFT JOIN resource_classes rc ON rc.id = a.resource_class_id '
          'WHERE rc.id IS NULL ORDER BY a.id',
          'allocation {0} of consumer {1} names resource class id {2}, which does not exist'),
    Check('provider-root-missing', ERROR,
          'SELECT id, uuid, name FROM resource_providers WHERE root_provider_id IS NULL '
          'ORDER BY id',
          'resource provider {1} ({2}, id {0}) has no root provider'),
    Check('provider-root-missing', ERROR,
          'SELECT rp.id, rp.uuid, rp.name, rp.root_provider_id FROM resource_providers rp '
          'LEFT JOIN resource_providers root ON root.id = rp.root_provider_id '
          'WHERE rp.root_provider_id IS NOT NULL AND root.id IS NULL ORDER BY rp.id',
          'resource provider {1} ({2}, id {0}) has root provider id {3}, which does not exist'),
    Check('provider-parent-missing', ERROR,
          'SELECT rp.id, rp.uuid, rp.name, rp.parent_provider_id FROM resource_providers rp '
          'LEFT JOIN resource_providers parent ON parent.id = rp.parent_provider_id '
          'WHERE rp.parent_provider_id IS NOT NULL AND parent.id IS NULL ORDER BY rp.id',
          'resource provider {1} ({2}, id {0}) has parent provider id {3}, which does not exist'),
    Check('provider-root-wrong', ERROR,
          # (a missing root or parent is reported above, not again here)
          'SELECT rp.id, rp.uuid, rp.name, rp.root_provider_id FROM resource_providers rp '
          'JOIN resource_providers root ON root.id = rp.root_provider_id '
          'LEFT JOIN resource_providers parent ON parent.id = rp.parent_provider_id '
          'WHERE (rp.parent_provider_id IS NULL AND rp.root_provider_id <> rp.id) '
          'OR (parent.id IS NOT NULL AND parent.root_provider_id <> rp.root_provider_id) '
          'ORDER BY rp.id',
          'resource provider {1} ({2}, id {0}) has root provider id {3}, which is not the '
          "root of its tree (itself without a parent, else its parent's root)"),
    Check('provider-incomplete', ERROR,
          'SELECT id, uuid FROM resource_providers WHERE name IS NULL OR generation IS NULL '
          'ORDER BY id',
          'resource provider {1} (id {0}) has no name or no generation'),
    Check('inventory-provider-missing', ERROR,
          'SELECT i.id, i.resource_provider_id FROM inventories i '
          'LEFT JOIN resource_providers rp ON rp.id = i.resource_provider_id '
          'WHERE rp.id IS NULL ORDER BY i.id',
          'inventory {0} belongs to resource provider id {1}, which does not exist'),
    Check('inventory-class-missing', ERROR,
          'SELECT i.id, rp.uuid, i.resource_class_id FROM inventories i '
          'LEFT JOIN resource_providers rp ON rp.id = i.resource_provider_id '
          'LEFT JOIN resource_classes rc ON rc.id = i.resource_class_id '
          'WHERE rc.id IS NULL ORDER BY i.id',
          'inventory {0} of resource provider {1} is of resource class id {2}, which does '
          'not exist'),
    Check('consumer-project-missing', ERROR,
          'SELECT c.id, c.uuid, c.project_id FROM consumers c '
          'LEFT JOIN projects p ON p.id = c.project_id WHERE p.id IS NULL ORDER BY c.id',
          'consumer {1} (id {0}) has project id {2}, which does not exist'),
    Check('consumer-user-missing', ERROR,
          'SELECT c.id, c.uuid, c.user_id FROM consumers c '
          'LEFT JOIN users u ON u.id = c.user_id WHERE u.id IS NULL ORDER BY c.id',
          'consumer {1} (id {0}) has user id {2}, which does not exist'),
    Check('consumer-type-missing', ERROR,
          'SELECT c.id, c.uuid, c.consumer_type_id FROM consumers c '
          'LEFT JOIN consumer_types ct ON ct.id = c.consumer_type_id '
          'WHERE c.consumer_type_id IS NOT NULL AND ct.id IS NULL ORDER BY c.id',
          'consumer {1} (id {0}) has consumer type id {2}, which does not exist'),
    Check('provider-trait-dangling', ERROR,
          'SELECT x.resource_provider_id, x.trait_id FROM resource_provider_traits x '
          'LEFT JOIN resource_providers rp ON rp.id = x.resource_provider_id '
          'LEFT JOIN traits t ON t.id = x.trait_id WHERE rp.id IS NULL OR t.id IS NULL '
          'ORDER BY x.resource_provider_id, x.trait_id',
          'resource provider id {0} has trait id {1}, and one of them does not exist'),
    Check('provider-aggregate-dangling', ERROR,
          'SELECT x.resource_provider_id, x.aggregate_id FROM resource_provider_aggregates x '
          'LEFT JOIN resource_providers rp ON rp.id = x.resource_provider_id '
          'LEFT JOIN placement_aggregates a ON a.id = x.aggregate_id '
          'WHERE rp.id IS NULL OR a.id IS NULL ORDER BY x.resource_provider_id, x.aggregate_id',
          'resource provider id {0} is in aggregate id {1}, and one of them does not exist'),
    Check('aggregate-incomplete', ERROR,
          'SELECT id FROM placement_aggregates WHERE uuid IS NULL ORDER BY id',
          'aggregate id {0} has no uuid'),
    Check('provider-over-capacity', WARNING,
          'SELECT rp.uuid, rp.name, rc.name, u.used, i.total, i.reserved, i.allocation_ratio '
          'FROM inventories i '
          'JOIN (SELECT resource_provider_id, resource_class_id, SUM(used) AS used '
          '      FROM allocations GROUP BY resource_provider_id, resource_class_id) u '
          '  ON u.resource_provider_id = i.resource_provider_id '
          ' AND u.resource_class_id = i.resource_class_id '
          'JOIN resource_providers rp ON rp.id = i.resource_provider_id '
          'JOIN resource_classes rc ON rc.id = i.resource_class_id '
          'WHERE (i.total - i.reserved) * i.allocation_ratio < u.used ORDER BY i.id',
          'resource provider {0} ({1}) is over capacity in {2}: {3} used of '
          '({4} - {5}) * {6}'),
    Check('allocation-without-inventory', WARNING,
          'SELECT a.id, a.consumer_id, rp.uuid, rp.name, rc.name FROM allocations a '
          'JOIN resource_providers rp ON rp.id = a.resource_provider_id '
          'JOIN resource_classes rc ON rc.id = a.resource_class_id '
          'LEFT JOIN inventories i ON i.resource_provider_id = a.resource_provider_id '
          ' AND i.resource_class_id = a.resource_class_id '
          'WHERE i.id IS NULL ORDER BY a.id',
          'allocation {0} of consumer {1} holds {4} of resource provider {2} ({3}), which has '
          'no {4} inventory'),
)


@dataclass(frozen=True)
class Problem:
    code: str
    severity: str
    message: str

    def __str__(self):
        return f'{self.severity} {self.code}: {self.message}'


@dataclass
class Survey:
    """What the source holds: rows per table and every problem found."""
    revision: str
    counts: dict
    problems: list

    @property
    def errors(self):
        return [p for p in self.problems if p.severity == ERROR]

    @property
    def warnings(self):
        return [p for p in self.problems if p.severity == WARNING]


def survey(source):
    revision = check_revision(source)
    counts = {table.name: source.count(table) for table in TABLES}
    problems = [Problem(check.code, check.severity, check.say.format(*row))
                for check in CHECKS for row in source.query(check.sql)]
    return Survey(revision, counts, problems)


# ---- the target --------------------------------------------------------------------------

# Everything the import writes or that depends on what it replaces, in an
# order that deletes referring rows first. Standard resource classes stay
# (the import updates them in place); the event log, usage snapshots and
# pools' labels describe the books being replaced, and go with them.
REPLACED = (PodBinding, Pod, EventProvider, Event, UsageSnapshot, Inventory, Allocation,
            Consumer, ConsumerType, User, Project, ProviderTrait, ProviderAggregate,
            ResourceProvider, PoolLabel, Aggregate, Trait)


def target_contents():
    """What ours holds that an import would collide with or overwrite, as
    'N table' strings; empty when only the standard names are there."""
    books = [Pod, ResourceProvider, Inventory, Aggregate, Consumer, Allocation, Project, User,
             ConsumerType]
    contents = [f'{model.objects.count()} {model._meta.db_table}' for model in books
                if model.objects.exists()]
    custom_classes = ResourceClass.objects.filter(id__gte=ResourceClass.MIN_CUSTOM_ID).count()
    if custom_classes:
        contents.append(f'{custom_classes} custom resource classes')
    custom_traits = Trait.objects.filter(name__startswith=Trait.CUSTOM_PREFIX).count()
    if custom_traits:
        contents.append(f'{custom_traits} custom traits')
    return contents


def empty_target():
    """Delete everything an import replaces, in one transaction."""
    with transaction.atomic(), connection.cursor() as cursor:
        # Trees refer to themselves: cut the links before deleting.
        cursor.execute(f'UPDATE {ResourceProvider._meta.db_table} '
                       'SET root_provider_id = NULL, parent_provider_id = NULL')
        for model in REPLACED:
            cursor.execute(f'DELETE FROM {model._meta.db_table}')
        cursor.execute(f'DELETE FROM {ResourceClass._meta.db_table} WHERE id >= %s',
                       [ResourceClass.MIN_CUSTOM_ID])
