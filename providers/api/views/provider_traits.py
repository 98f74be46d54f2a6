"""/resource_providers/{uuid}/traits: the traits a provider has."""
from placement_site import errors
from placement_site.api import PlacementViewSet
from placement_site.api import accept_json
from placement_site.api import json_body
from placement_site.api import require_json
from placement_site.api import versions
from placement_site.openapi import GENERATION
from placement_site.openapi import PROVIDER_UUID
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
from providers.models import Trait

# ---- the answer and body the operations describe -------------------------------------

PROVIDER_TRAITS = Component('ResourceProviderTraits', closed({
    'type': 'object',
    'properties': {
        'traits': {'type': 'array', 'items': {'type': 'string'}},
        'resource_provider_generation': GENERATION,
    },
    'required': ['traits', 'resource_provider_generation'],
}))

PROVIDER_TRAITS_UPDATE = request_body('ResourceProviderTraitsUpdate', schemas.PROVIDER_TRAITS_PUT)


class ProviderTraitsViewSet(PlacementViewSet):
    """/resource_providers/{uuid}/traits"""
    POLICY = 'placement:resource_providers:traits:%s'

    def _send(self, provider, traits):
        body = {'traits': [t.name for t in traits],
                'resource_provider_generation': provider.generation}
        return self.respond(body, last_modified=serializers.latest(traits),
                            etag=serializers.generation_etag(provider))

    @operation(
        'listProviderTraits', tag='Traits', summary="List a provider's traits",
        description='The traits of the provider.',
        parameters=[PROVIDER_UUID],
        responses={200: (PROVIDER_TRAITS, 'The traits.')},
        errors={404: NO_PROVIDER},
        conditional='read',
    )
    @versions('1.6')
    @accept_json
    def retrieve(self, request, uuid):
        self.authorize(self.POLICY % 'list')
        provider = find_provider(uuid, 'No resource provider with uuid {uuid} found: {error}',
                                 vary=True)
        return self._send(provider, list(provider.traits.order_by('id')))

    @operation(
        'updateProviderTraits', tag='Traits', summary="Replace a provider's traits",
        description='Set the traits of the provider; every trait must exist.',
        parameters=[PROVIDER_UUID], request=PROVIDER_TRAITS_UPDATE,
        responses={200: (PROVIDER_TRAITS, 'The traits.')},
        accept_json=False,
        errors={400: 'An unknown trait.', 404: NO_PROVIDER, 409: STALE_GENERATION},
        conditional='write',
    )
    @versions('1.6')
    @require_json
    def update(self, request, uuid):
        self.authorize(self.POLICY % 'update')
        data = json_body(request, self.generation_optional(
            schemas.PROVIDER_TRAITS_PUT, 'resource_provider_generation'))
        provider = find_provider(uuid)
        guarded = self.check_preconditions(serializers.generation_etag(provider))
        if provider.generation != data.get('resource_provider_generation', provider.generation):
            raise errors.stale(
                "Resource provider's generation already changed. Please update the "
                'generation and try again.')
        known = set(Trait.objects.filter(name__in=data['traits']).values_list('name', flat=True))
        unknown = [name for name in dict.fromkeys(data['traits']) if name not in known]
        if unknown:
            raise errors.bad_request(f"No such trait {', '.join(unknown)}")
        services.traits_replace(provider=provider, trait_names=data['traits'], as_read=guarded)
        return self._send(provider, list(Trait.objects.filter(name__in=data['traits'])))

    @operation(
        'deleteProviderTraits', tag='Traits', summary="Remove a provider's traits",
        description='Remove every trait from the provider.',
        parameters=[PROVIDER_UUID],
        responses={204: (None, 'Removed.')}, accept_json=False,
        errors={404: NO_PROVIDER, 409: 'The provider changed meanwhile '
                                       '(placement.concurrent_update).'},
        conditional='write',
    )
    @versions('1.6')
    def destroy(self, request, uuid):
        self.authorize(self.POLICY % 'delete')
        provider = find_provider(uuid)
        guarded = self.check_preconditions(serializers.generation_etag(provider))
        services.traits_replace(provider=provider, trait_names=[], as_read=guarded)
        return self.no_content(etag=serializers.generation_etag(provider))
