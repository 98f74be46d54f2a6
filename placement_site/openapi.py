"""The OpenAPI document's shared pieces: the microversion header, the token,
Placement's error bodies, named schemas, and `operation()`, which turns one
Placement operation's facts into drf-spectacular's `extend_schema`.

The views validate bodies against JSON Schemas and answer plain dicts, so
the document is written, not introspected: the docs modules of the apps
attach it to the viewsets, and the extensions below let drf-spectacular
read Placement's views (microversions in a header, tokens checked by the
middleware) and publish JSON Schemas as components.
"""
import contextlib
import contextvars
import copy
import functools

import os_resource_classes
import os_traits
from django.http import JsonResponse
from drf_spectacular.extensions import (OpenApiAuthenticationExtension,
                                        OpenApiSerializerExtension, OpenApiViewExtension)
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import (OpenApiParameter, OpenApiResponse, extend_schema,
                                   extend_schema_view)
from drf_spectacular.views import SpectacularAPIView

from placement_site import microversion
from placement_site.api import PlacementViewSet
from placement_site.validation import CUSTOM_NAME_PATTERN, NAME_PATTERN, UUID_PATTERN
from placement_site.views import RootViewSet

# ---- one document per microversion ------------------------------------------------
# Operations, parameters, bodies and answers change with the microversion, so
# the document describes one: GET /api/schema/?version=1.20 (latest without
# it). Parts of the docs that exist only in some microversions say so with
# `x-since` / `x-until` (first / last version, 'X.Y'), and parts that change
# with `versioned()`; at_version() resolves both for the version described.

_DOCUMENT_VERSION = contextvars.ContextVar('openapi_document_version', default=None)


def document_version():
    """The microversion the document being generated describes."""
    return _DOCUMENT_VERSION.get() or microversion.parse(microversion.MAX_VERSION)


@contextlib.contextmanager
def describing(version):
    """Generate the document of `version` (a Version) inside the block."""
    token = _DOCUMENT_VERSION.set(version)
    try:
        yield
    finally:
        _DOCUMENT_VERSION.reset(token)


def _version(text):
    major, minor = text.split('.')
    return int(major), int(minor)


def versioned(*spans):
    """A part that changes with the microversion: ('X.Y', value) pairs, oldest
    first, each value holding from its version on (absent before the first)."""
    return {'x-by-version': [[since, value] for since, value in spans]}


_MISSING = object()


def at_version(node, version):
    """`node` (a schema, parameter or operation) as it is at `version`."""
    version = tuple(version)
    if isinstance(node, dict):
        if 'x-by-version' in node:
            chosen = _MISSING
            for since, value in node['x-by-version']:
                if version >= _version(since):
                    chosen = value
            return _MISSING if chosen is _MISSING else at_version(chosen, version)
        if 'x-since' in node and version < _version(node['x-since']):
            return _MISSING
        if 'x-until' in node and version > _version(node['x-until']):
            return _MISSING
        result = {}
        for key, value in node.items():
            if key in ('x-since', 'x-until'):
                continue
            value = at_version(value, version)
            if value is not _MISSING:
                result[key] = value
        properties = result.get('properties')
        if isinstance(properties, dict) and isinstance(result.get('required'), list):
            result['required'] = [name for name in result['required'] if name in properties]
            if not result['required']:
                del result['required']
        return result
    if isinstance(node, list):
        values = [at_version(value, version) for value in node]
        return [value for value in values if value is not _MISSING]
    return node


# ---- JSON Schema in the document -----------------------------------------------------


class Component:
    """A schema published as #/components/schemas/<name> and used by $ref.

    `schema` is a JSON Schema, or a microversion.ByVersion of them (None
    where the operation reads no body); it may hold other Components where a
    sub-schema goes, which become references too.
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
        schema = self.schema
        if isinstance(schema, microversion.ByVersion):
            schema = schema.at(version)
        if schema is None:
            return {}
        schema = at_version(schema, version)
        if self.body:
            schema = openapi_schema(schema)
        schema = keyed_maps(schema)
        if self.description:
            schema['description'] = _sentences(self.description, schema.get('description'))
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
    if isinstance(schema, list):
        return [closed(value) for value in schema]
    if not isinstance(schema, dict):
        return schema
    result = {key: closed(value) for key, value in schema.items()}
    if 'properties' in result and 'additionalProperties' not in result:
        result['additionalProperties'] = False
    return result


def _sentences(*parts):
    return ' '.join(part for part in parts if part)


def resources_map(description, value=None):
    """{resource class name: value}, amounts by default."""
    return {
        'type': 'object',
        'description': _sentences(description, 'Keyed by resource class name.'),
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


# ---- the token and the views as the generator sees them ---------------------------


class AuthToken:
    """Stands for the middleware's token check in the document; never runs."""

    def authenticate(self, request):
        return None


