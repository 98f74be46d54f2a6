"""Placement API: resource providers, inventories, aggregates, traits and
resource classes."""
import contextlib
import uuid as uuid_lib

from django.utils import timezone

from placement_site import errors, exceptions
from placement_site.api import (PlacementViewSet, accept_json, json_body, moment,
                                page_after_marker, parse_json, query_params, require_json,
                                validate, versions)
from placement_site.queries import storable
from placement_site.validation import normalize_uuid
from providers import events, schemas, services
from providers.api import serializers
from providers.filters import ProviderFilterSet
from providers.models import Event, Inventory, ResourceClass, ResourceProvider, Trait

RP_POLICY = 'placement:resource_providers:%s'
INVENTORY_POLICY = 'placement:resource_providers:inventories:%s'


def find_provider(uuid, detail='{error}', vary=False):
    """The provider with its parent and root uuids, or 404.

    `detail` words the 404 for the handler ({uuid}, {error}); vary=False
    mirrors Placement's generic not-found answer.
    """
    provider = None
    if storable(uuid):
        provider = ResourceProvider.objects.with_tree_uuids().filter(uuid=uuid).first()
    if provider is None:
        error = f'No resource provider with uuid {uuid} found'
        raise errors.not_found(detail.format(uuid=uuid, error=error), vary=vary)
    return provider


@contextlib.contextmanager
def custom_name_deletion(prefix=''):
    """Deleting a resource class or trait: a standard name is 400, one in
    use 409."""
    try:
        yield
    except (exceptions.ResourceClassCannotDeleteStandard,
            exceptions.TraitCannotDeleteStandard) as exc:
        raise errors.bad_request(f'{prefix}{exc}')
    except (exceptions.ResourceClassInUse, exceptions.TraitInUse) as exc:
        raise errors.conflict(f'{prefix}{exc}')


def domain_not_found(exc):
    """Placement's generic 404 for a lookup that failed deep down."""
    return errors.not_found(str(exc), vary=False)


class ResourceProviderViewSet(PlacementViewSet):

    @accept_json
    def list(self, request):
        self.authorize(RP_POLICY % 'list')
        query_params(request, schemas.PROVIDER_LIST_QUERY_BY_VERSION.at(self.version))
        providers = list(ProviderFilterSet(
            request.GET, ResourceProvider.objects.with_tree_uuids(), version=self.version).qs)
        body = {'resource_providers': [
            serializers.provider(request, rp, self.version) for rp in providers]}
        return self.respond(body, last_modified=serializers.latest(providers))

    @require_json
    def create(self, request):
        self.authorize(RP_POLICY % 'create')
        data = json_body(request, schemas.PROVIDER_POST_BY_VERSION.at(self.version))
        provider_uuid = normalize_uuid(data['uuid']) if data.get('uuid') else str(uuid_lib.uuid4())
        try:
            provider = services.provider_create(
                name=data['name'], uuid=provider_uuid,
                parent_provider_uuid=data.get('parent_provider_uuid'))
        except exceptions.DuplicateProvider as exc:
            raise errors.conflict(str(exc), code=errors.DUPLICATE_NAME)
        except exceptions.ObjectActionError as exc:
            raise errors.bad_request(
                f'Unable to create resource provider "{data["name"]}", {provider_uuid}: {exc}')
        location = serializers.provider_url(request, provider.uuid)
        if self.version.matches((1, 20)):
            return self.respond(serializers.provider(request, provider, self.version),
                                last_modified=provider.last_modified, location=location)
        return self.no_content(status=201, location=location)

    @accept_json
    def retrieve(self, request, uuid):
        self.authorize(RP_POLICY % 'show')
        provider = find_provider(uuid)
        return self.respond(serializers.provider(request, provider, self.version),
                            last_modified=provider.last_modified)

    @require_json
    def update(self, request, uuid):
        self.authorize(RP_POLICY % 'update')
        provider = find_provider(uuid)
        data = json_body(request, schemas.PROVIDER_PUT_BY_VERSION.at(self.version))
        try:
            provider = services.provider_update(
                provider=provider, name=data.get('name'),
                parent_provider_uuid=data.get('parent_provider_uuid', ...),
                allow_reparenting=self.version.matches((1, 37)))
        except exceptions.DuplicateProvider:
            raise errors.conflict(
                f'Conflicting resource provider {data["name"]} already exists.',
                code=errors.DUPLICATE_NAME)
        except exceptions.ObjectActionError as exc:
            raise errors.bad_request(f'Unable to save resource provider {uuid}: {exc}')
        return self.respond(serializers.provider(request, provider, self.version),
                            last_modified=provider.last_modified)

    def destroy(self, request, uuid):
        self.authorize(RP_POLICY % 'delete')
        provider = find_provider(uuid, 'No resource provider with uuid {uuid} found for delete',
                                 vary=True)
        try:
            services.provider_delete(provider=provider)
        except exceptions.ProviderInUse as exc:
            raise errors.conflict(f'Unable to delete resource provider {uuid}: {exc}',
                                  code=errors.PROVIDER_IN_USE)
        except exceptions.CannotDeleteParentProvider:
            raise errors.conflict(
                f'Unable to delete parent resource provider {uuid}: It has child resource '
                'providers.', code=errors.PROVIDER_CANNOT_DELETE_PARENT)
        except exceptions.NotFound:
            raise errors.not_found(f'No resource provider with uuid {uuid} found for delete')
        return self.no_content()


