"""Django settings, all driven by environment variables (and placement.conf,
read into the ones the environment leaves unset: placement_site.placement_conf).

Placement's own options keep the names the conformance harness and operators
use: DATABASE_URL, PLACEMENT_AUTH_STRATEGY, PLACEMENT_ENFORCE_NEW_DEFAULTS,
PLACEMENT_ENFORCE_SCOPE, PLACEMENT_POLICY_FILE, PLACEMENT_CORS_ALLOWED_ORIGINS,
PLACEMENT_CORS_ALLOW_HEADERS. Django's own: DJANGO_DEBUG, DJANGO_SECRET_KEY,
DJANGO_ALLOWED_HOSTS.
"""
import os
import sys
import tempfile
from datetime import timedelta
from pathlib import Path

from placement_site import config
from placement_site import placement_conf
from placement_site import serving

try:
    placement_conf.load()
except placement_conf.ConfError as exc:
    # A start-up error that says where, not a traceback.
    sys.stderr.write(f'placement.conf: {exc}\n')
    raise SystemExit(1)

BASE_DIR = Path(__file__).resolve().parent.parent
# A checkout holds templates/ and static/ beside the packages (and the data
# in data/); `pip install .` puts them in <prefix>/share/placement (and the
# data in <prefix>/var/placement), the packages in <prefix>/lib/pythonX.Y/.
if (BASE_DIR / 'templates').is_dir():
    SHARED_DIR, DEFAULT_DATA_DIR = BASE_DIR, BASE_DIR / 'data'
else:
    _PREFIX = BASE_DIR.parents[2]
    SHARED_DIR, DEFAULT_DATA_DIR = _PREFIX / 'share' / 'placement', _PREFIX / 'var' / 'placement'
DATA_DIR = Path(os.environ.get('PLACEMENT_DATA_DIR', DEFAULT_DATA_DIR)).resolve()
DATA_DIR.mkdir(parents=True, exist_ok=True)

# Off unless a developer turns it on: a production server never shows
# tracebacks.
DEBUG = config.env_bool('DJANGO_DEBUG', False)
SECRET_KEY = config.secret_key(debug=DEBUG, data_dir=DATA_DIR)
ALLOWED_HOSTS = config.env_list('DJANGO_ALLOWED_HOSTS', 'localhost,127.0.0.1,[::1]')
CSRF_TRUSTED_ORIGINS = config.env_list('DJANGO_CSRF_TRUSTED_ORIGINS')

INSTALLED_APPS = [
    'django.contrib.admin',
    'django.contrib.auth',
    'django.contrib.contenttypes',
    'django.contrib.sessions',
    'django.contrib.messages',
    'django.contrib.staticfiles',
    'django.contrib.humanize',
    'rest_framework',
    'django_filters',
    'drf_spectacular',
    'drf_spectacular_sidecar',
    # Sign-in throttling (django-axes): see PLACEMENT_UI_SIGNIN_* below.
    'axes',
    'providers',
    'allocations',
    'providers.pods',
]

MIDDLEWARE = [
    'placement_site.metrics.RequestMetricsMiddleware',  # outermost: the whole request's time
    # Every query of an operator request cut off after its budget
    # (placement_site.budgets); answered by OverBudgetMiddleware, innermost.
    'placement_site.budgets.StatementBudgetMiddleware',
    # Placement's request pipeline, outermost first, applied to API paths
    # only (see placement_site.middleware.is_api_path).
    'placement_site.middleware.RequestLogMiddleware',
    # Large answers gzip-compressed for a client that accepts it (outside
    # the others: they finish the headers it adds Vary to).
    'placement_site.compression.GzipMiddleware',
    'placement_site.middleware.CorsMiddleware',
    'placement_site.middleware.AuthMiddleware',
    'placement_site.middleware.MicroversionMiddleware',
    # Django's, for the admin, the dashboards and the API docs.
    'django.middleware.security.SecurityMiddleware',
    'placement_site.middleware.ContentSecurityPolicyMiddleware',
    'django.contrib.sessions.middleware.SessionMiddleware',
    'django.middleware.csrf.CsrfViewMiddleware',
    'django.contrib.auth.middleware.AuthenticationMiddleware',
    'django.contrib.messages.middleware.MessageMiddleware',
    # Signed-in pages and exports: Cache-Control no-store.
    'placement_site.middleware.SignedInPagesMiddleware',
    # A Keystone-signed-in session's token re-validated on every page.
    'placement_site.keystone_signin.KeystoneSessionMiddleware',
    'django.middleware.clickjacking.XFrameOptionsMiddleware',
    'placement_site.middleware.StaffActorMiddleware',
    # Sign-ins refused while their user name or address is locked out.
    'axes.middleware.AxesMiddleware',
    # The admin's pages and GET /metrics read in one snapshot.
    'placement_site.middleware.ReadSnapshotMiddleware',
    # Innermost: a view's database outage becomes a 503, on every path.
    'placement_site.middleware.DatabaseOutageMiddleware',
    # ... and a query over its budget a 503 saying so.
    'placement_site.budgets.OverBudgetMiddleware',
]

