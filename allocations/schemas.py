"""JSON Schemas of allocation bodies and usage queries, per microversion."""
import copy

from placement_site.microversion import ByVersion
from placement_site.validation import CONSUMER_TYPE_PATTERN
from placement_site.validation import CONSUMER_TYPE_QUERY_PATTERN
from placement_site.validation import GROUP_SUFFIX_1_33
from placement_site.validation import NAME_PATTERN
from placement_site.validation import UUID_PATTERN
from providers.schemas import INVENTORIES_PUT

_RESOURCES = {
    'type': 'object',
    'minProperties': 1,
    'patternProperties': {NAME_PATTERN: {'type': 'integer', 'minimum': 1}},
    'additionalProperties': False,
}
_OWNER_ID = {'type': 'string', 'minLength': 1, 'maxLength': 255}

# PUT /allocations/{consumer_uuid} before 1.8: a list of allocations.
ALLOCATIONS_PUT = {
    'type': 'object',
    'properties': {
        'allocations': {
            'type': 'array',
            'minItems': 1,
            'items': {
                'type': 'object',
                'properties': {
                    'resource_provider': {
                        'type': 'object',
                        'properties': {'uuid': {'type': 'string', 'format': 'uuid'}},
                        'additionalProperties': False,
                        'required': ['uuid'],
                    },
                    'resources': _RESOURCES,
                },
                'required': ['resource_provider', 'resources'],
                'additionalProperties': False,
            },
        },
    },
    'required': ['allocations'],
    'additionalProperties': False,
}
ALLOCATIONS_PUT_1_8 = copy.deepcopy(ALLOCATIONS_PUT)
ALLOCATIONS_PUT_1_8['properties']['project_id'] = _OWNER_ID
ALLOCATIONS_PUT_1_8['properties']['user_id'] = _OWNER_ID
ALLOCATIONS_PUT_1_8['required'] += ['project_id', 'user_id']

# From 1.12 allocations are keyed by provider uuid.
ALLOCATIONS_PUT_1_12 = {
    'type': 'object',
    'properties': {
        'allocations': {
            'type': 'object',
            'minProperties': 1,
            'patternProperties': {
                UUID_PATTERN: {
                    'type': 'object',
                    'properties': {
                        'generation': {'type': 'integer'},  # accepted, ignored
                        'resources': _RESOURCES,
                    },
                    'required': ['resources'],
                    'additionalProperties': False,
                },
            },
            'additionalProperties': False,
        },
        'project_id': _OWNER_ID,
        'user_id': _OWNER_ID,
    },
    'required': ['allocations', 'project_id', 'user_id'],
    'additionalProperties': False,
}

# Empty allocations ({}) remove a consumer's allocations.
_DELETABLE = copy.deepcopy(ALLOCATIONS_PUT_1_12)
_DELETABLE['properties']['allocations']['minProperties'] = 0
ALLOCATIONS_POST_1_13 = {
    'type': 'object',
    'minProperties': 1,
    'additionalProperties': False,
    'patternProperties': {UUID_PATTERN: _DELETABLE},
}

_GENERATION = {'type': ['integer', 'null']}
ALLOCATIONS_PUT_1_28 = copy.deepcopy(_DELETABLE)
ALLOCATIONS_PUT_1_28['properties']['consumer_generation'] = _GENERATION
ALLOCATIONS_PUT_1_28['required'].append('consumer_generation')
ALLOCATIONS_POST_1_28 = copy.deepcopy(ALLOCATIONS_POST_1_13)
ALLOCATIONS_POST_1_28['patternProperties'] = {UUID_PATTERN: ALLOCATIONS_PUT_1_28}

MAPPINGS = {
    'type': 'object',
    'minProperties': 1,
    'patternProperties': {
        GROUP_SUFFIX_1_33: {
            'type': 'array',
            'minItems': 1,
            'items': {'type': 'string', 'format': 'uuid'},
        },
    },
}
ALLOCATIONS_PUT_1_34 = copy.deepcopy(ALLOCATIONS_PUT_1_28)
ALLOCATIONS_PUT_1_34['properties']['mappings'] = MAPPINGS
ALLOCATIONS_POST_1_34 = copy.deepcopy(ALLOCATIONS_POST_1_28)
ALLOCATIONS_POST_1_34['patternProperties'] = {UUID_PATTERN: ALLOCATIONS_PUT_1_34}

ALLOCATIONS_PUT_1_38 = copy.deepcopy(ALLOCATIONS_PUT_1_34)
ALLOCATIONS_PUT_1_38['properties']['consumer_type'] = {
    'type': 'string', 'pattern': CONSUMER_TYPE_PATTERN, 'minLength': 1, 'maxLength': 255,
}
ALLOCATIONS_PUT_1_38['required'].append('consumer_type')
ALLOCATIONS_POST_1_38 = copy.deepcopy(ALLOCATIONS_POST_1_34)
ALLOCATIONS_POST_1_38['patternProperties'] = {UUID_PATTERN: ALLOCATIONS_PUT_1_38}

# ---- GET /usages ---------------------------------------------------------------

USAGES_QUERY_1_9 = {
    'type': 'object',
    'properties': {
        'project_id': _OWNER_ID,
        'user_id': _OWNER_ID,
    },
    'required': ['project_id'],
    'additionalProperties': False,
}
USAGES_QUERY_1_38 = copy.deepcopy(USAGES_QUERY_1_9)
USAGES_QUERY_1_38['properties']['consumer_type'] = {
    'type': 'string', 'pattern': CONSUMER_TYPE_QUERY_PATTERN, 'minLength': 1, 'maxLength': 255,
}

# ---- POST /reshaper (1.30) ---------------------------------------------------


def _reshaper(allocations_schema):
    allocations = copy.deepcopy(allocations_schema)
    allocations['minProperties'] = 0
    return {
        'type': 'object',
        'properties': {
            'inventories': {
                'type': 'object',
                'patternProperties': {UUID_PATTERN: INVENTORIES_PUT},
                # Nothing to reshape without at least one provider.
                'minProperties': 1,
                'additionalProperties': False,
            },
            'allocations': allocations,
        },
        'required': ['inventories', 'allocations'],
        'additionalProperties': False,
    }


RESHAPER_POST = _reshaper(ALLOCATIONS_POST_1_28)
RESHAPER_POST_1_34 = _reshaper(ALLOCATIONS_POST_1_34)
RESHAPER_POST_1_38 = _reshaper(ALLOCATIONS_POST_1_38)

# ---- the body of each operation at each microversion ------------------------------
# (the views validate with these; the OpenAPI document publishes them)

ALLOCATIONS_PUT_BY_VERSION = ByVersion([
    ((1, 38), ALLOCATIONS_PUT_1_38), ((1, 34), ALLOCATIONS_PUT_1_34),
    ((1, 28), ALLOCATIONS_PUT_1_28), ((1, 12), ALLOCATIONS_PUT_1_12),
    ((1, 8), ALLOCATIONS_PUT_1_8)], ALLOCATIONS_PUT)
ALLOCATIONS_POST_BY_VERSION = ByVersion([
    ((1, 38), ALLOCATIONS_POST_1_38), ((1, 34), ALLOCATIONS_POST_1_34),
    ((1, 28), ALLOCATIONS_POST_1_28)], ALLOCATIONS_POST_1_13, since=(1, 13))
RESHAPER_POST_BY_VERSION = ByVersion([
    ((1, 38), RESHAPER_POST_1_38), ((1, 34), RESHAPER_POST_1_34)], RESHAPER_POST,
    since=(1, 30))
