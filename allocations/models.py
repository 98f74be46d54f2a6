"""Consumers (instances, migrations, reservations) and the allocations they
hold against providers' inventories."""
from django.db import models

from providers.models import ResourceClass
from providers.models import ResourceProvider


class Project(models.Model):
    """A Keystone project, known by its external id."""
    external_id = models.CharField(max_length=255, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = 'projects'
        ordering = ['id']

    def __str__(self):
        return self.external_id


class User(models.Model):
    """A Keystone user, known by its external id."""
    external_id = models.CharField(max_length=255, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = 'users'
        ordering = ['id']

    def __str__(self):
        return self.external_id


class ConsumerType(models.Model):
    """What a consumer is (INSTANCE, MIGRATION, ...), from microversion 1.38.

    Consumers written before 1.38 have no type and are reported as 'unknown'.
    """
    UNKNOWN = 'unknown'
    # The types nova writes: a server, and the migration record that holds
    # the source host's allocations while the server moves.
    INSTANCE = 'INSTANCE'
    MIGRATION = 'MIGRATION'

    name = models.CharField(max_length=255, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(null=True, blank=True)

    @classmethod
    def reported(cls, name):
        """A consumer's type as the API reports it: its name, or 'unknown'."""
        return cls.UNKNOWN if name is None else name

    class Meta:
        db_table = 'consumer_types'
        ordering = ['id']

    def __str__(self):
        return self.name


class Consumer(models.Model):
    """Whatever holds allocations. Its generation guards its allocations the
    way a provider's generation guards the provider."""
    uuid = models.CharField(max_length=36, unique=True)
    project = models.ForeignKey(Project, on_delete=models.PROTECT, related_name='consumers')
    user = models.ForeignKey(User, on_delete=models.PROTECT, related_name='consumers')
    generation = models.IntegerField(default=0)
    consumer_type = models.ForeignKey(
        ConsumerType, on_delete=models.PROTECT, null=True, blank=True, related_name='consumers')
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = 'consumers'
        ordering = ['id']
        indexes = [
            models.Index(fields=['project', 'uuid'], name='consumers_project_uuid_idx'),
            models.Index(fields=['project', 'user', 'uuid'], name='consumers_proj_user_uuid_idx'),
        ]

    def __str__(self):
        return self.uuid

    @property
    def consumer_type_name(self):
        return ConsumerType.reported(self.consumer_type.name if self.consumer_type_id else None)


class Allocation(models.Model):
    """`used` units of one resource class of one provider, held by a consumer.

    Allocations are only ever inserted and deleted, never updated: replacing
    a consumer's allocations deletes the old rows and writes new ones.
    """
    resource_provider = models.ForeignKey(
        ResourceProvider, on_delete=models.PROTECT, related_name='allocations')
    consumer = models.ForeignKey(Consumer, on_delete=models.CASCADE, related_name='allocations')
    resource_class = models.ForeignKey(
        ResourceClass, on_delete=models.PROTECT, related_name='allocations')
    used = models.IntegerField()
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = 'allocations'
        ordering = ['id']
        indexes = [
            models.Index(fields=['resource_provider', 'resource_class', 'used'],
                         name='allocations_rp_class_used_idx'),
        ]

    def __str__(self):
        return f'{self.used} {self.resource_class} on {self.resource_provider} for {self.consumer}'


class ProjectUsageSnapshot(models.Model):
    """What one project's consumers held of one resource class at one
    moment, taken with the cloud's and pools' usage snapshots
    (allocations.project_trends): the points of a project's usage trend."""
    taken_at = models.DateTimeField()
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name='+',
                                db_index=False)   # first in the series index
    resource_class = models.ForeignKey(ResourceClass, on_delete=models.CASCADE, related_name='+')
    used = models.BigIntegerField()
    consumers = models.IntegerField()

    class Meta:
        db_table = 'project_usage_snapshots'
        ordering = ['taken_at', 'id']
        indexes = [
            models.Index(fields=['project', 'resource_class', 'taken_at'],
                         name='project_snapshots_series_idx'),
            models.Index(fields=['taken_at'], name='project_snapshots_taken_idx'),
        ]

    def __str__(self):
        return f'{self.resource_class} of project {self.project} at {self.taken_at:%Y-%m-%d %H:%M}'
