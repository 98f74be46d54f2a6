"""/resource_providers[/{uuid}]: the providers themselves."""
import uuid as uuid_lib

from placement_site import exceptions
from placement_site import microversion
from placement_site.api import PlacementViewSet
from placement_site.api import accept_json
from placement_site.api import json_body
from placement_site.api import list_chunks
from placement_site.api import query_params
from placement_site.api import require_json
from placement_site.errors import worded
from placement_site.openapi import GENERATION
from placement_site.openapi import LINKS
from placement_site.openapi import PROVIDER_UUID
from placement_site.openapi import RESOURCES
from placement_site.openapi import RESOURCES_GRAMMAR
from placement_site.openapi import UUID
from placement_site.openapi import Component
from placement_site.openapi import closed
from placement_site.openapi import link
from placement_site.openapi import member_of_parameter
from placement_site.openapi import operation
from placement_site.openapi import query
from placement_site.openapi import request_body
from placement_site.openapi import required_parameter
from placement_site.validation import normalize_uuid
from providers import filters
from providers import schemas
from providers import services
from providers.api import serializers
from providers.api.views.shared import find_provider
from providers.models import ResourceProvider

RP_POLICY = 'placement:resource_providers:%s'
LIST_CHUNK = 2000   # providers read and written at a time


# ---- the answers, bodies and parameters the operations describe ----------------------

PROVIDER = Component('ResourceProvider', closed({
    'type': 'object',
    'properties': {
        'uuid': UUID,
        'name': {'type': 'string', 'maxLength': 200},
        'generation': GENERATION,
        'parent_provider_uuid': microversion.since((1, 14), {
            **UUID, 'type': ['string', 'null'],
            'description': 'From 1.14: the parent provider, null for a root provider.'}),
        'root_provider_uuid': microversion.since((1, 14), {
            **UUID, 'description': 'From 1.14: the root of the tree.'}),
        'links': {
            **LINKS,
            'description': 'self, inventories and usages; aggregates from 1.1, traits from '
                           '1.6, allocations from 1.11.'},
    },
    'required': ['uuid', 'name', 'generation', 'links', 'parent_provider_uuid',
                 'root_provider_uuid'],
}))

PROVIDER_LIST = Component('ResourceProviderList', closed({
    'type': 'object',
    'properties': {'resource_providers': {'type': 'array', 'items': PROVIDER}},
    'required': ['resource_providers'],
}))

PROVIDER_CREATE = request_body('ResourceProviderCreate', schemas.PROVIDER_POST_BY_VERSION)
PROVIDER_UPDATE = request_body('ResourceProviderUpdate', schemas.PROVIDER_PUT_BY_VERSION)

PROVIDER_QUERY = [
    query('name', 'Only the provider with this name.', {'type': 'string', 'maxLength': 200}),
    query('uuid', 'Only the provider with this uuid.', UUID),
    member_of_parameter(),
    query('resources', RESOURCES, RESOURCES_GRAMMAR),
    query('in_tree', 'Only providers in the tree of this provider.', UUID),
    required_parameter(),
]


def provider_links(uuid):
    """From an answer naming a provider (uuid: a runtime expression) to what
    can be done with it."""
    return {
        'showResourceProvider': link('showResourceProvider', 'The provider.', uuid=uuid),
        'updateResourceProvider': link('updateResourceProvider', 'Rename it.', uuid=uuid),
        'deleteResourceProvider': link('deleteResourceProvider', 'Delete it.', uuid=uuid),
        'listInventories': link('listInventories', 'Its inventories.', uuid=uuid),
        'createInventory': link('createInventory', 'Add an inventory.', uuid=uuid),
        'updateInventories': link('updateInventories', 'Set its inventories.', uuid=uuid),
        'listProviderAggregates': link('listProviderAggregates', 'Its aggregates.', uuid=uuid),
        'updateProviderAggregates': link('updateProviderAggregates', 'Set its aggregates.',
                                         uuid=uuid),
        'listProviderTraits': link('listProviderTraits', 'Its traits.', uuid=uuid),
        'updateProviderTraits': link('updateProviderTraits', 'Set its traits.', uuid=uuid),
        'listProviderUsages': link('listProviderUsages', 'Its usages.', uuid=uuid),
        'listProviderAllocations': link('listProviderAllocations', 'Its allocations.',
                                        uuid=uuid),
    }


PROVIDERS = 'Resource providers'


