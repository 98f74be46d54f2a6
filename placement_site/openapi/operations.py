"""One operation: `operation()` turns a Placement operation's facts
(answers, errors, headers, the microversions that have them, links) into
drf-spectacular's `extend_schema`, and `OperationSchema` gives it as it is
at the document's microversion.
"""
import copy

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiResponse
from drf_spectacular.utils import extend_schema

from placement_site import microversion
from placement_site.api import CACHE_HEADERS_MICROVERSION
from placement_site.openapi.errors import ERROR_DESCRIPTIONS
from placement_site.openapi.errors import ERRORS
from placement_site.openapi.errors import URI_TOO_LONG
from placement_site.openapi.errors import error
from placement_site.openapi.headers import ETAG_DESCRIPTION
from placement_site.openapi.headers import IF_MATCH
from placement_site.openapi.headers import IF_NONE_MATCH
from placement_site.openapi.headers import MICROVERSION_HEADER
from placement_site.openapi.headers import describe_microversion_header
from placement_site.openapi.headers import response_header
from placement_site.openapi.parameters import QueryParameter
from placement_site.openapi.schemas import keyed_maps
from placement_site.openapi.schemas import sentences
from placement_site.openapi.versions import at_version
from placement_site.openapi.versions import document_version
from placement_site.openapi.versions import value_at
from placement_site.openapi.versions import values

_SERVED = {}  # operation id -> the microversions that have it (microversion.Span)


class OperationSchema(AutoSchema):
    """One operation at the document's microversion: left out where its
    handler is not served, query parameters and answers of other
    microversions removed, links added; and a JSON request body marked
    required, as Placement reads one whenever the operation documents a
    Component as its body (drf-spectacular would infer 'optional' for bodies
    without required properties, such as maps)."""
    optional_body = False
    served = microversion.EVERY
    query_schema = None    # what the view validates the query string with (or a ByVersion)
    query_parameters = {}  # name -> QueryParameter
    versioned = {}         # status -> ByVersion: answered where it is not None
    links = {}             # status -> OpenAPI links

    def get_operation(self, *args, **kwargs):
        version = document_version()
        if version not in self.served:
            return None   # the document of another microversion has no such operation
        operation = super().get_operation(*args, **kwargs)
        if operation is None:
            return None
        # (The microversion header is always there.)
        operation['parameters'] = [
            parameter for parameter in map(self._parameter_at, operation['parameters'])
            if parameter is not None]
        operation = at_version(operation, version)
        for parameter in operation.get('parameters', ()):
            if 'schema' in parameter:
                parameter['schema'] = keyed_maps(parameter['schema'])
            if parameter['in'] == 'header' and parameter['name'] == MICROVERSION_HEADER.name:
                describe_microversion_header(parameter, version)
        body = operation.get('requestBody')
        responses = operation['responses']
        if body is not None:
            body.pop('required', None)
            if not self.optional_body:
                body['required'] = True
        else:
            responses.pop('415', None)  # no body at this microversion
        for status, table in self.versioned.items():
            if value_at(table, version) is None:
                responses.pop(str(status), None)
        for status, links in self.links.items():
            available = {name: link for name, link in links.items()
                         if version in _SERVED[link['operationId']]}
            if str(status) in responses and available:
                responses[str(status)]['links'] = copy.deepcopy(available)
        if not version.matches(CACHE_HEADERS_MICROVERSION):
            for response in responses.values():
                for header in ('Last-Modified', 'Cache-Control'):
                    response.get('headers', {}).pop(header, None)
        return operation

    def _parameter_at(self, parameter):
        """A parameter as drf-spectacular wrote it, at the document's
        microversion (None where it is not there)."""
        declared = self.query_parameters.get(parameter['name'])
        if parameter['in'] != 'query' or declared is None:
            return parameter
        return declared.described(parameter, self.query_schema, self.served.first)


