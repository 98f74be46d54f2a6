"""The OpenAPI document's shared pieces: the microversion header, the token,
Placement's error bodies, named schemas, and `operation()`, which turns one
Placement operation's facts into drf-spectacular's `extend_schema`.

The views validate bodies against JSON Schemas and answer plain dicts, so
the document is written, not introspected: the docs modules of the apps
attach it to the viewsets, and the extensions below let drf-spectacular
read Placement's views (microversions in a header, tokens checked by the
middleware) and publish JSON Schemas as components.
"""
import copy
import functools

from drf_spectacular.extensions import (OpenApiAuthenticationExtension,
                                        OpenApiSerializerExtension, OpenApiViewExtension)
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import (OpenApiExample, OpenApiParameter, OpenApiResponse,
                                   extend_schema, extend_schema_view)

from placement_site import microversion
from placement_site.api import PlacementViewSet
from placement_site.views import RootViewSet

# ---- JSON Schema in OpenAPI 3.0's dialect ----------------------------------------


class Component:
    """A schema published as #/components/schemas/<name> and used by $ref.

    `schema` is a JSON Schema; it may hold other Components where a
    sub-schema goes, which become references too.
    """

    def __init__(self, name, schema, description=None):
        self.name = name
        self.schema = openapi_schema(schema)
        if description:
            self.schema['description'] = _sentences(description, self.schema.get('description'))
        # An answer of a 'list' action is still one object, never an array of them.
        self._spectacular_annotation = {'many': False}

    def __repr__(self):
        return f'Component({self.name!r})'


def openapi_schema(schema):
    """A copy of a JSON Schema in the dialect of OpenAPI 3.0.

    patternProperties become additionalProperties (the key patterns go in
    the description); type lists and {"type": "null"} alternatives become
    `nullable`. Validation stays with the original schema.
    """
    if not isinstance(schema, dict):
        return schema
    result = {}
    for key, value in schema.items():
        if key in ('properties', 'patternProperties'):
            result[key] = {name: openapi_schema(sub) for name, sub in value.items()}
        elif key in ('items', 'additionalProperties', 'not'):
            result[key] = openapi_schema(value)
        elif key in ('anyOf', 'oneOf', 'allOf'):
            result[key] = [openapi_schema(sub) for sub in value]
        else:
            result[key] = copy.deepcopy(value)
    _pattern_properties(result)
    _type_list(result)
    _null_alternative(result)
    return result


def _pattern_properties(schema):
    patterns = schema.pop('patternProperties', None)
    if not patterns:
        return
    values = list(patterns.values())
    extra = schema.get('additionalProperties')
    if isinstance(extra, dict):
        values.append(extra)
    schema['additionalProperties'] = values[0] if len(values) == 1 else {'anyOf': values}
    keys = ', '.join(f'`{pattern}`' for pattern in patterns)
    schema['description'] = _sentences(schema.get('description'), f'Keys match {keys}.')


def _type_list(schema):
    types = schema.get('type')
    if not isinstance(types, list):
        return
    kinds = [kind for kind in types if kind != 'null']
    if len(kinds) == 1:
        schema['type'] = kinds[0]
    else:
        del schema['type']
        schema['anyOf'] = [{'type': kind} for kind in kinds]
    if 'null' in types:
        schema['nullable'] = True


def _null_alternative(schema):
    for key in ('anyOf', 'oneOf'):
        alternatives = schema.get(key)
        if not alternatives or {'type': 'null'} not in alternatives:
            continue
        others = [alt for alt in alternatives if alt != {'type': 'null'}]
        if len(others) == 1:
            del schema[key]
            schema.update({k: v for k, v in others[0].items() if k not in schema})
        else:
            schema[key] = others
        schema['nullable'] = True


def _sentences(*parts):
    return ' '.join(part for part in parts if part)


def resources_map(description, value=None):
    """{resource class name: value}, amounts by default."""
    return {
        'type': 'object',
        'description': _sentences(description, 'Keyed by resource class name.'),
        'additionalProperties': value or {'type': 'integer', 'minimum': 0},
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
    },
}


