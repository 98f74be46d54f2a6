"""`pip install .` gives the whole service: the packages, the commands and
the WSGI script, and the templates and static files in <prefix>/share/
placement, found there by the settings; run from that install alone, away
from the checkout."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.environment import clean_environment

pytestmark = [pytest.mark.slow, pytest.mark.any_database]

REPO = Path(__file__).resolve().parents[2]

SHOW = """
import json, os, django
os.environ['DJANGO_SETTINGS_MODULE'] = 'placement_site.settings'
django.setup()
import placement_site
from django.conf import settings
from django.test import Client
client = Client(HTTP_HOST='localhost')
print(json.dumps({
    'package': placement_site.__file__, 'data': str(settings.DATA_DIR),
    'version': client.get('/').status_code,
    'sign_in': client.get('/accounts/login/').status_code,
    'template': 'Sign in' in client.get('/accounts/login/').content.decode(),
    'static': client.get('/static/img/favicon.svg').status_code,
}))
"""


def test_an_installed_package_serves_without_the_checkout(tmp_path):
    prefix = tmp_path / 'prefix'
    subprocess.run([sys.executable, '-m', 'pip', 'install', '-q', '--disable-pip-version-check',
                    '--no-deps', '--prefix', str(prefix), str(REPO)], check=True, timeout=300,
                   capture_output=True)
    site = prefix / 'lib' / f'python{sys.version_info.major}.{sys.version_info.minor}' / (
        'site-packages')
    env = clean_environment(PYTHONPATH=str(site), OS_PLACEMENT_CONFIG_DIR=str(tmp_path),
                            DATABASE_URL=f'sqlite:///{tmp_path}/placement.sqlite3')
    env.pop('PLACEMENT_DATA_DIR', None)
    synced = subprocess.run([str(prefix / 'bin' / 'placement-manage'), 'db', 'sync'],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert synced.returncode == 0, synced.stderr
    shown = subprocess.run([sys.executable, '-c', SHOW], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    answer = json.loads(shown.stdout.splitlines()[-1])
    assert answer == {
        'package': str(site / 'placement_site' / '__init__.py'),
        'data': str(prefix / 'var' / 'placement'),
        'version': 200, 'sign_in': 200, 'template': True, 'static': 200,
    }
    assert (prefix / 'bin' / 'placement-api').is_file()
