"""/resource_providers/{uuid}/traits: the traits a provider has."""
from placement_site import errors
from placement_site.api import PlacementViewSet, accept_json, json_body, require_json, versions
from providers import schemas, services
from providers.api import serializers
from providers.api.views.shared import find_provider
from providers.models import Trait


class ProviderTraitsViewSet(PlacementViewSet):
    """/resource_providers/{uuid}/traits"""
    POLICY = 'placement:resource_providers:traits:%s'

    def _send(self, provider, traits):
        body = {'traits': [t.name for t in traits],
                'resource_provider_generation': provider.generation}
        return self.respond(body, last_modified=serializers.latest(traits),
                            etag=serializers.generation_etag(provider))

    @versions('1.6')
    @accept_json
    def retrieve(self, request, uuid):
        self.authorize(self.POLICY % 'list')
        provider = find_provider(uuid, 'No resource provider with uuid {uuid} found: {error}',
                                 vary=True)
        return self._send(provider, list(provider.traits.order_by('id')))

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

    @versions('1.6')
    def destroy(self, request, uuid):
        self.authorize(self.POLICY % 'delete')
        provider = find_provider(uuid)
        guarded = self.check_preconditions(serializers.generation_etag(provider))
        services.traits_replace(provider=provider, trait_names=[], as_read=guarded)
        return self.no_content(etag=serializers.generation_etag(provider))
