"""JSON Schemas of the pod and pod-binding bodies and queries (not part of
OpenStack Placement: the same at every microversion)."""
import copy

from placement_site.validation import MAX_INT
from placement_site.validation import NAME_PATTERN
from placement_site.validation import PAGE_LIMIT
from placement_site.validation import PAGE_MARKER

# An affinity tag is key=value, as in flavor or volume-type metadata
# (resource=CAD Modeling). Keys take letters, digits and _ . : / - (as
# metadata keys do); values also spaces (not at either end) and common
# punctuation, but no '=' (a tag is split at its first one) and no
# control characters. Both 1 to 64 characters.
TAG_KEY = '[A-Za-z0-9_.:/-]{1,64}'
_VALUE_END = "[A-Za-z0-9_.:/()+,;&#@!?%*'\\[\\]-]"
TAG_VALUE = f'{_VALUE_END}(?:[ {_VALUE_END[1:-1]}]{{0,62}}{_VALUE_END})?'
# The end of the text: '$' would also match before a final newline.
END = '(?![\\s\\S])'
TAG_KEY_PATTERN = f'^{TAG_KEY}{END}'
TAG_VALUE_PATTERN = f'^{TAG_VALUE}{END}'
AFFINITY_PATTERN = f'^{TAG_KEY}={TAG_VALUE}{END}'
STATES = ['enabled', 'maintenance']

_NAME = {'type': 'string', 'minLength': 1, 'maxLength': 200, 'pattern': '^[^\\x00]*$'}
_ZONE = {'type': 'string', 'minLength': 1, 'maxLength': 255, 'pattern': '^[^\\x00]*$'}
_UUID = {'type': 'string', 'format': 'uuid'}

POD_FIELDS = {
    'name': _NAME,
    'aggregate': _UUID,
    'availability_zone': _ZONE,
    'affinity_tags': {
        'type': 'object',
        'maxProperties': 16,
        'patternProperties': {TAG_KEY_PATTERN: {'type': 'string', 'pattern': TAG_VALUE_PATTERN}},
        'additionalProperties': False,
    },
    'thresholds': {
        'type': 'object',
        'patternProperties': {NAME_PATTERN: {
            'type': 'number', 'exclusiveMinimum': 0, 'maximum': 100}},
        'additionalProperties': False,
    },
    'state': {'type': 'string', 'enum': STATES},
}

# POST /pods
POD_POST = {
    'type': 'object',
    'properties': {**POD_FIELDS, 'uuid': _UUID},
    'required': ['name'],
    'additionalProperties': False,
}

# PUT /pods/{uuid}: the fields given change, the others stay.
POD_PUT = {
    'type': 'object',
    'properties': copy.deepcopy(POD_FIELDS),
    'minProperties': 1,
    'additionalProperties': False,
}

# POST /pod_bindings: a binding request, or (with `pod`) an admin's explicit binding.
BINDING_POST = {
    'type': 'object',
    'properties': {
        'project_id': {'type': 'string', 'minLength': 1, 'maxLength': 255,
                       'pattern': '^[^\\x00]*$'},
        'affinity': {'type': ['string', 'null'], 'pattern': AFFINITY_PATTERN},
        'availability_zone': {'type': ['string', 'null'], **{
            k: v for k, v in _ZONE.items() if k != 'type'}},
        'resources': {
            'type': 'object',
            'patternProperties': {NAME_PATTERN: {'type': 'integer', 'minimum': 1,
                                                 'maximum': MAX_INT}},
            'additionalProperties': False,
        },
        'pod': _UUID,
    },
    'required': ['project_id'],
    'additionalProperties': False,
}

POD_LIST_QUERY = {
    'type': 'object',
    'properties': {
        'availability_zone': {'type': 'string', 'minLength': 1},
        'state': {'type': 'string', 'enum': STATES},
        'affinity': {'type': 'string', 'pattern': f'{AFFINITY_PATTERN}|^$'},
    },
    'additionalProperties': False,
}

BINDING_PAGE_SIZE = 100
BINDING_PAGE_MAX = 1000
BINDING_LIST_QUERY = {
    'type': 'object',
    'properties': {
        'project_id': {'type': 'string', 'minLength': 1},
        'pod': {'type': 'string', 'format': 'uuid'},
        # key=value, or empty for general-purpose bindings.
        'affinity': {'type': 'string', 'pattern': f'{AFFINITY_PATTERN}|^$'},
        'open': {'type': 'string', 'enum': ['true', 'false']},
        'marker': PAGE_MARKER,
        'limit': PAGE_LIMIT,
    },
    'additionalProperties': False,
}
