"""One operation: `operation()` turns a Placement operation's facts
(answers, errors, headers, the microversions that have them, links) into
drf-spectacular's `extend_schema`, and `OperationSchema` gives it as it is
at the document's microversion.
"""
import copy

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiResponse, extend_schema

from placement_site import microversion
from placement_site.openapi.errors import ERROR_DESCRIPTIONS, ERRORS, URI_TOO_LONG, error
from placement_site.openapi.headers import (
    ETAG_DESCRIPTION,
    IF_MATCH,
    IF_NONE_MATCH,
    MICROVERSION_HEADER,
    describe_microversion_header,
    response_header,
)
from placement_site.openapi.schemas import keyed_maps, sentences
from placement_site.openapi.versions import at_version, document_version, version_tuple

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
        if tuple(version) < version_tuple(self.since):
            return None   # the document of an older microversion has no such operation
        operation = super().get_operation(*args, **kwargs)
        if operation is None:
            return None
        operation = at_version(operation, version)
        for parameter in operation.get('parameters', ()):
            until = parameter.pop('x-required-until', None)
            if until:
                parameter['required'] = tuple(version) <= version_tuple(until)
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
        for status, (first, last) in self.spans.items():
            if (first and tuple(version) < version_tuple(first)) or (
                    last and tuple(version) > version_tuple(last)):
                responses.pop(str(status), None)
        for status, links in self.links.items():
            available = {name: link for name, link in links.items()
                         if tuple(version) >= version_tuple(_SINCE[link['operationId']])}
            if str(status) in responses and available:
                responses[str(status)]['links'] = copy.deepcopy(available)
        if tuple(version) < (1, 15):
            for response in responses.values():
                for header in ('Last-Modified', 'Cache-Control'):
                    response.get('headers', {}).pop(header, None)
        return operation


def operation(operation_id, *, tag, summary, description, responses, since='1.0',
              changes=None, parameters=(), request=None, errors=None,
              accept_json=True, location=(), cached=None, public=False, links=None,
              conditional=None, etag=None):
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
    conditional: 'read' (If-None-Match, 304) or 'write' (If-Match, If-None-Match, 412) for
    a resource with an ETag; etag: the success statuses that carry it (default: all).
    """
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
    answers, spans = {}, {}
    for status, text in errors.items():
        if isinstance(text, tuple):
            text, *span = text
            spans[status] = tuple(span)
        texts[status] = sentences(texts.get(status) if status in (400, 406) else None, text)
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
        parameters=[MICROVERSION_HEADER, *parameters, *conditions.get(conditional, ()),
                    *headers],
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
