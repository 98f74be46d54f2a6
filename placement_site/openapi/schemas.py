"""JSON Schema in the document: `Component` (a schema published under
#/components/schemas and referenced by $ref, with the drf-spectacular
extension that publishes it), the validation schemas of the views turned
into the document's (`openapi_schema`, `keyed_maps`, `closed`), and the
small schemas both apps' descriptions share (names, uuids, generations,
links, resource maps).
"""
import copy

import os_resource_classes
import os_traits
from drf_spectacular.extensions import OpenApiSerializerExtension

from placement_site import microversion
from placement_site.openapi.versions import at_version
from placement_site.openapi.versions import document_version
from placement_site.validation import CUSTOM_NAME_PATTERN
from placement_site.validation import NAME_PATTERN
from placement_site.validation import UUID_PATTERN


class Component:
    """A schema published as #/components/schemas/<name> and used by $ref.

    `schema` is a JSON Schema, or a microversion.ByVersion of them (None
    where the operation reads no body); it may hold other Components where a
    sub-schema goes, which become references too, and ByVersion tables where
    a part changes with the microversion (None: absent there).
    """

    def __init__(self, name, schema, description=None, *, body=False):
        self.name = name
        self.schema = schema
        self.description = description
        self.body = body  # a request body: validation schemas, named as clients name
        # An answer of a 'list' action is still one object, never an array of them.
        self._spectacular_annotation = {'many': False}

    def at(self, version):
        """The schema at `version`; {} where there is none."""
        schema = at_version(self.schema, version)
        if schema is None:
            return {}
        if self.body:
            schema = openapi_schema(schema)
        schema = keyed_maps(schema)
        if self.description:
            schema['description'] = sentences(self.description, schema.get('description'))
        return schema

    def __repr__(self):
        return f'Component({self.name!r})'


def request_body(name, schema, description=None):
    """A Component for a request body: a validation schema (or a ByVersion
    of them), published as openapi_schema() gives it."""
    return Component(name, schema, description, body=True)


# Names as the document gives them: resource classes are standard
# (os-resource-classes) or custom, traits standard (os-traits) or custom. The
# validation schemas only check the pattern; the rest is a 400 naming the
# unknown class or trait.
CLASS_NAME_SCHEMA = {'type': 'string', 'maxLength': 255, 'anyOf': [
    {'enum': list(os_resource_classes.STANDARDS)}, {'pattern': CUSTOM_NAME_PATTERN}]}
TRAIT_NAME_SCHEMA = {'type': 'string', 'maxLength': 255, 'anyOf': [
    {'enum': sorted(os_traits.get_traits())}, {'pattern': CUSTOM_NAME_PATTERN}]}
CUSTOM_NAME_SCHEMA = {'type': 'string', 'pattern': CUSTOM_NAME_PATTERN, 'maxLength': 255}
NO_NUL = '^[^\\x00]*$'
# Canonical uuids: bodies accept any 36 hex digits and dashes as a key, as
# Placement does, but the document asks clients for real uuids.
UUID_KEY = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$'


def openapi_schema(schema):
    """A copy of a validation JSON Schema of a body for the document: JSON
    Schema as it is (OpenAPI 3.1), but keys named by uuid ask for canonical
    uuids, and resource class and trait names for real ones."""
    if isinstance(schema, list):
        return [openapi_schema(value) for value in schema]
    if not isinstance(schema, dict):
        return copy.deepcopy(schema)
    result = {key: openapi_schema(value) for key, value in schema.items()}
    patterns = result.get('patternProperties', {})
    if UUID_PATTERN in patterns:
        patterns[UUID_KEY] = patterns.pop(UUID_PATTERN)
    if NAME_PATTERN in patterns:  # a map keyed by resource class
        result['propertyNames'] = copy.deepcopy(CLASS_NAME_SCHEMA)
        result['additionalProperties'] = patterns.pop(NAME_PATTERN)
    if 'patternProperties' in result and not patterns:
        del result['patternProperties']
    # (read from the validation schema: the copy's strings have NO_NUL)
    original = schema.get('properties', {})
    properties = result.get('properties', {})
    if original.get('resource_class', {}).get('pattern') == NAME_PATTERN:
        properties['resource_class'] = copy.deepcopy(CLASS_NAME_SCHEMA)
    traits = original.get('traits', {})
    if traits.get('type') == 'array' and 'pattern' not in traits.get('items', {}):
        properties['traits']['items'] = copy.deepcopy(TRAIT_NAME_SCHEMA)
    if result.get('type') == 'string' and not {'pattern', 'format', 'enum'} & set(result):
        result['pattern'] = NO_NUL  # the service refuses NUL characters in any string
    return result


