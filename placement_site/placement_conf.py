"""placement.conf, read as OpenStack Placement reads it, into our settings.

Deployment tools write /etc/placement/placement.conf (the directory in
OS_PLACEMENT_CONFIG_DIR); placement-manage and placement-status also take
--config-file and --config-dir (handed over in PLACEMENT_CONFIG_FILES). The
files are parsed with oslo.config's parser, later files winning, and each
option Placement defines becomes the environment variable our settings
read (settings.py, before it reads any): an environment variable already
set wins, so today's set-ups keep working. An option that has no meaning
here is accepted and logged once as ignored; so is a section Placement does
not define, and any other [DEFAULT] option (every oslo library reads that
section). Our own settings have sections of their own (OURS: [dashboards],
[ledger], [metrics], ...), each option the environment variable of the same
meaning. An unknown option in one of Placement's sections or of ours, or a
value of the wrong kind, is a ConfError naming the file, the section and
the option.
"""
import logging
import os
from pathlib import Path
from urllib.parse import urlsplit

from oslo_config import cfg
from oslo_config import types

LOG = logging.getLogger('placement.config')
DEFAULT_DIR = '/etc/placement'
FILE_NAME = 'placement.conf'
# Set by the commands' --config-file/--config-dir: the files, os.pathsep-separated.
FILES_VARIABLE = 'PLACEMENT_CONFIG_FILES'

_BOOL, _INT, _STR = types.Boolean(), types.Integer(), types.String()
_FLOAT, _LIST = types.Float(), types.List()
# oslo.messaging's notifications use [DEFAULT] transport_url unless their
# own section names one: read under this name, settled after the files.
_DEFAULT_TRANSPORT = '[DEFAULT] transport_url'


class ConfError(Exception):
    """placement.conf holds what cannot be read: its message says where."""


def _database_url(value, _):
    """SQLAlchemy's URL (mysql+pymysql://, postgresql+psycopg2://) as ours:
    the driver is ours to choose."""
    parts = urlsplit(value)
    scheme = parts.scheme.split('+', 1)[0]
    if scheme not in ('mysql', 'mariadb', 'postgresql', 'postgres', 'sqlite'):
        raise ValueError(f'a database URL of {scheme!r} is not supported')
    return scheme + value[len(parts.scheme):]


def _database_urls(value, config_dir):
    return ','.join(_database_url(url, config_dir) for url in value)


def _relative_to(value, config_dir):
    """A file named relative to the configuration directory, as oslo.policy
    finds policy_file."""
    return str(Path(config_dir, value)) if config_dir else value


def _debug(value, _):
    return 'DEBUG' if value else None


def _words(value, _):
    return ','.join(value)


def _as_is(value, _):
    return str(value).lower() if isinstance(value, bool) else str(value)


# section -> option -> (type, the environment variable, how the value reads there).
HONOURED = {
    'DEFAULT': {
        'debug': (_BOOL, 'PLACEMENT_LOG_LEVEL', _debug),
        'log_file': (_STR, 'PLACEMENT_LOG_FILE', _as_is),
        'log_dir': (_STR, 'PLACEMENT_LOG_DIR', _as_is),
    },
    'api': {
        'auth_strategy': (types.String(choices=('noauth2', 'keystone')),
                          'PLACEMENT_AUTH_STRATEGY', _as_is),
    },
    'placement_database': {
        'connection': (_STR, 'DATABASE_URL', _database_url),
        'sync_on_startup': (_BOOL, 'PLACEMENT_SYNC_ON_STARTUP', _as_is),
    },
    'oslo_policy': {
        'policy_file': (_STR, 'PLACEMENT_POLICY_FILE', _relative_to),
        'enforce_scope': (_BOOL, 'PLACEMENT_ENFORCE_SCOPE', _as_is),
        'enforce_new_defaults': (_BOOL, 'PLACEMENT_ENFORCE_NEW_DEFAULTS', _as_is),
    },
    'oslo_middleware': {
        'enable_proxy_headers_parsing': (_BOOL, 'PLACEMENT_PROXY_HEADERS_PARSING', _as_is),
    },
    'cors': {
        'allowed_origin': (_LIST, 'PLACEMENT_CORS_ALLOWED_ORIGINS', _words),
        'allow_headers': (_LIST, 'PLACEMENT_CORS_ALLOW_HEADERS', _words),
    },
    'placement': {
        'randomize_allocation_candidates': (
            _BOOL, 'PLACEMENT_RANDOMIZE_ALLOCATION_CANDIDATES', _as_is),
        'max_allocation_candidates': (_INT, 'PLACEMENT_MAX_ALLOCATION_CANDIDATES', _as_is),
        'allocation_candidates_generation_strategy': (
            types.String(choices=('depth-first', 'breadth-first')),
            'PLACEMENT_ALLOCATION_CANDIDATES_GENERATION_STRATEGY', _as_is),
        'incomplete_consumer_project_id': (
            _STR, 'PLACEMENT_INCOMPLETE_CONSUMER_PROJECT_ID', _as_is),
        'incomplete_consumer_user_id': (_STR, 'PLACEMENT_INCOMPLETE_CONSUMER_USER_ID', _as_is),
        'allocation_conflict_retry_count': (_INT, 'PLACEMENT_RETRY_ATTEMPTS', _as_is),
    },
}

