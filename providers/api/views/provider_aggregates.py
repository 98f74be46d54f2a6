"""/resource_providers/{uuid}/aggregates: the aggregates a provider is in."""
from django.utils import timezone

from placement_site import errors, exceptions
from placement_site.api import PlacementViewSet, accept_json, json_body, require_json, versions
from placement_site.errors import worded
from providers import schemas, services
from providers.api import serializers
from providers.api.views.shared import find_provider


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

    @accept_json
    @versions('1.1')
    def retrieve(self, request, uuid):
        self.authorize(self.POLICY % 'list')
        provider = find_provider(uuid)
        return self._send(provider, list(provider.aggregates.values_list('uuid', flat=True)))

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
