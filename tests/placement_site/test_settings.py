"""Configuration from the environment, and production hygiene."""
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from placement_site import config

pytestmark = pytest.mark.any_database

ROOT = Path(__file__).resolve().parents[2]


SQLITE_OPTIONS = {'transaction_mode': 'IMMEDIATE', 'timeout': 30,
                  'init_command': 'PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;'}


def test_sqlite_url_with_absolute_path(tmp_path):
    db = config.database_from_url('sqlite:////tmp/x/placement.db', data_dir=tmp_path)
    assert db == {'ENGINE': 'django.db.backends.sqlite3', 'NAME': '/tmp/x/placement.db',
                  'OPTIONS': SQLITE_OPTIONS}


def test_sqlite_url_with_relative_path_lands_in_the_data_directory(tmp_path):
    db = config.database_from_url('sqlite:///p.sqlite3', data_dir=tmp_path)
    assert db == {'ENGINE': 'django.db.backends.sqlite3', 'NAME': str(tmp_path / 'p.sqlite3'),
                  'OPTIONS': SQLITE_OPTIONS}


def test_postgresql_url():
    db = config.database_from_url(
        'postgresql://bench:s%40cret@db.example:6543/placement?sslmode=require', data_dir='/x')
    assert db == {'ENGINE': 'django.db.backends.postgresql', 'NAME': 'placement',
                  'USER': 'bench', 'PASSWORD': 's@cret', 'HOST': 'db.example', 'PORT': '6543',
                  'OPTIONS': {'sslmode': 'require', 'connect_timeout': 5, 'options': '-c jit=off'},
                  'CONN_MAX_AGE': 600,
                  'CONN_HEALTH_CHECKS': True}


def test_postgresql_sessions_run_without_jit_unless_the_url_says_otherwise():
    db = config.database_from_url('postgresql://u:p@db/placement', data_dir='/x')
    assert db['OPTIONS']['options'] == '-c jit=off'
    db = config.database_from_url('postgresql://u:p@db/placement?options=-c%20jit%3Don',
                                  data_dir='/x')
    assert db['OPTIONS']['options'] == '-c jit=on'


def test_a_url_may_set_its_own_connect_timeout():
    db = config.database_from_url('postgresql://u:p@db/placement?connect_timeout=12',
                                  data_dir='/x')
    assert db['OPTIONS'] == {'connect_timeout': '12', 'options': '-c jit=off'}


def test_several_postgresql_hosts_become_libpq_lists():
    """A failover pair: libpq tries each host in turn and, with
    target_session_attrs=read-write, keeps the one that accepts writes."""
    db = config.database_from_url(
        'postgresql://u:p@db1:5433,db2,[fd00::7]:5434/placement?target_session_attrs=read-write',
        data_dir='/x')
    assert (db['HOST'], db['PORT']) == ('db1,db2,fd00::7', '5433,5432,5434')
    assert db['OPTIONS'] == {'target_session_attrs': 'read-write', 'connect_timeout': 5,
                             'options': '-c jit=off'}
    db = config.database_from_url('postgresql://u:p@db1,db2/placement', data_dir='/x')
    assert (db['HOST'], db['PORT']) == ('db1,db2', '')


@pytest.mark.parametrize('url, message', [
    ('postgresql://u:p@db1:x,db2/placement', "DATABASE_URL: cannot read the server 'db1:x'"),
    ('postgresql://u:p@db1,,db2/placement', "DATABASE_URL: cannot read the server ''"),
    ('mysql://u:p@db1,db2/placement', 'DATABASE_URL: several hosts are understood for '
                                      'PostgreSQL only'),
])
def test_unreadable_host_lists_are_refused(url, message):
    with pytest.raises(ValueError) as refused:
        config.database_from_url(url, data_dir='/x')
    assert str(refused.value) == message


MYSQL_OPTIONS = {
    'charset': 'utf8mb4', 'isolation_level': 'read committed',
    'init_command': "SET SESSION sql_mode='STRICT_TRANS_TABLES,STRICT_ALL_TABLES,"
                    "NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,"
                    "NO_ENGINE_SUBSTITUTION'"}


def mysql_database(name, user, password, host, port, **options):
    return {'ENGINE': 'placement_site.mysql_backend', 'NAME': name, 'USER': user,
            'PASSWORD': password, 'HOST': host, 'PORT': port,
            'OPTIONS': {**options, **MYSQL_OPTIONS,
                        'connect_timeout': options.get('connect_timeout', 5)},
            'CONN_MAX_AGE': 600,
            'CONN_HEALTH_CHECKS': True,
            'TEST': {'CHARSET': 'utf8mb4', 'COLLATION': 'utf8mb4_bin'}}


def test_mysql_url():
    db = config.database_from_url('mysql://placement:s%40cret@db.example:3307/placement',
                                  data_dir='/x')
    assert db == mysql_database('placement', 'placement', 's@cret', 'db.example', '3307')


@pytest.mark.parametrize('scheme', ['mariadb', 'mysql+pymysql', 'mysql+mysqldb', 'MySQL'])
def test_mariadb_and_oslo_db_schemes_mean_mysql(scheme):
    db = config.database_from_url(f'{scheme}://u:p@h/placement', data_dir='/x')
    assert db == mysql_database('placement', 'u', 'p', 'h', '')


def test_placements_own_connection_string_works_as_it_is():
    """oslo.db's options are SQLAlchemy's: utf8 becomes utf8mb4, the plugin
    goes; the driver's own options (numbers as numbers) stay."""
    db = config.database_from_url(
        'mysql+pymysql://placement:pw@10.0.0.5/placement?charset=utf8&plugin=dbcounter'
        '&connect_timeout=5&ssl_mode=REQUIRED', data_dir='/x')
    assert db == mysql_database('placement', 'placement', 'pw', '10.0.0.5', '',
                                connect_timeout=5, ssl_mode='REQUIRED')


