"""OpenAPI descriptions of the provider operations: resource providers,
inventories, aggregates, traits and resource classes.

Request bodies are the JSON Schemas the views validate at the latest
microversion (providers.schemas); answers are described here.
"""
from drf_spectacular.utils import extend_schema_view

from placement_site import microversion
from placement_site.openapi import (
    CLASS_NAME_SCHEMA,
    CUSTOM_NAME_SCHEMA,
    GENERATION,
    LINKS,
    PROVIDER_UUID,
    RESOURCES,
    RESOURCES_GRAMMAR,
    TRAIT_NAME_SCHEMA,
    UUID,
    Component,
    closed,
    link,
    member_of_parameter,
    operation,
    path,
    query,
    request_body,
    required_parameter,
    resources_map,
)
from placement_site.validation import CUSTOM_NAME_PATTERN, NAME_PATTERN
from providers import events, schemas
from providers.api import views

# ---- answers ----------------------------------------------------------------------

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

AGGREGATES = Component('ResourceProviderAggregates', closed({
    'type': 'object',
    'properties': {
        'aggregates': {'type': 'array', 'items': UUID, 'uniqueItems': True},
        'resource_provider_generation': microversion.since((1, 19), {
            **GENERATION, 'description': "From 1.19: the provider's generation."}),
    },
    'required': ['aggregates', 'resource_provider_generation'],
}))

PROVIDER_TRAITS = Component('ResourceProviderTraits', closed({
    'type': 'object',
    'properties': {
        'traits': {'type': 'array', 'items': {'type': 'string'}},
        'resource_provider_generation': GENERATION,
    },
    'required': ['traits', 'resource_provider_generation'],
}))

RESOURCE_CLASS = Component('ResourceClass', closed({
    'type': 'object',
    'properties': {
        'name': {'type': 'string', 'pattern': NAME_PATTERN, 'example': 'CUSTOM_FPGA'},
        'links': LINKS,
    },
    'required': ['name', 'links'],
}))

RESOURCE_CLASS_LIST = Component('ResourceClassList', closed({
    'type': 'object',
    'properties': {'resource_classes': {'type': 'array', 'items': RESOURCE_CLASS}},
    'required': ['resource_classes'],
}))

TRAIT_LIST = Component('TraitList', closed({
    'type': 'object',
    'properties': {'traits': {'type': 'array', 'items': {'type': 'string'}}},
    'required': ['traits'],
}))

# ---- request bodies (the views' schemas at the microversion described) ------------

PROVIDER_CREATE = request_body('ResourceProviderCreate', schemas.PROVIDER_POST_BY_VERSION)
PROVIDER_UPDATE = request_body('ResourceProviderUpdate', schemas.PROVIDER_PUT_BY_VERSION)
INVENTORY_CREATE = request_body('InventoryCreate', schemas.INVENTORY_POST,
                             'resource_provider_generation is accepted and not checked.')
INVENTORY_UPDATE = request_body('InventoryUpdate', schemas.INVENTORY_PUT)
INVENTORIES_REPLACE = request_body('InventoriesReplace', schemas.INVENTORIES_PUT,
                                'The inventories are keyed by resource class name.')
AGGREGATES_UPDATE = request_body('ResourceProviderAggregatesUpdate',
                              schemas.AGGREGATES_PUT_BY_VERSION,
                              'Before 1.19 the bare list of aggregate uuids.')
PROVIDER_TRAITS_UPDATE = request_body('ResourceProviderTraitsUpdate', schemas.PROVIDER_TRAITS_PUT)
RESOURCE_CLASS_CREATE = request_body('ResourceClassCreate', schemas.RESOURCE_CLASS_POST)
RESOURCE_CLASS_RENAME = request_body('ResourceClassRename', schemas.RESOURCE_CLASS_PUT_BY_VERSION,
                                  'Before 1.7 only: the new name.')

# ---- parameters --------------------------------------------------------------------

RESOURCE_CLASS_NAME = path('resource_class', 'The name of a resource class, e.g. VCPU.',
                           CLASS_NAME_SCHEMA)
CLASS_NAME = path('name', 'The name of the resource class.', CLASS_NAME_SCHEMA)
CUSTOM_CLASS_NAME = path('name', 'The name of a custom resource class.', CUSTOM_NAME_SCHEMA)
TRAIT_NAME = path('name', 'The name of the trait.', TRAIT_NAME_SCHEMA)
CUSTOM_TRAIT_NAME = path('name', 'The name of a custom trait.', CUSTOM_NAME_SCHEMA)

