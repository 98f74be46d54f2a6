"""GET /events: the event log (ours, not OpenStack Placement's)."""
from placement_site import errors
from placement_site.api import (
    PlacementViewSet,
    accept_json,
    moment,
    page_after_marker,
    query_params,
)
from placement_site.validation import normalize_uuid
from providers import events, schemas
from providers.models import Event


class EventViewSet(PlacementViewSet):
    """GET /events: the event log, oldest first, a page at a time. Not part
    of OpenStack Placement; admin only."""

    @accept_json
    def list(self, request):
        self.authorize('placement:events:list')
        params = query_params(request, schemas.EVENT_LIST_QUERY)
        found = Event.objects.prefetch_related('providers')
        if 'provider' in params:
            found = found.about_provider(normalize_uuid(params['provider']))
        if 'consumer' in params:
            found = found.filter(consumer_uuid=normalize_uuid(params['consumer']))
        if 'type' in params:
            wanted = params['type'].split(',')
            unknown = [name for name in wanted if name not in events.EVENT_TYPES]
            if unknown:
                raise errors.bad_request(
                    f'Invalid query string parameters: unknown event type(s) {", ".join(unknown)}')
            found = found.of_types(wanted)
        if 'since' in params:
            found = found.filter(created_at__gte=moment(params['since']))
        page, links = page_after_marker(request, found, params, schemas.EVENT_PAGE_SIZE,
                                        schemas.EVENT_PAGE_MAX)
        return self.respond({'events': [events.describe(e) for e in page], 'links': links},
                            cache_headers=False)