ROOT_URLCONF = 'placement_site.urls'
WSGI_APPLICATION = 'placement_site.wsgi.application'
# Placement's paths have no trailing slash and '/resource_providers/' is a 404.
APPEND_SLASH = False

TEMPLATES = [
    {
        'BACKEND': 'django.template.backends.django.DjangoTemplates',
        'DIRS': [SHARED_DIR / 'templates'],
        'APP_DIRS': True,
        'OPTIONS': {
            'context_processors': [
                'django.template.context_processors.request',
                'django.contrib.auth.context_processors.auth',
                'django.contrib.messages.context_processors.messages',
                'placement_site.viewers.context',
            ],
            # The dashboards' tags live with the dashboards (allocations/ui).
            'libraries': {'placement_ui': 'allocations.ui.templatetags'},
        },
    },
]

DATABASES = {
    'default': config.database_from_url(
        # The default is an SQLite file in the data directory (absolute path,
        # hence four slashes).
        os.environ.get('DATABASE_URL') or f'sqlite:///{DATA_DIR / "placement.sqlite3"}',
        data_dir=DATA_DIR,
    ),
}
if DATABASES['default']['ENGINE'] == 'django.db.backends.sqlite3':
    # Tests use a file, not memory, so live-server tests see one database
    # from many threads, each with its own connection (and its own lock).
    DATABASES['default']['TEST'] = {
        'NAME': str(Path(tempfile.gettempdir()) / f'placement-test-{os.getpid()}.sqlite3'),
    }
DEFAULT_AUTO_FIELD = 'django.db.models.BigAutoField'

# Read replicas (docs/replicas.md): PLACEMENT_READ_DATABASE_URLS, comma-separated
# PostgreSQL URLs, become aliases replica0, replica1, ... that serve advisory
# reads (allocation candidates, explain, dashboards) while they lag no more
# than PLACEMENT_REPLICA_MAX_LAG_SECONDS. Without them, no router at all.
PLACEMENT_READ_DATABASE_URLS = config.env_list('PLACEMENT_READ_DATABASE_URLS')
PLACEMENT_REPLICA_MAX_LAG_SECONDS = config.env_float('PLACEMENT_REPLICA_MAX_LAG_SECONDS', 5.0)
DATABASES.update(config.replica_databases(PLACEMENT_READ_DATABASE_URLS, data_dir=DATA_DIR))
# The small reads nova makes most are PREPAREd once per PostgreSQL session
# (placement_site.prepared); off behind a PgBouncer in transaction pooling,
# where a session's statements do not follow its client.
PLACEMENT_PREPARE_ON_SERVER = config.env_bool('PLACEMENT_PREPARE_ON_SERVER', True)
PLACEMENT_READ_DATABASES = [alias for alias in DATABASES if alias != 'default']
DATABASE_ROUTERS = ['placement_site.replicas.ReplicaRouter'] if PLACEMENT_READ_DATABASES else []