class InventoryViewSet(PlacementViewSet):
    """/resource_providers/{uuid}/inventories[/{resource_class}]"""

    def _inventories(self, provider):
        # In class id order, as Placement's rows come from the (provider,
        # class) index: the same JSON key order byte for byte.
        return list(Inventory.objects.filter(resource_provider_id=provider.pk)
                    .select_related('resource_class').order_by('resource_class_id'))

    def _send_all(self, provider, inventories):
        response = self.respond(serializers.inventories(inventories, provider.generation),
                                last_modified=serializers.latest(inventories))
        if not inventories:
            # Placement dates an empty inventory with nothing, not with now.
            del response['Last-Modified']
        return response

    def _send_one(self, provider, inventory, status=200, location=None):
        return self.respond(serializers.inventory(inventory, provider.generation), status=status,
                            last_modified=inventory.last_modified, location=location)

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
        try:
            inventory = services.inventory_add(
                provider=provider, resource_class=resource_class, record=data,
                reserved_can_be_total=self._reserved_can_be_total())
        except exceptions.ConcurrentUpdate as exc:
            raise errors.conflict(f'Update conflict: {exc}', code=errors.CONCURRENT_UPDATE)
        except (exceptions.InvalidInventoryCapacity, exceptions.NotFound) as exc:
            raise errors.bad_request(
                f'Unable to create inventory for resource provider {provider.uuid}: {exc}')
        location = f'{serializers.provider_url(request, provider.uuid)}/inventories/{resource_class}'
        return self._send_one(provider, inventory, status=201, location=location)

    @require_json
    def replace(self, request, uuid):
        self.authorize(INVENTORY_POLICY % 'update')
        provider = find_provider(uuid)
        data = json_body(request, schemas.INVENTORIES_PUT)
        if data['resource_provider_generation'] != provider.generation:
            raise errors.conflict('resource provider generation conflict',
                                  code=errors.CONCURRENT_UPDATE)
        try:
            inventories = services.inventories_replace(
                provider=provider, inventories=data['inventories'],
                reserved_can_be_total=self._reserved_can_be_total())
        except exceptions.InvalidInventoryCapacity as exc:
            raise errors.bad_request(
                f'Unable to update inventory for resource provider {provider.uuid}: {exc}')
        except exceptions.ResourceClassNotFound as exc:
            raise errors.bad_request(
                f'Unknown resource class in inventory for resource provider {provider.uuid}: {exc}')
        except exceptions.ConcurrentUpdate as exc:
            raise errors.conflict(f'update conflict: {exc}', code=errors.CONCURRENT_UPDATE)
        except exceptions.InventoryInUse as exc:
            raise errors.conflict(f'update conflict: {exc}', code=errors.INVENTORY_INUSE)
        return self._send_all(provider, inventories)

    @versions('1.5', status=405)
    def destroy_all(self, request, uuid):
        self.authorize(INVENTORY_POLICY % 'delete')
        provider = find_provider(uuid)
        try:
            services.inventories_replace(provider=provider, inventories={})
        except exceptions.ConcurrentUpdate:
            raise errors.conflict(
                f'Unable to delete inventory for resource provider {provider.uuid} because the '
                'inventory was updated by another process. Please retry your request.',
                code=errors.CONCURRENT_UPDATE)
        return self.no_content()

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
        data = json_body(request, schemas.INVENTORY_PUT)
        if data.pop('resource_provider_generation') != provider.generation:
            raise errors.conflict('resource provider generation conflict',
                                  code=errors.CONCURRENT_UPDATE)
        try:
            inventory = services.inventory_update(
                provider=provider, resource_class=resource_class, record=data,
                reserved_can_be_total=self._reserved_can_be_total())
        except exceptions.ResourceClassNotFound as exc:
            raise domain_not_found(exc)
        except exceptions.InventoryBelowUsage as exc:
            raise errors.conflict(f'update conflict: {exc}', code=errors.INVENTORY_INUSE)
        except exceptions.ConcurrentUpdate as exc:
            raise errors.conflict(f'update conflict: {exc}', code=errors.CONCURRENT_UPDATE)
        except exceptions.InventoryNotFound as exc:
            raise errors.bad_request(
                'No inventory record with resource class for resource provider '
                f'{provider.uuid}: {exc}')
        except exceptions.InvalidInventoryCapacity as exc:
            raise errors.bad_request(
                f'Unable to update inventory for resource provider {provider.uuid}: {exc}')
        return self._send_one(provider, inventory)

    def destroy(self, request, uuid, resource_class):
        self.authorize(INVENTORY_POLICY % 'delete')
        provider = find_provider(uuid)
        try:
            services.inventory_delete(provider=provider, resource_class=resource_class)
        except (exceptions.ConcurrentUpdate, exceptions.InventoryInUse) as exc:
            raise errors.conflict(f'Unable to delete inventory of class {resource_class}: {exc}',
                                  code=errors.CONCURRENT_UPDATE)
        except exceptions.NotFound as exc:
            raise errors.not_found(
                f'No inventory of class {resource_class} found for delete: {exc}')
        return self.no_content()


