"""Placement's request pipeline as Django middleware.

The order in settings.MIDDLEWARE mirrors OpenStack Placement's WSGI stack:
request log (request id, Accept default) -> CORS -> authentication and
request context -> microversion -> fault wrapper -> the API views. Each piece
applies to Placement's API paths only; the admin, dashboards and API docs
below UI_PREFIXES are plain Django.
"""
import functools
import logging
import uuid

from django.conf import settings
from django.core.exceptions import DisallowedHost
from django.core.exceptions import RequestDataTooBig
from django.core.exceptions import SuspiciousOperation
from django.db import OperationalError
from django.http import HttpResponse
from django.utils.cache import add_never_cache_headers
from oslo_context import context as oslo_context

from placement_site import actor
from placement_site import conditional
from placement_site import errors
from placement_site import exceptions
from placement_site import microversion
from placement_site import outages
from placement_site import serving
from placement_site import snapshots
from placement_site.retries import is_retryable

LOG = logging.getLogger('placement.requests')

# Everything else on the server is the Placement API, including unknown
# paths, which must answer Placement's 404.
UI_PREFIXES = ('/admin/', '/api/', '/static/', '/ui/', '/accounts/')
# Not Placement's either: Prometheus' scrape endpoint has its own access rule,
# and the browsers' icon needs none.
NON_API_PATHS = ('/metrics', '/favicon.ico')
# This site's own files: the same for every viewer, cacheable.
SITE_FILES = ('/static/', '/favicon.ico')
# Django's SecurityMiddleware and XFrameOptionsMiddleware add these for the
# browser pages; Placement's answers carry none of them, and a drop-in
# replacement answers with Placement's headers only.
BROWSER_HEADERS = ('X-Frame-Options', 'X-Content-Type-Options', 'Referrer-Policy',
                   'Cross-Origin-Opener-Policy', 'Content-Security-Policy')
REQUEST_ID_HEADER = 'x-openstack-request-id'


def guard_browser_page(response):
    """Not sniffed, not framed, this site's files only: what Django's
    middleware gives the dashboards, for a page that is not theirs."""
    response.setdefault('X-Content-Type-Options', 'nosniff')
    response.setdefault('X-Frame-Options', settings.X_FRAME_OPTIONS)
    if settings.PLACEMENT_UI_CSP:
        response.setdefault('Content-Security-Policy', settings.PLACEMENT_UI_CSP)


def is_api_path(path):
    return path not in NON_API_PATHS and not path.startswith(UI_PREFIXES)


def _is_root(path):
    return path in ('/', '')


