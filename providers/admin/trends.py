"""Usage snapshots (the trends' points) in the admin, read-only."""

from django.contrib import admin
from django.db.models import Q

from placement_site.admin import ReadOnlyAdmin
from placement_site.admin import RelatedOnly
from placement_site.admin import YesNoFilter
from providers.models import UsageSnapshot


class CloudFilter(YesNoFilter):
    title = 'whole cloud'
    parameter_name = 'cloud'

    def condition(self):
        return Q(aggregate__isnull=True)


@admin.register(UsageSnapshot)
class UsageSnapshotAdmin(ReadOnlyAdmin):
    """The usage-trend snapshots, newest first: taken by manage.py
    snapshot_usage and the notification dispatcher only (providers.trends)."""
    list_display = ('taken_at', 'scope', 'resource_class', 'total', 'reserved', 'capacity',
                    'used', 'providers')
    list_filter = (CloudFilter, ('resource_class', RelatedOnly), 'taken_at')
    list_select_related = ('aggregate', 'resource_class')
    search_fields = ('=aggregate__uuid',)
    ordering = ('-taken_at', 'resource_class_id')
    date_hierarchy = 'taken_at'
    fields = ('taken_at', 'aggregate', 'resource_class', 'total', 'reserved', 'capacity', 'used',
              'providers')

    @admin.display(description='pool', ordering='aggregate__uuid')
    def scope(self, snapshot):
        return snapshot.aggregate.uuid if snapshot.aggregate else 'whole cloud'
