"""The shared machinery of Placement API views.

Every handler follows OpenStack Placement's order: microversion gate,
content-type / Accept checks, policy, body or query validation against the
schema for the requested microversion, the service or queryset call, then a
JSON answer with Last-Modified / Cache-Control from 1.15.
"""
import functools
import json
import math
from datetime import UTC
from urllib.parse import unquote_to_bytes

import jsonschema
import orjson
from django.http import HttpResponse
from django.http import StreamingHttpResponse
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.http import http_date
from rest_framework import exceptions as drf_exceptions
from rest_framework import viewsets
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.versioning import BaseVersioning
from rest_framework.views import set_rollback

from placement_site import conditional
from placement_site import errors
from placement_site import microversion
from placement_site import policy
from placement_site.middleware import error_for
from placement_site.queries import batched
from placement_site.validation import FORMAT_CHECKER
from placement_site.validation import QUERY_FORMAT_CHECKER

CACHE_HEADERS_MICROVERSION = (1, 15)


class NoNegotiation(BaseContentNegotiation):
    """Views answer JSON; the few that check Accept do it themselves (406)."""

    def select_parser(self, request, parsers):
        return None

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


class MicroversionVersioning(BaseVersioning):
    """Exposes the negotiated microversion as DRF's request.version."""

    def determine_version(self, request, *args, **kwargs):
        return getattr(request._request, 'placement_version', None)


def exception_handler(exc, context):
    """DRF's way into the API's one error path (middleware.error_for): DRF's
    own 405 and 404 as Placement words them; what has no answer there (an
    outage, a fault) is raised on to the middleware."""
    request = context['request']._request
    if isinstance(exc, drf_exceptions.MethodNotAllowed):
        allowed = [m.upper() for m in getattr(context['view'], 'action_map', {}) if m != 'head']
        exc = errors.PlacementError(
            405, 'The method specified is not allowed for this resource.',
            headers={'allow': ', '.join(allowed)} if allowed else None)
    elif isinstance(exc, drf_exceptions.NotFound):
        exc = errors.not_found()
    error = error_for(request, exc)
    if error is None:
        return None
    set_rollback()
    return errors.render(request, error)


# ---- decorators, applied in the same order as Placement's ----------------

def versions(min_version, max_version=None, status=404):
    """Serve the handler only at microversions min..max (of the view's
    `version`), else `status`. The span stays on the handler
    (microversion.span), where the OpenAPI document reads it."""
    served = microversion.Span(microversion.parse(min_version),
                               microversion.parse(max_version or microversion.MAX_VERSION))

    def decorator(handler):
        @functools.wraps(handler)
        def wrapped(self, request, *args, **kwargs):
            if self.version not in served:
                raise errors.PlacementError(status)
            return handler(self, request, *args, **kwargs)
        wrapped.microversions = served
        return wrapped
    return decorator


def require_json(handler):
    """415 unless the request body is declared application/json."""
    @functools.wraps(handler)
    def wrapped(self, request, *args, **kwargs):
        content_type = request.META.get('CONTENT_TYPE', '')
        # Compared exactly (case included), as OpenStack Placement does.
        media = content_type.split(';')[0].strip()
        if media != 'application/json':
            if not content_type:
                request.META['CONTENT_TYPE'] = 'None'
            raise errors.PlacementError(
                415, f'The media type {content_type or "None"} is not supported, '
                     'use application/json')
        return handler(self, request, *args, **kwargs)
    return wrapped


def accept_json(handler):
    """406 when the client's Accept header rules out JSON."""
    @functools.wraps(handler)
    def wrapped(self, request, *args, **kwargs):
        accept = request.META.get('HTTP_ACCEPT')
        if accept and errors.quality(accept, 'application/json') <= 0:
            raise errors.PlacementError(406, 'Only application/json is provided')
        return handler(self, request, *args, **kwargs)
    return wrapped


# ---- request bodies and query strings -------------------------------------

def json_body(request, schema):
    """The request body, parsed and validated against `schema` (400 if not)."""
    # A body over DATA_UPLOAD_MAX_MEMORY_SIZE raises RequestDataTooBig here:
    # the middleware answers 413.
    data = parse_json(request.body)
    validate(data, schema, 'JSON does not validate: {}')
    _refuse_unstorable(data)
    return data


# Placement's deepest body (a reshape) nests 6 levels; anything far deeper
# is hostile, and would exhaust the recursion of the validator.
MAX_JSON_DEPTH = 32


def parse_json(raw):
    """Bytes -> JSON value, refusing with a 400 what no Placement body is:
    NaN and the infinities (Python's parser takes them, databases and other
    clients do not) and nesting deeper than MAX_JSON_DEPTH."""
    try:
        # Always UTF-8, as Placement reads bodies (json.loads alone would
        # guess UTF-16 or UTF-32 from the first bytes).
        data = json.loads(raw.decode('utf-8') if isinstance(raw, bytes) else raw,
                          parse_constant=_refuse_constant, parse_float=_finite)
    except RecursionError:
        raise errors.bad_request(f'Malformed JSON: nested more than {MAX_JSON_DEPTH} levels deep')
    except ValueError as exc:  # UnicodeDecodeError is a ValueError
        raise errors.bad_request(f'Malformed JSON: {exc}')
    if _depth(data) > MAX_JSON_DEPTH:
        raise errors.bad_request(f'Malformed JSON: nested more than {MAX_JSON_DEPTH} levels deep')
    return data


