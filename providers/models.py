"""Resource providers and what describes them: inventories of resource
classes, traits and aggregates.

Writes go through providers.services (and allocations.services), which keep
the invariants: generations bumped, no inventory below usage, no deleting a
provider that holds allocations or children.
"""
from django.db import models

from providers.querysets import InventoryQuerySet, ResourceProviderQuerySet


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

    class Meta:
        db_table = 'placement_aggregates'
        ordering = ['id']

    def __str__(self):
        return self.uuid


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


class Inventory(models.Model):
    """How much of one resource class a provider has, and how it may be
    handed out."""
    resource_provider = models.ForeignKey(
        ResourceProvider, on_delete=models.CASCADE, related_name='inventories')
    resource_class = models.ForeignKey(
        ResourceClass, on_delete=models.PROTECT, related_name='inventories')
    total = models.IntegerField()
    reserved = models.IntegerField(default=0)
    min_unit = models.IntegerField(default=1)
    max_unit = models.IntegerField(default=2147483647)
    step_size = models.IntegerField(default=1)
    allocation_ratio = models.FloatField(default=1.0)
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
        return f'{self.resource_class_id}: {self.total}'

    @property
    def capacity(self):
        """What may be allocated: (total - reserved) * allocation_ratio."""
        return capacity(self.total, self.reserved, self.allocation_ratio)

    @property
    def last_modified(self):
        return self.updated_at or self.created_at


def capacity(total, reserved, allocation_ratio):
    return (total - reserved) * allocation_ratio


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