class RequestLogMiddleware:
    """Request id, the JSON default for Accept, and a one-line request log."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if not is_api_path(request.path_info):
            return self.get_response(request)
        request.placement_request_id = f'req-{uuid.uuid4()}'
        request.placement_version = None
        try:
            # Checked up front (not only when a Location header needs it), so
            # a host outside DJANGO_ALLOWED_HOSTS is refused on every request.
            request.get_host()
        except DisallowedHost as exc:
            response = errors.render(request, errors.bad_request(str(exc)))
            response[REQUEST_ID_HEADER] = request.placement_request_id
            return response
        # Without an Accept header (or with */*) errors are JSON, as a
        # Placement client expects.
        accept = request.META.get('HTTP_ACCEPT')
        if not accept or accept == '*/*':
            request.META['HTTP_ACCEPT'] = 'application/json'
        response = self.get_response(request)
        if response.get('Content-Type', '').startswith('text/html'):
            # An HTML error page (a browser's Accept) shares the dashboards'
            # origin, so it carries their guards; JSON goes as Placement's.
            guard_browser_page(response)
        else:
            for header in BROWSER_HEADERS:
                del response[header]
        if REQUEST_ID_HEADER not in response:
            response[REQUEST_ID_HEADER] = request.placement_request_id
        if not response.streaming and not response.has_header('Content-Length'):
            response['Content-Length'] = str(len(response.content))
        if LOG.isEnabledFor(logging.INFO):
            LOG.info('%s "%s %s" status: %s len: %s microversion: %s',
                     serving.client_address(request) or '-', request.method,
                     request.get_full_path(), response.status_code,
                     response.get('Content-Length', '-'),
                     request.placement_version or '-')
        return response


class CorsMiddleware:
    """Cross-origin requests, when PLACEMENT_CORS_ALLOWED_ORIGINS is set.

    Behaves as oslo.middleware's CORS filter with OpenStack Placement's
    defaults: credentials allowed, preflights cached for an hour, Placement's
    headers allowed (PLACEMENT_CORS_ALLOW_HEADERS replaces that list) and
    exposed to the browser.
    """
    SIMPLE_HEADERS = ('Accept', 'Accept-Language', 'Content-Type', 'Cache-Control',
                      'Content-Language', 'Expires', 'Last-Modified', 'Pragma')
    DEFAULT_ALLOW_HEADERS = ('X-Auth-Token', 'X-Openstack-Request-Id', 'X-Identity-Status',
                             'X-Roles', 'X-Service-Catalog', 'X-User-Id', 'X-Tenant-Id',
                             'OpenStack-API-Version')
    EXPOSE_HEADERS = ('X-Auth-Token', 'X-Openstack-Request-Id', 'X-Subject-Token',
                      'X-Service-Token', 'OpenStack-API-Version')
    ALLOW_METHODS = ('GET', 'PUT', 'POST', 'DELETE', 'PATCH')
    MAX_AGE = 3600

    def __init__(self, get_response):
        self.get_response = get_response
        self.origins = settings.PLACEMENT_CORS_ALLOWED_ORIGINS
        allowed = settings.PLACEMENT_CORS_ALLOW_HEADERS or self.DEFAULT_ALLOW_HEADERS
        self.permitted_headers = {h.upper() for h in (*allowed, *self.SIMPLE_HEADERS)}

    def __call__(self, request):
        if not self.origins or not is_api_path(request.path_info):
            return self.get_response(request)
        response = self.get_response(request)
        if response.has_header('Access-Control-Allow-Origin'):
            return response
        if request.method == 'OPTIONS':
            return self._preflight(request, response)
        origin = self._allowed_origin(request)
        if origin:
            vary = response.get('Vary')
            response['Vary'] = f'{vary},Origin' if vary else 'Origin'
            response['Access-Control-Allow-Origin'] = origin
            response['Access-Control-Allow-Credentials'] = 'true'
            response['Access-Control-Expose-Headers'] = ','.join(self.EXPOSE_HEADERS)
        return response

    def _allowed_origin(self, request):
        origin = request.headers.get('Origin')
        if origin is None:
            return None
        if origin in self.origins:
            return origin
        return '*' if '*' in self.origins else None

    def _preflight(self, request, response):
        # The API itself does not answer OPTIONS; a preflight always gets 200.
        if not 200 <= response.status_code < 300:
            response = HttpResponse(status=200)
            del response['Content-Type']
        origin = self._allowed_origin(request)
        method = request.headers.get('Access-Control-Request-Method')
        if not origin or method is None or method not in self.ALLOW_METHODS:
            return response
        requested = [h.strip() for h in
                     request.headers.get('Access-Control-Request-Headers', '').split(',')
                     if h.strip()]
        if any(h.upper() not in self.permitted_headers for h in requested):
            return response
        response['Vary'] = 'Origin'
        response['Access-Control-Allow-Origin'] = origin
        response['Access-Control-Allow-Credentials'] = 'true'
        response['Access-Control-Max-Age'] = str(self.MAX_AGE)
        response['Access-Control-Allow-Methods'] = method
        if requested:
            response['Access-Control-Allow-Headers'] = ','.join(requested)
        return response


class AuthMiddleware:
    """Who is asking: noauth2 tokens or Keystone's headers -> request context.

    With 'noauth2' the X-Auth-Token is "user[:project]"; the token 'admin'
    has the admin role; X-Roles overrides the roles and OpenStack-System-Scope
    makes the request system-scoped. With 'keystone', keystonemiddleware
    (wrapped around the WSGI application) has already validated the token and
    set the same headers. The root document needs no credentials.
    """

    def __init__(self, get_response):
        self.get_response = get_response
        self.noauth = settings.PLACEMENT_AUTH_STRATEGY == 'noauth2'

    def __call__(self, request):
        path = request.path_info
        if not is_api_path(path):
            return self.get_response(request)
        meta = request.META
        if self.noauth and path != '/':
            token = meta.get('HTTP_X_AUTH_TOKEN')
            if token is None:
                return errors.render(request, errors.unauthorized())
            user_id, _, project_id = token.partition(':')
            project_id = project_id or user_id
            if 'HTTP_X_ROLES' in meta:
                roles = meta['HTTP_X_ROLES'].split(',')
            elif user_id == 'admin':
                roles = ['admin']
            else:
                roles = []
            meta['HTTP_X_USER_ID'] = user_id
            if not meta.get('HTTP_OPENSTACK_SYSTEM_SCOPE'):
                meta['HTTP_X_TENANT_ID'] = project_id
            meta['HTTP_X_ROLES'] = ','.join(roles)
        ctx = oslo_context.RequestContext.from_environ(
            meta, request_id=request.placement_request_id)
        if ctx.user_id is None and not _is_root(path):
            return errors.render(request, errors.unauthorized())
        request.placement_context = ctx
        with actor.acting(actor.Actor(request.placement_request_id, ctx.user_id,
                                      ctx.project_id)):
            return self.get_response(request)


class ContentSecurityPolicyMiddleware:
    """The browser pages' Content-Security-Policy (settings.PLACEMENT_UI_CSP):
    scripts, styles and everything else from this site only, no inline
    script or style (the pages have none). API answers drop it with the
    other browser headers (RequestLogMiddleware)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if settings.PLACEMENT_UI_CSP and 'Content-Security-Policy' not in response:
            response['Content-Security-Policy'] = settings.PLACEMENT_UI_CSP
        return response


