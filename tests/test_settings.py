"""Configuration from the environment, and production hygiene."""
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from placement_site import config

ROOT = Path(__file__).resolve().parent.parent


def test_sqlite_url_with_absolute_path(tmp_path):
    db = config.database_from_url('sqlite:////tmp/x/placement.db', data_dir=tmp_path)
    assert db['ENGINE'] == 'django.db.backends.sqlite3'
    assert db['NAME'] == '/tmp/x/placement.db'
    assert db['OPTIONS']['transaction_mode'] == 'IMMEDIATE'


def test_sqlite_url_with_relative_path_lands_in_the_data_directory(tmp_path):
    db = config.database_from_url('sqlite:///p.sqlite3', data_dir=tmp_path)
    assert db['NAME'] == str(tmp_path / 'p.sqlite3')


def test_postgresql_url():
    db = config.database_from_url(
        'postgresql://bench:s%40cret@db.example:6543/placement?sslmode=require', data_dir='/x')
    assert db['ENGINE'] == 'django.db.backends.postgresql'
    assert (db['USER'], db['PASSWORD'], db['HOST'], db['PORT'], db['NAME']) == (
        'bench', 's@cret', 'db.example', '6543', 'placement')
    assert db['OPTIONS'] == {'sslmode': 'require'}


@pytest.mark.parametrize('url', ['mysql://x/y', 'sqlite://', 'nonsense'])
def test_unsupported_database_urls_are_refused(url, tmp_path):
    with pytest.raises(ValueError):
        config.database_from_url(url, data_dir=tmp_path)


@pytest.mark.parametrize('raw,expected', [('true', True), ('1', True), ('ON', True),
                                          ('false', False), ('0', False), ('', False)])
def test_boolean_variables(monkeypatch, raw, expected):
    monkeypatch.setenv('X_FLAG', raw)
    assert config.env_bool('X_FLAG', not expected) is expected


def test_a_misspelt_boolean_is_an_error(monkeypatch):
    monkeypatch.setenv('X_FLAG', 'ture')
    with pytest.raises(ValueError):
        config.env_bool('X_FLAG', False)


def test_secret_key_comes_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv('DJANGO_SECRET_KEY', 'k' * 60)
    assert config.secret_key(debug=False, data_dir=tmp_path) == 'k' * 60
    assert not (tmp_path / 'secret_key').exists()


def test_production_without_a_key_generates_one_kept_private(monkeypatch, tmp_path):
    monkeypatch.delenv('DJANGO_SECRET_KEY', raising=False)
    first = config.secret_key(debug=False, data_dir=tmp_path)
    assert len(first) >= 50
    assert config.secret_key(debug=False, data_dir=tmp_path) == first
    mode = stat.S_IMODE((tmp_path / 'secret_key').stat().st_mode)
    assert mode == 0o600


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
    assert checked.returncode != 0
    assert 'security.W018' in checked.stdout + checked.stderr