AUTH_PASSWORD_VALIDATORS = [
    {'NAME': 'django.contrib.auth.password_validation.UserAttributeSimilarityValidator'},
    {'NAME': 'django.contrib.auth.password_validation.MinimumLengthValidator'},
    {'NAME': 'django.contrib.auth.password_validation.CommonPasswordValidator'},
    {'NAME': 'django.contrib.auth.password_validation.NumericPasswordValidator'},
]

LANGUAGE_CODE = 'en-us'
TIME_ZONE = 'UTC'
USE_I18N = True
USE_TZ = True

STATIC_URL = 'static/'
STATIC_ROOT = BASE_DIR / 'staticfiles'
STATICFILES_DIRS = [SHARED_DIR / 'static']

LOGIN_URL = 'login'
LOGIN_REDIRECT_URL = '/ui/'

# Cookies only over HTTPS unless developing; HSTS is left to the TLS proxy
# in front of the service, which knows whether HTTPS is in use.
SESSION_COOKIE_SECURE = config.env_bool('DJANGO_SECURE_COOKIES', not DEBUG)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
# A dashboards session ends this many hours after signing in (Django's
# default is two weeks); a Keystone session also ends with its token.
SESSION_COOKIE_AGE = config.env_int('PLACEMENT_UI_SESSION_HOURS', 8) * 3600
SECURE_PROXY_SSL_HEADER = ('HTTP_X_FORWARDED_PROTO', 'https')
# placement.conf's [oslo_middleware] enable_proxy_headers_parsing: the
# Location of a created resource names the host the client asked the proxy for.
USE_X_FORWARDED_HOST = config.env_bool('PLACEMENT_PROXY_HEADERS_PARSING', False)
SILENCED_SYSTEM_CHECKS = [
    # TLS terminates at the proxy in front of the service (see README).
    'security.W004', 'security.W008',
    # MySQL/MariaDB have no partial constraints or indexes; the migrations
    # give them a generated-column unique index and a plain index instead
    # (docs/mariadb.md), so these warnings on every migrate say nothing new.
    'models.W036', 'models.W037',
]

REST_FRAMEWORK = {
    # Placement does its own authentication (noauth2 or Keystone middleware)
    # and its own policy checks (oslo.policy); DRF must not add any.
    'DEFAULT_AUTHENTICATION_CLASSES': [],
    'DEFAULT_PERMISSION_CLASSES': [],
    'UNAUTHENTICATED_USER': None,
    'DEFAULT_PARSER_CLASSES': [],
    'DEFAULT_RENDERER_CLASSES': ['rest_framework.renderers.JSONRenderer'],
    # Placement views set their own content negotiation, versioning and
    # exception handler (placement_site.api.PlacementViewSet).
    'DEFAULT_SCHEMA_CLASS': 'drf_spectacular.openapi.AutoSchema',
}

SPECTACULAR_SETTINGS = {
    'TITLE': 'Placement API',
    'DESCRIPTION': (
        'Wire-compatible implementation of the OpenStack Placement API '
        '(microversions 1.0 to 1.39). Send `OpenStack-API-Version: placement X.Y` '
        'to choose a microversion; without it requests are served at 1.0.'),
    'VERSION': '1.39',
    'SERVE_INCLUDE_SCHEMA': False,
    'SWAGGER_UI_DIST': 'SIDECAR',
    'SWAGGER_UI_FAVICON_HREF': 'SIDECAR',
    'REDOC_DIST': 'SIDECAR',
    'COMPONENT_SPLIT_REQUEST': True,
    # JSON Schema as the views validate with it (patternProperties, type lists).
    'OAS_VERSION': '3.1.0',
    'POSTPROCESSING_HOOKS': ['drf_spectacular.hooks.postprocess_schema_enums',
                             'placement_site.openapi.describe_version'],
}

# ---- Placement options -------------------------------------------------

# 'noauth2' trusts the X-Auth-Token as "user[:project]" (token 'admin' is an
# admin); 'keystone' puts keystonemiddleware's auth_token in front of the API.
PLACEMENT_AUTH_STRATEGY = os.environ.get('PLACEMENT_AUTH_STRATEGY', 'noauth2')
if PLACEMENT_AUTH_STRATEGY not in ('noauth2', 'keystone'):
    raise ValueError("PLACEMENT_AUTH_STRATEGY must be 'noauth2' or 'keystone'")