def test_mysql_url_options_cannot_loosen_strict_mode():
    db = config.database_from_url(
        "mysql://u:p@h/n?init_command=SET+sql_mode%3D''&isolation_level=read+uncommitted",
        data_dir='/x')
    assert db['OPTIONS'] == {**MYSQL_OPTIONS, 'connect_timeout': 5}


def test_a_galera_url_can_make_reads_wait_for_the_clusters_writes():
    """oslo.db's mysql_wsrep_sync_wait, as a URL option: for the backend
    (placement_site.mysql), never passed to the driver."""
    db = config.database_from_url('mysql://u:p@haproxy/placement?wsrep_sync_wait=1',
                                  data_dir='/x')
    assert db['WSREP_SYNC_WAIT'] == 1
    assert db['OPTIONS'] == {**MYSQL_OPTIONS, 'connect_timeout': 5}
    with pytest.raises(ValueError, match='wsrep_sync_wait must be 0 to 15'):
        config.database_from_url('mysql://u:p@h/placement?wsrep_sync_wait=yes', data_dir='/x')


@pytest.mark.parametrize('url, message', [
    ('oracle://x/y', "DATABASE_URL scheme 'oracle' is not supported (use sqlite://, "
                     'postgresql:// or mysql://)'),
    ('sqlite://', "DATABASE_URL 'sqlite://' names no SQLite file"),
    ('nonsense', "DATABASE_URL scheme '' is not supported (use sqlite://, postgresql:// or "
                 'mysql://)'),
])
def test_unsupported_database_urls_are_refused(url, message, tmp_path):
    with pytest.raises(ValueError) as refused:
        config.database_from_url(url, data_dir=tmp_path)
    assert str(refused.value) == message


@pytest.mark.parametrize('raw,expected', [('true', True), ('1', True), ('ON', True),
                                          ('false', False), ('0', False), ('', False)])
def test_boolean_variables(monkeypatch, raw, expected):
    monkeypatch.setenv('X_FLAG', raw)
    assert config.env_bool('X_FLAG', not expected) is expected


def test_a_misspelt_boolean_is_an_error(monkeypatch):
    monkeypatch.setenv('X_FLAG', 'ture')
    with pytest.raises(ValueError) as refused:
        config.env_bool('X_FLAG', False)
    assert str(refused.value) == "X_FLAG must be one of true/false/1/0/yes/no/on/off, got 'ture'"


def test_secret_key_comes_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv('DJANGO_SECRET_KEY', 'k' * 60)
    assert config.secret_key(debug=False, data_dir=tmp_path) == 'k' * 60
    assert not (tmp_path / 'secret_key').exists()


def test_production_without_a_key_generates_one_kept_private(monkeypatch, tmp_path):
    monkeypatch.delenv('DJANGO_SECRET_KEY', raising=False)
    first = config.secret_key(debug=False, data_dir=tmp_path)
    assert re.fullmatch(r'[A-Za-z0-9_-]{86}', first)  # 64 random bytes, URL-safe base64
    assert (tmp_path / 'secret_key').read_text() == first
    assert config.secret_key(debug=False, data_dir=tmp_path) == first
    mode = stat.S_IMODE((tmp_path / 'secret_key').stat().st_mode)
    assert mode == 0o600


def test_workers_starting_together_sign_with_one_whole_key(monkeypatch, tmp_path):
    """Another worker reads the key while the first is writing it (lazy-apps
    workers start at once): it gets the whole key, not an empty one."""
    monkeypatch.delenv('DJANGO_SECRET_KEY', raising=False)
    opened, others = os.fdopen, []

    def writing(fd, *args):
        if not others:
            others.append(None)
            others[0] = config.secret_key(debug=False, data_dir=tmp_path)
        return opened(fd, *args)

    monkeypatch.setattr(os, 'fdopen', writing)
    first = config.secret_key(debug=False, data_dir=tmp_path)
    assert others == [first] and len(first) == 86
    assert [p.name for p in tmp_path.iterdir()] == ['secret_key']


def _django(*args, **env):
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(('DJANGO_', 'PLACEMENT_'))}
    clean.update(env)
    return subprocess.run([sys.executable, 'manage.py', *args], cwd=ROOT, env=clean,
                          capture_output=True, text=True, timeout=120)


def test_debug_is_off_by_default(tmp_path):
    shown = _django('shell', '-c', 'from django.conf import settings; print(settings.DEBUG)',
                    PLACEMENT_DATA_DIR=str(tmp_path))
    assert shown.stdout.strip().splitlines()[-1] == 'False', shown.stderr


def test_deploy_checks_pass_in_production(tmp_path):
    checked = _django('check', '--deploy', '--tag', 'security', '--fail-level', 'WARNING',
                      DJANGO_SECRET_KEY='k3y-Of-pr0duction-' * 4, PLACEMENT_DATA_DIR=str(tmp_path))
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_deploy_checks_flag_a_debug_server(tmp_path):
    checked = _django('check', '--deploy', '--tag', 'security', '--fail-level', 'WARNING',
                      DJANGO_DEBUG='true', PLACEMENT_DATA_DIR=str(tmp_path))
    assert checked.returncode == 1
    # A debug server uses the development key and cookies that are not
    # secure-only, and runs with DEBUG on (W018).
    assert re.findall(r'\(security\.(\w+)\)', checked.stdout + checked.stderr) == [
        'W009', 'W012', 'W016', 'W018']
