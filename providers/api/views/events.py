"""GET /events: the event log (ours, not OpenStack Placement's)."""
from placement_site import errors
from placement_site.api import PlacementViewSet
from placement_site.api import accept_json
from placement_site.api import moment
from placement_site.api import page_after_marker
from placement_site.api import query_params
from placement_site.openapi import LINKS
from placement_site.openapi import UUID
from placement_site.openapi import Component
from placement_site.openapi import closed
from placement_site.openapi import operation
from placement_site.openapi import paging_parameters
from placement_site.openapi import query
from placement_site.validation import normalize_uuid
from providers import events
from providers import schemas
from providers.models import Event

# ---- the answer the operation describes ----------------------------------------------

_NULLABLE_INT = {'type': ['integer', 'null']}
EVENT_LIST = Component('EventList', closed({
    'type': 'object',
    'properties': {
        'events': {
            'type': 'array',
            'description': 'Oldest first.',
            'items': {
                'type': 'object',
                'properties': {
                    'id': {'type': 'integer', 'description': 'Increases with every event.'},
                    'event_type': {'type': 'string', 'enum': list(events.EVENT_TYPES)},
                    'created_at': {'type': 'string', 'format': 'date-time'},
                    'request_id': {'type': ['string', 'null'],
                                   'description': 'The x-openstack-request-id of the change.'},
                    'user_id': {'type': ['string', 'null']},
                    'project_id': {'type': ['string', 'null']},
                    'providers': {
                        'type': 'array',
                        'description': 'The providers the change concerns, with their '
                                       'generations (null before a create, after a delete).',
                        'items': {
                            'type': 'object',
                            'properties': {'uuid': UUID, 'generation_before': _NULLABLE_INT,
                                           'generation_after': _NULLABLE_INT},
                            'required': ['uuid', 'generation_before', 'generation_after'],
                        },
                    },
                    'consumer': {
                        'type': ['object', 'null'],
                        'description': 'For allocation events: the consumer and its '
                                       'generations (null before its first allocations and '
                                       'once it holds none).',
                        'properties': {'uuid': UUID, 'generation_before': _NULLABLE_INT,
                                       'generation_after': _NULLABLE_INT},
                        'required': ['uuid', 'generation_before', 'generation_after'],
                    },
                    'payload': {
                        'type': 'object', 'additionalProperties': True,
                        'description': 'What changed: the new name or parent; inventories '
                                       '`added`, `updated` (records) and `removed` (classes); '
                                       'traits or aggregates `added` and `removed`; a '
                                       "consumer's `allocations` after the write, with its "
                                       'project, user and consumer type.',
                    },
                    'sent_at': {'type': ['string', 'null'], 'format': 'date-time',
                                'description': 'When the notification went out, if it has.'},
                },
                'required': ['id', 'event_type', 'created_at', 'request_id', 'user_id',
                             'project_id', 'providers', 'consumer', 'payload', 'sent_at'],
            },
        },
        'links': {**LINKS, 'description': 'A `next` link while more events match.'},
    },
    'required': ['events', 'links'],
}))


class EventViewSet(PlacementViewSet):
    """GET /events: the event log, oldest first, a page at a time. Not part
    of OpenStack Placement; admin only."""

    @operation(
        'listEvents', tag='Events', summary='List events',
        description='Not part of OpenStack Placement; admin only '
                    '(`placement:events:list`). Every change to a provider, its inventories, '
                    'traits and aggregates, and every allocation write, is an event written in '
                    'the same transaction as the change: a refused or rolled-back request '
                    'writes none. Notifications are sent from these events.',
        parameters=[
            query('provider', 'Only events concerning this provider.', UUID),
            query('consumer', 'Only allocation events of this consumer.', UUID),
            query('type', 'Only events of these types (comma-separated).',
                  {'type': 'string', 'pattern': r'^[a-z_.]+(,[a-z_.]+)*$',
                   'example': 'resource_provider.aggregate.add,allocation.update'}),
            query('since', 'Only events created at or after this ISO 8601 time (UTC unless '
                           'it says otherwise).', {'type': 'string', 'format': 'date-time'}),
            *paging_parameters('events', schemas.EVENT_PAGE_SIZE, schemas.EVENT_PAGE_MAX),
        ],
        query_schema=schemas.EVENT_LIST_QUERY,
        responses={200: (EVENT_LIST, 'A page of events.')}, cached=[],
        errors={400: 'An invalid uuid, event type, time or number.'},
    )
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
