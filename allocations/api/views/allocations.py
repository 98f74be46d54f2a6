"""/allocations[/{consumer_uuid}] and /resource_providers/{uuid}/allocations:
the allocations of consumers, and those on a provider."""
import collections

from allocations import querysets
from allocations import schemas
from allocations import services
from placement_site import conditional
from placement_site import errors
from placement_site import exceptions
from placement_site import microversion
from placement_site.api import PlacementViewSet
from placement_site.api import accept_json
from placement_site.api import json_body
from placement_site.api import require_json
from placement_site.api import versions
from placement_site.errors import Worded
from placement_site.errors import worded
from placement_site.openapi import GENERATION
from placement_site.openapi import PROVIDER_UUID
from placement_site.openapi import UUID
from placement_site.openapi import UUID_KEY
from placement_site.openapi import Component
from placement_site.openapi import closed
from placement_site.openapi import link
from placement_site.openapi import operation
from placement_site.openapi import path
from placement_site.openapi import request_body
from placement_site.openapi import resources_map
from placement_site.validation import is_uuid_like
from placement_site.validation import normalize_uuid
from providers.api import serializers as provider_serializers
from providers.api.views import NO_PROVIDER
from providers.api.views import find_provider

POLICY = 'placement:allocations:%s'


def latest(allocations):
    return provider_serializers.latest(allocations)


def consumer_allocations_body(held, version):
    """GET /allocations/{consumer_uuid} of the consumer's Held allocations,
    shaped for the microversion."""
    by_provider = collections.defaultdict(dict)
    for allocation in held:
        entry = by_provider[allocation.provider_uuid]
        entry.setdefault('resources', {})[allocation.resource_class] = allocation.used
        entry['generation'] = allocation.provider_generation
    body = {'allocations': by_provider}
    if held and version.matches((1, 12)):
        consumer = held[0]
        body['project_id'] = consumer.project_id
        body['user_id'] = consumer.user_id
        if version.matches((1, 28)):
            body['consumer_generation'] = consumer.consumer_generation
        if version.matches((1, 38)):
            body['consumer_type'] = consumer.consumer_type
    return body


def consumer_etag(consumer_uuid, generation):
    """/allocations/{consumer_uuid}: every write of the consumer's
    allocations bumps its generation. A consumer without allocations has
    none, and no ETag: for preconditions it does not exist (If-None-Match: *
    creates it only if new). The providers' generations its answer shows
    are not part of it: writes to a provider for other consumers leave this
    consumer's ETag, as its generation, alone."""
    if generation is None:
        return None
    return conditional.etag('consumer', consumer_uuid, generation)


def provider_allocations_body(provider, allocations, version):
    """GET /resource_providers/{uuid}/allocations."""
    by_consumer = collections.defaultdict(dict)
    for allocation in allocations:
        entry = by_consumer[allocation.consumer.uuid]
        entry.setdefault('resources', {})[allocation.resource_class.name] = allocation.used
        if version.matches((1, 28)):
            entry['consumer_generation'] = allocation.consumer.generation
    return {'allocations': by_consumer, 'resource_provider_generation': provider.generation}


def request_for_consumer(consumer_uuid, data, version):
    """One consumer's part of a PUT or POST body -> ConsumerAllocations."""
    allocations = data['allocations']
    if not version.matches((1, 12)):  # a list before 1.12
        allocations = {item['resource_provider']['uuid']: {'resources': item['resources']}
                       for item in allocations}
    return services.ConsumerAllocations(
        consumer_uuid=consumer_uuid,
        allocations={rp: entry['resources'] for rp, entry in allocations.items()},
        project_id=data.get('project_id'),
        user_id=data.get('user_id'),
        generation=(data.get('consumer_generation') if version.matches((1, 28))
                    else services.NOT_CHECKED),
        consumer_type=data.get('consumer_type') if version.matches((1, 38)) else None,
    )


def write(requests, not_found_message):
    """Run the write and word its failures as Placement does."""
    with worded({
        # As they are (before the broader classes below).
        exceptions.ConsumerGenerationConflict: '{error}',
        exceptions.ProviderForAllocationNotFound: '{error}',
        exceptions.NotFound: Worded(not_found_message, status=400),
        exceptions.InvalidInventory: Worded('Unable to allocate inventory: {error}', status=409),
        # A provider changed under the write, not the consumer the
        # preconditions were about: a conflict, never a 412.
        exceptions.ConcurrentUpdate: Worded(
            'Inventory and/or allocations changed while attempting to allocate: {error}',
            stale=False),
    }):
        services.allocations_replace(requests)


