"""JSON Schemas of request bodies and query strings, per microversion.

A later microversion's schema is the earlier one copied and extended, so
each version's contract can be read on its own.
"""
import copy

from placement_site.microversion import ByVersion
from placement_site.validation import CUSTOM_NAME_PATTERN
from placement_site.validation import MAX_INT
from placement_site.validation import NAME_PATTERN
from placement_site.validation import PAGE_LIMIT
from placement_site.validation import PAGE_MARKER
from placement_site.validation import SQL_SP_FLOAT_MAX

# ---- resource providers ----------------------------------------------------

PROVIDER_POST = {
    'type': 'object',
    'properties': {
        'name': {'type': 'string', 'maxLength': 200},
        'uuid': {'type': 'string', 'format': 'uuid'},
    },
    'required': ['name'],
    'additionalProperties': False,
}
PROVIDER_PUT = copy.deepcopy(PROVIDER_POST)
del PROVIDER_PUT['properties']['uuid']

PROVIDER_POST_1_14 = copy.deepcopy(PROVIDER_POST)
PROVIDER_POST_1_14['properties']['parent_provider_uuid'] = {
    'anyOf': [{'type': 'string', 'format': 'uuid'}, {'type': 'null'}],
}
PROVIDER_PUT_1_14 = copy.deepcopy(PROVIDER_POST_1_14)
del PROVIDER_PUT_1_14['properties']['uuid']

PROVIDER_LIST_QUERY = {
    'type': 'object',
    'properties': {
        'name': {'type': 'string'},
        'uuid': {'type': 'string', 'format': 'uuid'},
    },
    'additionalProperties': False,
}
PROVIDER_LIST_QUERY_1_3 = copy.deepcopy(PROVIDER_LIST_QUERY)
PROVIDER_LIST_QUERY_1_3['properties']['member_of'] = {'type': 'string'}
PROVIDER_LIST_QUERY_1_4 = copy.deepcopy(PROVIDER_LIST_QUERY_1_3)
PROVIDER_LIST_QUERY_1_4['properties']['resources'] = {'type': 'string'}
PROVIDER_LIST_QUERY_1_14 = copy.deepcopy(PROVIDER_LIST_QUERY_1_4)
PROVIDER_LIST_QUERY_1_14['properties']['in_tree'] = {'type': 'string', 'format': 'uuid'}
PROVIDER_LIST_QUERY_1_18 = copy.deepcopy(PROVIDER_LIST_QUERY_1_14)
PROVIDER_LIST_QUERY_1_18['properties']['required'] = {'type': 'string'}
PROVIDER_LIST_QUERY_BY_VERSION = ByVersion([
    ((1, 18), PROVIDER_LIST_QUERY_1_18), ((1, 14), PROVIDER_LIST_QUERY_1_14),
    ((1, 4), PROVIDER_LIST_QUERY_1_4), ((1, 3), PROVIDER_LIST_QUERY_1_3)], PROVIDER_LIST_QUERY)

# ---- inventories --------------------------------------------------------------

INVENTORY_RECORD = {
    'type': 'object',
    'properties': {
        'resource_provider_generation': {'type': 'integer'},
        'total': {'type': 'integer', 'maximum': MAX_INT, 'minimum': 1},
        'reserved': {'type': 'integer', 'maximum': MAX_INT, 'minimum': 0},
        'min_unit': {'type': 'integer', 'maximum': MAX_INT, 'minimum': 1},
        'max_unit': {'type': 'integer', 'maximum': MAX_INT, 'minimum': 1},
        'step_size': {'type': 'integer', 'maximum': MAX_INT, 'minimum': 1},
        # The column's range (a single-precision float on PostgreSQL).
        'allocation_ratio': {'type': 'number', 'minimum': -SQL_SP_FLOAT_MAX,
                             'maximum': SQL_SP_FLOAT_MAX},
    },
    'required': ['total', 'resource_provider_generation'],
    'additionalProperties': False,
}
# PUT /resource_providers/{uuid}/inventories/{resource_class}
INVENTORY_PUT = INVENTORY_RECORD

