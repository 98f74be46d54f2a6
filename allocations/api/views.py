"""Placement API: allocations of consumers, allocations on providers, and
usages of providers and projects."""
import collections

from django.utils import timezone

from allocations import querysets, schemas, services
from placement_site import conditional, errors, exceptions
from placement_site.api import (
    PlacementViewSet,
    accept_json,
    json_body,
    query_params,
    require_json,
    versions,
)
from placement_site.errors import Worded, worded
from placement_site.microversion import ByVersion
from placement_site.validation import is_uuid_like, normalize_uuid
from providers.api import serializers as provider_serializers
from providers.api.views import find_provider
from providers.models import ResourceProvider

POLICY = 'placement:allocations:%s'


def latest(allocations):
    return provider_serializers.latest(allocations)


def consumer_allocations_body(allocations, version):
    """GET /allocations/{consumer_uuid}, shaped for the microversion."""
    by_provider = collections.defaultdict(dict)
    for allocation in allocations:
        entry = by_provider[allocation.resource_provider.uuid]
        entry.setdefault('resources', {})[allocation.resource_class.name] = allocation.used
        entry['generation'] = allocation.resource_provider.generation
    body = {'allocations': by_provider}
    if allocations and version.matches((1, 12)):
        consumer = allocations[0].consumer
        body['project_id'] = consumer.project.external_id
        body['user_id'] = consumer.user.external_id
        if version.matches((1, 28)):
            body['consumer_generation'] = consumer.generation
        if version.matches((1, 38)):
            body['consumer_type'] = consumer.consumer_type_name
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


class AllocationViewSet(PlacementViewSet):
    """/allocations and /allocations/{consumer_uuid}"""

    @accept_json
    def retrieve(self, request, consumer_uuid):
        self.authorize(POLICY % 'list')
        allocations = querysets.allocations_of_consumer(consumer_uuid)
        generation = allocations[0].consumer.generation if allocations else None
        return self.respond(consumer_allocations_body(allocations, self.version),
                            last_modified=latest(allocations),
                            etag=consumer_etag(consumer_uuid, generation))

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

    @versions('1.13')
    @require_json
    def create(self, request):
        """POST /allocations: many consumers in one transaction."""
        self.authorize(POLICY % 'manage')
        data = json_body(request, schemas.ALLOCATIONS_POST_BY_VERSION.at(self.version))
        write([request_for_consumer(uuid, part, self.version) for uuid, part in data.items()],
              'Unable to allocate inventory {error}')
        return self.no_content()

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

    @accept_json
    def retrieve(self, request, uuid):
        self.authorize('placement:resource_providers:allocations:list')
        provider = find_provider(uuid, "Resource provider '{uuid}' not found: {error}", vary=True)
        allocations = querysets.allocations_on_provider(provider)
        return self.respond(provider_allocations_body(provider, allocations, self.version),
                            last_modified=latest(allocations))


class ProviderUsagesViewSet(PlacementViewSet):
    """/resource_providers/{uuid}/usages"""

    @accept_json
    def retrieve(self, request, uuid):
        self.authorize('placement:resource_providers:usages')
        provider = find_provider(uuid, 'No resource provider with uuid {uuid} found: {error}',
                                 vary=True)
        body = {'resource_provider_generation': provider.generation,
                'usages': querysets.provider_usages(provider)}
        # Usage is "now": Placement does not date it.
        return self.respond(body, last_modified=timezone.now())


# GET /usages: consumer_type from 1.38.
USAGES_QUERY = ByVersion([((1, 38), schemas.USAGES_QUERY_1_38)], schemas.USAGES_QUERY_1_9,
                         since=(1, 9))


class UsageViewSet(PlacementViewSet):
    """/usages"""

    @versions('1.9')
    @accept_json
    def list(self, request):
        project_id = request.GET.get('project_id')
        user_id = request.GET.get('user_id')
        self.authorize('placement:usages', target={'project_id': project_id})
        query_params(request, USAGES_QUERY.at(self.version))
        if self.version.matches((1, 38)):
            usages = querysets.project_usages_by_consumer_type(
                project_id, user_id, request.GET.get('consumer_type'))
        else:
            usages = querysets.project_usages(project_id, user_id)
        # Usage is "now": Placement does not date it.
        return self.respond({'usages': usages}, last_modified=timezone.now())


class ReshaperViewSet(PlacementViewSet):
    """/reshaper (1.30): move inventory and allocations between providers."""

    @versions('1.30')
    @require_json
    def create(self, request):
        self.authorize('placement:reshaper:reshape')
        data = json_body(request, schemas.RESHAPER_POST_BY_VERSION.at(self.version))
        providers = {p.uuid: p for p in ResourceProvider.objects.filter(
            uuid__in=list(data['inventories']))}
        inventories = {}
        for provider_uuid, part in data['inventories'].items():
            provider = providers.get(provider_uuid)
            if provider is None:
                raise errors.bad_request(
                    f'Resource provider {provider_uuid} in inventories not found: '
                    f'No resource provider with uuid {provider_uuid} found',
                    code=errors.RESOURCE_PROVIDER_NOT_FOUND)
            if part['resource_provider_generation'] != provider.generation:
                raise errors.conflict(
                    f'resource provider generation conflict for provider {provider_uuid}: '
                    f"actual: {provider.generation}, given: {part['resource_provider_generation']}",
                    code=errors.CONCURRENT_UPDATE)
            inventories[provider] = part['inventories']
        requests = [request_for_consumer(uuid, part, self.version)
                    for uuid, part in data['allocations'].items()]
        # The reshaper checks no preconditions: its conflicts are never 412s.
        with worded({
            exceptions.ConsumerGenerationConflict: Worded('{error}', stale=False),
            exceptions.ProviderForAllocationNotFound: '{error}',
            exceptions.ConcurrentUpdate: Worded('update conflict: {error}', stale=False),
            exceptions.NotFound: Worded('malformed reshaper data: {error}', status=400),
            exceptions.InventoryInUse: 'update conflict: {error}',
            exceptions.InvalidInventory: Worded('Unable to allocate inventory: {error}',
                                                status=409),
        }):
            services.reshape(inventories=inventories, requests=requests)
        return self.no_content()
