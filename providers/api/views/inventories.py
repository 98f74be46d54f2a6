"""/resource_providers/{uuid}/inventories[/{resource_class}]: a provider's
inventories."""
from placement_site import errors
from placement_site import exceptions
from placement_site.api import PlacementViewSet
from placement_site.api import accept_json
from placement_site.api import json_body
from placement_site.api import require_json
from placement_site.api import versions
from placement_site.errors import Worded
from placement_site.errors import worded
from placement_site.openapi import CLASS_NAME_SCHEMA
from placement_site.openapi import GENERATION
from placement_site.openapi import PROVIDER_UUID
from placement_site.openapi import Component
from placement_site.openapi import closed
from placement_site.openapi import link
from placement_site.openapi import operation
from placement_site.openapi import path
from placement_site.openapi import request_body
from placement_site.openapi import resources_map
from providers import schemas
from providers import services
from providers.api import serializers
from providers.api.views.shared import NO_PROVIDER
from providers.api.views.shared import STALE_GENERATION
from providers.api.views.shared import find_provider
from providers.models import Inventory

INVENTORY_POLICY = 'placement:resource_providers:inventories:%s'
CREATE_REFUSED = 'Unable to create inventory for resource provider {provider}: {error}'
UPDATE_REFUSED = 'Unable to update inventory for resource provider {provider}: {error}'


# ---- the answers, bodies and parameters the operations describe ----------------------

_INVENTORY_FIELDS = {
    'total': {'type': 'integer', 'description': 'The amount the provider has.'},
    'reserved': {'type': 'integer', 'description': 'The amount kept back from consumers.'},
    'min_unit': {'type': 'integer', 'description': 'The smallest amount one allocation may take.'},
    'max_unit': {'type': 'integer', 'description': 'The largest amount one allocation may take.'},
    'step_size': {'type': 'integer', 'description': 'Allocations take multiples of this.'},
    'allocation_ratio': {
        'type': 'number',
        'description': 'Overcommit factor: capacity = (total - reserved) * allocation_ratio.'},
}

INVENTORY_RECORD = Component('InventoryRecord', closed({
    'type': 'object',
    'properties': _INVENTORY_FIELDS,
    'required': list(_INVENTORY_FIELDS),
}), description='One resource class of a provider\'s inventory.')

INVENTORY = Component('Inventory', closed({
    'type': 'object',
    'properties': {
        **_INVENTORY_FIELDS,
        'resource_provider_generation': {
            **GENERATION, 'description': "The provider's generation (left out while it is 0)."},
    },
    'required': list(_INVENTORY_FIELDS),
}))

INVENTORIES = Component('Inventories', closed({
    'type': 'object',
    'properties': {
        'resource_provider_generation': GENERATION,
        'inventories': resources_map('The inventory of each resource class.', INVENTORY_RECORD),
    },
    'required': ['resource_provider_generation', 'inventories'],
}))

INVENTORY_CREATE = request_body('InventoryCreate', schemas.INVENTORY_POST,
                                'resource_provider_generation is accepted and not checked.')
INVENTORY_UPDATE = request_body('InventoryUpdate', schemas.INVENTORY_PUT)
INVENTORIES_REPLACE = request_body('InventoriesReplace', schemas.INVENTORIES_PUT,
                                   'The inventories are keyed by resource class name.')

RESOURCE_CLASS_NAME = path('resource_class', 'The name of a resource class, e.g. VCPU.',
                           CLASS_NAME_SCHEMA)


def inventory_links(resource_class):
    return {
        name: link(name, text, uuid='$request.path.uuid', resource_class=resource_class)
        for name, text in (('showInventory', 'The inventory.'),
                           ('updateInventory', 'Change it.'),
                           ('deleteInventory', 'Remove it.'))}


INVENTORIES_TAG = 'Inventories'


