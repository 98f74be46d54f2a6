"""Placement's error codes and its error body, built in one place.

Error bodies are byte-compatible with OpenStack Placement (which formats them
with WebOb): a JSON document {"errors": [{status, title, detail, code,
request_id}]}, or HTML / plain text when the client asks only for those. The
'detail' keeps Placement's shape, "<explanation>\\n\\n <message>  ", because
clients and operators match on it.
"""
import contextlib
import html
import json
import re
from string import Template

from django.http import HttpResponse

from placement_site import microversion

# The 'code' values of error bodies (microversion 1.23 and later). Strings
# are part of the API: never change one.
DEFAULT = 'placement.undefined_code'
INVENTORY_INUSE = 'placement.inventory.inuse'
CONCURRENT_UPDATE = 'placement.concurrent_update'
DUPLICATE_NAME = 'placement.duplicate_name'
PROVIDER_IN_USE = 'placement.resource_provider.inuse'
PROVIDER_CANNOT_DELETE_PARENT = 'placement.resource_provider.cannot_delete_parent'
RESOURCE_PROVIDER_NOT_FOUND = 'placement.resource_provider.not_found'
ILLEGAL_DUPLICATE_QUERYPARAM = 'placement.query.duplicate_key'
QUERYPARAM_BAD_VALUE = 'placement.query.bad_value'
QUERYPARAM_MISSING_VALUE = 'placement.query.missing_value'
# Ours, for the pod endpoints (not part of OpenStack Placement).
POD_IN_USE = 'placement.pod.inuse'
NO_POD_AVAILABLE = 'placement.pod.none_available'

CODES = (DEFAULT, INVENTORY_INUSE, CONCURRENT_UPDATE, DUPLICATE_NAME, PROVIDER_IN_USE,
         PROVIDER_CANNOT_DELETE_PARENT, RESOURCE_PROVIDER_NOT_FOUND,
         ILLEGAL_DUPLICATE_QUERYPARAM, QUERYPARAM_BAD_VALUE, QUERYPARAM_MISSING_VALUE,
         POD_IN_USE, NO_POD_AVAILABLE)

# Error codes appear in bodies from this microversion on.
ERROR_CODE_MICROVERSION = (1, 23)

_STANDARD = '${explanation}<br /><br />\n${detail}\n${html_comment}\n'
# status -> (title, explanation, body template), as HTTP status pages say it.
_STATUSES = {
    400: ('Bad Request',
          'The server could not comply with the request since it is either '
          'malformed or otherwise incorrect.', _STANDARD),
    401: ('Unauthorized',
          'This server could not verify that you are authorized to access the '
          'document you requested. Either you supplied the wrong credentials '
          '(e.g., bad password), or your browser does not understand how to '
          'supply the credentials required.', _STANDARD),
    403: ('Forbidden', 'Access was denied to this resource.', _STANDARD),
    404: ('Not Found', 'The resource could not be found.', _STANDARD),
    405: ('Method Not Allowed', '',
          'The method ${REQUEST_METHOD} is not allowed for this resource. '
          '<br /><br />\n${detail}'),
    406: ('Not Acceptable', '',
          'The resource could not be generated that was acceptable to your '
          'browser\n(content of type ${HTTP_ACCEPT}. <br /><br />\n${detail}'),
    409: ('Conflict',
          'There was a conflict when trying to complete your request.', _STANDARD),
    # Ours: If-Match named a state the resource has left (placement_site.conditional).
    412: ('Precondition Failed', 'Request precondition failed.', _STANDARD),
    413: ('Request Entity Too Large',
          'The body of your request was too large for this server.', _STANDARD),
    415: ('Unsupported Media Type', '',
          'The request media type ${CONTENT_TYPE} is not supported by this '
          'server.\n<br /><br />\n${detail}'),
    500: ('Internal Server Error',
          'The server has either erred or is incapable of performing the '
          'requested operation.', _STANDARD),
    503: ('Service Unavailable',
          'The server is currently unavailable. Please try again at a later time.', _STANDARD),
}

_BR = re.compile(r'<br.*?>', re.I | re.S)
_TAG = re.compile(r'<.*?>', re.S)


class PlacementError(Exception):
    """An error answer: raise it anywhere below a view or API middleware.

    `detail` is the human sentence; `code` the error code shown from 1.23;
    `vary` is False for the few answers Placement sends without a Vary
    header (unknown routes, missing providers); `stale` marks a generation
    conflict, answered 412 instead when the request carried If-Match;
    `listed` is False for the 401, which Placement's auth middleware sends
    in WebOb's own body rather than the list of errors.

    The domain errors (placement_site.exceptions) are PlacementErrors too,
    carrying their status and code as class attributes: whatever is not
    given here stays the class's.
    """
    status = 500
    code = DEFAULT
    vary = True
    stale = False
    listed = True

    def __init__(self, status=None, detail='', *, code=None, headers=None, vary=None,
                 stale=None, listed=None):
        super().__init__(detail)
        self.detail = detail
        self.headers = headers or {}
        for name, value in (('status', status), ('code', code), ('vary', vary),
                            ('stale', stale), ('listed', listed)):
            if value is not None:
                setattr(self, name, value)

    @property
    def title(self):
        return _STATUSES.get(self.status, _STATUSES[500])[0]


def bad_request(detail, **kwargs):
    return PlacementError(400, detail, **kwargs)


def forbidden(detail, **kwargs):
    return PlacementError(403, detail, **kwargs)


def not_found(detail='', **kwargs):
    return PlacementError(404, detail, **kwargs)


def conflict(detail, **kwargs):
    return PlacementError(409, detail, **kwargs)