PROVIDER_QUERY = [
    query('name', 'Only the provider with this name.', {'type': 'string', 'maxLength': 200}),
    query('uuid', 'Only the provider with this uuid.', UUID),
    member_of_parameter(),
    query('resources', RESOURCES, RESOURCES_GRAMMAR),
    query('in_tree', 'Only providers in the tree of this provider.', UUID),
    required_parameter(),
]

TRAIT_QUERY = [
    query('name', 'Filter by name: `in:NAME1,NAME2` or `startswith:PREFIX`.',
          {'type': 'string', 'pattern': '^(in|startswith):', 'example': 'startswith:CUSTOM_'}),
    query('associated', '`true`: only traits some provider has; `false`: only traits no '
          'provider has.', {'type': 'string', 'enum': ['true', 'false']}),
]

# ---- links between operations ------------------------------------------------------


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


def inventory_links(resource_class):
    return {
        name: link(name, text, uuid='$request.path.uuid', resource_class=resource_class)
        for name, text in (('showInventory', 'The inventory.'),
                           ('updateInventory', 'Change it.'),
                           ('deleteInventory', 'Remove it.'))}


# ---- operations --------------------------------------------------------------------

PROVIDERS = 'Resource providers'
CONFLICT = 'The generation is stale (placement.concurrent_update).'

extend_schema_view(
    list=operation(
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
    ),
    create=operation(
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
    ),
    retrieve=operation(
        'showResourceProvider', tag=PROVIDERS, summary='Show a resource provider',
        description='One provider.',
        parameters=[PROVIDER_UUID],
        responses={200: (PROVIDER, 'The provider.')},
        links={200: provider_links('$response.body#/uuid')},
        errors={404: 'No provider has this uuid.'},
        changes={'1.14': 'parent_provider_uuid and root_provider_uuid.'},
        conditional='read',
    ),
    update=operation(
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
    ),
    destroy=operation(
        'deleteResourceProvider', tag=PROVIDERS, summary='Delete a resource provider',
        description='Delete the provider with its inventories, traits and aggregate '
                    'memberships.',
        parameters=[PROVIDER_UUID],
        responses={204: (None, 'Deleted.')}, accept_json=False,
        errors={404: 'No provider has this uuid.',
                409: 'The provider has allocations (placement.resource_provider.inuse) or '
                     'children (placement.resource_provider.cannot_delete_parent).'},
        conditional='write', etag=(),
    ),
)(views.ResourceProviderViewSet)

INVENTORIES_TAG = 'Inventories'
NO_PROVIDER = 'No provider has this uuid.'

extend_schema_view(
    list=operation(
        'listInventories', tag=INVENTORIES_TAG, summary="List a provider's inventories",
        description="The provider's inventory of every resource class.",
        parameters=[PROVIDER_UUID],
        responses={200: (INVENTORIES, 'The inventories.')},
        errors={404: NO_PROVIDER},
        conditional='read',
    ),
    create=operation(
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
    ),
    retrieve=operation(
        'showInventory', tag=INVENTORIES_TAG, summary='Show an inventory',
        description='The provider\'s inventory of one resource class.',
        parameters=[PROVIDER_UUID, RESOURCE_CLASS_NAME],
        responses={200: (INVENTORY, 'The inventory.')},
        errors={404: 'No such provider, or it has no inventory of this class.'},
        conditional='read',
    ),
    update=operation(
        'updateInventory', tag=INVENTORIES_TAG, summary='Update an inventory',
        description='Change the provider\'s inventory of one resource class.',
        parameters=[PROVIDER_UUID, RESOURCE_CLASS_NAME], request=INVENTORY_UPDATE,
        responses={200: (INVENTORY, 'The inventory.')},
        accept_json=False,
        errors={400: 'The provider has no inventory of this class, or the amounts are '
                     'inconsistent.',
                404: 'No such provider or resource class.',
                409: f'{CONFLICT} Or allocations would no longer fit '
                     '(placement.inventory.inuse).'},
        changes={'1.26': '`reserved` may equal `total`.'},
        conditional='write',
    ),
    destroy=operation(
        'deleteInventory', tag=INVENTORIES_TAG, summary='Delete an inventory',
        description='Remove the provider\'s inventory of one resource class.',
        parameters=[PROVIDER_UUID, RESOURCE_CLASS_NAME],
        responses={204: (None, 'Deleted.')}, accept_json=False,
        errors={404: 'No such provider, or it has no inventory of this class.',
                409: 'The inventory has allocations, or the provider changed meanwhile '
                     '(both placement.concurrent_update).'},
        conditional='write',
    ),
)(views.InventoryViewSet)

