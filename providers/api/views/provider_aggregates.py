"""/resource_providers/{uuid}/aggregates: the aggregates a provider is in."""
from django.utils import timezone

from placement_site import errors
from placement_site import exceptions
from placement_site import microversion
from placement_site.api import PlacementViewSet
from placement_site.api import accept_json
from placement_site.api import json_body
from placement_site.api import require_json
from placement_site.api import versions
from placement_site.errors import worded
from placement_site.openapi import GENERATION
from placement_site.openapi import PROVIDER_UUID
from placement_site.openapi import UUID
from placement_site.openapi import Component
from placement_site.openapi import closed
from placement_site.openapi import operation
from placement_site.openapi import request_body
from providers import schemas
from providers import services
from providers.api import serializers
from providers.api.views.shared import NO_PROVIDER
from providers.api.views.shared import STALE_GENERATION
from providers.api.views.shared import find_provider

# ---- the answer and body the operations describe -------------------------------------

AGGREGATES = Component('ResourceProviderAggregates', closed({
    'type': 'object',
    'properties': {
        'aggregates': {'type': 'array', 'items': UUID, 'uniqueItems': True},
        'resource_provider_generation': microversion.since((1, 19), {
            **GENERATION, 'description': "From 1.19: the provider's generation."}),
    },
    'required': ['aggregates', 'resource_provider_generation'],
}))

AGGREGATES_UPDATE = request_body('ResourceProviderAggregatesUpdate',
                                 schemas.AGGREGATES_PUT_BY_VERSION,
                                 'Before 1.19 the bare list of aggregate uuids.')


class ProviderAggregatesViewSet(PlacementViewSet):
    """/resource_providers/{uuid}/aggregates"""
    POLICY = 'placement:resource_providers:aggregates:%s'

    def _send(self, provider, aggregate_uuids):
        body = {'aggregates': aggregate_uuids}
        if self.version.matches((1, 19)):
            body['resource_provider_generation'] = provider.generation
        # Placement records no time for aggregate membership: "now".
        return self.respond(body, last_modified=timezone.now(),
                            etag=serializers.aggregates_etag(provider, aggregate_uuids))

    @operation(
        'listProviderAggregates', tag='Aggregates', summary="List a provider's aggregates",
        description='The aggregates the provider is a member of.',
        parameters=[PROVIDER_UUID],
        responses={200: (AGGREGATES, 'The aggregates.')},
        errors={404: NO_PROVIDER},
        changes={'1.19': 'resource_provider_generation.'},
        conditional='read',
    )
    @accept_json
    @versions('1.1')
    def retrieve(self, request, uuid):
        self.authorize(self.POLICY % 'list')
        provider = find_provider(uuid)
        return self._send(provider, list(provider.aggregates.values_list('uuid', flat=True)))

    @operation(
        'updateProviderAggregates', tag='Aggregates',
        summary="Replace a provider's aggregates",
        description='Set the aggregates the provider is a member of. Before 1.19 the body '
                    'is the bare list of aggregate uuids.',
        parameters=[PROVIDER_UUID], request=AGGREGATES_UPDATE,
        responses={200: (AGGREGATES, 'The aggregates.')},
        accept_json=False,
        errors={404: NO_PROVIDER,
                409: microversion.since((1, 19), f'From 1.19: {STALE_GENERATION}')},
        changes={'1.19': 'the body is an object with `resource_provider_generation`, checked '
                         'against the provider; the change increments the generation.'},
        conditional='write',
    )
    @require_json
    @versions('1.1')
    def update(self, request, uuid):
        self.authorize(self.POLICY % 'update')
        with_generation = self.version.matches((1, 19))
        provider = find_provider(uuid)
        data = json_body(request, self.generation_optional(
            schemas.AGGREGATES_PUT_BY_VERSION.at(self.version), 'resource_provider_generation'))
        guarded = self.check_preconditions(lambda: serializers.aggregates_etag(
            provider, provider.aggregates.values_list('uuid', flat=True)))
        if with_generation:
            if data.get('resource_provider_generation', provider.generation) != (
                    provider.generation):
                raise errors.stale(
                    "Resource provider's generation already changed. Please update the "
                    'generation and try again.')
            aggregate_uuids = data['aggregates']
        else:
            aggregate_uuids = data
        # Before 1.19 Placement leaves the generation alone here; with
        # If-Match it is claimed all the same, so a racing write is seen.
        with worded({exceptions.ConcurrentUpdate: 'Update conflict: {error}'}):
            services.aggregates_replace(provider=provider, aggregate_uuids=aggregate_uuids,
                                        bump_generation=with_generation or guarded)
        return self._send(provider, aggregate_uuids)