# ---- the answers, bodies and parameters the operations describe ----------------------

CONSUMER_GENERATION = {
    'type': 'integer',
    'description': "From 1.28: the consumer's generation, incremented by every change to its "
                   'allocations. Writers send the value they read (null for a new consumer).',
}

CONSUMER_ALLOCATIONS = Component('ConsumerAllocations', closed({
    'type': 'object',
    'properties': {
        'allocations': {
            'type': 'object',
            'description': 'Keyed by resource provider uuid.',
            'patternProperties': {UUID_KEY: {
                'type': 'object',
                'properties': {
                    'resources': resources_map('The amounts allocated.'),
                    'generation': GENERATION,
                },
                'required': ['resources', 'generation'],
            }},
            'additionalProperties': False,
        },
        'project_id': microversion.since((1, 12), {'type': 'string', 'description': 'From 1.12.'}),
        'user_id': microversion.since((1, 12), {'type': 'string', 'description': 'From 1.12.'}),
        'consumer_generation': microversion.since((1, 28), CONSUMER_GENERATION),
        'consumer_type': microversion.since((1, 38), {
            'type': 'string', 'description': 'From 1.38, e.g. INSTANCE.'}),
    },
    'required': ['allocations'],
}), description='The allocations of one consumer. The other fields are left out while the '
               'consumer has no allocations.')

PROVIDER_ALLOCATIONS = Component('ResourceProviderAllocations', closed({
    'type': 'object',
    'properties': {
        'allocations': {
            'type': 'object',
            'description': 'Keyed by consumer uuid.',
            'additionalProperties': {
                'type': 'object',
                'properties': {
                    'resources': resources_map('The amounts allocated.'),
                    'consumer_generation': microversion.since((1, 28), CONSUMER_GENERATION),
                },
                'required': ['resources', 'consumer_generation'],
            },
        },
        'resource_provider_generation': GENERATION,
    },
    'required': ['allocations', 'resource_provider_generation'],
}))

ALLOCATIONS_UPDATE = request_body(
    'ConsumerAllocationsUpdate', schemas.ALLOCATIONS_PUT_BY_VERSION,
    'From 1.12 `allocations` is keyed by resource provider uuid.')
ALLOCATIONS_MANAGE = request_body(
    'AllocationsManage', schemas.ALLOCATIONS_POST_BY_VERSION, 'Keyed by consumer uuid.')

CONSUMER_UUID = path('consumer_uuid', 'The uuid of the consumer.', UUID)

ALLOCATIONS = 'Allocations'
WRITE_400 = 'A malformed consumer uuid, or an unknown resource provider or resource class.'
WRITE_409 = ('A stale consumer generation or a provider changed meanwhile '
             '(placement.concurrent_update); or a provider has no inventory of a class, or the '
             'amounts exceed its capacity or break its min_unit, max_unit or step_size.')
BODY_CHANGES = {
    '1.8': '`project_id` and `user_id` required.',
    '1.12': '`allocations` keyed by provider uuid instead of a list of '
            '{"resource_provider": {"uuid"}, "resources"}.',
    '1.28': '`consumer_generation` required (null for a new consumer); empty `allocations` '
            'remove the consumer\'s allocations.',
    '1.34': '`mappings` accepted.',
    '1.38': '`consumer_type` required.',
}


