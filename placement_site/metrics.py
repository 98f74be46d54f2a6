"""Prometheus metrics: the request series (counted by a middleware, kept by
prometheus-client) and the helpers GET /metrics writes its text with.

The request series live in prometheus-client so that several gunicorn
workers add up: with PROMETHEUS_MULTIPROC_DIR set (prometheus-client's own
variable, an empty directory shared by the workers; see
placement_site.gunicorn_conf) every worker writes its counts there and a
scrape, whichever worker answers it, reads them all. Without it they are
counted in the process (one worker, runserver, tests).

The catalogue's series (providers.metrics) are read from the database at
each scrape and written as text directly: a large cloud has millions of
samples, far too many to build as prometheus-client objects.
"""
import functools
import hmac
import ipaddress
import os
import re
import time

import prometheus_client
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.urls import Resolver404
from django.urls import resolve
from prometheus_client import multiprocess
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.utils import floatToGoString

from placement_site import errors
from placement_site import exceptions
from placement_site import serving

# The classic text format: every Prometheus and most other scrapers read it.
CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4

# A `_created` series beside every counter doubles the output and no
# dashboard reads it.
prometheus_client.disable_created_metrics()

REQUESTS = prometheus_client.Counter(
    'placement_requests', 'Requests answered, by route, method and status.',
    ['route', 'method', 'status'])
LATENCY = prometheus_client.Histogram(
    'placement_request_duration_seconds',
    'Time from receiving a request to having its answer, by route, method and status.',
    ['route', 'method', 'status'])
ERRORS = prometheus_client.Counter(
    'placement_errors',
    'Requests answered with an error, by route, status and error code (the code as '
    'microversion 1.23 and later show it, whatever the request asked for).',
    ['route', 'status', 'code'])
CONFLICTS = prometheus_client.Counter(
    'placement_generation_conflicts',
    'Writes refused with 409 placement.concurrent_update (a stale provider or consumer '
    'generation, or a concurrent writer), by route.', ['route'])
CAPACITY_REFUSALS = prometheus_client.Counter(
    'placement_capacity_refusals',
    'Allocation writes refused with 409 because the resources asked for do not fit the '
    "providers' capacity, by route.", ['route'])

# Anything else a client sends as a method is one label value, not many.
METHODS = frozenset(('GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'))


class RequestMetricsMiddleware:
    """Counts and times every request, by route, method and final status.

    First in settings.MIDDLEWARE, so the time is the whole pipeline's and
    the status the one the client gets. Every error answer carries its
    PlacementError (placement_site.errors.render), whose code and cause tell
    conflicts and capacity refusals apart at every microversion.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        started = time.perf_counter()
        response = self.get_response(request)
        elapsed = time.perf_counter() - started
        route = route_of(request)
        method = request.method if request.method in METHODS else 'other'
        status = str(response.status_code)
        REQUESTS.labels(route, method, status).inc()
        LATENCY.labels(route, method, status).observe(elapsed)
        error = getattr(response, 'placement_error', None)
        if error is not None:
            count_error(error, route, status)
        return response


def count_error(error, route, status):
    ERRORS.labels(route, status, error.code).inc()
    if error.code == errors.CONCURRENT_UPDATE:
        CONFLICTS.labels(route).inc()
    elif caused_by(error, exceptions.InvalidAllocationCapacityExceeded):
        CAPACITY_REFUSALS.labels(route).inc()


def caused_by(error, kind):
    """Whether `error` is, or was raised from, an exception of `kind`: a
    handler's wording of a domain error (errors.worded) is raised from it."""
    seen = error
    while seen is not None:
        if isinstance(seen, kind):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def route_of(request):
    """The URL pattern a request matched, never its raw path (one label
    value per route, however many providers there are)."""
    match = request.resolver_match
    if match is None:
        # Answered before the view was resolved (a 401 from the auth
        # middleware, a 406 from microversion negotiation).
        try:
            match = resolve(request.path_info)
        except Resolver404:
            return 'unmatched'
    return route_label(match.route, match.url_name, match.view_name)


_CONVERTER = re.compile(r'<(?:\w+:)?(\w+)>')
_REGEX = re.compile(r'[\^$(\\]')