INVENTORY_POST = copy.deepcopy(INVENTORY_RECORD)
INVENTORY_POST['properties']['resource_class'] = {'type': 'string', 'pattern': NAME_PATTERN}
INVENTORY_POST['required'] = ['total', 'resource_class']

_INVENTORY_IN_SET = copy.deepcopy(INVENTORY_RECORD)
_INVENTORY_IN_SET['required'] = ['total']
# PUT /resource_providers/{uuid}/inventories
INVENTORIES_PUT = {
    'type': 'object',
    'properties': {
        'resource_provider_generation': {'type': 'integer'},
        'inventories': {
            'type': 'object',
            'patternProperties': {NAME_PATTERN: _INVENTORY_IN_SET},
        },
    },
    'required': ['resource_provider_generation', 'inventories'],
    'additionalProperties': False,
}

# ---- aggregates ---------------------------------------------------------------

_AGGREGATE_LIST = {
    'type': 'array',
    'items': {'type': 'string', 'format': 'uuid'},
    'uniqueItems': True,
}
AGGREGATES_PUT_1_1 = copy.deepcopy(_AGGREGATE_LIST)
AGGREGATES_PUT_1_19 = {
    'type': 'object',
    'properties': {
        'aggregates': copy.deepcopy(_AGGREGATE_LIST),
        'resource_provider_generation': {'type': 'integer'},
    },
    'required': ['aggregates', 'resource_provider_generation'],
    'additionalProperties': False,
}

# ---- traits ---------------------------------------------------------------------

TRAIT_NAME = {'type': 'string', 'minLength': 1, 'maxLength': 255}
CUSTOM_TRAIT_NAME = {**TRAIT_NAME, 'pattern': CUSTOM_NAME_PATTERN}
PROVIDER_TRAITS_PUT = {
    'type': 'object',
    'properties': {
        'traits': {'type': 'array', 'items': TRAIT_NAME},
        'resource_provider_generation': {'type': 'integer'},
    },
    'required': ['traits', 'resource_provider_generation'],
    'additionalProperties': False,
}
TRAIT_LIST_QUERY = {
    'type': 'object',
    'properties': {
        'name': {'type': 'string'},
        'associated': {'type': 'string'},
    },
    'additionalProperties': False,
}

# ---- resource classes -------------------------------------------------------------

RESOURCE_CLASS_POST = {
    'type': 'object',
    'properties': {
        'name': {'type': 'string', 'pattern': CUSTOM_NAME_PATTERN, 'maxLength': 255},
    },
    'required': ['name'],
    'additionalProperties': False,
}
RESOURCE_CLASS_PUT = RESOURCE_CLASS_POST

# ---- the body of each operation at each microversion ------------------------------
# (the views validate with these; the OpenAPI document publishes them)

PROVIDER_POST_BY_VERSION = ByVersion([((1, 14), PROVIDER_POST_1_14)], PROVIDER_POST)
PROVIDER_PUT_BY_VERSION = ByVersion([((1, 14), PROVIDER_PUT_1_14)], PROVIDER_PUT)
AGGREGATES_PUT_BY_VERSION = ByVersion([((1, 19), AGGREGATES_PUT_1_19)], AGGREGATES_PUT_1_1,
                                      since=(1, 1))
# Before 1.7 a PUT renames the class to the name in the body; from 1.7 it
# reads no body.
RESOURCE_CLASS_PUT_BY_VERSION = ByVersion([((1, 7), None)], RESOURCE_CLASS_PUT, since=(1, 2))


# ---- the event log (not part of OpenStack Placement) ------------------------------

EVENT_PAGE_SIZE = 100
EVENT_PAGE_MAX = 1000
EVENT_LIST_QUERY = {
    'type': 'object',
    'properties': {
        'provider': {'type': 'string', 'format': 'uuid'},
        'consumer': {'type': 'string', 'format': 'uuid'},
        # One event type or several, comma-separated.
        'type': {'type': 'string', 'pattern': r'^[a-z_.]+(,[a-z_.]+)*$'},
        # An ISO 8601 time; parsed by the view.
        'since': {'type': 'string', 'minLength': 1},
        'marker': PAGE_MARKER,
        'limit': PAGE_LIMIT,
    },
    'additionalProperties': False,
}
