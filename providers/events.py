"""The event log: one Event per change to the books, written by the services
inside the transaction that makes the change.

Event types follow OpenStack's versioned-notification names (object.action);
the notification dispatcher (providers.notifications) sends them under these
names.
"""
from placement_site import actor
from placement_site.api import timestamp
from providers.models import INVENTORY_FIELDS
from providers.models import Event
from providers.models import EventProvider

PROVIDER_CREATE = 'resource_provider.create'
PROVIDER_UPDATE = 'resource_provider.update'
PROVIDER_DELETE = 'resource_provider.delete'
INVENTORY_CREATE = 'resource_provider.inventory.create'
INVENTORY_UPDATE = 'resource_provider.inventory.update'
INVENTORY_DELETE = 'resource_provider.inventory.delete'
TRAIT_UPDATE = 'resource_provider.trait.update'
AGGREGATE_ADD = 'resource_provider.aggregate.add'
AGGREGATE_REMOVE = 'resource_provider.aggregate.remove'
AGGREGATE_UPDATE = 'resource_provider.aggregate.update'  # added and removed at once
ALLOCATION_UPDATE = 'allocation.update'
ALLOCATION_DELETE = 'allocation.delete'

EVENT_TYPES = (
    PROVIDER_CREATE, PROVIDER_UPDATE, PROVIDER_DELETE,
    INVENTORY_CREATE, INVENTORY_UPDATE, INVENTORY_DELETE,
    TRAIT_UPDATE, AGGREGATE_ADD, AGGREGATE_REMOVE, AGGREGATE_UPDATE,
    ALLOCATION_UPDATE, ALLOCATION_DELETE,
)


def record(event_type, *, providers, payload, consumer=None):
    """Write one event in the caller's transaction.

    `providers` holds (uuid, generation before, generation after) for each
    provider the change concerns; `consumer` is (uuid, generation before,
    generation after) for allocation changes.
    """
    return record_many([(event_type, providers, payload, consumer)])[0]


def record_many(changes):
    """Write an event for each (event type, providers, payload, consumer) in
    two statements however many there are (a POST /allocations may write
    many consumers)."""
    who = actor.current()
    written = Event.objects.bulk_create([
        Event(event_type=event_type, consumer_uuid=consumer[0] if consumer else None,
              consumer_generation_before=consumer[1] if consumer else None,
              consumer_generation_after=consumer[2] if consumer else None,
              payload=payload, request_id=who.request_id, user_id=who.user_id,
              project_id=who.project_id)
        for event_type, _providers, payload, consumer in changes])
    EventProvider.objects.bulk_create([
        EventProvider(event=event, provider_uuid=uuid, generation_before=before,
                      generation_after=after)
        for event, (_type, providers, _payload, _consumer) in zip(written, changes)
        for uuid, before, after in providers])
    return written


def provider_changed(event_type, provider, *, before, payload):
    """An event about one provider, whose generation is now
    `provider.generation` (None once deleted)."""
    after = None if event_type == PROVIDER_DELETE else provider.generation
    return record(event_type, providers=[(provider.uuid, before, after)], payload=payload)


def inventory_record(inventory_or_record):
    """The inventory fields of a model or a dict, as the API shows them."""
    get = (inventory_or_record.get if isinstance(inventory_or_record, dict)
           else lambda name: getattr(inventory_or_record, name))
    return {name: get(name) for name in INVENTORY_FIELDS}


def describe(event):
    """An event as GET /events and the notifications show it (the event's
    providers prefetched)."""
    consumer = None
    if event.consumer_uuid is not None:
        consumer = {'uuid': event.consumer_uuid,
                    'generation_before': event.consumer_generation_before,
                    'generation_after': event.consumer_generation_after}
    return {
        'id': event.pk,
        'event_type': event.event_type,
        'created_at': timestamp(event.created_at),
        'request_id': event.request_id,
        'user_id': event.user_id,
        'project_id': event.project_id,
        'providers': [{'uuid': p.provider_uuid, 'generation_before': p.generation_before,
                       'generation_after': p.generation_after}
                      for p in event.providers.all()],
        'consumer': consumer,
        'payload': event.payload,
        'sent_at': timestamp(event.sent_at),
    }