class ResourceProviderViewSet(PlacementViewSet):

    def _send(self, request, provider, **headers):
        """The provider as it is now, with its Last-Modified and ETag."""
        return self.respond(serializers.provider(request, provider, self.version),
                            last_modified=provider.last_modified,
                            etag=serializers.provider_etag(provider), **headers)

    @operation(
        'listResourceProviders', tag=PROVIDERS, summary='List resource providers',
        description='Resource providers, filtered by the query parameters (all must match). '
                    'Any other query parameter is a 400.',
        parameters=PROVIDER_QUERY, query_schema=schemas.PROVIDER_LIST_QUERY_BY_VERSION,
        responses={200: (PROVIDER_LIST, 'The providers.')},
        errors={400: 'Invalid query parameters, or an unknown trait or resource class.'},
        changes={
            '1.3': '`member_of`.',
            '1.4': '`resources`.',
            '1.14': '`in_tree`; providers show parent_provider_uuid and root_provider_uuid.',
            '1.18': '`required`.',
            '1.22': 'forbidden traits (`!TRAIT`).',
            '1.24': '`member_of` may repeat.',
            '1.32': 'forbidden aggregates (`!AGG`, `!in:`).',
            '1.39': '`required` may repeat and take `in:` (any of).',
        },
    )
    @accept_json
    def list(self, request):
        self.authorize(RP_POLICY % 'list')
        query_params(request, schemas.PROVIDER_LIST_QUERY_BY_VERSION.at(self.version))
        tree = filters.only_in_tree(request.GET)
        if tree:
            providers = found = filters.providers_in_tree(tree)
        else:
            providers = filters.ProviderFilterSet(
                request.GET, ResourceProvider.objects.with_tree_uuids(), version=self.version).qs
            found = providers.iterator(chunk_size=LIST_CHUNK)
        latest = serializers.Latest()
        listed = (serializers.provider(request, latest.seen(rp), self.version) for rp in found)
        # Streamed (a large cloud's list), the headers go before the newest
        # provider has been read: then it is asked of the database (a tree
        # is never streamed).
        return self.respond_chunks(
            list_chunks('resource_providers', listed, LIST_CHUNK),
            last_modified=lambda complete: latest.moment if complete else latest.of(providers))

    @operation(
        'createResourceProvider', tag=PROVIDERS, summary='Create a resource provider',
        description='A new provider, with a generated uuid unless the body names one, '
                    'optionally the child of `parent_provider_uuid`.',
        request=PROVIDER_CREATE,
        responses={
            200: microversion.since((1, 20), (PROVIDER, 'From 1.20: the new provider.')),
            201: microversion.before((1, 20), (None, 'Before 1.20: created; no body.')),
        },
        links={200: provider_links('$response.body#/uuid')},
        location=[200, 201], cached=[200], accept_json=False,
        errors={400: 'The parent provider does not exist.',
                409: 'A provider with this name or uuid exists (placement.duplicate_name).'},
        changes={'1.14': '`parent_provider_uuid`.',
                 '1.20': '200 with the provider instead of 201 without a body.'},
        etag=[200, 201],
    )
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
        if self.version.matches((1, 20)):
            return self._send(request, provider, location=location)
        return self.no_content(status=201, location=location,
                               etag=serializers.provider_etag(provider))

    @operation(
        'showResourceProvider', tag=PROVIDERS, summary='Show a resource provider',
        description='One provider.',
        parameters=[PROVIDER_UUID],
        responses={200: (PROVIDER, 'The provider.')},
        links={200: provider_links('$response.body#/uuid')},
        errors={404: 'No provider has this uuid.'},
        changes={'1.14': 'parent_provider_uuid and root_provider_uuid.'},
        conditional='read',
    )
    @accept_json
    def retrieve(self, request, uuid):
        self.authorize(RP_POLICY % 'show')
        provider = find_provider(uuid)
        return self._send(request, provider)

    @operation(
        'updateResourceProvider', tag=PROVIDERS, summary='Update a resource provider',
        description='Rename the provider and/or change its parent. Moving a provider moves '
                    'its subtree; a provider cannot become its own descendant.',
        parameters=[PROVIDER_UUID], request=PROVIDER_UPDATE,
        responses={200: (PROVIDER, 'The updated provider.')},
        accept_json=False,
        errors={400: 'The parent does not exist, the change would create a loop, or (before '
                     '1.37) it would re-parent or un-parent the provider.',
                404: 'No provider has this uuid.',
                409: 'Another provider has this name (placement.duplicate_name).'},
        changes={'1.14': '`parent_provider_uuid`: a provider without a parent may gain one.',
                 '1.37': 're-parenting, and un-parenting with `null`.'},
        conditional='write',
    )
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
        return self._send(request, provider)

    @operation(
        'deleteResourceProvider', tag=PROVIDERS, summary='Delete a resource provider',
        description='Delete the provider with its inventories, traits and aggregate '
                    'memberships.',
        parameters=[PROVIDER_UUID],
        responses={204: (None, 'Deleted.')}, accept_json=False,
        errors={404: 'No provider has this uuid.',
                409: 'The provider has allocations (placement.resource_provider.inuse) or '
                     'children (placement.resource_provider.cannot_delete_parent).'},
        conditional='write', etag=(),
    )
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