def _refuse_constant(name):
    raise ValueError(f'{name} is not a number JSON allows')


def _finite(text):
    """A JSON number as a float, refusing one too large for any float
    (1e400 would become infinity)."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f'{text} is out of range for a number')
    return value


def _depth(value):
    """How deeply lists and objects nest in a parsed value (iteratively)."""
    deepest, pending = 0, [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        if deepest > MAX_JSON_DEPTH:
            break
        pending.extend((child, depth + 1) for child in children)
    return deepest


def _refuse_unstorable(value):
    """Valid JSON can still hold what no database stores: a lone surrogate
    ("\\ud800") or, for PostgreSQL, a NUL character."""
    if isinstance(value, str):
        if '\x00' in value:
            raise errors.bad_request('Malformed JSON: NUL characters (\\u0000) are not allowed')
        try:
            value.encode('utf-8')
        except UnicodeError as exc:
            raise errors.bad_request(f'Malformed JSON: {exc}')
    elif isinstance(value, dict):
        for key, item in value.items():
            _refuse_unstorable(key)
            _refuse_unstorable(item)
    elif isinstance(value, list):
        for item in value:
            _refuse_unstorable(item)


_validators = {}


def _validator(schema, format_checker):
    """A validator per (schema, checker), built and schema-checked once.

    jsonschema.validate() re-checks the schema itself on every call, which
    costs more than validating a request body.
    """
    key = (id(schema), id(format_checker))
    validator = _validators.get(key)
    if validator is None:
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
        validator = _validators[key] = cls(schema, format_checker=format_checker)
    return validator


def validate(data, schema, message, format_checker=FORMAT_CHECKER):
    """400 with jsonschema's best error, as jsonschema.validate() words it."""
    error = jsonschema.exceptions.best_match(
        _validator(schema, format_checker).iter_errors(data))
    if error is not None:
        raise errors.bad_request(message.format(error))


def query_params(request, schema):
    """The query string as a dict (last value wins), validated by `schema`."""
    check_query_encoding(request)
    return validated_query(request.GET, schema)


def check_query_encoding(request):
    """400 for a query string that is not UTF-8 (Django would silently turn
    undecodable bytes into U+FFFD)."""
    for pair in request.META.get('QUERY_STRING', '').split('&'):
        for part in pair.split('=', 1):
            try:
                unquote_to_bytes(part.replace('+', ' ')).decode('utf-8')
            except UnicodeDecodeError as exc:
                raise errors.bad_request(f'Invalid query string parameters: {exc}')


def validated_query(query, schema):
    """A QueryDict as a dict (last value wins), validated by `schema`."""
    params = {key: query[key] for key in query}
    validate(params, schema, 'Invalid query string parameters: {}',
             format_checker=QUERY_FORMAT_CHECKER)
    return params


def timestamp(moment):
    """A time as our own endpoints write it: UTC, microseconds, 'Z' (None
    stays None)."""
    if moment is None:
        return None
    return moment.astimezone(UTC).strftime('%Y-%m-%dT%H:%M:%S.%fZ')


def moment(text, name='since'):
    """An ISO 8601 time query parameter (UTC unless it says otherwise) as
    UTC, or 400.

    Converted here: databases take a narrower range of offsets than ISO
    8601 writes (PostgreSQL none beyond 15:59)."""
    try:
        found = parse_datetime(text)
        if found is not None:
            found = (found.astimezone(UTC) if found.tzinfo
                     else found.replace(tzinfo=UTC))
    except (ValueError, OverflowError):
        found = None
    if found is None:
        raise errors.bad_request(
            f"Invalid query string parameters: '{name}' must be an ISO 8601 time, not {text!r}")
    return found


JSON, CSV = 'application/json', 'text/csv'


def answer_format(request, params):
    """'json' or 'csv' for our endpoints that answer both: format= decides,
    else the Accept header (JSON when it takes both equally); 406 when it
    takes neither."""
    if 'format' in params:
        return params['format']
    accept = request.META.get('HTTP_ACCEPT')
    if not accept:
        return 'json'
    as_json, as_csv = errors.quality(accept, JSON), errors.quality(accept, CSV)
    if as_json <= 0 and as_csv <= 0:
        raise errors.PlacementError(406, 'Only application/json and text/csv are provided')
    return 'csv' if as_csv > as_json else 'json'


def page_after_marker(request, rows, params, default, maximum):
    """A page of `rows` (a queryset) in id order after the `marker` id, at
    most `limit` (default, maximum) long, and its links: a `next` link
    with the last id as the marker while more rows follow."""
    if 'marker' in params:
        rows = rows.filter(pk__gt=int(params['marker']))
    limit = min(int(params.get('limit', default)), maximum)
    page = list(rows.order_by('pk')[:limit + 1])
    links = []
    if len(page) > limit:
        page = page[:limit]
        query = request.GET.copy()
        query['marker'] = str(page[-1].pk)
        links.append({'rel': 'next', 'href': f'{request.path}?{query.urlencode()}'})
    return page, links


