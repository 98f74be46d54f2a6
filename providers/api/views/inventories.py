"""/resource_providers/{uuid}/inventories[/{resource_class}]: a provider's
inventories."""
from placement_site import errors, exceptions
from placement_site.api import PlacementViewSet, accept_json, json_body, require_json, versions
from placement_site.errors import Worded, worded
from providers import schemas, services
from providers.api import serializers
from providers.api.views.shared import find_provider
from providers.models import Inventory

INVENTORY_POLICY = 'placement:resource_providers:inventories:%s'
CREATE_REFUSED = 'Unable to create inventory for resource provider {provider}: {error}'
UPDATE_REFUSED = 'Unable to update inventory for resource provider {provider}: {error}'


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

    @accept_json
    def list(self, request, uuid):
        self.authorize(INVENTORY_POLICY % 'list')
        provider = find_provider(uuid, 'No resource provider with uuid {uuid} found : {error}',
                                 vary=True)
        return self._send_all(provider, self._inventories(provider))

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