class ComponentExtension(OpenApiSerializerExtension):
    """Lets drf-spectacular treat a Component as it treats a serializer."""
    target_class = Component

    def get_name(self, auto_schema, direction):
        return self.target.name

    def map_serializer(self, auto_schema, direction):
        return _references(self.target.schema, auto_schema, direction)


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
    default=f'placement {microversion.MIN_VERSION}',
    examples=[
        OpenApiExample('latest', value='placement latest'),
        OpenApiExample(microversion.MAX_VERSION, value=f'placement {microversion.MAX_VERSION}'),
        OpenApiExample(microversion.MIN_VERSION, value=f'placement {microversion.MIN_VERSION}'),
    ],
)


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
                            'placement.query.missing_value.'),
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


def error(status, description=None):
    """A reusable error response: Placement's error body with a description."""
    body = UNAUTHORIZED if status == 401 else ERROR
    return OpenApiResponse(body, description or ERROR_DESCRIPTIONS[status])


ERRORS = {status: error(status) for status in ERROR_DESCRIPTIONS}

# ---- one operation ------------------------------------------------------------------


class OperationSchema(AutoSchema):
    """Marks a JSON request body required: Placement reads one whenever the
    operation documents a Component as its body (drf-spectacular would infer
    'optional' for bodies without required properties, such as maps)."""
    optional_body = False

    def get_operation(self, *args, **kwargs):
        operation = super().get_operation(*args, **kwargs)
        body = (operation or {}).get('requestBody')
        if body is not None:
            body.pop('required', None)
            if not self.optional_body:
                body['required'] = True
        return operation


def operation(operation_id, *, tag, summary, description, responses, since='1.0',
              changes=None, parameters=(), request=None, errors=None,
              accept_json=True, location=(), cached=None, public=False, not_before=404):
    """extend_schema for one Placement operation.

    request: a Component (a required JSON body) or a raw schema (an optional one).
    responses: {status: (Component or None, description)} for the successes.
    errors: {status: description}; 400, 401, 403 and 406 are always there
    (the header checks), 415 with a JSON body, and `not_before` (404, or 405)
    for a microversion older than `since`.
    changes: {microversion: what it changed}, listed under the description.
    location / cached: the success statuses that carry a Location header /
    Last-Modified and Cache-Control (from 1.15; default: those with a body).
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
    if since != microversion.MIN_VERSION:
        texts[not_before] = _sentences(
            texts.get(not_before), f'Microversion {since} or later needed.')
    for status, text in (errors or {}).items():
        texts[status] = _sentences(texts.get(status) if status in (400, 406) else None, text)
    answers = {status: OpenApiResponse(body, text) for status, (body, text) in responses.items()}
    answers.update({status: ERRORS[status] if text == ERROR_DESCRIPTIONS[status]
                    else error(status, text) for status, text in sorted(texts.items())})

    successes = sorted(responses)
    if cached is None:
        cached = [status for status, (body, _) in responses.items() if body is not None]
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
    schema_class = type('OperationSchema', (OperationSchema,),
                        {'optional_body': isinstance(request, dict)})
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


def _description(text, since, changes):
    lines = [text.strip(), '', f'**Microversions:** available since {since}.']
    for version, change in (changes or {}).items():
        lines.append(f'- {version}: {change}')
    return '\n'.join(lines)


# ---- path and query parameters used by both apps -------------------------------------

def path(name, description, schema=None):
    return OpenApiParameter(name, schema or str, OpenApiParameter.PATH, required=True,
                            description=description)


def query(name, description, schema=None, *, required=False, repeatable=False, **kwargs):
    """A query parameter; a repeatable one is an array sent as name=a&name=b."""
    schema = schema or {'type': 'string'}
    if repeatable:
        schema = {'type': 'array', 'items': schema}
        kwargs.update(style='form', explode=True)
    return OpenApiParameter(name, schema, OpenApiParameter.QUERY, required=required,
                            description=description, **kwargs)


PROVIDER_UUID = path('uuid', 'The uuid of the resource provider.', UUID)

# ---- GET / ----------------------------------------------------------------------------

VERSION_DOCUMENT = Component('VersionDocument', {
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
})

extend_schema_view(retrieve=operation(
    'listVersions', tag='Version', public=True, accept_json=False,
    summary='List API versions',
    description='The API version and its range of microversions. Needs no token.',
    responses={200: (VERSION_DOCUMENT, 'The version document.')},
))(RootViewSet)