class AuthTokenScheme(OpenApiAuthenticationExtension):
    target_class = AuthToken
    name = 'AuthToken'

    def get_security_definition(self, auto_schema):
        return {
            'type': 'apiKey',
            'in': 'header',
            'name': 'X-Auth-Token',
            'description': (
                'The `X-Auth-Token` header. With the `keystone` strategy a Keystone '
                'token; with `noauth2` (the default) `user[:project]`, where the user '
                '`admin` has the admin role. Missing or invalid: 401. Every path but `/` '
                'needs it.'),
        }


@functools.cache
def schema_view(view_class):
    """The view as documented: the microversion is a documented header rather
    than DRF versioning, and every operation needs the token."""
    return type(view_class.__name__, (view_class,), {
        '__module__': view_class.__module__,
        '__doc__': view_class.__doc__,
        'versioning_class': None,
        'authentication_classes': [AuthToken],
    })


class PlacementViewExtension(OpenApiViewExtension):
    target_class = PlacementViewSet
    match_subclasses = True

    def view_replacement(self):
        return schema_view(self.target)


# ---- headers ----------------------------------------------------------------------

MICROVERSION_HEADER = OpenApiParameter(
    'OpenStack-API-Version', str, OpenApiParameter.HEADER,
    description=(
        f'The microversion to serve the request at: `placement X.Y` with X.Y from '
        f'{microversion.MIN_VERSION} to {microversion.MAX_VERSION}, or `placement latest` '
        f'({microversion.MAX_VERSION}). Without the header the request is served at '
        f'{microversion.MIN_VERSION}. A malformed value is a 400, a version outside the '
        'range a 406. The answer names the version used in the same header.'),
)


def _describe_microversion_header(parameter, version):
    """The header as the document of `version` has it: the one value its
    requests send, also the default of clients generated from it. Not
    `required`: a request without it is valid, only another microversion's
    (1.0), described by that version's document."""
    value = f'placement {version.major}.{version.minor}'
    parameter['schema'] = {'type': 'string', 'enum': [value], 'default': value}
    parameter['required'] = False
    parameter['description'] += f' This document describes requests sent with `{value}`.'


def _response_header(name, description, codes=True):
    return OpenApiParameter(name, str, OpenApiParameter.HEADER, description=description,
                            response=codes if codes is True else [str(c) for c in codes])


# ---- errors -------------------------------------------------------------------------

ERROR = Component('Error', {
    'type': 'object',
    'properties': {
        'errors': {
            'type': 'array',
            'minItems': 1,
            'items': {
                'type': 'object',
                'properties': {
                    'status': {'type': 'integer', 'description': 'The HTTP status code.'},
                    'title': {'type': 'string', 'example': 'Not Found'},
                    'detail': {'type': 'string', 'description': 'What went wrong.'},
                    'code': {
                        'type': 'string',
                        'description': (
                            'From microversion 1.23: what went wrong, for programs. One of '
                            'placement.undefined_code, placement.concurrent_update, '
                            'placement.duplicate_name, placement.inventory.inuse, '
                            'placement.resource_provider.inuse, '
                            'placement.resource_provider.cannot_delete_parent, '
                            'placement.resource_provider.not_found, '
                            'placement.query.duplicate_key, placement.query.bad_value, '
                            'placement.query.missing_value; for the pod endpoints (ours) '
                            'also placement.pod.inuse and placement.pod.none_available.'),
                        'example': 'placement.concurrent_update',
                    },
                    'request_id': {
                        'type': 'string', 'example': 'req-7c1b9a46-0f5e-4d0e-9d3c-2f1f3e1c0a11'},
                    'min_version': {
                        'type': 'string',
                        'description': 'Only in the 406 for an unsupported microversion.'},
                    'max_version': {
                        'type': 'string',
                        'description': 'Only in the 406 for an unsupported microversion.'},
                },
                'required': ['status', 'title', 'detail'],
            },
        },
    },
    'required': ['errors'],
}, description=(
    "Placement's error body. A client whose Accept header prefers text/html or "
    'text/plain gets the same error as HTML or plain text.'))