PLACEMENT_ENFORCE_NEW_DEFAULTS = config.env_bool('PLACEMENT_ENFORCE_NEW_DEFAULTS', True)
PLACEMENT_ENFORCE_SCOPE = config.env_bool('PLACEMENT_ENFORCE_SCOPE', True)
PLACEMENT_POLICY_FILE = os.environ.get('PLACEMENT_POLICY_FILE') or None
PLACEMENT_CORS_ALLOWED_ORIGINS = config.env_list('PLACEMENT_CORS_ALLOWED_ORIGINS')
PLACEMENT_CORS_ALLOW_HEADERS = config.env_list('PLACEMENT_CORS_ALLOW_HEADERS')
# Placement accepts an inventory that leaves allocations over capacity (with
# a warning); true refuses it with a 409, the resource-pool design's rule.
PLACEMENT_REFUSE_OVERCOMMITTED_INVENTORY = config.env_bool(
    'PLACEMENT_REFUSE_OVERCOMMITTED_INVENTORY', False)
# Allocation candidates, as OpenStack Placement's [placement] options:
# shuffle (or sample, with limit) the candidates; stop generating after this
# many (-1: no limit); visit trees one after another (depth-first) or one
# candidate from each in turn (breadth-first).
PLACEMENT_RANDOMIZE_ALLOCATION_CANDIDATES = config.env_bool(
    'PLACEMENT_RANDOMIZE_ALLOCATION_CANDIDATES', False)
PLACEMENT_MAX_ALLOCATION_CANDIDATES = int(os.environ.get('PLACEMENT_MAX_ALLOCATION_CANDIDATES', -1))
PLACEMENT_ALLOCATION_CANDIDATES_GENERATION_STRATEGY = os.environ.get(
    'PLACEMENT_ALLOCATION_CANDIDATES_GENERATION_STRATEGY', 'depth-first')
if PLACEMENT_ALLOCATION_CANDIDATES_GENERATION_STRATEGY not in ('depth-first', 'breadth-first'):
    raise ValueError('PLACEMENT_ALLOCATION_CANDIDATES_GENERATION_STRATEGY must be '
                     "'depth-first' or 'breadth-first'")
# Change notifications, sent from the event log by `manage.py
# send_notifications` through oslo.messaging: 'noop' sends nothing (the log
# still keeps every event), 'log' writes them to the log, 'messagingv2' sends
# them to the broker at PLACEMENT_TRANSPORT_URL (rabbit://user:pass@host:5672/)
# on these topics.
PLACEMENT_NOTIFICATIONS_DRIVER = os.environ.get('PLACEMENT_NOTIFICATIONS_DRIVER', 'noop')
if PLACEMENT_NOTIFICATIONS_DRIVER not in ('noop', 'log', 'messagingv2'):
    raise ValueError("PLACEMENT_NOTIFICATIONS_DRIVER must be 'noop', 'log' or 'messagingv2'")
PLACEMENT_TRANSPORT_URL = os.environ.get('PLACEMENT_TRANSPORT_URL') or None
PLACEMENT_NOTIFICATIONS_TOPICS = config.env_list('PLACEMENT_NOTIFICATIONS_TOPICS') or [
    'notifications']
# Pod binding (providers.pods): the selection pipeline's filters, in
# order (class names of providers.pods.selection, or dotted paths), and
# its weighers as Name[:multiplier]. Each weigher's weights are normalised
# to 0..1 over the pods left, multiplied and summed; the highest total wins.
# The default is "first pod in line" (oldest first).
PLACEMENT_POD_FILTERS = config.env_list('PLACEMENT_POD_FILTERS') or [
    'AllPodsFilter', 'AvailabilityZoneFilter', 'ResourceAffinityFilter', 'EnabledFilter',
    'BelowThresholdFilter', 'CapacityFilter']
PLACEMENT_POD_WEIGHERS = config.env_list('PLACEMENT_POD_WEIGHERS') or [
    'CreationTimeWeigher:1.0', 'IdleCapacityWeigher:0.0']
