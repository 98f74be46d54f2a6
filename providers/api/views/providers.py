"""/resource_providers[/{uuid}]: the providers themselves."""
import uuid as uuid_lib

from placement_site import exceptions
from placement_site.api import (
    PlacementViewSet,
    accept_json,
    json_body,
    list_chunks,
    query_params,
    require_json,
)
from placement_site.errors import worded
from placement_site.validation import normalize_uuid
from providers import schemas, services
from providers.api import serializers
from providers.api.views.shared import find_provider
from providers.filters import ProviderFilterSet
from providers.models import ResourceProvider

RP_POLICY = 'placement:resource_providers:%s'
LIST_CHUNK = 2000   # providers read and written at a time


class ResourceProviderViewSet(PlacementViewSet):

    @accept_json
    def list(self, request):
        self.authorize(RP_POLICY % 'list')
        query_params(request, schemas.PROVIDER_LIST_QUERY_BY_VERSION.at(self.version))
        providers = ProviderFilterSet(
            request.GET, ResourceProvider.objects.with_tree_uuids(), version=self.version).qs
        latest = serializers.Latest()
        listed = (serializers.provider(request, latest.seen(rp), self.version)
                  for rp in providers.iterator(chunk_size=LIST_CHUNK))
        # Streamed (a large cloud's list), the headers go before the newest
        # provider has been read: then it is asked of the database.
        return self.respond_chunks(
            list_chunks('resource_providers', listed, LIST_CHUNK),
            last_modified=lambda complete: latest.moment if complete else latest.of(providers))

    @require_json
    def create(self, request):
        self.authorize(RP_POLICY % 'create')
        data = json_body(request, schemas.PROVIDER_POST_BY_VERSION.at(self.version))
        provider_uuid = normalize_uuid(data['uuid']) if data.get('uuid') else str(uuid_lib.uuid4())
        with worded({exceptions.ObjectActionError:
                     'Unable to create resource provider "{name}", {uuid}: {error}'},
                    name=data['name'], uuid=provider_uuid):
            provider = services.provider_create(
                name=data['name'], uuid=provider_uuid,
                parent_provider_uuid=data.get('parent_provider_uuid'))
        location = serializers.provider_url(request, provider.uuid)
        etag = serializers.provider_etag(provider)
        if self.version.matches((1, 20)):
            return self.respond(serializers.provider(request, provider, self.version),
                                last_modified=provider.last_modified, location=location,
                                etag=etag)
        return self.no_content(status=201, location=location, etag=etag)

    @accept_json
    def retrieve(self, request, uuid):
        self.authorize(RP_POLICY % 'show')
        provider = find_provider(uuid)
        return self.respond(serializers.provider(request, provider, self.version),
                            last_modified=provider.last_modified,
                            etag=serializers.provider_etag(provider))

    @require_json
    def update(self, request, uuid):
        self.authorize(RP_POLICY % 'update')
        provider = find_provider(uuid)
        data = json_body(request, schemas.PROVIDER_PUT_BY_VERSION.at(self.version))
        guarded = self.check_preconditions(serializers.provider_etag(provider))
        with worded({
            # Only as_read raises ProviderConcurrentUpdate.
            exceptions.ProviderConcurrentUpdate: 'Unable to save resource provider {uuid}: {error}',
            exceptions.DuplicateProvider: 'Conflicting resource provider {name} already exists.',
            exceptions.ObjectActionError: 'Unable to save resource provider {uuid}: {error}',
        }, uuid=uuid, name=data['name']):
            provider = services.provider_update(
                provider=provider, name=data.get('name'),
                parent_provider_uuid=data.get('parent_provider_uuid', ...),
                allow_reparenting=self.version.matches((1, 37)), as_read=guarded)
        return self.respond(serializers.provider(request, provider, self.version),
                            last_modified=provider.last_modified,
                            etag=serializers.provider_etag(provider))

    def destroy(self, request, uuid):
        self.authorize(RP_POLICY % 'delete')
        provider = find_provider(uuid, 'No resource provider with uuid {uuid} found for delete',
                                 vary=True)
        guarded = self.check_preconditions(serializers.provider_etag(provider))
        with worded({
            # Only as_read raises ProviderConcurrentUpdate.
            exceptions.ProviderConcurrentUpdate:
                'Unable to delete resource provider {uuid}: {error}',
            exceptions.ProviderInUse: 'Unable to delete resource provider {uuid}: {error}',
            exceptions.CannotDeleteParentProvider:
                'Unable to delete parent resource provider {uuid}: It has child resource '
                'providers.',
            exceptions.NotFound: 'No resource provider with uuid {uuid} found for delete',
        }, uuid=uuid):
            services.provider_delete(provider=provider, as_read=guarded)
        return self.no_content()