# A chunked answer larger than this is streamed (PlacementViewSet.respond_chunks).
# Below it the answer is written inside the view, where a search keeps the
# cycle collector off; streamed, it is written with the collector on, which
# then walks the search's objects (a tenth of a 1 MB answer's time).
STREAM_AFTER = 8 << 20


def _continued(written, chunks):
    # A generator: closing the answer closes `chunks` (and its search) too.
    yield from written
    yield from chunks


def list_chunks(key, items, per_chunk=1000):
    """`{key: [item, ...]}` as json.dumps writes it, in bytes chunks of
    `per_chunk` items: for respond_chunks, the items made as they are read."""
    yield ('{%s: [' % json.dumps(key)).encode()
    separator = ''
    for batch in batched(items, per_chunk):
        yield (separator + json.dumps(batch)[1:-1]).encode()
        separator = ', '
    yield b']}'


def compact_json(value):
    """Compact JSON text of an ASCII value, by orjson (ten times faster than
    json); json for what orjson cannot take (integers beyond 64 bits: a
    capacity with a huge allocation ratio)."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return json.dumps(value, separators=(',', ':'))


# ---- the base view --------------------------------------------------------

class PlacementViewSet(viewsets.ViewSet):
    """Base of every Placement API view: thin handlers over services."""

    metadata_class = None  # OPTIONS is not part of the API: 405
    content_negotiation_class = NoNegotiation
    versioning_class = MicroversionVersioning

    def get_exception_handler(self):
        return exception_handler

    @property
    def default_response_headers(self):
        return {}  # no DRF Allow/Vary on every answer: Placement sends none

    def dispatch(self, request, *args, **kwargs):
        # Placement serves no HEAD; DRF would map it onto GET.
        self.head = self.http_method_not_allowed
        return super().dispatch(request, *args, **kwargs)

    @property
    def version(self):
        return self.request.version

    @property
    def context(self):
        return self.request._request.placement_context

    def authorize(self, rule, target=None):
        policy.authorize(self.context, rule, target)

    def respond(self, body, *, status=200, last_modified=None, location=None,
                cache_headers=True, etag=None):
        """A JSON answer; Last-Modified and Cache-Control from 1.15. With the
        resource's `etag`, a read whose If-None-Match names it is 304."""
        if etag is not None and self.request.method == 'GET' and (
                self.conditions.not_modified(etag)):
            return self.no_content(status=304, etag=etag, last_modified=last_modified,
                                   cache_headers=cache_headers)
        response = HttpResponse(json.dumps(body), status=status,
                                content_type='application/json')
        if cache_headers:
            self._cache_headers(response, last_modified)
        if location:
            response['Location'] = self.request.build_absolute_uri(location)
        if etag is not None:
            response['ETag'] = etag
        return response

    def respond_chunks(self, chunks, *, last_modified=None):
        """A JSON answer written in chunks (bytes): sent whole, as respond()
        sends it, when it comes to less than STREAM_AFTER bytes; streamed as
        it is written when larger, so that a worker's memory does not grow
        with the answer. Any error before that point is answered as usual.
        last_modified may be a function of whether the chunks were all
        written (it is called before the rest are)."""
        chunks = iter(chunks)
        written, size, complete = [], 0, True
        for chunk in chunks:
            written.append(chunk)
            size += len(chunk)
            if size >= STREAM_AFTER:
                complete = False
                response = StreamingHttpResponse(_continued(written, chunks),
                                                 content_type='application/json')
                break
        else:
            response = HttpResponse(b''.join(written), content_type='application/json')
        if callable(last_modified):
            last_modified = last_modified(complete)
        self._cache_headers(response, last_modified)
        return response

    def no_content(self, *, status=204, location=None, last_modified=None,
                   cache_headers=False, etag=None):
        """An answer without a body (and without a content type)."""
        response = HttpResponse(status=status)
        del response['Content-Type']
        if location:
            response['Location'] = self.request.build_absolute_uri(location)
        if cache_headers:
            self._cache_headers(response, last_modified)
        if etag is not None:
            response['ETag'] = etag
        return response

    @property
    def conditions(self):
        """The request's If-Match / If-None-Match (placement_site.conditional)."""
        return conditional.conditions(self.request._request)

    def check_preconditions(self, etag):
        """Before a write: 412 unless If-Match / If-None-Match hold for the
        resource's current `etag` (None when it does not exist; or a function
        giving it, called only when the request has either header). True
        when If-Match held: the body may then leave out its generation."""
        return self.conditions.check_write(etag)

    def generation_optional(self, schema, name):
        """The body's schema, `name` (its generation) optional with If-Match."""
        return conditional.generation_optional(self.request._request, schema, name)

    def _cache_headers(self, response, last_modified):
        if self.version.matches(CACHE_HEADERS_MICROVERSION):
            moment = last_modified or timezone.now()
            response['Last-Modified'] = http_date(moment.timestamp())
            response['Cache-Control'] = 'no-cache'