# Operator insight. GET /metrics (Prometheus' text format) answers clients
# from these networks, or any client sending `Authorization: Bearer <token>`
# when a token is set. Under gunicorn with several workers, set
# PROMETHEUS_MULTIPROC_DIR (prometheus-client's own variable) to an empty
# directory so the workers' request counters add up.
PLACEMENT_METRICS_ALLOWED_NETWORKS = config.env_list(
    'PLACEMENT_METRICS_ALLOWED_NETWORKS', '127.0.0.0/8,::1/128')
PLACEMENT_METRICS_TOKEN = os.environ.get('PLACEMENT_METRICS_TOKEN') or None
# Request shapes ("flavors") whose "how many more fit" the dashboards show:
# `name=RC:amount,RC:amount` separated by semicolons.
PLACEMENT_CAPACITY_FLAVORS = os.environ.get(
    'PLACEMENT_CAPACITY_FLAVORS',
    'small=VCPU:1,MEMORY_MB:2048,DISK_GB:20;'
    'medium=VCPU:4,MEMORY_MB:8192,DISK_GB:80;'
    'large=VCPU:16,MEMORY_MB:65536,DISK_GB:160')
# Usage trends: snapshots of capacity and use per class per pool older than
# this many days are deleted; a new snapshot is taken at most every
# PLACEMENT_TREND_INTERVAL_MINUTES when changes are recorded.
PLACEMENT_TREND_RETENTION_DAYS = config.env_int('PLACEMENT_TREND_RETENTION_DAYS', 90)
PLACEMENT_TREND_INTERVAL_MINUTES = config.env_int('PLACEMENT_TREND_INTERVAL_MINUTES', 60)
# Series of their own the apps take with each usage snapshot, in its
# transaction: callables (dotted paths) given the moment, returning the rows
# they wrote.
PLACEMENT_TREND_SERIES = ['allocations.project_trends.snapshot_take']
# Series of their own the apps add to GET /metrics, after the catalogue's:
# callables (dotted paths) reading at the scrape and returning the text.
PLACEMENT_METRICS_SERIES = ['allocations.metrics.project_usage']
# os-capacity's series on GET /metrics (providers.os_capacity and
# allocations.metrics): a third of a large cloud's scrape; off for clouds
# whose dashboards do not read them.
PLACEMENT_METRICS_OS_CAPACITY = config.env_bool('PLACEMENT_METRICS_OS_CAPACITY', True)
# The dashboards' books kept in step with the writes (providers.ledger): off,
# every read sums the live rows.
PLACEMENT_LEDGER = config.env_bool('PLACEMENT_LEDGER', True)
# What other apps add to each tree of the ledger's image.
PLACEMENT_LEDGER_FACETS = ['allocations.ledger.Allocations']
# The bytes a process may spend on the ledger's folds (books, fits, owners'
# usage, /metrics' rendered samples: about 150 MB at 40,000 compute nodes and
# 180,000 consumers), and on other remembered answers (the explorer's),
# least recently read dropped first.
PLACEMENT_LEDGER_MB = config.env_int('PLACEMENT_LEDGER_MB', 256)
PLACEMENT_REMEMBERED_MB = config.env_int('PLACEMENT_REMEMBERED_MB', 32)
# While its pages are read, the operator pool follows the writes this often
# (seconds; 0: only as pages read), for a minute after the last read: the
# first read after a quiet spell of browsing need not catch up on its own.
PLACEMENT_LEDGER_FOLLOW_SECONDS = config.env_float('PLACEMENT_LEDGER_FOLLOW_SECONDS', 1.0)
# The share of its time a dashboard export may work (allocations.ui.exports):
# it waits the rest between chunks, leaving the cores to the claims.
PLACEMENT_EXPORT_DUTY = min(max(config.env_float('PLACEMENT_EXPORT_DUTY', 0.5), 0.05), 1.0)
# Serving (scripts/serve.sh, docs/serving.md): which pool this process is,
# `api` or `operator` behind the front, empty for one pool serving all.
PLACEMENT_SERVING_POOL = os.environ.get('PLACEMENT_SERVING_POOL', '')
if PLACEMENT_SERVING_POOL not in ('', *serving.POOLS):
    raise ValueError("PLACEMENT_SERVING_POOL must be 'api', 'operator' or empty")