class ProviderAggregatesViewSet(PlacementViewSet):
    """/resource_providers/{uuid}/aggregates"""
    POLICY = 'placement:resource_providers:aggregates:%s'

    def _send(self, provider, aggregate_uuids):
        body = {'aggregates': aggregate_uuids}
        if self.version.matches((1, 19)):
            body['resource_provider_generation'] = provider.generation
        # Placement records no time for aggregate membership: "now".
        return self.respond(body, last_modified=timezone.now())

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
        data = json_body(request, schemas.AGGREGATES_PUT_BY_VERSION.at(self.version))
        if with_generation:
            if data['resource_provider_generation'] != provider.generation:
                raise errors.conflict(
                    "Resource provider's generation already changed. Please update the "
                    'generation and try again.', code=errors.CONCURRENT_UPDATE)
            aggregate_uuids = data['aggregates']
        else:
            aggregate_uuids = data
        try:
            services.aggregates_replace(provider=provider, aggregate_uuids=aggregate_uuids,
                                        bump_generation=with_generation)
        except exceptions.ConcurrentUpdate as exc:
            raise errors.conflict(f'Update conflict: {exc}', code=errors.CONCURRENT_UPDATE)
        return self._send(provider, aggregate_uuids)


class ProviderTraitsViewSet(PlacementViewSet):
    """/resource_providers/{uuid}/traits"""
    POLICY = 'placement:resource_providers:traits:%s'

    def _send(self, provider, traits):
        body = {'traits': [t.name for t in traits],
                'resource_provider_generation': provider.generation}
        return self.respond(body, last_modified=serializers.latest(traits))

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
        data = json_body(request, schemas.PROVIDER_TRAITS_PUT)
        provider = find_provider(uuid)
        if provider.generation != data['resource_provider_generation']:
            raise errors.conflict(
                "Resource provider's generation already changed. Please update the "
                'generation and try again.', code=errors.CONCURRENT_UPDATE)
        known = set(Trait.objects.filter(name__in=data['traits']).values_list('name', flat=True))
        unknown = [name for name in dict.fromkeys(data['traits']) if name not in known]
        if unknown:
            raise errors.bad_request(f"No such trait {', '.join(unknown)}")
        services.traits_replace(provider=provider, trait_names=data['traits'])
        return self._send(provider, list(Trait.objects.filter(name__in=data['traits'])))

    @versions('1.6')
    def destroy(self, request, uuid):
        self.authorize(self.POLICY % 'delete')
        provider = find_provider(uuid)
        services.traits_replace(provider=provider, trait_names=[])
        return self.no_content()