def keyed_maps(schema):
    """`schema` with its maps (objects whose keys follow patterns) given as
    propertyNames plus an additionalProperties schema: the same constraint
    in JSON Schema, and the form code generators read (they drop objects
    described by patternProperties alone). A map whose values differ by key
    pattern keeps its patternProperties, exact, beside the union of them."""
    if isinstance(schema, list):
        return [keyed_maps(value) for value in schema]
    if not isinstance(schema, dict) or isinstance(schema, Component):
        return schema
    result = {key: keyed_maps(value) for key, value in schema.items()}
    patterns = result.get('patternProperties')
    if not patterns or result.get('additionalProperties', True) is not False:
        return result  # other keys allowed (any value): nothing to rewrite
    names = [{'pattern': pattern} for pattern in patterns]
    if result.get('properties'):
        names.append({'enum': list(result['properties'])})
    values = list(patterns.values())
    if len(patterns) == 1:
        del result['patternProperties']
    result['propertyNames'] = names[0] if len(names) == 1 else {'anyOf': names}
    result['additionalProperties'] = values[0] if len(values) == 1 else {'anyOf': values}
    return result


def closed(schema):
    """A response schema whose objects have exactly the properties listed
    (Placement's answers have no others)."""
    if isinstance(schema, microversion.ByVersion):
        return schema.map(closed)
    if isinstance(schema, list):
        return [closed(value) for value in schema]
    if not isinstance(schema, dict):
        return schema
    result = {key: closed(value) for key, value in schema.items()}
    if 'properties' in result and 'additionalProperties' not in result:
        result['additionalProperties'] = False
    return result


def sentences(*parts):
    """The parts that are not empty, one after the other."""
    return ' '.join(part for part in parts if part)


def resources_map(description, value=None):
    """{resource class name: value}, amounts by default."""
    return {
        'type': 'object',
        'description': sentences(description, 'Keyed by resource class name.'),
        'patternProperties': {NAME_PATTERN: value or {'type': 'integer', 'minimum': 0}},
        'additionalProperties': False,
    }


UUID = {'type': 'string', 'format': 'uuid'}
GENERATION = {
    'type': 'integer',
    'description': "The provider's generation: every change to its inventories, traits, "
                   'aggregates or allocations increments it. Writers send the value they '
                   'read; a stale one is a 409 placement.concurrent_update.',
}
LINKS = {
    'type': 'array',
    'items': {
        'type': 'object',
        'properties': {'rel': {'type': 'string'}, 'href': {'type': 'string'}},
        'required': ['rel', 'href'],
        'additionalProperties': False,
    },
}


class ComponentExtension(OpenApiSerializerExtension):
    """Lets drf-spectacular treat a Component as it treats a serializer."""
    target_class = Component

    def get_name(self, auto_schema, direction):
        return self.target.name

    def map_serializer(self, auto_schema, direction):
        return _references(self.target.at(document_version()), auto_schema, direction)


def _references(node, auto_schema, direction):
    if isinstance(node, Component):
        return auto_schema.resolve_serializer(node, direction).ref
    if isinstance(node, dict):
        return {key: _references(value, auto_schema, direction) for key, value in node.items()}
    if isinstance(node, list):
        return [_references(value, auto_schema, direction) for value in node]
    return node