# extend_schema_view knows only DRF's own action names; `replace` and
# `destroy_all` are routed by name, so extend_schema decorates them directly.
operation(
    'updateInventories', tag=INVENTORIES_TAG, summary="Replace a provider's inventories",
    description='Set the whole inventory: classes left out are removed.',
    parameters=[PROVIDER_UUID], request=INVENTORIES_REPLACE,
    responses={200: (INVENTORIES, 'The inventories.')},
    accept_json=False,
    errors={400: 'Unknown resource class or inconsistent amounts.', 404: NO_PROVIDER,
            409: f'{CONFLICT} Or allocations would no longer fit '
                 '(placement.inventory.inuse).'},
    changes={'1.26': '`reserved` may equal `total`.'},
    conditional='write',
)(views.InventoryViewSet.replace)

operation(
    'deleteInventories', tag=INVENTORIES_TAG, summary="Delete a provider's inventories",
    description='Remove every inventory of the provider.',
    parameters=[PROVIDER_UUID],
    responses={204: (None, 'Deleted.')}, accept_json=False,
    errors={404: NO_PROVIDER,
            409: 'The provider has allocations (placement.inventory.inuse), or it '
                 'changed meanwhile (placement.concurrent_update).'},
    conditional='write',
)(views.InventoryViewSet.destroy_all)

extend_schema_view(
    retrieve=operation(
        'listProviderAggregates', tag='Aggregates', summary="List a provider's aggregates",
        description='The aggregates the provider is a member of.',
        parameters=[PROVIDER_UUID],
        responses={200: (AGGREGATES, 'The aggregates.')},
        errors={404: NO_PROVIDER},
        changes={'1.19': 'resource_provider_generation.'},
        conditional='read',
    ),
    update=operation(
        'updateProviderAggregates', tag='Aggregates',
        summary="Replace a provider's aggregates",
        description='Set the aggregates the provider is a member of. Before 1.19 the body '
                    'is the bare list of aggregate uuids.',
        parameters=[PROVIDER_UUID], request=AGGREGATES_UPDATE,
        responses={200: (AGGREGATES, 'The aggregates.')},
        accept_json=False,
        errors={404: NO_PROVIDER, 409: microversion.since((1, 19), f'From 1.19: {CONFLICT}')},
        changes={'1.19': 'the body is an object with `resource_provider_generation`, checked '
                         'against the provider; the change increments the generation.'},
        conditional='write',
    ),
)(views.ProviderAggregatesViewSet)

extend_schema_view(
    retrieve=operation(
        'listProviderTraits', tag='Traits', summary="List a provider's traits",
        description='The traits of the provider.',
        parameters=[PROVIDER_UUID],
        responses={200: (PROVIDER_TRAITS, 'The traits.')},
        errors={404: NO_PROVIDER},
        conditional='read',
    ),
    update=operation(
        'updateProviderTraits', tag='Traits', summary="Replace a provider's traits",
        description='Set the traits of the provider; every trait must exist.',
        parameters=[PROVIDER_UUID], request=PROVIDER_TRAITS_UPDATE,
        responses={200: (PROVIDER_TRAITS, 'The traits.')},
        accept_json=False,
        errors={400: 'An unknown trait.', 404: NO_PROVIDER, 409: CONFLICT},
        conditional='write',
    ),
    destroy=operation(
        'deleteProviderTraits', tag='Traits', summary="Remove a provider's traits",
        description='Remove every trait from the provider.',
        parameters=[PROVIDER_UUID],
        responses={204: (None, 'Removed.')}, accept_json=False,
        errors={404: NO_PROVIDER, 409: 'The provider changed meanwhile '
                                       '(placement.concurrent_update).'},
        conditional='write',
    ),
)(views.ProviderTraitsViewSet)

CLASSES = 'Resource classes'