# Our own settings (docs/configuration.md), in sections Placement does not
# have: section -> option -> (type, the environment variable, how it reads).
OURS = {
    'DEFAULT': {
        'transport_url': (_STR, _DEFAULT_TRANSPORT, _as_is),
    },
    'django': {
        'debug': (_BOOL, 'DJANGO_DEBUG', _as_is),
        'secret_key': (_STR, 'DJANGO_SECRET_KEY', _as_is),
        'data_dir': (_STR, 'PLACEMENT_DATA_DIR', _relative_to),
    },
    'postgresql': {
        'prepare_on_server': (_BOOL, 'PLACEMENT_PREPARE_ON_SERVER', _as_is),
    },
    'replicas': {
        'read_connections': (_LIST, 'PLACEMENT_READ_DATABASE_URLS', _database_urls),
        'max_lag_seconds': (_FLOAT, 'PLACEMENT_REPLICA_MAX_LAG_SECONDS', _as_is),
    },
    'http': {
        'allowed_hosts': (_LIST, 'DJANGO_ALLOWED_HOSTS', _words),
        'csrf_trusted_origins': (_LIST, 'DJANGO_CSRF_TRUSTED_ORIGINS', _words),
        'secure_cookies': (_BOOL, 'DJANGO_SECURE_COOKIES', _as_is),
        'trusted_proxies': (_LIST, 'PLACEMENT_TRUSTED_PROXIES', _words),
        'max_body_size': (_INT, 'PLACEMENT_MAX_BODY_SIZE', _as_is),
    },
    'dashboards': {
        'auth': (types.List(item_type=types.String(choices=('django', 'keystone'))),
                 'PLACEMENT_UI_AUTH', _words),
        'keystone_url': (_STR, 'PLACEMENT_UI_KEYSTONE_URL', _as_is),
        'token_recheck_seconds': (_INT, 'PLACEMENT_UI_TOKEN_RECHECK_SECONDS', _as_is),
        'signin_failures': (_INT, 'PLACEMENT_UI_SIGNIN_FAILURES', _as_is),
        'signin_lockout_minutes': (_INT, 'PLACEMENT_UI_SIGNIN_LOCKOUT_MINUTES', _as_is),
        'session_hours': (_INT, 'PLACEMENT_UI_SESSION_HOURS', _as_is),
        'content_security_policy': (_STR, 'PLACEMENT_UI_CSP', _as_is),
    },
    'serving': {
        'operator_statement_timeout_seconds': (
            _FLOAT, 'PLACEMENT_OPERATOR_STATEMENT_TIMEOUT_SECONDS', _as_is),
        'export_duty': (_FLOAT, 'PLACEMENT_EXPORT_DUTY', _as_is),
    },
    'ledger': {
        'enabled': (_BOOL, 'PLACEMENT_LEDGER', _as_is),
        'size_mb': (_INT, 'PLACEMENT_LEDGER_MB', _as_is),
        'follow_seconds': (_FLOAT, 'PLACEMENT_LEDGER_FOLLOW_SECONDS', _as_is),
        'remembered_mb': (_INT, 'PLACEMENT_REMEMBERED_MB', _as_is),
    },
    'capacity': {
        'flavors': (_STR, 'PLACEMENT_CAPACITY_FLAVORS', _as_is),
        'refuse_overcommitted_inventory': (
            _BOOL, 'PLACEMENT_REFUSE_OVERCOMMITTED_INVENTORY', _as_is),
    },
    'trends': {
        'retention_days': (_INT, 'PLACEMENT_TREND_RETENTION_DAYS', _as_is),
        'interval_minutes': (_INT, 'PLACEMENT_TREND_INTERVAL_MINUTES', _as_is),
    },
    'metrics': {
        'allowed_networks': (_LIST, 'PLACEMENT_METRICS_ALLOWED_NETWORKS', _words),
        'token': (_STR, 'PLACEMENT_METRICS_TOKEN', _as_is),
        'os_capacity': (_BOOL, 'PLACEMENT_METRICS_OS_CAPACITY', _as_is),
    },
    # oslo.messaging's own section and names, as the other services write it.
    'oslo_messaging_notifications': {
        'driver': (types.String(choices=('noop', 'log', 'messagingv2')),
                   'PLACEMENT_NOTIFICATIONS_DRIVER', _as_is),
        'transport_url': (_STR, 'PLACEMENT_TRANSPORT_URL', _as_is),
        'topics': (_LIST, 'PLACEMENT_NOTIFICATIONS_TOPICS', _words),
    },
    'pods': {
        'filters': (_LIST, 'PLACEMENT_POD_FILTERS', _words),
        'weighers': (_LIST, 'PLACEMENT_POD_WEIGHERS', _words),
    },
}