def inline_styles_allowed(view):
    """The policy with inline styles allowed (scripts stay this site's
    files only), for a page whose library applies styles inline: Swagger
    UI's."""
    @functools.wraps(view)
    def wrapped(request, *args, **kwargs):
        response = view(request, *args, **kwargs)
        if settings.PLACEMENT_UI_CSP:
            response['Content-Security-Policy'] = (
                f"{settings.PLACEMENT_UI_CSP}; style-src 'self' 'unsafe-inline'")
        return response
    return wrapped


class SignedInPagesMiddleware:
    """A signed-in viewer's pages and exports are a cloud's books: no
    browser or proxy may keep them (Cache-Control: no-store, as the admin's
    pages send). This site's own files stay cacheable."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        path = request.path_info
        user = getattr(request, 'user', None)
        # Asked before the view: DRF's views (the API docs) replace the user.
        signed_in = (not is_api_path(path) and not path.startswith(SITE_FILES)
                     and user is not None and user.is_authenticated)
        response = self.get_response(request)
        if signed_in:
            add_never_cache_headers(response)
        return response


class StaffActorMiddleware:
    """Changes made through the admin are the signed-in staff user's, with a
    request id of their own (the API's are set by AuthMiddleware)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        user = getattr(request, 'user', None)
        if is_api_path(request.path_info) or user is None or not user.is_authenticated:
            return self.get_response(request)
        with actor.acting(actor.Actor(f'req-{uuid.uuid4()}', f'staff:{user.get_username()}')):
            return self.get_response(request)


class MicroversionMiddleware:
    """Negotiates the microversion and stamps it on every answer.

    Also Placement's request preconditions (a body needs a content type) and
    its fault wrapper: an unexpected exception becomes a 500 in Placement's
    error format, never a Django debug page.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if not is_api_path(request.path_info):
            return self.get_response(request)
        try:
            version = microversion.negotiate(request.headers)
        except ValueError as exc:
            return errors.render(request, errors.PlacementError(
                406, f'Invalid microversion: {exc}'))
        except TypeError as exc:
            return errors.render(request, errors.bad_request(f'Invalid microversion: {exc}'))
        request.placement_version = version
        response = self._check_body_headers(request) or self.get_response(request)
        response[microversion.HEADER] = f'{microversion.SERVICE_TYPE} {version}'
        if getattr(response, 'placement_vary', True):
            response['vary'] = microversion.HEADER
        return response

    @staticmethod
    def _check_body_headers(request):
        length = request.META.get('CONTENT_LENGTH')
        if not length:
            return None
        try:
            has_body = int(length) > 0
        except ValueError:
            return errors.render(request, errors.bad_request(
                'content-length header must be an integer', vary=False))
        if has_body and not request.META.get('CONTENT_TYPE'):
            return errors.render(request, errors.bad_request(
                'content-type header required when content-length > 0', vary=False))
        return None

    def process_exception(self, request, exception):
        if not is_api_path(request.path_info):
            return None
        error = error_for(request, exception)
        if error is None:
            LOG.exception('Placement API unexpected error: %s', exception)
            error = errors.PlacementError(500, str(exception))
        return errors.render(request, error)


def error_for(request, exception):
    """The PlacementError answering an exception raised on an API path: the
    API's one mapping, for DRF's handler (placement_site.api) and the fault
    wrapper alike. None for a database that is away (DatabaseOutageMiddleware
    answers it, once the view's transaction is over) and for anything
    unexpected (the fault wrapper's 500)."""
    if isinstance(exception, errors.PlacementError):   # domain errors included
        return conditional.stale_write(request, exception)
    if isinstance(exception, RequestDataTooBig):
        return errors.PlacementError(
            413, f'The request body is larger than {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes.')
    if isinstance(exception, SuspiciousOperation):
        return errors.bad_request(str(exception))
    if isinstance(exception, ValueError) and 'NUL (0x00)' in str(exception):
        # PostgreSQL cannot take a NUL character anywhere in a query.
        return errors.bad_request(f'Invalid input: NUL characters are not allowed ({exception})')
    if (isinstance(exception, OperationalError) and is_retryable(exception)
            and not outages.is_unavailable(exception)):
        # A deadlock or lock wait timeout no service retried (MySQL takes
        # locks PostgreSQL does not): a conflict to retry, as a stale
        # generation is, not a server error.
        return errors.conflict(f'Update conflict: {exceptions.ConcurrentUpdate.message}',
                               code=errors.CONCURRENT_UPDATE)
    return None


class DatabaseOutageMiddleware:
    """A database that is restarting or failing over answers 503 with
    Retry-After instead of a 500 with a traceback. Innermost, so it sees a
    view's exception before the fault wrapper does; what fails in Django's
    own middleware (a session read) reaches placement_site.views.server_error,
    which answers the same way."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if not outages.is_unavailable(exception):
            return None
        return database_unavailable(request, exception)


def database_unavailable(request, exception):
    """The 503 for a request that met an unavailable database (Placement's
    error format on API paths, a line of HTML elsewhere), logged as one
    WARNING line; this thread's connections are closed."""
    outages.forget_connections()
    outages.note(getattr(request, 'placement_request_id', None), request.path, exception)
    headers = {'Retry-After': str(outages.RETRY_AFTER_SECONDS)}
    if is_api_path(request.path_info):
        response = errors.render(request, errors.PlacementError(503, outages.DETAIL,
                                                                headers=headers))
    else:
        response = HttpResponse(f'<h1>Service Unavailable</h1>\n<p>{outages.DETAIL}</p>\n',
                                status=503, headers=headers)
    response._has_been_logged = True  # the WARNING is its log line, not Django's ERROR
    return response


class ReadSnapshotMiddleware:
    """The admin's pages and GET /metrics read in one snapshot
    (placement_site.snapshots), as the dashboards do. Only GET and HEAD:
    the admin's POSTs write. Inside Django's session and authentication
    middleware, whose writes (a session saved) come after it."""

    def __init__(self, get_response):
        self.get_response = get_response
        self.read = snapshots.snapshot_reads(get_response)

    def __call__(self, request):
        path = request.path_info
        if request.method in ('GET', 'HEAD') and (path.startswith('/admin/') or path == '/metrics'):
            return self.read(request)
        return self.get_response(request)
