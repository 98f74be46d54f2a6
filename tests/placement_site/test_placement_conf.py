"""placement.conf as deployment tools write it (placement_site.placement_conf):
each of Placement's options read into the setting it stands for, the
environment winning, what has no meaning here reported as ignored, and a
broken file a start-up error that says where."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from placement_site import placement_conf
from tests.support.environment import clean_environment

pytestmark = pytest.mark.any_database

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

# As kolla-ansible and OpenStack-Ansible render it (the options this reads).
RENDERED = """\
[DEFAULT]
debug = True
log_dir = {dir}/log
use_stderr = False
state_path = /var/lib/placement
graceful_shutdown_timeout = 60

[api]
auth_strategy = keystone

[placement_database]
connection = mysql+pymysql://placement:secret@db.example:3306/placement?charset=utf8
max_pool_size = 16
connection_recycle_time = 10
sync_on_startup = true

[keystone_authtoken]
www_authenticate_uri = http://keystone.example:5000
auth_url = http://keystone.example:5000
auth_type = password
project_domain_name = Default
user_domain_name = Default
project_name = service
username = placement
password = secret
memcached_servers = 127.0.0.1:11211
service_token_roles_required = true

[oslo_policy]
policy_file = policy.yaml
enforce_scope = False
enforce_new_defaults = false

[oslo_middleware]
enable_proxy_headers_parsing = true

[cors]
allowed_origin = https://horizon.example,https://other.example
allow_headers = X-Custom

[placement]
randomize_allocation_candidates = true
max_allocation_candidates = 1000
allocation_candidates_generation_strategy = breadth-first
incomplete_consumer_project_id = 11111111-1111-1111-1111-111111111111
incomplete_consumer_user_id = 22222222-2222-2222-2222-222222222222
allocation_conflict_retry_count = 7

[profiler]
enabled = false

