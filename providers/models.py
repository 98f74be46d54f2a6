"""Resource providers and what describes them: inventories of resource
classes, traits and aggregates.

Writes go through providers.services (and allocations.services), which keep
the invariants: generations bumped, no inventory below usage, no deleting a
provider that holds allocations or children.
"""
from django.db import models
from django.db.models import Q
from django.utils import timezone

from providers import rules
from providers.querysets import AggregateQuerySet
from providers.querysets import EventQuerySet
from providers.querysets import InventoryQuerySet
from providers.querysets import ResourceProviderQuerySet


class ResourceClass(models.Model):
    """A kind of resource (VCPU, DISK_GB, CUSTOM_*).

    Standard classes come from os-resource-classes and keep its position as
    their id, as OpenStack Placement numbers them; custom classes are
    numbered from 10000.
    """
    MIN_CUSTOM_ID = 10000
    CUSTOM_PREFIX = 'CUSTOM_'

    id = models.IntegerField(primary_key=True)
    name = models.CharField(max_length=255, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = 'resource_classes'
        ordering = ['id']
        verbose_name_plural = 'resource classes'

    def __str__(self):
        return self.name

    @property
    def is_custom(self):
        return self.id >= self.MIN_CUSTOM_ID


class Trait(models.Model):
    """A qualitative label on a provider (HW_CPU_X86_AVX2, CUSTOM_*)."""
    CUSTOM_PREFIX = 'CUSTOM_'

    name = models.CharField(max_length=255, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = 'traits'
        ordering = ['id']

    def __str__(self):
        return self.name

    @property
    def is_custom(self):
        return self.name.startswith(self.CUSTOM_PREFIX)


class Aggregate(models.Model):
    """A group of providers, e.g. the compute nodes sharing one NFS pool.

    Kept as the client wrote it ('{...}' and 'urn:uuid:...' forms included),
    as OpenStack Placement does.
    """
    uuid = models.CharField(max_length=255, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(null=True, blank=True)

    objects = AggregateQuerySet.as_manager()

    class Meta:
        db_table = 'placement_aggregates'
        ordering = ['id']

    def __str__(self):
        return self.uuid


class PoolLabel(models.Model):
    """The name an admin gives a pool (an aggregate), which the pool's
    name prefers to any other (AggregateQuerySet.with_names). Not part of
    OpenStack Placement: a table of ours beside its placement_aggregates,
    whose shape the import copies and the adoption check compares."""
    aggregate = models.OneToOneField(Aggregate, on_delete=models.CASCADE, primary_key=True,
                                     related_name='pool_label')
    name = models.CharField(max_length=200)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = 'pool_labels'

    def __str__(self):
        return self.name


class ResourceProvider(models.Model):
    """Something that has inventory: a compute node, a NUMA node, a shared
    storage pool, an IP pool. Providers nest in trees (parent / root).

    The generation is a version number for the provider's inventories,
    traits, aggregates and allocations: every change bumps it, and a writer
    holding a stale generation loses with 409.
    """
    uuid = models.CharField(max_length=36, unique=True)
    name = models.CharField(max_length=200, unique=True)
    generation = models.IntegerField(default=0)
    root_provider = models.ForeignKey(
        'self', on_delete=models.PROTECT, null=True, related_name='+')
    parent_provider = models.ForeignKey(
        'self', on_delete=models.PROTECT, null=True, blank=True, related_name='children')
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(null=True, blank=True)
    traits = models.ManyToManyField(Trait, through='ProviderTrait', related_name='providers')
    aggregates = models.ManyToManyField(
        Aggregate, through='ProviderAggregate', related_name='providers')

    objects = ResourceProviderQuerySet.as_manager()

    class Meta:
        db_table = 'resource_providers'
        ordering = ['id']

    def __str__(self):
        return self.name

    @property
    def last_modified(self):
        return self.updated_at or self.created_at


# What a client writes of an inventory, and every answer and event shows.
INVENTORY_FIELDS = ('total', 'reserved', 'min_unit', 'max_unit', 'step_size', 'allocation_ratio')
# What an inventory written without them has (Placement's defaults).
INVENTORY_DEFAULTS = {'reserved': 0, 'min_unit': 1, 'max_unit': 2147483647, 'step_size': 1,
                      'allocation_ratio': 1.0}


class Inventory(models.Model):
    """How much of one resource class a provider has, and how it may be
    handed out."""
    resource_provider = models.ForeignKey(
        ResourceProvider, on_delete=models.CASCADE, related_name='inventories')
    resource_class = models.ForeignKey(
        ResourceClass, on_delete=models.PROTECT, related_name='inventories')
    total = models.IntegerField()
    reserved = models.IntegerField(default=INVENTORY_DEFAULTS['reserved'])
    min_unit = models.IntegerField(default=INVENTORY_DEFAULTS['min_unit'])
    max_unit = models.IntegerField(default=INVENTORY_DEFAULTS['max_unit'])
    step_size = models.IntegerField(default=INVENTORY_DEFAULTS['step_size'])
    allocation_ratio = models.FloatField(default=INVENTORY_DEFAULTS['allocation_ratio'])
    # What consumers hold of this class on this provider: the sum of its
    # allocations, kept by the database's own triggers whatever writes them
    # (allocations/usage_totals.py), so a capacity check reads one column.
    used = models.BigIntegerField(default=0, db_default=0, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(null=True, blank=True)

    objects = InventoryQuerySet.as_manager()

    class Meta:
        db_table = 'inventories'
        ordering = ['id']
        verbose_name_plural = 'inventories'
        constraints = [
            models.UniqueConstraint(fields=['resource_provider', 'resource_class'],
                                    name='uniq_inventories0resource_provider_resource_class'),
        ]

    def __str__(self):
        return f'{self.resource_class} on {self.resource_provider}'

    @property
    def capacity(self):
        """What may be allocated: (total - reserved) * allocation_ratio."""
        return rules.capacity(self.total, self.reserved, self.allocation_ratio)

    @property
    def last_modified(self):
        return self.updated_at or self.created_at


class ProviderTrait(models.Model):
    resource_provider = models.ForeignKey(ResourceProvider, on_delete=models.CASCADE)
    trait = models.ForeignKey(Trait, on_delete=models.PROTECT)

    class Meta:
        db_table = 'resource_provider_traits'
        constraints = [
            models.UniqueConstraint(fields=['resource_provider', 'trait'],
                                    name='uniq_resource_provider_traits'),
        ]
        indexes = [models.Index(fields=['trait', 'resource_provider'],
                                name='rp_traits_trait_rp_idx')]

    def __str__(self):
        return f'{self.trait} on {self.resource_provider}'


class ProviderAggregate(models.Model):
    resource_provider = models.ForeignKey(ResourceProvider, on_delete=models.CASCADE)
    aggregate = models.ForeignKey(Aggregate, on_delete=models.PROTECT)

    class Meta:
        db_table = 'resource_provider_aggregates'
        constraints = [
            models.UniqueConstraint(fields=['resource_provider', 'aggregate'],
                                    name='uniq_resource_provider_aggregates'),
        ]
        indexes = [models.Index(fields=['aggregate', 'resource_provider'],
                                name='rp_aggregates_agg_rp_idx')]

    def __str__(self):
        return f'{self.resource_provider} in aggregate {self.aggregate}'


class Event(models.Model):
    """One change to the books: a provider created, changed or deleted, its
    inventories, traits or aggregates changed, or a consumer's allocations
    written or removed.

    Written in the transaction that makes the change (providers.events), so
    a refused or rolled-back request leaves none. Uuids are kept as text:
    the event outlives a deleted provider. The notification dispatcher sends
    unsent events in id order and stamps `sent_at`.
    """
    event_type = models.CharField(max_length=64)
    consumer_uuid = models.CharField(max_length=36, null=True, blank=True)
    consumer_generation_before = models.IntegerField(null=True, blank=True)
    consumer_generation_after = models.IntegerField(null=True, blank=True)
    payload = models.JSONField(default=dict)
    request_id = models.CharField(max_length=64, null=True, blank=True)
    user_id = models.CharField(max_length=255, null=True, blank=True)
    project_id = models.CharField(max_length=255, null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    sent_at = models.DateTimeField(null=True, blank=True)

    objects = EventQuerySet.as_manager()

    class Meta:
        db_table = 'events'
        ordering = ['id']
        indexes = [
            models.Index(fields=['consumer_uuid', 'id'], name='events_consumer_idx'),
            models.Index(fields=['created_at'], name='events_created_idx'),
            models.Index(fields=['event_type', 'id'], name='events_type_idx'),
            # The dispatcher's queue: small however long the history grows.
            models.Index(fields=['id'], condition=Q(sent_at__isnull=True),
                         name='events_unsent_idx'),
        ]

    def __str__(self):
        return f'{self.event_type} #{self.pk}'


class EventProvider(models.Model):
    """A provider an event concerns, with its generation before and after
    the change (None before a create, after a delete)."""
    event = models.ForeignKey(Event, on_delete=models.CASCADE, related_name='providers')
    provider_uuid = models.CharField(max_length=36)
    generation_before = models.IntegerField(null=True, blank=True)
    generation_after = models.IntegerField(null=True, blank=True)

    class Meta:
        db_table = 'event_providers'
        ordering = ['id']
        indexes = [models.Index(fields=['provider_uuid', 'event'], name='event_providers_rp_idx')]

    def __str__(self):
        return f'provider {self.provider_uuid} in event #{self.event_id}'


class UsageSnapshot(models.Model):
    """One resource class's books at one moment, for the whole cloud
    (aggregate None) or for one pool: the points of the usage trends
    (providers.trends), taken periodically and kept for
    PLACEMENT_TREND_RETENTION_DAYS."""
    taken_at = models.DateTimeField()
    # (indexed first in the series index)
    aggregate = models.ForeignKey(Aggregate, on_delete=models.CASCADE, null=True, blank=True,
                                  related_name='+', db_index=False)
    # A deleted custom class takes its history with it.
    resource_class = models.ForeignKey(ResourceClass, on_delete=models.CASCADE, related_name='+')
    total = models.BigIntegerField()
    reserved = models.BigIntegerField()
    capacity = models.FloatField()
    used = models.BigIntegerField()
    providers = models.IntegerField()

    class Meta:
        db_table = 'usage_snapshots'
        ordering = ['taken_at', 'id']
        indexes = [
            # One pool's (or the cloud's) series, class by class, in time order.
            models.Index(fields=['aggregate', 'resource_class', 'taken_at'],
                         name='usage_snapshots_series_idx'),
            # Pruning past the retention, and the newest snapshot.
            models.Index(fields=['taken_at'], name='usage_snapshots_taken_idx'),
        ]

    def __str__(self):
        scope = f'pool {self.aggregate}' if self.aggregate_id else 'the cloud'
        return f'{self.resource_class} of {scope} at {self.taken_at:%Y-%m-%d %H:%M}'


class BooksChange(models.Model):
    """A write to what the books read, one row per statement (PostgreSQL)
    or row (SQLite, MySQL), added by triggers (providers.change_log): the
    version that remembered sums are checked against."""
    id = models.BigAutoField(primary_key=True)

    class Meta:
        db_table = 'books_changes'

    def __str__(self):
        return f'books change {self.pk}'


class TreeStamp(models.Model):
    """A provider tree's stamp, stepped by triggers on every write to the
    tree (providers.ledger.stamps); row 0 is the catalogue's (classes and
    traits). Not a foreign key: a root's row goes with the root, and the
    catalogue's names no provider."""
    root_id = models.BigIntegerField(primary_key=True)
    stamp = models.BigIntegerField()

    class Meta:
        db_table = 'tree_stamps'

    def __str__(self):
        tree = f'tree of root {self.root_id}' if self.root_id else 'catalogue'
        return f'{tree} at stamp {self.stamp}'