@functools.lru_cache(maxsize=512)
def route_label(route, url_name, view_name):
    """'/resource_providers/{uuid}/inventories' for path() routes; the
    pattern's name for regular expressions (the admin's, static files);
    'unmatched' for the catch-all 404."""
    if not _REGEX.search(route):
        return '/' + _CONVERTER.sub(r'{\1}', route)
    return view_name if url_name else 'unmatched'


# ---- access --------------------------------------------------------------

def scrape_allowed(request):
    """A client on PLACEMENT_METRICS_ALLOWED_NETWORKS, or one sending
    `Authorization: Bearer <PLACEMENT_METRICS_TOKEN>` when a token is set.

    The address is the connection's, or the trusted front's X-Real-IP
    (placement_site.serving.client_address): X-Forwarded-For, or X-Real-IP
    from anyone else, is anybody's to write."""
    token = settings.PLACEMENT_METRICS_TOKEN
    if token:
        scheme, _, given = request.headers.get('Authorization', '').partition(' ')
        if scheme.lower() == 'bearer' and hmac.compare_digest(
                given.strip().encode(), token.encode()):
            return True
    try:
        address = ipaddress.ip_address(serving.client_address(request))
    except ValueError:
        return False
    if address.version == 6 and address.ipv4_mapped:
        address = address.ipv4_mapped
    return any(address in network
               for network in allowed_networks(tuple(settings.PLACEMENT_METRICS_ALLOWED_NETWORKS)))


@functools.lru_cache(maxsize=8)
def allowed_networks(cidrs):
    networks = []
    for cidr in cidrs:
        try:
            networks.append(ipaddress.ip_network(cidr, strict=False))
        except ValueError:
            raise ImproperlyConfigured(
                f'PLACEMENT_METRICS_ALLOWED_NETWORKS: {cidr!r} is not a network '
                '(write addresses or CIDRs such as 10.0.0.0/8, comma-separated)')
    return tuple(networks)


def forbidden(request):
    return errors.render(request, errors.forbidden(
        'Metrics are served to the networks in PLACEMENT_METRICS_ALLOWED_NETWORKS, or with '
        'Authorization: Bearer and the PLACEMENT_METRICS_TOKEN.'))


def method_not_allowed(request):
    return errors.render(request, errors.PlacementError(
        405, 'The method specified is not allowed for this resource.', headers={'allow': 'GET'}))


# ---- the text format -----------------------------------------------------

def request_series():
    """The request series in the text format: this process's, or with
    PROMETHEUS_MULTIPROC_DIR every worker's, added up."""
    if os.environ.get('PROMETHEUS_MULTIPROC_DIR'):
        registry = prometheus_client.CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
    else:
        registry = prometheus_client.REGISTRY
    return prometheus_client.generate_latest(registry).decode()


# Lines per chunk of a streamed answer: large enough that writing is cheap,
# small enough that a million samples never sit in memory as text at once.
CHUNK_LINES = 4096


def family(name, help_text, samples, kind='gauge'):
    """One metric family as text, in chunks: HELP, TYPE, then a line per
    (rendered labels, rendered value) in `samples`. Every line of a family
    comes together, as the format requires."""
    yield f'# HELP {name} {_escape_help(help_text)}\n# TYPE {name} {kind}\n'
    lines = []
    for label_text, value in samples:
        lines.append(f'{name}{label_text} {value}\n')
        if len(lines) == CHUNK_LINES:
            yield ''.join(lines)
            lines = []
    if lines:
        yield ''.join(lines)


def labels(**pairs):
    """'{name="value",...}', values escaped as the format requires."""
    return '{' + ','.join(f'{name}="{_escape_label(value)}"' for name, value in pairs.items()) + '}'


def number(value):
    """A sample value: integers as they are, floats as Go writes them."""
    return str(value) if isinstance(value, int) else floatToGoString(value)


def _escape_label(value):
    value = str(value)
    if '\\' in value or '"' in value or '\n' in value:
        value = value.replace('\\', r'\\').replace('"', r'\"').replace('\n', r'\n')
    return value


def _escape_help(text):
    return text.replace('\\', r'\\').replace('\n', r'\n')