# Placement's options that have no meaning here: accepted, logged as ignored.
IGNORED = {
    'placement_database': {
        'connection_recycle_time', 'max_pool_size', 'max_overflow', 'max_retries',
        'pool_timeout', 'retry_interval', 'connection_parameters', 'sqlite_synchronous',
        'slave_connection', 'mysql_sql_mode', 'mysql_enable_ndb', 'connection_debug',
        'connection_trace', 'db_max_retries', 'db_retry_interval', 'db_inc_retry_interval',
        'db_max_retry_interval', 'use_db_reconnect', 'mysql_wsrep_sync_wait',
    },
    'cors': {'allow_credentials', 'expose_headers', 'max_age', 'allow_methods'},
    'oslo_policy': {
        'policy_default_rule', 'policy_dirs', 'remote_content_type',
        'remote_ssl_verify_server_crt', 'remote_ssl_ca_crt_file', 'remote_ssl_client_crt_file',
        'remote_ssl_client_key_file', 'remote_timeout',
    },
    'oslo_middleware': {'max_request_body_size', 'http_basic_auth_user_file'},
    'profiler': None,       # any option: osprofiler is not wired in
    # Every oslo library reads [DEFAULT] (oslo.log's formats, oslo.service's
    # timeouts, state_path, ...): what is not honoured above is ignored.
    'DEFAULT': None,
    'api': {'local_metadata_per_cell'},
}


def config_files(environ=os.environ):
    """The files to read: PLACEMENT_CONFIG_FILES when a command was given
    some, else placement.conf in OS_PLACEMENT_CONFIG_DIR (/etc/placement)
    where it exists."""
    given = environ.get(FILES_VARIABLE)
    if given:
        return [path for path in given.split(os.pathsep) if path]
    path = Path(environ.get('OS_PLACEMENT_CONFIG_DIR', DEFAULT_DIR).strip(), FILE_NAME)
    return [str(path)] if path.is_file() else []


def command_files(config_file=(), config_dir=None):
    """The files of --config-file (each) and --config-dir (its *.conf, in
    name order), as oslo.config takes them."""
    files = list(config_file)
    if config_dir:
        files += sorted(str(p) for p in Path(config_dir).glob('*.conf'))
    return files


def read(files):
    """({environment variable: value}, [ignored (file, section, option)])
    of the files, later files winning."""
    values, ignored = {}, []
    for path in files:
        sections = _parsed(path)
        config_dir = str(Path(path).resolve().parent)
        for section, options in sections.items():
            honoured = {**HONOURED.get(section, {}), **OURS.get(section, {})}
            skipped = IGNORED.get(section, set())
            for name, raw in options.items():
                raw = raw[-1]
                if section == 'keystone_authtoken':
                    # keystonemiddleware's and its auth plugin's options, as they are.
                    values[f'KEYSTONE_AUTHTOKEN_{name.upper()}'] = raw
                elif name in honoured:
                    kind, variable, reading = honoured[name]
                    try:
                        value = reading(kind(raw), config_dir)
                    except ValueError as exc:
                        raise ConfError(f'{path}: [{section}] {name} = {raw!r}: {exc}')
                    if value is not None:
                        values[variable] = value
                elif skipped is None or name in skipped or section not in (
                        *HONOURED, *OURS, *IGNORED):
                    ignored.append((path, section, name))
                else:
                    whose = 'Placement\'s ' if section in HONOURED else ''
                    raise ConfError(f'{path}: [{section}] {name}: no such option in '
                                    f'{whose}[{section}]')
    default_transport = values.pop(_DEFAULT_TRANSPORT, None)
    if default_transport:
        values.setdefault('PLACEMENT_TRANSPORT_URL', default_transport)
    return values, ignored


def _parsed(path):
    sections = {}
    try:
        cfg.ConfigParser(path, sections).parse()
    except (OSError, cfg.ParseError) as exc:
        raise ConfError(f'{path}: {exc}')
    return sections


def load(environ=os.environ):
    """Read the configuration files into `environ` where it has no value
    yet; log what is ignored, once. Raises ConfError."""
    files = config_files(environ)
    values, ignored = read(files)
    if files:
        # Deployed as Placement is, behind a load balancer's names: like
        # Placement, answer whatever Host a client asked for.
        values.setdefault('DJANGO_ALLOWED_HOSTS', '*')
    for variable, value in values.items():
        environ.setdefault(variable, value)
    for path, section, name in ignored:
        LOG.warning('%s: [%s] %s has no meaning here: ignored', path, section, name)
    return values