def stale(detail):
    """409 concurrent_update: the generation the client wrote over has
    changed (412 for a request with If-Match)."""
    return PlacementError(409, detail, code=CONCURRENT_UPDATE, stale=True)


def unauthorized():
    """The 401 of a request without credentials, as Placement's auth
    middleware sends it: before Placement's error formatting, so in
    WebOb's own body."""
    return PlacementError(401, listed=False)


class Worded:
    """How one handler words a domain error: `detail`, a str.format
    template of {error} (the exception's own message) and the names given
    to worded(); and, rarely, what differs from the exception's own status,
    code, Vary or staleness (Placement answers a few errors differently
    in different handlers)."""

    def __init__(self, detail, **differences):
        self.detail = detail
        self.differences = differences

    def error(self, exc, names):
        fields = {'status': exc.status, 'code': exc.code, 'vary': exc.vary,
                  'stale': exc.stale, **self.differences}
        return PlacementError(detail=self.detail.format(error=exc, **names), **fields)


@contextlib.contextmanager
def worded(wording, **names):
    """Domain errors raised inside, worded as this handler's answer says
    them. `wording` maps exception classes (the first that matches wins)
    to a detail template or a Worded; an error no entry matches passes
    unchanged. The worded error is raised from the domain error, so
    placement_site.metrics still sees its cause."""
    try:
        yield
    except PlacementError as exc:
        for kind, how in wording.items():
            if isinstance(exc, kind):
                how = how if isinstance(how, Worded) else Worded(how)
                raise how.error(exc, names) from exc
        raise


def raise_worded(exc, detail='{error}', names=None, **differences):
    """Raise the domain error `exc` as a handler words it: worded() with a
    Worded(detail, **differences) for its class (`names` for the detail)."""
    with worded({type(exc): Worded(detail, **differences)}, **(names or {})):
        raise exc


def _strip_tags(text):
    text = text.replace('\n', ' ').replace('\r', '')
    return _TAG.sub('', _BR.sub('\n', text))


def _body_text(error, meta, escape):
    _, explanation, template = _STATUSES.get(error.status, _STATUSES[500])
    values = {
        'explanation': escape(explanation),
        'detail': escape(error.detail),
        'html_comment': '',
        'REQUEST_METHOD': escape(meta.get('REQUEST_METHOD', '')),
        'HTTP_ACCEPT': escape(meta.get('HTTP_ACCEPT', '')),
        'CONTENT_TYPE': escape(meta.get('CONTENT_TYPE') or 'None'),
    }
    return Template(template).safe_substitute(values)


def quality(accept, offer):
    """How much an Accept header wants `offer` (0 = not at all).

    The most specific matching media range decides, as in WebOb.
    """
    kind = offer.split('/')[0]
    found = {}
    for item in accept.split(','):
        fields = [f.strip() for f in item.split(';')]
        media = fields[0].lower()
        if media not in (offer, f'{kind}/*', '*/*'):
            continue
        q = 1.0
        for param in fields[1:]:
            name, _, value = param.partition('=')
            if name.strip().lower() == 'q':
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        found[media] = q
    for media in (offer, f'{kind}/*', '*/*'):
        if media in found:
            return found[media]
    return 0.0


def _preferred_format(accept):
    """text/html, application/json or text/plain, as WebOb chooses.

    The request middleware has already turned a missing or '*/*' Accept into
    application/json.
    """
    html_q = quality(accept, 'text/html')
    json_q = quality(accept, 'application/json')
    if html_q > 0 and html_q >= json_q:  # ties go to HTML, as in WebOb
        return 'text/html'
    if json_q > 0:
        return 'application/json'
    return 'text/plain'


def render(request, error):
    """The answer to a PlacementError: the one place an error becomes a
    response, at the request's microversion and with its request id.

    The response carries the error itself (its code and cause, whatever the
    microversion shows): placement_site.metrics counts every error from it.
    """
    meta = request.META
    version = getattr(request, 'placement_version', None)
    request_id = getattr(request, 'placement_request_id', None)
    fmt = _preferred_format(meta.get('HTTP_ACCEPT', 'application/json'))
    status, title = error.status, error.title
    if fmt == 'text/plain' and not error.listed:
        fmt = 'application/json'
    if fmt == 'application/json':
        text = _body_text(error, meta, escape=str)
        if error.listed:
            body = json.dumps({'errors': [_entry(error, text, version, request_id)]})
        else:  # WebOb's own JSON body
            body = json.dumps({'message': text, 'code': f'{status} {title}', 'title': title})
    elif fmt == 'text/html':
        text = _body_text(error, meta, escape=html.escape)
        heading = f'{status} {title}'
        body = (f'<html>\n <head>\n  <title>{heading}</title>\n </head>\n'
                f' <body>\n  <h1>{heading}</h1>\n  {text}\n </body>\n</html>')
    else:
        body = f'{status} {title}\n\n{_strip_tags(_body_text(error, meta, escape=str))}'
    content_type = fmt if fmt == 'application/json' else f'{fmt}; charset=UTF-8'
    response = HttpResponse(body, status=status, content_type=content_type)
    for name, value in error.headers.items():
        response[name] = value
    response.placement_vary = error.vary
    response.placement_error = error
    return response


def _entry(error, text, version, request_id):
    """The error in Placement's list of errors."""
    entry = {'status': error.status, 'title': error.title, 'detail': _strip_tags(text)}
    if version is not None and version.matches(ERROR_CODE_MICROVERSION):
        entry['code'] = error.code
    if request_id:
        entry['request_id'] = request_id
    if error.status == 406 and version is None:
        entry['max_version'] = microversion.MAX_VERSION
        entry['min_version'] = microversion.MIN_VERSION
    return entry