# Every query of an operator request (all of the operator pool's; with one
# pool, those of the operator paths) is cut off after this many seconds
# (0: never), answered 503 (placement_site.budgets).
PLACEMENT_OPERATOR_STATEMENT_TIMEOUT_SECONDS = config.env_float(
    'PLACEMENT_OPERATOR_STATEMENT_TIMEOUT_SECONDS', 10.0)
# Whom to believe about the client's address (X-Real-IP): `unix` for the
# front on the pools' Unix sockets (serve.sh sets it), or the addresses of a
# proxy that overwrites that header. Nobody, by default.
PLACEMENT_TRUSTED_PROXIES = config.env_list('PLACEMENT_TRUSTED_PROXIES')
serving.trusted_networks(tuple(PLACEMENT_TRUSTED_PROXIES))  # a bad one stops the server here
# Request bodies larger than this many bytes are refused with 413 (0: no limit).
PLACEMENT_MAX_BODY_SIZE = config.env_int('PLACEMENT_MAX_BODY_SIZE', 8 * 1024 * 1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = PLACEMENT_MAX_BODY_SIZE or None
# Consumers written before microversion 1.8 carry no project or user.
PLACEMENT_INCOMPLETE_CONSUMER_PROJECT_ID = os.environ.get(
    'PLACEMENT_INCOMPLETE_CONSUMER_PROJECT_ID', '00000000-0000-0000-0000-000000000000')
PLACEMENT_INCOMPLETE_CONSUMER_USER_ID = os.environ.get(
    'PLACEMENT_INCOMPLETE_CONSUMER_USER_ID', '00000000-0000-0000-0000-000000000000')
# How often a write that lost a race (a generation conflict) is run again.
PLACEMENT_RETRY_ATTEMPTS = config.env_int('PLACEMENT_RETRY_ATTEMPTS', 10)
# placement.conf's [placement_database] sync_on_startup: the WSGI application
# runs `placement-manage db sync` before it serves.
PLACEMENT_SYNC_ON_STARTUP = config.env_bool('PLACEMENT_SYNC_ON_STARTUP', False)
# Who may sign in to the dashboards: 'django' (local accounts), 'keystone'
# (the cloud's Keystone, placement_site.keystone_signin) or both,
# comma-separated. Keystone's URL: PLACEMENT_UI_KEYSTONE_URL, else the API's
# KEYSTONE_AUTHTOKEN_AUTH_URL.
PLACEMENT_UI_AUTH = [name.strip() for name in
                     os.environ.get('PLACEMENT_UI_AUTH', 'django').split(',') if name.strip()]
if set(PLACEMENT_UI_AUTH) - {'django', 'keystone'} or not PLACEMENT_UI_AUTH:
    raise ValueError("PLACEMENT_UI_AUTH must name 'django', 'keystone' or both")
PLACEMENT_UI_KEYSTONE_URL = os.environ.get('PLACEMENT_UI_KEYSTONE_URL', '')
# How long Keystone's answer on a dashboards session's token holds: pages
# re-validate it at most every N seconds (0: on every page, a round trip to
# Keystone each). A revoked token is honoured up to N seconds, an expired one
# never, a signed-out session not at all. A minute, not keystonemiddleware's
# 300 s for the API: the dashboards' admin edits, and a user clicking
# through pages still costs Keystone one check a minute.
PLACEMENT_UI_TOKEN_RECHECK_SECONDS = config.env_int('PLACEMENT_UI_TOKEN_RECHECK_SECONDS', 60)
AUTHENTICATION_BACKENDS = (
    ['axes.backends.AxesStandaloneBackend']   # first: a locked-out sign-in goes no further
    + (['django.contrib.auth.backends.ModelBackend'] if 'django' in PLACEMENT_UI_AUTH else [])
    + (['placement_site.keystone_signin.KeystoneBackend',
        # A Keystone user's admin permissions: Placement's policy for its token.
        'placement_site.viewers.PolicyPermissions']
       if 'keystone' in PLACEMENT_UI_AUTH else []))
# The browser pages' Content-Security-Policy ('' for none): nothing but this
# site's own files, no inline script or style, no framing.
PLACEMENT_UI_CSP = os.environ.get(
    'PLACEMENT_UI_CSP',
    "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'self'; "
    "form-action 'self'; frame-ancestors 'none'")
# Sign-in throttling: after PLACEMENT_UI_SIGNIN_FAILURES wrong passwords for
# one user name from one client address, that user's sign-ins from that
# address (the right password too) are refused for
# PLACEMENT_UI_SIGNIN_LOCKOUT_MINUTES. The pair, not either alone (axes'
# nested list): behind a proxy users share an address, and anyone may type
# another's user name, so either alone lets one person lock others out.
AXES_FAILURE_LIMIT = config.env_int('PLACEMENT_UI_SIGNIN_FAILURES', 5)
AXES_COOLOFF_TIME = timedelta(minutes=config.env_int('PLACEMENT_UI_SIGNIN_LOCKOUT_MINUTES', 15))
AXES_LOCKOUT_PARAMETERS = [['username', 'ip_address']]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = 'registration/locked_out.html'
AXES_VERBOSE = False
# The client's address: the connection's, or the X-Real-IP of a proxy named
# in PLACEMENT_TRUSTED_PROXIES (placement_site.serving), never a client's.
AXES_CLIENT_IP_CALLABLE = 'placement_site.serving.client_address'
# keystonemiddleware auth_token options, e.g. KEYSTONE_AUTHTOKEN_AUTH_URL.
KEYSTONE_AUTHTOKEN = {
    name[len('KEYSTONE_AUTHTOKEN_'):].lower(): value
    for name, value in os.environ.items() if name.startswith('KEYSTONE_AUTHTOKEN_')
}

LOGGING = {
    'version': 1,
    'disable_existing_loggers': False,
    'formatters': {
        'plain': {'format': '%(asctime)s %(levelname)s %(name)s %(message)s'},
    },
    'filters': {
        'without_traceback': {'()': 'placement_site.log_filters.WithoutTraceback'},
    },
    'handlers': {
        'console': {'class': 'logging.StreamHandler', 'formatter': 'plain'},
        'console_one_line': {'class': 'logging.StreamHandler', 'formatter': 'plain',
                             'filters': ['without_traceback']},
    },
    'root': {'handlers': ['console'], 'level': 'WARNING'},
    'loggers': {
        # A refused Host header or body: one line, not the refusing stack.
        'django.security': {'handlers': ['console_one_line'], 'level': 'WARNING',
                            'propagate': False},
        # 4xx answers are the API working as designed, not server trouble.
        'django.request': {'handlers': ['console'], 'level': 'ERROR', 'propagate': False},
        'placement': {
            'handlers': ['console'],
            'level': os.environ.get('PLACEMENT_LOG_LEVEL', 'WARNING').upper(),
            'propagate': False,
        },
        # The sign-in audit lines (docs/ui-identity.md) at INFO whatever
        # PLACEMENT_LOG_LEVEL says: INFO there also logs every API request.
        'placement.signin': {'handlers': ['console'], 'level': 'INFO', 'propagate': False},
    },
}
# A log file as well (placement.conf's [DEFAULT] log_file and log_dir, as
# oslo.log joins them; reopened when logrotate moves it).
_LOG_FILE, _LOG_DIR = os.environ.get('PLACEMENT_LOG_FILE'), os.environ.get('PLACEMENT_LOG_DIR')
if _LOG_FILE or _LOG_DIR:
    LOGGING['handlers']['file'] = {
        'class': 'logging.handlers.WatchedFileHandler', 'formatter': 'plain',
        'filename': str(Path(_LOG_DIR or '', _LOG_FILE or 'placement-api.log'))}
    for _logger in (LOGGING['root'], *LOGGING['loggers'].values()):
        _logger['handlers'] = [*_logger['handlers'], 'file']
