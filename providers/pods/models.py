"""Pods and the tenants bound to them.

A pod is a pool (an aggregate of providers) that must serve a tenant's
VMs and volumes together. Tenants are bound to one pod per resource
affinity (general purpose, or a tag such as resource=CAD); a binding that
ends is kept, with when and why, so the history is never overwritten.
Writes go through providers.pods.services.
"""
from django.db import models
from django.db.models import Q
from django.utils import timezone

from providers.models import Aggregate

GENERAL_PURPOSE = ''  # the affinity of a binding (or request) without a tag


def affinity_tag(key, value):
    """The tag `key=value` as bindings and requests name it."""
    return f'{key}={value}'


class PodQuerySet(models.QuerySet):

    def with_aggregate(self):
        return self.select_related('aggregate')

    def with_open_binding_counts(self):
        """Annotate `tenants`: how many tenants (projects) are bound to the
        pod now, a project bound for two affinities counted once."""
        return self.annotate(tenants=models.Count(
            'bindings__project_id', filter=Q(bindings__ended_at__isnull=True), distinct=True))

    def in_line(self):
        """Oldest first: the order of 'first pod in line'."""
        return self.order_by('created_at', 'id')


class Pod(models.Model):
    ENABLED = 'enabled'
    MAINTENANCE = 'maintenance'
    STATES = [(ENABLED, 'enabled'), (MAINTENANCE, 'maintenance')]

    uuid = models.CharField(max_length=36, unique=True)
    name = models.CharField(max_length=200, unique=True)
    # The pod's providers: the aggregate's members and the trees of member
    # roots (providers.querysets.in_pools). Its uuid is what a scheduler
    # passes as member_of to GET /allocation_candidates.
    aggregate = models.OneToOneField(Aggregate, on_delete=models.PROTECT, related_name='pod')
    availability_zone = models.CharField(max_length=255, default='nova')
    # {key: value}: a request tagged key=value goes only to pods with the
    # tag; a general-purpose request only to pods without tags.
    affinity_tags = models.JSONField(default=dict, blank=True)
    # {resource class name: percent}: a pod whose use of a class reaches
    # its threshold takes no new tenants and moves bound ones on.
    thresholds = models.JSONField(default=dict, blank=True)
    state = models.CharField(max_length=16, choices=STATES, default=ENABLED)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(null=True, blank=True)

    objects = PodQuerySet.as_manager()

    class Meta:
        db_table = 'pods'
        ordering = ['created_at', 'id']

    def __str__(self):
        return self.name

    @property
    def tags(self):
        """The affinity tags as 'key=value' strings, sorted."""
        return sorted(affinity_tag(k, v) for k, v in self.affinity_tags.items())

    @property
    def general_purpose(self):
        return not self.affinity_tags

    def serves(self, affinity):
        """Does the pod take requests of this affinity ('' general purpose)?"""
        if affinity == GENERAL_PURPOSE:
            return self.general_purpose
        return affinity in self.tags


class PodBindingQuerySet(models.QuerySet):

    def open(self):
        return self.filter(ended_at__isnull=True)

    def of(self, project_id, affinity):
        return self.filter(project_id=project_id, affinity=affinity)


class PodBinding(models.Model):
    """A tenant's work of one affinity goes to `pod` from `started_at`
    until `ended_at` (open while None), which `end_reason` explains."""
    # Why a binding ended: the pod failed the filter that names the reason
    # (see providers.pods.selection), or an admin moved the tenant.
    THRESHOLD = 'threshold'
    CAPACITY = 'capacity'
    MAINTENANCE = 'maintenance'
    AVAILABILITY_ZONE = 'availability_zone'
    AFFINITY = 'affinity'
    ADMIN = 'admin'
    END_REASONS = [(r, r) for r in (THRESHOLD, CAPACITY, MAINTENANCE, AVAILABILITY_ZONE,
                                    AFFINITY, ADMIN)]

    uuid = models.CharField(max_length=36, unique=True)
    project_id = models.CharField(max_length=255)
    affinity = models.CharField(max_length=255, blank=True, default=GENERAL_PURPOSE)
    pod = models.ForeignKey(Pod, on_delete=models.PROTECT, related_name='bindings')
    started_at = models.DateTimeField(default=timezone.now)
    ended_at = models.DateTimeField(null=True, blank=True)
    end_reason = models.CharField(max_length=32, choices=END_REASONS, null=True, blank=True)

    objects = PodBindingQuerySet.as_manager()

    class Meta:
        db_table = 'pod_bindings'
        ordering = ['id']
        constraints = [
            # Concurrent binding requests for one tenant can never leave it
            # two open bindings: the loser's insert fails here.
            models.UniqueConstraint(fields=['project_id', 'affinity'],
                                    condition=Q(ended_at__isnull=True),
                                    name='pod_bindings_one_open'),
            models.CheckConstraint(
                condition=Q(ended_at__isnull=True, end_reason__isnull=True)
                | Q(ended_at__isnull=False, end_reason__isnull=False),
                name='pod_bindings_end_has_reason'),
        ]
        indexes = [
            models.Index(fields=['pod', 'ended_at'], name='pod_bindings_pod_idx'),
            models.Index(fields=['project_id', 'id'], name='pod_bindings_project_idx'),
        ]

    def __str__(self):
        return f'{self.project_id}, {self.affinity or "general purpose"}'

    @property
    def is_open(self):
        return self.ended_at is None