[oslo_concurrency]
lock_path = /var/lib/placement/tmp
"""


@pytest.fixture
def rendered(tmp_path):
    path = tmp_path / 'placement.conf'
    path.write_text(RENDERED.format(dir=tmp_path))
    return path


def test_each_option_becomes_the_setting_it_stands_for(rendered, tmp_path):
    values, ignored = placement_conf.read([str(rendered)])
    assert values == {
        'PLACEMENT_LOG_LEVEL': 'DEBUG',
        'PLACEMENT_LOG_DIR': f'{tmp_path}/log',
        'PLACEMENT_AUTH_STRATEGY': 'keystone',
        # The driver is ours to choose: SQLAlchemy's +pymysql goes.
        'DATABASE_URL': 'mysql://placement:secret@db.example:3306/placement?charset=utf8',
        'PLACEMENT_SYNC_ON_STARTUP': 'true',
        'KEYSTONE_AUTHTOKEN_WWW_AUTHENTICATE_URI': 'http://keystone.example:5000',
        'KEYSTONE_AUTHTOKEN_AUTH_URL': 'http://keystone.example:5000',
        'KEYSTONE_AUTHTOKEN_AUTH_TYPE': 'password',
        'KEYSTONE_AUTHTOKEN_PROJECT_DOMAIN_NAME': 'Default',
        'KEYSTONE_AUTHTOKEN_USER_DOMAIN_NAME': 'Default',
        'KEYSTONE_AUTHTOKEN_PROJECT_NAME': 'service',
        'KEYSTONE_AUTHTOKEN_USERNAME': 'placement',
        'KEYSTONE_AUTHTOKEN_PASSWORD': 'secret',
        'KEYSTONE_AUTHTOKEN_MEMCACHED_SERVERS': '127.0.0.1:11211',
        'KEYSTONE_AUTHTOKEN_SERVICE_TOKEN_ROLES_REQUIRED': 'true',
        # Beside the configuration file, as oslo.policy finds it.
        'PLACEMENT_POLICY_FILE': str(tmp_path / 'policy.yaml'),
        'PLACEMENT_ENFORCE_SCOPE': 'false',
        'PLACEMENT_ENFORCE_NEW_DEFAULTS': 'false',
        'PLACEMENT_PROXY_HEADERS_PARSING': 'true',
        'PLACEMENT_CORS_ALLOWED_ORIGINS': 'https://horizon.example,https://other.example',
        'PLACEMENT_CORS_ALLOW_HEADERS': 'X-Custom',
        'PLACEMENT_RANDOMIZE_ALLOCATION_CANDIDATES': 'true',
        'PLACEMENT_MAX_ALLOCATION_CANDIDATES': '1000',
        'PLACEMENT_ALLOCATION_CANDIDATES_GENERATION_STRATEGY': 'breadth-first',
        'PLACEMENT_INCOMPLETE_CONSUMER_PROJECT_ID': '11111111-1111-1111-1111-111111111111',
        'PLACEMENT_INCOMPLETE_CONSUMER_USER_ID': '22222222-2222-2222-2222-222222222222',
        'PLACEMENT_RETRY_ATTEMPTS': '7',
    }
    assert [(section, name) for _, section, name in ignored] == [
        ('DEFAULT', 'use_stderr'), ('DEFAULT', 'state_path'),
        ('DEFAULT', 'graceful_shutdown_timeout'),
        ('placement_database', 'max_pool_size'),
        ('placement_database', 'connection_recycle_time'),
        ('profiler', 'enabled'), ('oslo_concurrency', 'lock_path')]


def test_a_later_file_wins_and_the_environment_wins_over_both(rendered, tmp_path):
    later = tmp_path / 'later.conf'
    later.write_text('[api]\nauth_strategy = noauth2\n')
    environ = {'PLACEMENT_MAX_ALLOCATION_CANDIDATES': '5',
               placement_conf.FILES_VARIABLE: os.pathsep.join([str(rendered), str(later)])}
    placement_conf.load(environ)
    assert environ['PLACEMENT_AUTH_STRATEGY'] == 'noauth2'
    assert environ['PLACEMENT_MAX_ALLOCATION_CANDIDATES'] == '5'
    assert environ['PLACEMENT_RETRY_ATTEMPTS'] == '7'


def test_the_file_is_found_where_placement_looks(rendered, tmp_path):
    assert placement_conf.config_files({'OS_PLACEMENT_CONFIG_DIR': str(tmp_path)}) == [
        str(rendered)]
    assert placement_conf.config_files({'OS_PLACEMENT_CONFIG_DIR': str(tmp_path / 'none')}) == []
    (tmp_path / 'conf.d').mkdir()
    for name in ('b.conf', 'a.conf', 'notes.txt'):
        (tmp_path / 'conf.d' / name).write_text('')
    assert placement_conf.command_files(['x.conf'], tmp_path / 'conf.d') == [
        'x.conf', str(tmp_path / 'conf.d' / 'a.conf'), str(tmp_path / 'conf.d' / 'b.conf')]


@pytest.mark.parametrize('text, where', [
    ('[placement_database]\nconection = sqlite:////tmp/x\n',
     "[placement_database] conection: no such option in Placement's [placement_database]"),
    ('[placement]\nmax_allocation_candidates = many\n',
     "[placement] max_allocation_candidates = 'many':"),
    ('[DEFAULT]\ndebug = perhaps\n', "[DEFAULT] debug = 'perhaps':"),
    ('[placement_database]\nconnection = oracle://db/placement\n',
     "[placement_database] connection = 'oracle://db/placement': a database URL of 'oracle'"),
    ('[api\nauth_strategy = keystone\n', 'placement.conf'),
])
def test_a_broken_file_is_an_error_naming_where(tmp_path, text, where):
    path = tmp_path / 'placement.conf'
    path.write_text(text)
    with pytest.raises(placement_conf.ConfError) as refused:
        placement_conf.read([str(path)])
    assert str(refused.value).startswith(f'{path}: ')
    assert where in str(refused.value)


SHOW = """
import json, django, os
os.environ['DJANGO_SETTINGS_MODULE'] = 'placement_site.settings'
django.setup()
from django.conf import settings as s
print(json.dumps({
    'database': s.DATABASES['default']['ENGINE'], 'name': s.DATABASES['default']['NAME'],
    'auth': s.PLACEMENT_AUTH_STRATEGY, 'scope': s.PLACEMENT_ENFORCE_SCOPE,
    'new_defaults': s.PLACEMENT_ENFORCE_NEW_DEFAULTS, 'policy': s.PLACEMENT_POLICY_FILE,
    'cors': s.PLACEMENT_CORS_ALLOWED_ORIGINS, 'random': s.PLACEMENT_RANDOMIZE_ALLOCATION_CANDIDATES,
    'max': s.PLACEMENT_MAX_ALLOCATION_CANDIDATES,
    'strategy': s.PLACEMENT_ALLOCATION_CANDIDATES_GENERATION_STRATEGY,
    'incomplete': [s.PLACEMENT_INCOMPLETE_CONSUMER_PROJECT_ID,
                   s.PLACEMENT_INCOMPLETE_CONSUMER_USER_ID],
    'retries': s.PLACEMENT_RETRY_ATTEMPTS, 'sync': s.PLACEMENT_SYNC_ON_STARTUP,
    'keystone': s.KEYSTONE_AUTHTOKEN.get('memcached_servers'),
    'log_level': s.LOGGING['loggers']['placement']['level'],
    'log_file': s.LOGGING['handlers'].get('file', {}).get('filename'),
    'forwarded_host': s.USE_X_FORWARDED_HOST, 'hosts': s.ALLOWED_HOSTS,
}))
"""


def settings_read(env):
    done = subprocess.run([sys.executable, '-c', SHOW], cwd=REPO, env=env, text=True,
                          capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1]), done.stderr


def test_the_settings_take_the_files_options(tmp_path):
    conf = tmp_path / 'placement.conf'
    conf.write_text(RENDERED.format(dir=tmp_path).replace(
        'mysql+pymysql://placement:secret@db.example:3306/placement?charset=utf8',
        f'sqlite:///{tmp_path}/placement.sqlite3'))
    (tmp_path / 'log').mkdir()   # (the deployment tool makes it)
    shown, stderr = settings_read(clean_environment(OS_PLACEMENT_CONFIG_DIR=str(tmp_path)))
    assert shown == {
        'database': 'django.db.backends.sqlite3', 'name': f'{tmp_path}/placement.sqlite3',
        'auth': 'keystone', 'scope': False, 'new_defaults': False,
        'policy': str(tmp_path / 'policy.yaml'),
        'cors': ['https://horizon.example', 'https://other.example'], 'random': True,
        'max': 1000, 'strategy': 'breadth-first',
        'incomplete': ['11111111-1111-1111-1111-111111111111',
                       '22222222-2222-2222-2222-222222222222'],
        'retries': 7, 'sync': True, 'keystone': '127.0.0.1:11211', 'log_level': 'DEBUG',
        'log_file': f'{tmp_path}/log/placement-api.log', 'forwarded_host': True,
        # Any Host, as Placement answers (the load balancer's names are many).
        'hosts': ['*'],
    }
    # Said once, where the operator looks.
    assert f'{conf}: [profiler] enabled has no meaning here: ignored' in stderr
    # The environment still wins.
    shown, _ = settings_read(clean_environment(OS_PLACEMENT_CONFIG_DIR=str(tmp_path),
                                               PLACEMENT_AUTH_STRATEGY='noauth2'))
    assert shown['auth'] == 'noauth2'


def test_the_commands_read_the_file_they_are_given_and_say_what_is_wrong(tmp_path):
    conf = tmp_path / 'custom.conf'
    conf.write_text(f'[placement_database]\nconnection = sqlite:///{tmp_path}/p.sqlite3\n')
    env = clean_environment(OS_PLACEMENT_CONFIG_DIR=str(tmp_path / 'none'))

    def run(*argv):
        done = subprocess.run([str(BIN / argv[0]), *argv[1:]], cwd=tmp_path, env=env,
                              text=True, capture_output=True, timeout=600)
        return done.returncode, done.stdout + done.stderr

    assert run('placement-manage', '--config-file', str(conf), 'db', 'sync')[0] == 0
    assert (tmp_path / 'p.sqlite3').is_file()
    code, output = run('placement-status', '--config-dir', str(tmp_path), 'upgrade', 'check')
    assert code == 0, output
    conf.write_text('[placement_database]\nconection = sqlite:///x\n')
    for command in (('placement-manage', 'db', 'sync'), ('placement-status', 'upgrade', 'check')):
        code, output = run(command[0], '--config-file', str(conf), *command[1:])
        assert code == 1
        assert output == (f"placement.conf: {conf}: [placement_database] conection: no such "
                          "option in Placement's [placement_database]\n")