class AllocationViewSet(PlacementViewSet):
    """/allocations and /allocations/{consumer_uuid}"""

    @operation(
        'showConsumerAllocations', tag=ALLOCATIONS, summary="List a consumer's allocations",
        description='The allocations a consumer holds, by provider. A consumer without '
                    'allocations gets empty `allocations`, not a 404 (and no ETag).',
        parameters=[CONSUMER_UUID],
        responses={200: (CONSUMER_ALLOCATIONS, 'The allocations.')},
        changes={'1.12': 'project_id and user_id.', '1.28': 'consumer_generation.',
                 '1.38': 'consumer_type.'},
        conditional='read',
    )
    @accept_json
    def retrieve(self, request, consumer_uuid):
        self.authorize(POLICY % 'list')
        held = querysets.allocations_of_consumer(consumer_uuid)
        generation = held[0].consumer_generation if held else None
        return self.respond(consumer_allocations_body(held, self.version),
                            last_modified=max((h.changed for h in held), default=None),
                            etag=consumer_etag(consumer_uuid, generation))

    @operation(
        'updateConsumerAllocations', tag=ALLOCATIONS, summary="Replace a consumer's allocations",
        description='Set every allocation of the consumer, atomically, after checking each '
                    "provider's capacity.",
        parameters=[CONSUMER_UUID], request=ALLOCATIONS_UPDATE,
        responses={204: (None, 'The allocations are set.')}, accept_json=False,
        links={204: {name: link(name, text, consumer_uuid='$request.path.consumer_uuid')
                     for name, text in (
                         ('showConsumerAllocations', "The consumer's allocations."),
                         ('updateConsumerAllocations', 'Change them.'),
                         ('deleteConsumerAllocations', 'Delete them.'))}},
        errors={400: WRITE_400, 409: WRITE_409},
        changes=BODY_CHANGES,
        conditional='write',
    )
    @require_json
    def update(self, request, consumer_uuid):
        self.authorize(POLICY % 'update')
        if not is_uuid_like(consumer_uuid):
            raise errors.bad_request(f'Malformed consumer_uuid: {consumer_uuid}')
        consumer_uuid = normalize_uuid(consumer_uuid)
        data = json_body(request, self.generation_optional(
            schemas.ALLOCATIONS_PUT_BY_VERSION.at(self.version), 'consumer_generation'))
        wanted = request_for_consumer(consumer_uuid, data, self.version)
        if self.conditions:
            generation = querysets.consumer_generation(consumer_uuid)
            self.check_preconditions(consumer_etag(consumer_uuid, generation))
            if 'consumer_generation' not in data:
                wanted.generation = generation   # what they held for: the write checks it
        write([wanted], f'Unable to allocate inventory for consumer {consumer_uuid}: {{error}}')
        return self.no_content(etag=consumer_etag(
            consumer_uuid, wanted.consumer.generation if wanted.allocations else None))

    @operation(
        'manageAllocations', tag=ALLOCATIONS, summary='Replace the allocations of many consumers',
        description='Set the allocations of several consumers in one transaction, keyed by '
                    "consumer uuid; empty `allocations` remove a consumer's allocations.",
        request=ALLOCATIONS_MANAGE,
        responses={204: (None, 'The allocations are set.')}, accept_json=False,
        errors={400: WRITE_400, 409: WRITE_409},
        changes={key: BODY_CHANGES[key] for key in ('1.28', '1.34', '1.38')},
    )
    @versions('1.13')
    @require_json
    def create(self, request):
        """POST /allocations: many consumers in one transaction."""
        self.authorize(POLICY % 'manage')
        data = json_body(request, schemas.ALLOCATIONS_POST_BY_VERSION.at(self.version))
        write([request_for_consumer(uuid, part, self.version) for uuid, part in data.items()],
              'Unable to allocate inventory {error}')
        return self.no_content()

    @operation(
        'deleteConsumerAllocations', tag=ALLOCATIONS, summary="Delete a consumer's allocations",
        description='Remove every allocation of the consumer.',
        parameters=[CONSUMER_UUID],
        responses={204: (None, 'Deleted.')}, accept_json=False,
        errors={404: 'The consumer has no allocations.'},
        conditional='write', etag=(),
    )
    def destroy(self, request, consumer_uuid):
        self.authorize(POLICY % 'delete')
        generation = services.NOT_CHECKED
        if self.conditions:
            generation = querysets.consumer_generation(consumer_uuid)
            self.check_preconditions(consumer_etag(consumer_uuid, generation))
        deleted = services.allocations_delete(consumer_uuid=consumer_uuid, generation=generation)
        if not deleted:
            raise errors.not_found(f"No allocations for consumer '{consumer_uuid}'")
        return self.no_content()


class ProviderAllocationsViewSet(PlacementViewSet):
    """/resource_providers/{uuid}/allocations"""

    @operation(
        'listProviderAllocations', tag=ALLOCATIONS, summary="List a provider's allocations",
        description='The allocations held against the provider, by consumer.',
        parameters=[PROVIDER_UUID],
        responses={200: (PROVIDER_ALLOCATIONS, 'The allocations.')},
        errors={404: NO_PROVIDER},
        changes={'1.28': 'consumer_generation.'},
    )
    @accept_json
    def retrieve(self, request, uuid):
        self.authorize('placement:resource_providers:allocations:list')
        provider = find_provider(uuid, "Resource provider '{uuid}' not found: {error}", vary=True)
        allocations = querysets.allocations_on_provider(provider)
        return self.respond(provider_allocations_body(provider, allocations, self.version),
                            last_modified=latest(allocations))