UNAUTHORIZED = Component('Unauthorized', {
    'type': 'object',
    'properties': {
        'message': {'type': 'string'},
        'code': {'type': 'string', 'example': '401 Unauthorized'},
        'title': {'type': 'string', 'example': 'Unauthorized'},
    },
    'required': ['message', 'code', 'title'],
}, description="The 401 body of the noauth2 strategy; with `keystone` it is keystonemiddleware's.")

ERROR_DESCRIPTIONS = {
    400: 'Bad request: a malformed OpenStack-API-Version header, or a Content-Length '
         'without a Content-Type.',
    401: 'No token, or an invalid one.',
    403: 'The policy forbids the request to this token.',
    404: 'Not found.',
    405: 'Method not allowed.',
    406: 'The requested microversion is outside the supported range.',
    409: 'Conflict.',
    415: 'The request body is not declared as application/json.',
}


# Not the service's answer but its HTTP server's (gunicorn's limit on the
# request line; Apache's in front of OpenStack Placement), so not JSON.
URI_TOO_LONG = OpenApiResponse(
    {'type': 'string'}, 'The request line (method, path and query string) is longer than the '
    'HTTP server in front of the service takes: an HTML page from that server.')


def error(status, description=None):
    """A reusable error response: Placement's error body with a description."""
    body = UNAUTHORIZED if status == 401 else ERROR
    return OpenApiResponse(body, description or ERROR_DESCRIPTIONS[status])


ERRORS = {status: error(status) for status in ERROR_DESCRIPTIONS}

# ---- one operation ------------------------------------------------------------------


_SINCE = {}  # operation id -> the first microversion that has it


class OperationSchema(AutoSchema):
    """One operation at the document's microversion: left out before `since`,
    answers and headers of other microversions removed, links added; and a
    JSON request body marked required, as Placement reads one whenever the
    operation documents a Component as its body (drf-spectacular would infer
    'optional' for bodies without required properties, such as maps)."""
    optional_body = False
    since = microversion.MIN_VERSION
    spans = {}   # status -> (first, last) microversion answering it, None for open
    links = {}   # status -> OpenAPI links

    def get_operation(self, *args, **kwargs):
        version = document_version()
        if tuple(version) < _version(self.since):
            return None   # the document of an older microversion has no such operation
        operation = super().get_operation(*args, **kwargs)
        if operation is None:
            return None
        operation = at_version(operation, version)
        for parameter in operation.get('parameters', ()):
            until = parameter.pop('x-required-until', None)
            if until:
                parameter['required'] = tuple(version) <= _version(until)
            if 'schema' in parameter:
                parameter['schema'] = keyed_maps(parameter['schema'])
            if parameter['in'] == 'header' and parameter['name'] == MICROVERSION_HEADER.name:
                _describe_microversion_header(parameter, version)
        body = operation.get('requestBody')
        responses = operation['responses']
        if body is not None:
            body.pop('required', None)
            if not self.optional_body:
                body['required'] = True
        else:
            responses.pop('415', None)  # no body at this microversion
        for status, (first, last) in self.spans.items():
            if (first and tuple(version) < _version(first)) or (
                    last and tuple(version) > _version(last)):
                responses.pop(str(status), None)
        for status, links in self.links.items():
            available = {name: link for name, link in links.items()
                         if tuple(version) >= _version(_SINCE[link['operationId']])}
            if str(status) in responses and available:
                responses[str(status)]['links'] = copy.deepcopy(available)
        if tuple(version) < (1, 15):
            for response in responses.values():
                for header in ('Last-Modified', 'Cache-Control'):
                    response.get('headers', {}).pop(header, None)
        return operation