extend_schema_view(
    list=operation(
        'listResourceClasses', tag=CLASSES, summary='List resource classes',
        description='Standard and custom resource classes.',
        responses={200: (RESOURCE_CLASS_LIST, 'The resource classes.')},
    ),
    create=operation(
        'createResourceClass', tag=CLASSES, summary='Create a custom resource class',
        description='A new custom resource class; the name starts with `CUSTOM_`.',
        request=RESOURCE_CLASS_CREATE,
        responses={201: (None, 'Created; no body.')},
        links={201: {name: link(name, text, name='$request.body#/name') for name, text in (
            ('showResourceClass', 'The class.'), ('updateResourceClass', 'Verify it.'),
            ('deleteResourceClass', 'Delete it.'))}},
        location=[201], accept_json=False,
        errors={409: 'The resource class exists.'},
    ),
    retrieve=operation(
        'showResourceClass', tag=CLASSES, summary='Show a resource class',
        description='One resource class.', parameters=[CLASS_NAME],
        responses={200: (RESOURCE_CLASS, 'The resource class.')},
        errors={404: 'No such resource class.'},
    ),
    update=operation(
        'updateResourceClass', tag=CLASSES, summary='Create or verify a custom resource class',
        description='From 1.7: create the custom class if missing (201) or confirm it exists '
                    '(204); no body. Before 1.7: rename a custom class to the name in the '
                    'body (200).',
        parameters=[CUSTOM_CLASS_NAME], request=RESOURCE_CLASS_RENAME,
        responses={
            200: microversion.before((1, 7), (RESOURCE_CLASS, 'Before 1.7: the renamed class.')),
            201: microversion.since((1, 7), (None, 'From 1.7: created.')),
            204: microversion.since((1, 7), (None, 'From 1.7: the class exists.')),
        },
        location=[201, 204], cached=[], accept_json=False,
        errors={400: f'The name is not a custom class name (`{CUSTOM_NAME_PATTERN}`), or '
                     '(before 1.7) names a standard class.',
                404: microversion.before((1, 7), 'Before 1.7: no such resource class.'),
                409: microversion.before((1, 7), 'Before 1.7: a class with the new name exists.')},
        changes={'1.7': 'create-or-verify without a body, instead of renaming.'},
    ),
    destroy=operation(
        'deleteResourceClass', tag=CLASSES, summary='Delete a custom resource class',
        description='Delete a custom resource class no inventory uses.',
        parameters=[CUSTOM_CLASS_NAME],
        responses={204: (None, 'Deleted.')}, accept_json=False,
        errors={400: 'A standard class cannot be deleted.', 404: 'No such resource class.',
                409: 'Inventories of this class exist.'},
    ),
)(views.ResourceClassViewSet)

extend_schema_view(
    list=operation(
        'listTraits', tag='Traits', summary='List traits',
        description='Standard and custom traits, optionally filtered. Any other query '
                    'parameter is a 400.',
        parameters=TRAIT_QUERY, query_schema=schemas.TRAIT_LIST_QUERY,
        responses={200: (TRAIT_LIST, 'The trait names.')},
        errors={400: 'A badly formatted `name` or `associated`.'},
    ),
    retrieve=operation(
        'showTrait', tag='Traits', summary='Check a trait exists',
        description='204 if the trait exists.', parameters=[TRAIT_NAME],
        responses={204: (None, 'The trait exists.')}, cached=[204], accept_json=False,
        errors={404: 'No such trait.'},
    ),
    update=operation(
        'updateTrait', tag='Traits', summary='Create or verify a custom trait',
        description='Create the custom trait if missing (201) or confirm it exists (204).',
        parameters=[CUSTOM_TRAIT_NAME],
        responses={201: (None, 'Created.'), 204: (None, 'The trait exists.')},
        links={status: {name: link(name, text, name='$request.path.name') for name, text in (
            ('showTrait', 'Check it exists.'), ('deleteTrait', 'Delete it.'))}
            for status in (201, 204)},
        location=[201, 204], cached=[201, 204], accept_json=False,
        errors={400: f'Not a custom trait name (`{CUSTOM_NAME_PATTERN}`, at most 255 '
                     'characters).'},
    ),
    destroy=operation(
        'deleteTrait', tag='Traits', summary='Delete a custom trait',
        description='Delete a custom trait no provider has.',
        parameters=[CUSTOM_TRAIT_NAME],
        responses={204: (None, 'Deleted.')}, accept_json=False,
        errors={400: 'A standard trait cannot be deleted.', 404: 'No such trait.',
                409: 'A provider has the trait.'},
    ),
)(views.TraitViewSet)

