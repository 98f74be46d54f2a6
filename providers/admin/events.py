"""The event log in the admin, read-only."""

from django.contrib import admin
from django.db.models import Q

from placement_site.admin import ReadOnlyAdmin
from placement_site.admin import ReadOnlyInline
from placement_site.admin import YesNoFilter
from providers.models import Event
from providers.models import EventProvider


class EventProviderInline(ReadOnlyInline):
    model = EventProvider
    fields = ('provider_uuid', 'generation_before', 'generation_after')


class SentFilter(YesNoFilter):
    title = 'sent'
    parameter_name = 'sent'

    def condition(self):
        return Q(sent_at__isnull=False)


@admin.register(Event)
class EventAdmin(ReadOnlyAdmin):
    """The event log, newest first: what changed and whether the
    notification went out; who asked (user, project, request id) on the
    event's page. Events are written by the services only."""
    list_display = ('id', 'event_type', 'created_at', 'provider_list', 'consumer_uuid', 'sent')
    list_filter = ('event_type', SentFilter, 'created_at')
    search_fields = ('=providers__provider_uuid', '=consumer_uuid', '=request_id', '=user_id')
    ordering = ('-id',)
    date_hierarchy = 'created_at'
    inlines = (EventProviderInline,)
    fields = ('event_type', 'created_at', 'consumer_uuid', 'consumer_generation_before',
              'consumer_generation_after', 'payload', 'request_id', 'user_id', 'project_id',
              'sent_at')

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related('providers')

    @admin.display(description='providers')
    def provider_list(self, event):
        # One uuid to a row (a write can touch many providers): the
        # event's page lists them.
        providers = [p.provider_uuid for p in event.providers.all()]
        more = f' (+{len(providers) - 1})' if len(providers) > 1 else ''
        return f'{providers[0]}{more}' if providers else None

    @admin.display(description='sent', boolean=True, ordering='sent_at')
    def sent(self, event):
        return event.sent_at is not None
