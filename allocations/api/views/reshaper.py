"""/reshaper (1.30): move inventory and allocations between providers in
one transaction."""
from allocations import schemas
from allocations import services
from allocations.api.views.allocations import request_for_consumer
from placement_site import errors
from placement_site import exceptions
from placement_site.api import PlacementViewSet
from placement_site.api import json_body
from placement_site.api import require_json
from placement_site.api import versions
from placement_site.errors import Worded
from placement_site.errors import worded
from placement_site.openapi import operation
from placement_site.openapi import request_body
from providers.models import ResourceProvider

# ---- the body the operation describes ------------------------------------------------

RESHAPE = request_body(
    'Reshape', schemas.RESHAPER_POST_BY_VERSION,
    '`inventories` is keyed by resource provider uuid, `allocations` by consumer uuid.')


class ReshaperViewSet(PlacementViewSet):
    """/reshaper (1.30): move inventory and allocations between providers."""

    @operation(
        'reshape', tag='Reshaper', summary='Reshape provider trees',
        description='Replace the inventories of the named providers and the allocations of '
                    'the named consumers in one transaction, e.g. to move inventory and its '
                    'allocations from a compute node to new child providers. Every provider '
                    'and consumer not named keeps what it has.',
        request=RESHAPE,
        responses={204: (None, 'Reshaped.')}, accept_json=False,
        errors={400: 'An unknown provider (placement.resource_provider.not_found) or '
                     'resource class, or malformed data.',
                409: 'A stale provider or consumer generation, or allocations that do not '
                     'fit the new inventories.'},
        changes={'1.34': '`mappings` accepted in allocations.',
                 '1.38': '`consumer_type` required in allocations.'},
    )
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