def operation(operation_id, *, tag, summary, description, responses, since='1.0',
              changes=None, parameters=(), request=None, errors=None,
              accept_json=True, location=(), cached=None, public=False, links=None):
    """extend_schema for one Placement operation.

    request: a Component (a required JSON body) or a raw schema (an optional one).
    responses: {status: (Component or None, description[, first, last])} for
    the successes; first / last: the microversions that answer it ('X.Y' or None).
    errors: {status: description, or (description, first, last)}; 400, 401,
    403 and 406 are always there
    (the header checks), and 415 with a JSON body. The documents of
    microversions older than `since` leave the operation out.
    changes: {microversion: what it changed}, listed under the description.
    location / cached: the success statuses that carry a Location header /
    Last-Modified and Cache-Control (from 1.15; default: those with a body).
    links: {status: {name: OpenAPI link}} from this operation's answer to others.
    """
    texts = {status: ERROR_DESCRIPTIONS[status] for status in (400, 406)}
    if not public:
        texts.update({401: ERROR_DESCRIPTIONS[401], 403: ERROR_DESCRIPTIONS[403]})
    if request is not None:
        texts[400] = _sentences(texts[400], 'Malformed JSON, or a body that does not validate.')
        texts[415] = ERROR_DESCRIPTIONS[415]
    if accept_json:
        texts[406] = ('The requested microversion is outside the supported range, or the '
                      'Accept header rules out application/json.')
    answers, spans = {}, {}
    for status, text in (errors or {}).items():
        if isinstance(text, tuple):
            text, *span = text
            spans[status] = tuple(span)
        texts[status] = _sentences(texts.get(status) if status in (400, 406) else None, text)
    for status, (body, text, *span) in responses.items():
        answers[status] = OpenApiResponse(body, text)
        if span:
            spans[status] = tuple(span)
    answers.update({status: ERRORS[status] if text == ERROR_DESCRIPTIONS[status]
                    else error(status, text) for status, text in sorted(texts.items())})
    answers[(414, 'text/html')] = URI_TOO_LONG

    successes = sorted(responses)
    if cached is None:
        cached = [status for status, (body, *_) in responses.items() if body is not None]
    headers = [
        _response_header('x-openstack-request-id', 'The id of the request, for the logs.'),
        _response_header('OpenStack-API-Version', 'The microversion that served the request.',
                         successes),
    ]
    if location:
        headers.append(_response_header('Location', 'The URL of the resource.', location))
    if cached:
        headers += [
            _response_header('Last-Modified', 'From microversion 1.15: when the resource '
                             'last changed (now for computed answers).', cached),
            _response_header('Cache-Control', 'From microversion 1.15: `no-cache`.', cached),
        ]
    _SINCE[operation_id] = since
    schema_class = type('OperationSchema', (OperationSchema,), {
        'optional_body': isinstance(request, dict), 'since': since, 'spans': spans,
        'links': links or {}})
    if request is not None:
        request = {'application/json': request}
    extended = extend_schema(
        operation_id=operation_id,
        summary=summary,
        description=_description(description, since, changes),
        tags=[tag],
        parameters=[MICROVERSION_HEADER, *parameters, *headers],
        request=request,
        responses=answers,
        auth=[] if public else None,
    )

    def decorator(handler):
        # extend_schema builds on the schema class it finds on the handler.
        handler.kwargs = {**getattr(handler, 'kwargs', {}), 'schema': schema_class}
        return extended(handler)
    return decorator


def link(operation_id, description, **parameters):
    """An OpenAPI link to `operation_id`, its parameters given by runtime
    expressions such as '$response.body#/uuid'."""
    return {'operationId': operation_id, 'parameters': parameters, 'description': description}


def _description(text, since, changes):
    lines = [text.strip(), '', f'**Microversions:** available since {since}.']
    for version, change in (changes or {}).items():
        lines.append(f'- {version}: {change}')
    return '\n'.join(lines)


# ---- path and query parameters used by both apps -------------------------------------

def path(name, description, schema=None):
    return OpenApiParameter(name, schema or str, OpenApiParameter.PATH, required=True,
                            description=description)


def query(name, description, schema=None, *, required=False, repeatable=False, since=None,
          required_until=None, **kwargs):
    """A query parameter, from microversion `since` ('X.Y') on, required up to
    `required_until`; a repeatable one is an array sent as name=a&name=b.
    `schema` may be versioned()."""
    schema = schema or {'type': 'string'}
    if repeatable:
        schema = {'type': 'array', 'items': schema}
        kwargs.update(style='form', explode=True)
    extensions = {}
    if since:
        extensions['x-since'] = since
    if required_until:
        extensions['x-required-until'] = required_until
    if extensions:
        kwargs['extensions'] = extensions
    return OpenApiParameter(name, schema, OpenApiParameter.QUERY, required=required,
                            description=description, **kwargs)


PROVIDER_UUID = path('uuid', 'The uuid of the resource provider.', UUID)