class ResourceClassViewSet(PlacementViewSet):
    """/resource_classes[/{name}]"""
    POLICY = 'placement:resource_classes:%s'

    def _find(self, name):
        found = ResourceClass.objects.filter(name=name).first() if storable(name) else None
        if found is None:
            raise domain_not_found(exceptions.ResourceClassNotFound(name=name))
        return found

    @versions('1.2')
    @accept_json
    def list(self, request):
        self.authorize(self.POLICY % 'list')
        classes = list(ResourceClass.objects.all())
        body = {'resource_classes': [serializers.resource_class(request, rc) for rc in classes]}
        return self.respond(body, last_modified=serializers.latest(classes))

    @versions('1.2')
    @require_json
    def create(self, request):
        self.authorize(self.POLICY % 'create')
        data = json_body(request, schemas.RESOURCE_CLASS_POST)
        try:
            rc = services.resource_class_create(name=data['name'])
        except exceptions.ResourceClassExists:
            raise errors.conflict(f'Conflicting resource class already exists: {data["name"]}')
        except exceptions.ConcurrentUpdate:
            raise errors.conflict(
                'Max retries of DB transaction exceeded attempting to create resource class: '
                f'{data["name"]}, please try again.')
        return self.no_content(status=201,
                               location=serializers.resource_class_url(request, rc.name))

    @versions('1.2')
    @accept_json
    def retrieve(self, request, name):
        self.authorize(self.POLICY % 'show')
        rc = self._find(name)
        return self.respond(serializers.resource_class(request, rc),
                            last_modified=rc.updated_at or rc.created_at)

    @versions('1.2')
    def update(self, request, name):
        if self.version.matches((1, 7)):
            return self._ensure(request, name)
        return self._rename(request, name)

    @require_json
    def _rename(self, request, name):
        """PUT before 1.7: rename a custom class."""
        self.authorize(self.POLICY % 'update')
        data = json_body(request, schemas.RESOURCE_CLASS_PUT_BY_VERSION.at(self.version))
        rc = self._find(name)
        try:
            rc = services.resource_class_rename(resource_class=rc, name=data['name'])
        except exceptions.ResourceClassExists:
            raise errors.conflict(f'Resource class already exists: {data["name"]}')
        except exceptions.ResourceClassCannotUpdateStandard:
            raise errors.bad_request(f'Cannot update standard resource class {name}')
        return self.respond(serializers.resource_class(request, rc), cache_headers=False)

    def _ensure(self, request, name):
        """PUT from 1.7: create the custom class, or confirm it exists."""
        self.authorize(self.POLICY % 'update')
        # The name is validated as the body {"name": ...} would be, quirks
        # included: a name that breaks the JSON is "Malformed JSON".
        data = parse_json('{"name": "%s"}' % name)
        validate(data, schemas.RESOURCE_CLASS_PUT, 'JSON does not validate: {}')
        rc, created = services.resource_class_ensure(name=name)
        return self.no_content(status=201 if created else 204,
                               location=serializers.resource_class_url(request, rc.name))

    @versions('1.2')
    def destroy(self, request, name):
        self.authorize(self.POLICY % 'delete')
        rc = self._find(name)
        with custom_name_deletion('Error in delete resource class: '):
            services.resource_class_delete(resource_class=rc)
        return self.no_content()