# ---- the event log (not part of OpenStack Placement) --------------------------------

_NULLABLE_INT = {'type': ['integer', 'null']}
EVENT_LIST = Component('EventList', closed({
    'type': 'object',
    'properties': {
        'events': {
            'type': 'array',
            'description': 'Oldest first.',
            'items': {
                'type': 'object',
                'properties': {
                    'id': {'type': 'integer', 'description': 'Increases with every event.'},
                    'event_type': {'type': 'string', 'enum': list(events.EVENT_TYPES)},
                    'created_at': {'type': 'string', 'format': 'date-time'},
                    'request_id': {'type': ['string', 'null'],
                                   'description': 'The x-openstack-request-id of the change.'},
                    'user_id': {'type': ['string', 'null']},
                    'project_id': {'type': ['string', 'null']},
                    'providers': {
                        'type': 'array',
                        'description': 'The providers the change concerns, with their '
                                       'generations (null before a create, after a delete).',
                        'items': {
                            'type': 'object',
                            'properties': {'uuid': UUID, 'generation_before': _NULLABLE_INT,
                                           'generation_after': _NULLABLE_INT},
                            'required': ['uuid', 'generation_before', 'generation_after'],
                        },
                    },
                    'consumer': {
                        'type': ['object', 'null'],
                        'description': 'For allocation events: the consumer and its '
                                       'generations (null before its first allocations and '
                                       'once it holds none).',
                        'properties': {'uuid': UUID, 'generation_before': _NULLABLE_INT,
                                       'generation_after': _NULLABLE_INT},
                        'required': ['uuid', 'generation_before', 'generation_after'],
                    },
                    'payload': {
                        'type': 'object', 'additionalProperties': True,
                        'description': 'What changed: the new name or parent; inventories '
                                       '`added`, `updated` (records) and `removed` (classes); '
                                       'traits or aggregates `added` and `removed`; a '
                                       "consumer's `allocations` after the write, with its "
                                       'project, user and consumer type.',
                    },
                    'sent_at': {'type': ['string', 'null'], 'format': 'date-time',
                                'description': 'When the notification went out, if it has.'},
                },
                'required': ['id', 'event_type', 'created_at', 'request_id', 'user_id',
                             'project_id', 'providers', 'consumer', 'payload', 'sent_at'],
            },
        },
        'links': {**LINKS, 'description': 'A `next` link while more events match.'},
    },
    'required': ['events', 'links'],
}))

extend_schema_view(
    list=operation(
        'listEvents', tag='Events', summary='List events',
        description='Not part of OpenStack Placement; admin only '
                    '(`placement:events:list`). Every change to a provider, its inventories, '
                    'traits and aggregates, and every allocation write, is an event written in '
                    'the same transaction as the change: a refused or rolled-back request '
                    'writes none. Notifications are sent from these events.',
        parameters=[
            query('provider', 'Only events concerning this provider.', UUID),
            query('consumer', 'Only allocation events of this consumer.', UUID),
            query('type', 'Only events of these types (comma-separated).',
                  {'type': 'string', 'pattern': r'^[a-z_.]+(,[a-z_.]+)*$',
                   'example': 'resource_provider.aggregate.add,allocation.update'}),
            query('since', 'Only events created at or after this ISO 8601 time (UTC unless '
                           'it says otherwise).', {'type': 'string', 'format': 'date-time'}),
            query('marker', 'Only events after this event id (the `next` link sets it).',
                  {'type': 'string', 'pattern': '^[0-9]{1,18}$'}),
            query('limit', f'At most this many events (default {schemas.EVENT_PAGE_SIZE}, '
                           f'at most {schemas.EVENT_PAGE_MAX}).',
                  {'type': 'string', 'pattern': '^[1-9][0-9]{0,17}$'}),
        ],
        query_schema=schemas.EVENT_LIST_QUERY,
        responses={200: (EVENT_LIST, 'A page of events.')}, cached=[],
        errors={400: 'An invalid uuid, event type, time or number.'},
    ),
)(views.EventViewSet)