# ---- the grammars of Placement's structured query parameters ---------------------------
# Regular expressions for the parsers in placement_site.querystring: resource
# classes are standard (os-resource-classes) or CUSTOM_; trait names are
# checked against the traits that exist, so the grammar only says upper case,
# digits and underscore. Amounts are plain numbers below 10**9 (the parser,
# Python's int(), also takes leading zeros, signs and larger numbers; the
# document asks clients for the plain form).

_CLASS = '(?:{}|CUSTOM_[A-Z0-9_]+)'.format('|'.join(os_resource_classes.STANDARDS))
_AMOUNT = '[1-9][0-9]{0,8}'
_TRAIT = '[A-Z0-9_]+'
_AGGREGATE = UUID_KEY[1:-1]


def _list_of(item):
    return f'{item}(?:,{item})*'


RESOURCES_GRAMMAR = {'type': 'string', 'pattern': f'^{_list_of(f"{_CLASS}:{_AMOUNT}")}$',
                     'example': 'VCPU:2,MEMORY_MB:1024'}
REQUIRED_GRAMMAR = versioned(
    ('1.0', {'type': 'string', 'pattern': f'^{_list_of(_TRAIT)}$'}),
    # !TRAIT forbids
    ('1.22', {'type': 'string', 'pattern': f'^{_list_of(f"!?{_TRAIT}")}$'}),
    # in:T1,T2 requires any of them
    ('1.39', {'type': 'string',
              'pattern': f'^(?:{_list_of(f"!?{_TRAIT}")}|in:{_list_of(_TRAIT)})$'}),
)
ROOT_REQUIRED_GRAMMAR = {'type': 'string', 'pattern': f'^{_list_of(f"!?{_TRAIT}")}$'}
MEMBER_OF_GRAMMAR = versioned(
    ('1.0', {'type': 'string', 'pattern': f'^(?:{_AGGREGATE}|in:{_list_of(_AGGREGATE)})$'}),
    # !AGG and !in:AGG1,AGG2 forbid
    ('1.32', {'type': 'string',
              'pattern': f'^!?(?:{_AGGREGATE}|in:{_list_of(_AGGREGATE)})$'}),
)

# ---- GET / ----------------------------------------------------------------------------

VERSION_DOCUMENT = Component('VersionDocument', closed({
    'type': 'object',
    'properties': {
        'versions': {
            'type': 'array',
            'items': {
                'type': 'object',
                'properties': {
                    'id': {'type': 'string', 'example': f'v{microversion.MIN_VERSION}'},
                    'min_version': {'type': 'string', 'example': microversion.MIN_VERSION},
                    'max_version': {'type': 'string', 'example': microversion.MAX_VERSION},
                    'status': {'type': 'string', 'example': 'CURRENT'},
                    'links': LINKS,
                },
                'required': ['id', 'min_version', 'max_version', 'status', 'links'],
            },
        },
    },
    'required': ['versions'],
}))

extend_schema_view(retrieve=operation(
    'listVersions', tag='Version', public=True, accept_json=False,
    summary='List API versions',
    description='The API version and its range of microversions. Needs no token.',
    responses={200: (VERSION_DOCUMENT, 'The version document.')},
))(RootViewSet)


# ---- serving one microversion's document ----------------------------------------------

class DocumentView(SpectacularAPIView):
    """GET /api/schema/[?version=X.Y|latest]: the document of one microversion
    (the latest by default); a version outside 1.0-1.39 is a 400."""
    schema = None  # not an operation of the API

    def get(self, request, *args, **kwargs):
        asked = request.GET.get('version', 'latest')
        try:
            version = microversion.parse(
                microversion.MAX_VERSION if asked == 'latest' else asked)
            if not version.matches(microversion.parse(microversion.MIN_VERSION)):
                raise ValueError(asked)
        except (TypeError, ValueError):
            return JsonResponse({'detail': f'Unknown microversion {asked!r}: use latest or '
                                 f'{microversion.MIN_VERSION} to {microversion.MAX_VERSION}.'},
                                status=400)
        with describing(version):
            return super().get(request, *args, **kwargs)


def describe_version(result, generator, request, public):
    """Postprocessing hook: the document names the microversion it describes."""
    version = document_version()
    result['info']['version'] = f'{version.major}.{version.minor}'
    result['info']['description'] = _sentences(
        result['info'].get('description'),
        f'This document describes microversion {version.major}.{version.minor}; '
        '`/api/schema/?version=X.Y` gives the document of another.')
    return result