class TraitViewSet(PlacementViewSet):
    """/traits[/{name}]"""
    POLICY = 'placement:traits:%s'

    @versions('1.6')
    @accept_json
    def list(self, request):
        self.authorize(self.POLICY % 'list')
        params = query_params(request, schemas.TRAIT_LIST_QUERY)
        traits = Trait.objects.all()
        if 'name' in params:
            op, sep, value = params['name'].partition(':')
            if not sep:
                raise errors.bad_request(
                    'Badly formatted name parameter. Expected name query string parameter in '
                    'form: ?name=[in|startswith]:[name1,name2|prefix]. Got: "%s"' % params['name'])
            if op == 'in':
                traits = traits.filter(name__in=[n for n in value.split(',') if storable(n)])
            elif op == 'startswith':
                traits = (traits.filter(name__startswith=value) if storable(value)
                          else traits.none())
        if 'associated' in params:
            associated = params['associated'].lower()
            if associated not in ('true', 'false'):
                raise errors.bad_request(
                    'The query parameter "associated" only accepts "true" or "false"')
            if associated == 'true':
                traits = traits.filter(providers__isnull=False).distinct()
            else:
                traits = traits.filter(providers__isnull=True)
        traits = list(traits)
        return self.respond({'traits': [t.name for t in traits]},
                            last_modified=serializers.latest(traits))

    def _find(self, name):
        trait = Trait.objects.filter(name=name).first() if storable(name) else None
        if trait is None:
            raise errors.not_found(str(exceptions.TraitNotFound(names=name)))
        return trait

    @versions('1.6')
    def retrieve(self, request, name):
        self.authorize(self.POLICY % 'show')
        trait = self._find(name)
        return self.no_content(last_modified=trait.created_at, cache_headers=True)

    @versions('1.6')
    def update(self, request, name):
        self.authorize(self.POLICY % 'update')
        try:
            validate(name, schemas.CUSTOM_TRAIT_NAME, '{}')
        except errors.PlacementError:
            raise errors.bad_request(
                'The trait is invalid. A valid trait must be no longer than 255 characters, '
                'start with the prefix "CUSTOM_" and use following characters: "A"-"Z", '
                '"0"-"9" and "_"')
        trait, created = services.trait_ensure(name=name)
        return self.no_content(status=201 if created else 204,
                               location=serializers.trait_url(request, trait.name),
                               last_modified=trait.created_at, cache_headers=True)

    @versions('1.6')
    def destroy(self, request, name):
        self.authorize(self.POLICY % 'delete')
        trait = self._find(name)
        with custom_name_deletion():
            services.trait_delete(trait=trait)
        return self.no_content()


class EventViewSet(PlacementViewSet):
    """GET /events: the event log, oldest first, a page at a time. Not part
    of OpenStack Placement; admin only."""

    @accept_json
    def list(self, request):
        self.authorize('placement:events:list')
        params = query_params(request, schemas.EVENT_LIST_QUERY)
        found = Event.objects.prefetch_related('providers')
        if 'provider' in params:
            found = found.about_provider(normalize_uuid(params['provider']))
        if 'consumer' in params:
            found = found.filter(consumer_uuid=normalize_uuid(params['consumer']))
        if 'type' in params:
            wanted = params['type'].split(',')
            unknown = [name for name in wanted if name not in events.EVENT_TYPES]
            if unknown:
                raise errors.bad_request(
                    f'Invalid query string parameters: unknown event type(s) {", ".join(unknown)}')
            found = found.of_types(wanted)
        if 'since' in params:
            found = found.filter(created_at__gte=moment(params['since']))
        page, links = page_after_marker(request, found, params, schemas.EVENT_PAGE_SIZE,
                                        schemas.EVENT_PAGE_MAX)
        return self.respond({'events': [events.describe(e) for e in page], 'links': links},
                            cache_headers=False)

