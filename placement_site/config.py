"""Reading configuration from the environment.

Kept apart from settings.py so the parsing rules are testable on their own.
"""
import os
import secrets
import tempfile
from pathlib import Path
from urllib.parse import parse_qsl
from urllib.parse import unquote
from urllib.parse import urlsplit

TRUE_WORDS = {'1', 'true', 'yes', 'on'}
FALSE_WORDS = {'0', 'false', 'no', 'off', ''}


def env_bool(name, default):
    """A boolean environment variable; anything unrecognised is an error."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    word = raw.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise ValueError(f'{name} must be one of true/false/1/0/yes/no/on/off, got {raw!r}')


def env_int(name, default):
    """A whole-number environment variable; anything else is an error."""
    return _env_number(name, default, int, 'a whole number')


def env_float(name, default):
    """A number environment variable; anything else is an error."""
    return _env_number(name, default, float, 'a number')


def _env_number(name, default, kind, words):
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        return kind(raw)
    except ValueError:
        raise ValueError(f'{name} must be {words}, not {raw!r}')


def env_list(name, default=''):
    """A comma-separated environment variable, blanks dropped."""
    raw = os.environ.get(name, default)
    return [item.strip() for item in raw.split(',') if item.strip()]


def database_from_url(url, *, data_dir, connect_timeout=None):
    """Translate a DATABASE_URL into a Django DATABASES entry.

    sqlite:////abs/path.sqlite3, sqlite:///relative/path (relative to the data
    directory), postgresql://user:password@host:port/name?option=value and
    mysql://user:password@host:port/name?option=value (also mariadb:// and
    oslo.db's mysql+pymysql:// / mysql+mysqldb://) are understood.
    """
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme == 'sqlite':
        # sqlite:////tmp/x.db -> path '//tmp/x.db' -> '/tmp/x.db'
        path = unquote(parts.path)
        if path.startswith('//'):
            path = path[1:]
        elif path.startswith('/'):
            path = str(Path(data_dir) / path[1:])
        if not path or path == '/':
            raise ValueError(f'DATABASE_URL {url!r} names no SQLite file')
        return {
            'ENGINE': 'django.db.backends.sqlite3',
            'NAME': path,
            'OPTIONS': {
                # Writers take the database lock when their transaction
                # begins, so a read-then-write never fails on a stale snapshot.
                'transaction_mode': 'IMMEDIATE',
                'timeout': 30,
                'init_command': 'PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;',
            },
        }
    if scheme in POSTGRESQL_SCHEMES:
        options = dict(parse_qsl(parts.query))
        # PostgreSQL's JIT compiles any plan costed over jit_above_cost:
        # 100-300 ms per books or fits query at 100,000 providers, for
        # queries that then run in less (docs/performance.md). A URL's own
        # ?options= (libpq's) replaces this, e.g. behind a PgBouncer that
        # refuses startup options.
        options.setdefault('options', POSTGRESQL_SESSION_OPTIONS)
        return _server('django.db.backends.postgresql', parts, options,
                       connect_timeout=connect_timeout, several_hosts=True)
    if scheme in MYSQL_SCHEMES:
        return _mysql(parts, connect_timeout)
    raise ValueError(f'DATABASE_URL scheme {parts.scheme!r} is not supported '
                     '(use sqlite://, postgresql:// or mysql://)')


# Seconds to wait for a server to accept a connection (per host of a
# multi-host URL), unless the URL says connect_timeout itself.
CONNECT_TIMEOUT = 5
POSTGRESQL_SCHEMES = {'postgres', 'postgresql', 'pgsql', 'postgresql+psycopg2'}
POSTGRESQL_SESSION_OPTIONS = '-c jit=off'
# Placement's connection strings are SQLAlchemy URLs naming a driver; we use
# mysqlclient (MySQLdb) whichever they name.
MYSQL_SCHEMES = {'mysql', 'mariadb', 'mysql+pymysql', 'mysql+mysqldb',
                 'mariadb+pymysql', 'mariadb+mysqldb'}
# Refuse what does not fit instead of truncating or zeroing it, as PostgreSQL
# does (a too-long name, an out-of-range integer, a bad date).
MYSQL_SQL_MODE = ('STRICT_TRANS_TABLES,STRICT_ALL_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,'
                  'ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION')
# URL options meant for SQLAlchemy or oslo.db, not for the driver. `charset`
# is always utf8mb4: Placement's URLs often say utf8 (three bytes at most),
# which cannot hold every name PostgreSQL accepts.
_SQLALCHEMY_ONLY = {'charset', 'plugin'}


def _mysql(parts, connect_timeout):
    options, extra = {}, {}
    for key, value in parse_qsl(parts.query):
        if key == 'wsrep_sync_wait':
            extra['WSREP_SYNC_WAIT'] = _wsrep_sync_wait(value)
        elif key not in _SQLALCHEMY_ONLY:
            options[key] = int(value) if value.isdigit() else value  # e.g. connect_timeout
    options.update({
        'charset': 'utf8mb4',
        # PostgreSQL's level: each statement sees what others committed, so a
        # capacity check under row locks sees every committed allocation.
        'isolation_level': 'read committed',
        'init_command': f"SET SESSION sql_mode='{MYSQL_SQL_MODE}'",
    })
    # Our tables get a binary collation from a migration (names are
    # case-sensitive, as on PostgreSQL); the test database starts with one.
    return _server('placement_site.mysql_backend', parts, options,
                   connect_timeout=connect_timeout,
                   TEST={'CHARSET': 'utf8mb4', 'COLLATION': 'utf8mb4_bin'}, **extra)


def _wsrep_sync_wait(value):
    """?wsrep_sync_wait=N (oslo.db's mysql_wsrep_sync_wait): on a Galera
    cluster written through several nodes, the reads of which kinds wait
    until this node has applied every write the cluster committed before
    them (1: reads; placement_site.mysql_backend, docs/ha.md)."""
    if not value.isdigit() or int(value) > 15:
        raise ValueError(f'DATABASE_URL: wsrep_sync_wait must be 0 to 15, not {value!r}')
    return int(value)


def _server(engine, parts, options, *, connect_timeout=None, several_hosts=False, **extra):
    """The DATABASES entry of a database server's URL."""
    host, port = _hosts(parts, several_hosts)
    # A server that does not answer (a failed-over host) is given up on
    # rather than waited for until a worker times out.
    options.setdefault('connect_timeout', connect_timeout or CONNECT_TIMEOUT)
    return {
        'ENGINE': engine,
        'NAME': unquote(parts.path.lstrip('/')),
        'USER': unquote(parts.username or ''),
        'PASSWORD': unquote(parts.password or ''),
        'HOST': host,
        'PORT': port,
        'OPTIONS': options,
        # Keep connections between requests: connecting costs more than
        # most Placement queries.
        'CONN_MAX_AGE': 600,
        'CONN_HEALTH_CHECKS': True,
        **extra,
    }


def _hosts(parts, several_hosts):
    """HOST and PORT of a URL naming one server, or several as libpq takes
    them (postgresql://u:p@db1:5432,db2:5432/placement?target_session_attrs=
    read-write: the first that accepts writes is used, found again on each
    new connection). Several hosts become libpq's comma-separated lists."""
    netloc = parts.netloc.rpartition('@')[2]
    if ',' not in netloc:
        return parts.hostname or '', str(parts.port or '')
    if not several_hosts:
        raise ValueError('DATABASE_URL: several hosts are understood for PostgreSQL only')
    hosts, ports = [], []
    for item in netloc.split(','):
        if item.startswith('['):  # [IPv6]:port
            host, _, rest = item[1:].partition(']')
            port = rest.lstrip(':')
        else:
            host, _, port = item.partition(':')
        if not host or (port and not port.isdigit()):
            raise ValueError(f'DATABASE_URL: cannot read the server {item!r}')
        hosts.append(unquote(host))
        ports.append(port)
    if not any(ports):
        return ','.join(hosts), ''
    return ','.join(hosts), ','.join(port or '5432' for port in ports)


def replica_databases(urls, *, data_dir, connect_timeout=2):
    """DATABASES entries replica0, replica1, ... for read replica URLs
    (PostgreSQL only). A replica that does not answer is given up on after
    connect_timeout seconds (unless the URL sets its own); tests see the
    primary's test database under each alias."""
    databases = {}
    for index, url in enumerate(urls):
        database = database_from_url(url, data_dir=data_dir, connect_timeout=connect_timeout)
        if database['ENGINE'] != 'django.db.backends.postgresql':
            raise ValueError(f'PLACEMENT_READ_DATABASE_URLS: {url!r} is not a PostgreSQL URL')
        database['TEST'] = {'MIRROR': 'default'}
        databases[f'replica{index}'] = database
    return databases


def secret_key(*, debug, data_dir):
    """The Django secret key.

    DJANGO_SECRET_KEY wins. Without it a development server uses a fixed
    insecure key, and a production server generates a random key once and
    keeps it in the data directory (readable by its owner only), so every
    worker process and every restart signs with the same key.
    """
    key = os.environ.get('DJANGO_SECRET_KEY')
    if key:
        return key
    if debug:
        return 'django-insecure-development-only-key-do-not-use-in-production'
    path = Path(data_dir) / 'secret_key'
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    # Written whole beside it (mode 600), then linked into place: a worker
    # starting at the same moment finds no key or the whole key, never an
    # empty file.
    fd, staged = tempfile.mkstemp(dir=path.parent, prefix='.secret_key-')
    try:
        with os.fdopen(fd, 'w') as handle:
            handle.write(secrets.token_urlsafe(64))
        try:
            os.link(staged, path)
        except FileExistsError:  # another worker won the race: its key
            pass
    finally:
        os.unlink(staged)
    return path.read_text().strip()