class InventoryViewSet(PlacementViewSet):
    """/resource_providers/{uuid}/inventories[/{resource_class}]"""

    def _inventories(self, provider):
        # In class id order, as Placement's rows come from the (provider,
        # class) index: the same JSON key order byte for byte.
        return list(Inventory.objects.filter(resource_provider_id=provider.pk)
                    .select_related('resource_class').order_by('resource_class_id'))

    def _send_all(self, provider, inventories):
        response = self.respond(serializers.inventories(inventories, provider.generation),
                                last_modified=serializers.latest(inventories),
                                etag=serializers.generation_etag(provider))
        if not inventories:
            # Placement dates an empty inventory with nothing, not with now.
            del response['Last-Modified']
        return response

    def _send_one(self, provider, inventory, status=200, location=None):
        return self.respond(serializers.inventory(inventory, provider.generation), status=status,
                            last_modified=inventory.last_modified, location=location,
                            etag=serializers.generation_etag(provider))

    def _reserved_can_be_total(self):
        return self.version.matches((1, 26))

    @operation(
        'listInventories', tag=INVENTORIES_TAG, summary="List a provider's inventories",
        description="The provider's inventory of every resource class.",
        parameters=[PROVIDER_UUID],
        responses={200: (INVENTORIES, 'The inventories.')},
        errors={404: NO_PROVIDER},
        conditional='read',
    )
    @accept_json
    def list(self, request, uuid):
        self.authorize(INVENTORY_POLICY % 'list')
        provider = find_provider(uuid, 'No resource provider with uuid {uuid} found : {error}',
                                 vary=True)
        return self._send_all(provider, self._inventories(provider))

    @operation(
        'createInventory', tag=INVENTORIES_TAG, summary='Add an inventory',
        description='Add the inventory of one resource class to the provider.',
        parameters=[PROVIDER_UUID], request=INVENTORY_CREATE,
        responses={201: (INVENTORY, 'The new inventory.')},
        links={201: inventory_links('$request.body#/resource_class')},
        location=[201], accept_json=False,
        errors={400: 'Unknown resource class or inconsistent amounts.', 404: NO_PROVIDER,
                409: 'The provider has an inventory of this class already, or it changed '
                     'meanwhile (placement.concurrent_update).'},
        changes={'1.26': '`reserved` may equal `total`.'},
        conditional='write',
    )
    @require_json
    def create(self, request, uuid):
        self.authorize(INVENTORY_POLICY % 'create')
        provider = find_provider(uuid)
        data = json_body(request, schemas.INVENTORY_POST)
        resource_class = data.pop('resource_class')
        data.pop('resource_provider_generation', None)
        self.check_preconditions(serializers.generation_etag(provider))
        with worded({
            exceptions.ConcurrentUpdate: 'Update conflict: {error}',
            exceptions.InvalidInventoryCapacity: CREATE_REFUSED,
            exceptions.NotFound: Worded(CREATE_REFUSED, status=400),
        }, provider=provider.uuid):
            inventory = services.inventory_add(
                provider=provider, resource_class=resource_class, record=data,
                reserved_can_be_total=self._reserved_can_be_total())
        provider_url = serializers.provider_url(request, provider.uuid)
        location = f'{provider_url}/inventories/{resource_class}'
        return self._send_one(provider, inventory, status=201, location=location)

    @operation(
        'updateInventories', tag=INVENTORIES_TAG, summary="Replace a provider's inventories",
        description='Set the whole inventory: classes left out are removed.',
        parameters=[PROVIDER_UUID], request=INVENTORIES_REPLACE,
        responses={200: (INVENTORIES, 'The inventories.')},
        accept_json=False,
        errors={400: 'Unknown resource class or inconsistent amounts.', 404: NO_PROVIDER,
                409: f'{STALE_GENERATION} Or allocations would no longer fit '
                     '(placement.inventory.inuse).'},
        changes={'1.26': '`reserved` may equal `total`.'},
        conditional='write',
    )
    @require_json
    def replace(self, request, uuid):
        self.authorize(INVENTORY_POLICY % 'update')
        provider = find_provider(uuid)
        data = json_body(request, self.generation_optional(
            schemas.INVENTORIES_PUT, 'resource_provider_generation'))
        self.check_preconditions(serializers.generation_etag(provider))
        if data.get('resource_provider_generation', provider.generation) != provider.generation:
            raise errors.stale('resource provider generation conflict')
        with worded({
            exceptions.InvalidInventoryCapacity: UPDATE_REFUSED,
            exceptions.ResourceClassNotFound: Worded(
                'Unknown resource class in inventory for resource provider {provider}: {error}',
                status=400),
            exceptions.ConcurrentUpdate: 'update conflict: {error}',
            exceptions.InventoryInUse: 'update conflict: {error}',
        }, provider=provider.uuid):
            inventories = services.inventories_replace(
                provider=provider, inventories=data['inventories'],
                reserved_can_be_total=self._reserved_can_be_total())
        return self._send_all(provider, inventories)

    @operation(
        'deleteInventories', tag=INVENTORIES_TAG, summary="Delete a provider's inventories",
        description='Remove every inventory of the provider.',
        parameters=[PROVIDER_UUID],
        responses={204: (None, 'Deleted.')}, accept_json=False,
        errors={404: NO_PROVIDER,
                409: 'The provider has allocations (placement.inventory.inuse), or it '
                     'changed meanwhile (placement.concurrent_update).'},
        conditional='write',
    )
    @versions('1.5', status=405)
    def destroy_all(self, request, uuid):
        self.authorize(INVENTORY_POLICY % 'delete')
        provider = find_provider(uuid)
        self.check_preconditions(serializers.generation_etag(provider))
        with worded({exceptions.ConcurrentUpdate: (
                'Unable to delete inventory for resource provider {provider} because the '
                'inventory was updated by another process. Please retry your request.')},
                provider=provider.uuid):
            services.inventories_replace(provider=provider, inventories={})
        return self.no_content(etag=serializers.generation_etag(provider))

    @operation(
        'showInventory', tag=INVENTORIES_TAG, summary='Show an inventory',
        description='The provider\'s inventory of one resource class.',
        parameters=[PROVIDER_UUID, RESOURCE_CLASS_NAME],
        responses={200: (INVENTORY, 'The inventory.')},
        errors={404: 'No such provider, or it has no inventory of this class.'},
        conditional='read',
    )
    @accept_json
    def retrieve(self, request, uuid, resource_class):
        self.authorize(INVENTORY_POLICY % 'show')
        provider = find_provider(uuid, 'No resource provider with uuid {uuid} found : {error}',
                                 vary=True)
        inventory = next((inv for inv in self._inventories(provider)
                          if inv.resource_class.name == resource_class), None)
        if inventory is None:
            raise errors.not_found(f'No inventory of class {resource_class} for {uuid}')
        return self._send_one(provider, inventory)

    @operation(
        'updateInventory', tag=INVENTORIES_TAG, summary='Update an inventory',
        description='Change the provider\'s inventory of one resource class.',
        parameters=[PROVIDER_UUID, RESOURCE_CLASS_NAME], request=INVENTORY_UPDATE,
        responses={200: (INVENTORY, 'The inventory.')},
        accept_json=False,
        errors={400: 'The provider has no inventory of this class, or the amounts are '
                     'inconsistent.',
                404: 'No such provider or resource class.',
                409: f'{STALE_GENERATION} Or allocations would no longer fit '
                     '(placement.inventory.inuse).'},
        changes={'1.26': '`reserved` may equal `total`.'},
        conditional='write',
    )
    @require_json
    def update(self, request, uuid, resource_class):
        self.authorize(INVENTORY_POLICY % 'update')
        provider = find_provider(uuid)
        data = json_body(request, self.generation_optional(
            schemas.INVENTORY_PUT, 'resource_provider_generation'))
        self.check_preconditions(serializers.generation_etag(provider))
        if data.pop('resource_provider_generation', provider.generation) != provider.generation:
            raise errors.stale('resource provider generation conflict')
        with worded({
            exceptions.ResourceClassNotFound: Worded('{error}', vary=False),
            exceptions.InventoryBelowUsage: 'update conflict: {error}',
            exceptions.ConcurrentUpdate: 'update conflict: {error}',
            exceptions.InventoryNotFound: Worded(
                'No inventory record with resource class for resource provider {provider}: '
                '{error}', status=400),
            exceptions.InvalidInventoryCapacity: UPDATE_REFUSED,
        }, provider=provider.uuid):
            inventory = services.inventory_update(
                provider=provider, resource_class=resource_class, record=data,
                reserved_can_be_total=self._reserved_can_be_total())
        return self._send_one(provider, inventory)

    @operation(
        'deleteInventory', tag=INVENTORIES_TAG, summary='Delete an inventory',
        description='Remove the provider\'s inventory of one resource class.',
        parameters=[PROVIDER_UUID, RESOURCE_CLASS_NAME],
        responses={204: (None, 'Deleted.')}, accept_json=False,
        errors={404: 'No such provider, or it has no inventory of this class.',
                409: 'The inventory has allocations, or the provider changed meanwhile '
                     '(both placement.concurrent_update).'},
        conditional='write',
    )
    def destroy(self, request, uuid, resource_class):
        self.authorize(INVENTORY_POLICY % 'delete')
        provider = find_provider(uuid)
        self.check_preconditions(serializers.generation_etag(provider))
        refused = 'Unable to delete inventory of class {resource_class}: {error}'
        with worded({
            # Placement's code here, but not a stale generation: no 412.
            exceptions.InventoryInUse: Worded(refused, code=errors.CONCURRENT_UPDATE),
            exceptions.ConcurrentUpdate: refused,
            exceptions.NotFound: 'No inventory of class {resource_class} found for delete: {error}',
        }, resource_class=resource_class):
            services.inventory_delete(provider=provider, resource_class=resource_class)
        return self.no_content(etag=serializers.generation_etag(provider))