def operation(operation_id, *, tag, summary, description, responses, changes=None,
              parameters=(), query_schema=None, request=None, errors=None,
              accept_json=True, location=(), cached=None, public=False, links=None,
              conditional=None, etag=None):
    """extend_schema for one Placement operation, to decorate its handler.

    The microversions that have the operation are those its handler serves
    (placement_site.api.versions, applied below this decorator).
    request: a Component (a required JSON body) or a raw schema (an optional one).
    query_schema: what the view validates the query string with (a ByVersion
    of them where it changes): the query parameters are documented where it
    takes them, and required where it requires them.
    responses: {status: (Component or None, description)} for the
    successes; a ByVersion of them for a status some microversions answer
    (None at the others).
    errors: {status: description, or a ByVersion of them}; 400, 401,
    403 and 406 are always there
    (the header checks), and 415 with a JSON body.
    changes: {microversion: what it changed}, listed under the description.
    location / cached: the success statuses that carry a Location header /
    Last-Modified and Cache-Control (from 1.15; default: those with a body).
    links: {status: {name: OpenAPI link}} from this operation's answer to others.
    conditional: 'read' (If-None-Match, 304) or 'write' (If-Match, If-None-Match, 412) for
    a resource with an ETag; etag: the success statuses that carry it (default: all).
    """
    query_parameters = {p.name: p for p in parameters if isinstance(p, QueryParameter)}
    for parameter in query_parameters.values():
        if query_schema is None or not any(
                parameter.taken_by(schema) for schema in values(query_schema)):
            raise ValueError(f'{operation_id}: the query schema never takes {parameter.name}')
    texts = {status: ERROR_DESCRIPTIONS[status] for status in (400, 406)}
    if not public:
        texts.update({401: ERROR_DESCRIPTIONS[401], 403: ERROR_DESCRIPTIONS[403]})
    if request is not None:
        texts[400] = sentences(texts[400], 'Malformed JSON, or a body that does not validate.')
        texts[415] = ERROR_DESCRIPTIONS[415]
    if accept_json:
        texts[406] = ('The requested microversion is outside the supported range, or the '
                      'Accept header rules out application/json.')
    if conditional:
        texts[400] = sentences(texts[400], 'A malformed If-Match or If-None-Match header.')
    errors = dict(errors or {})
    if conditional == 'write':
        errors.setdefault(412, ERROR_DESCRIPTIONS[412])
    versioned = {status: table for status, table in {**errors, **responses}.items()
                 if isinstance(table, microversion.ByVersion)}
    answers = {}
    for status, text in errors.items():
        texts[status] = sentences(texts.get(status) if status in (400, 406) else None,
                                  _answered(text))
    responses = {status: _answered(answer) for status, answer in responses.items()}
    for status, (body, text) in responses.items():
        answers[status] = OpenApiResponse(body, text)
    answers.update({status: ERRORS[status] if text == ERROR_DESCRIPTIONS[status]
                    else error(status, text) for status, text in sorted(texts.items())})
    answers[(414, 'text/html')] = URI_TOO_LONG

    successes = sorted(responses)
    if cached is None:
        cached = [status for status, (body, _) in responses.items() if body is not None]
    with_etag = list(successes if etag is None and conditional else etag or ())
    if conditional == 'read':
        # With the headers the 200 would have had, but no body.
        answers[304] = OpenApiResponse(
            None, 'Ours: not modified, no body. If-None-Match names the current ETag.')
        successes, cached, with_etag = successes + [304], cached + [304], with_etag + [304]
    headers = [
        response_header('x-openstack-request-id', 'The id of the request, for the logs.'),
        response_header('OpenStack-API-Version', 'The microversion that served the request.',
                         successes),
    ]
    if location:
        headers.append(response_header('Location', 'The URL of the resource.', location))
    if cached:
        headers += [
            response_header('Last-Modified', 'From microversion 1.15: when the resource '
                             'last changed (now for computed answers).', cached),
            response_header('Cache-Control', 'From microversion 1.15: `no-cache`.', cached),
        ]
    conditions = {'read': [IF_NONE_MATCH], 'write': [IF_MATCH, IF_NONE_MATCH]}
    if with_etag:
        headers.append(response_header('ETag', ETAG_DESCRIPTION, with_etag))
    optional_body = isinstance(request, dict)
    if request is not None:
        request = {'application/json': request}

    def decorator(handler):
        served = _SERVED[operation_id] = microversion.span(handler)
        schema_class = type('OperationSchema', (OperationSchema,), {
            'optional_body': optional_body, 'served': served, 'query_schema': query_schema,
            'query_parameters': query_parameters, 'versioned': versioned,
            'links': links or {}})
        # extend_schema builds on the schema class it finds on the handler.
        handler.kwargs = {**getattr(handler, 'kwargs', {}), 'schema': schema_class}
        return extend_schema(
            operation_id=operation_id,
            summary=summary,
            description=_description(description, served, changes),
            tags=[tag],
            parameters=[MICROVERSION_HEADER, *parameters, *conditions.get(conditional, ()),
                        *headers],
            request=request,
            responses=answers,
            auth=[] if public else None,
        )(handler)
    return decorator


def _answered(answer):
    """The one answer (or description) a ByVersion gives where it is not None."""
    if not isinstance(answer, microversion.ByVersion):
        return answer
    found = [value for value in values(answer) if value is not None]
    if any(value is not found[0] for value in found):
        raise ValueError(f'{answer!r} gives two answers: one status is described once')
    return found[0]


def link(operation_id, description, **parameters):
    """An OpenAPI link to `operation_id`, its parameters given by runtime
    expressions such as '$response.body#/uuid'."""
    return {'operationId': operation_id, 'parameters': parameters, 'description': description}


def _description(text, served, changes):
    available = (f'since {served.first}' if served.last == microversion.EVERY.last
                 else f'{served.first} to {served.last}')
    lines = [text.strip(), '', f'**Microversions:** available {available}.']
    for version, change in (changes or {}).items():
        lines.append(f'- {version}: {change}')
    return '\n'.join(lines)
