"""placement.conf as deployment tools write it (placement_site.placement_conf):
each of Placement's options read into the setting it stands for, the
environment winning, what has no meaning here reported as ignored, and a
broken file a start-up error that says where."""
import json
import os
import re
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


# Our own settings, each in a section of its own.
OURS = """\
[DEFAULT]
transport_url = rabbit://default:pw@mq.example:5672/

[django]
debug = true
secret_key = not-a-secret-at-all-but-long-enough-0123456789abcdef
data_dir = data

[postgresql]
prepare_on_server = false

[replicas]
read_connections = postgresql+psycopg2://r:pw@replica1.example/placement, postgresql://r:pw@replica2.example/placement
max_lag_seconds = 2.5

[http]
allowed_hosts = placement.example, placement-internal.example
csrf_trusted_origins = https://placement.example
secure_cookies = false
trusted_proxies = 10.0.0.0/8, unix
max_body_size = 1024

[dashboards]
auth = django, keystone
keystone_url = http://keystone.example:5000/v3
token_recheck_seconds = 0
signin_failures = 3
signin_lockout_minutes = 30
session_hours = 2
content_security_policy = default-src 'self'

[serving]
operator_statement_timeout_seconds = 4.5
export_duty = 0.25

[ledger]
enabled = false
size_mb = 64
follow_seconds = 0
remembered_mb = 8

[capacity]
flavors = tiny=VCPU:1,MEMORY_MB:512
refuse_overcommitted_inventory = true

[trends]
retention_days = 30
interval_minutes = 15

[metrics]
allowed_networks = 192.0.2.0/24
token = scrape-token
os_capacity = false

[oslo_messaging_notifications]
driver = messagingv2
transport_url = rabbit://notify:pw@mq.example:5672/
topics = notifications, placement_notifications

[pods]
filters = AllPodsFilter, CapacityFilter
weighers = IdleCapacityWeigher:2.0
"""


@pytest.fixture
def ours(tmp_path):
    path = tmp_path / 'placement.conf'
    path.write_text(OURS)
    return path


def test_our_own_sections_become_our_settings(ours, tmp_path):
    values, ignored = placement_conf.read([str(ours)])
    assert ignored == []
    assert values == {
        'DJANGO_DEBUG': 'true',
        'DJANGO_SECRET_KEY': 'not-a-secret-at-all-but-long-enough-0123456789abcdef',
        # Relative to the file's directory, as policy_file is.
        'PLACEMENT_DATA_DIR': str(tmp_path / 'data'),
        'PLACEMENT_PREPARE_ON_SERVER': 'false',
        'PLACEMENT_READ_DATABASE_URLS': ('postgresql://r:pw@replica1.example/placement,'
                                         'postgresql://r:pw@replica2.example/placement'),
        'PLACEMENT_REPLICA_MAX_LAG_SECONDS': '2.5',
        'DJANGO_ALLOWED_HOSTS': 'placement.example,placement-internal.example',
        'DJANGO_CSRF_TRUSTED_ORIGINS': 'https://placement.example',
        'DJANGO_SECURE_COOKIES': 'false',
        'PLACEMENT_TRUSTED_PROXIES': '10.0.0.0/8,unix',
        'PLACEMENT_MAX_BODY_SIZE': '1024',
        'PLACEMENT_UI_AUTH': 'django,keystone',
        'PLACEMENT_UI_KEYSTONE_URL': 'http://keystone.example:5000/v3',
        'PLACEMENT_UI_TOKEN_RECHECK_SECONDS': '0',
        'PLACEMENT_UI_SIGNIN_FAILURES': '3',
        'PLACEMENT_UI_SIGNIN_LOCKOUT_MINUTES': '30',
        'PLACEMENT_UI_SESSION_HOURS': '2',
        'PLACEMENT_UI_CSP': "default-src 'self'",
        'PLACEMENT_OPERATOR_STATEMENT_TIMEOUT_SECONDS': '4.5',
        'PLACEMENT_EXPORT_DUTY': '0.25',
        'PLACEMENT_LEDGER': 'false',
        'PLACEMENT_LEDGER_MB': '64',
        'PLACEMENT_LEDGER_FOLLOW_SECONDS': '0.0',
        'PLACEMENT_REMEMBERED_MB': '8',
        'PLACEMENT_CAPACITY_FLAVORS': 'tiny=VCPU:1,MEMORY_MB:512',
        'PLACEMENT_REFUSE_OVERCOMMITTED_INVENTORY': 'true',
        'PLACEMENT_TREND_RETENTION_DAYS': '30',
        'PLACEMENT_TREND_INTERVAL_MINUTES': '15',
        'PLACEMENT_METRICS_ALLOWED_NETWORKS': '192.0.2.0/24',
        'PLACEMENT_METRICS_TOKEN': 'scrape-token',
        'PLACEMENT_METRICS_OS_CAPACITY': 'false',
        'PLACEMENT_NOTIFICATIONS_DRIVER': 'messagingv2',
        # Notifications' own transport wins over [DEFAULT]'s, as in oslo.messaging.
        'PLACEMENT_TRANSPORT_URL': 'rabbit://notify:pw@mq.example:5672/',
        'PLACEMENT_NOTIFICATIONS_TOPICS': 'notifications,placement_notifications',
        'PLACEMENT_POD_FILTERS': 'AllPodsFilter,CapacityFilter',
        'PLACEMENT_POD_WEIGHERS': 'IdleCapacityWeigher:2.0',
    }


def test_notifications_fall_back_to_the_default_transport(tmp_path):
    path = tmp_path / 'placement.conf'
    path.write_text('[oslo_messaging_notifications]\ndriver = messagingv2\n\n'
                    '[DEFAULT]\ntransport_url = rabbit://u:p@mq.example:5672/\n')
    values, _ = placement_conf.read([str(path)])
    assert values['PLACEMENT_TRANSPORT_URL'] == 'rabbit://u:p@mq.example:5672/'


SETTINGS_PY = (REPO / 'placement_site' / 'settings.py').read_text()
# Not a file's to say: which pool a process is (scripts/serve.sh sets it per process).
PER_PROCESS = {'PLACEMENT_SERVING_POOL'}


def test_every_setting_read_from_the_environment_has_its_option():
    read = set(re.findall(r"'((?:PLACEMENT|DJANGO)_[A-Z0-9_]+)'", SETTINGS_PY))
    mapped = {variable for table in (placement_conf.HONOURED, placement_conf.OURS)
              for options in table.values() for _, variable, _ in options.values()}
    assert read - mapped == PER_PROCESS


def test_every_option_of_ours_is_documented():
    documented = (REPO / 'docs' / 'configuration.md').read_text()
    for section, options in placement_conf.OURS.items():
        for name in options:
            assert f'| `[{section}]` | `{name}` |' in documented, (section, name)


@pytest.mark.parametrize('text, where', [
    ('[ledger]\nenable = true\n', '[ledger] enable: no such option in [ledger]'),
    ('[ledger]\nsize_mb = lots\n', "[ledger] size_mb = 'lots':"),
    ('[serving]\nexport_duty = half\n', "[serving] export_duty = 'half':"),
    ('[dashboards]\nauth = django, ldap\n', "[dashboards] auth = 'django, ldap':"),
    ('[oslo_messaging_notifications]\ndriver = messaging\n',
     "[oslo_messaging_notifications] driver = 'messaging':"),
    ('[replicas]\nread_connections = oracle://r/placement\n',
     "[replicas] read_connections = 'oracle://r/placement': a database URL of 'oracle'"),
    ('[api]\nauth_strategy = keystone2\n', "[api] auth_strategy = 'keystone2':"),
])
def test_a_wrong_option_of_ours_is_an_error_naming_where(tmp_path, text, where):
    path = tmp_path / 'placement.conf'
    path.write_text(text)
    with pytest.raises(placement_conf.ConfError) as refused:
        placement_conf.read([str(path)])
    assert str(refused.value).startswith(f'{path}: {where}')


SHOW_OURS = """
import json, django, os
os.environ['DJANGO_SETTINGS_MODULE'] = 'placement_site.settings'
django.setup()
from django.conf import settings as s
print(json.dumps({
    'debug': s.DEBUG, 'secret': s.SECRET_KEY, 'data': str(s.DATA_DIR),
    'prepare': s.PLACEMENT_PREPARE_ON_SERVER,
    'replicas': [s.DATABASES[a]['HOST'] for a in s.PLACEMENT_READ_DATABASES],
    'lag': s.PLACEMENT_REPLICA_MAX_LAG_SECONDS, 'hosts': s.ALLOWED_HOSTS,
    'csrf': s.CSRF_TRUSTED_ORIGINS, 'secure': s.SESSION_COOKIE_SECURE,
    'proxies': s.PLACEMENT_TRUSTED_PROXIES, 'body': s.DATA_UPLOAD_MAX_MEMORY_SIZE,
    'ui_auth': s.PLACEMENT_UI_AUTH, 'backends': len(s.AUTHENTICATION_BACKENDS),
    'ui_keystone': s.PLACEMENT_UI_KEYSTONE_URL, 'recheck': s.PLACEMENT_UI_TOKEN_RECHECK_SECONDS,
    'failures': s.AXES_FAILURE_LIMIT, 'lockout': s.AXES_COOLOFF_TIME.total_seconds(),
    'session': s.SESSION_COOKIE_AGE, 'csp': s.PLACEMENT_UI_CSP,
    'statement': s.PLACEMENT_OPERATOR_STATEMENT_TIMEOUT_SECONDS, 'duty': s.PLACEMENT_EXPORT_DUTY,
    'ledger': s.PLACEMENT_LEDGER, 'ledger_mb': s.PLACEMENT_LEDGER_MB,
    'follow': s.PLACEMENT_LEDGER_FOLLOW_SECONDS, 'remembered': s.PLACEMENT_REMEMBERED_MB,
    'flavors': s.PLACEMENT_CAPACITY_FLAVORS,
    'refuse': s.PLACEMENT_REFUSE_OVERCOMMITTED_INVENTORY,
    'retention': s.PLACEMENT_TREND_RETENTION_DAYS,
    'interval': s.PLACEMENT_TREND_INTERVAL_MINUTES,
    'metrics_networks': s.PLACEMENT_METRICS_ALLOWED_NETWORKS,
    'metrics_token': s.PLACEMENT_METRICS_TOKEN, 'os_capacity': s.PLACEMENT_METRICS_OS_CAPACITY,
    'driver': s.PLACEMENT_NOTIFICATIONS_DRIVER, 'transport': s.PLACEMENT_TRANSPORT_URL,
    'topics': s.PLACEMENT_NOTIFICATIONS_TOPICS,
    'filters': s.PLACEMENT_POD_FILTERS, 'weighers': s.PLACEMENT_POD_WEIGHERS,
}))
"""


def test_the_settings_take_our_own_sections(ours, tmp_path):
    env = clean_environment(OS_PLACEMENT_CONFIG_DIR=str(tmp_path))
    done = subprocess.run([sys.executable, '-c', SHOW_OURS], cwd=REPO, env=env, text=True,
                          capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == {
        'debug': True, 'secret': 'not-a-secret-at-all-but-long-enough-0123456789abcdef',
        'data': str(tmp_path / 'data'), 'prepare': False,
        'replicas': ['replica1.example', 'replica2.example'], 'lag': 2.5,
        'hosts': ['placement.example', 'placement-internal.example'],
        'csrf': ['https://placement.example'], 'secure': False,
        'proxies': ['10.0.0.0/8', 'unix'], 'body': 1024,
        'ui_auth': ['django', 'keystone'], 'backends': 4,
        'ui_keystone': 'http://keystone.example:5000/v3', 'recheck': 0,
        'failures': 3, 'lockout': 1800.0, 'session': 7200, 'csp': "default-src 'self'",
        'statement': 4.5, 'duty': 0.25,
        'ledger': False, 'ledger_mb': 64, 'follow': 0.0, 'remembered': 8,
        'flavors': 'tiny=VCPU:1,MEMORY_MB:512', 'refuse': True,
        'retention': 30, 'interval': 15,
        'metrics_networks': ['192.0.2.0/24'], 'metrics_token': 'scrape-token',
        'os_capacity': False,
        'driver': 'messagingv2', 'transport': 'rabbit://notify:pw@mq.example:5672/',
        'topics': ['notifications', 'placement_notifications'],
        'filters': ['AllPodsFilter', 'CapacityFilter'], 'weighers': ['IdleCapacityWeigher:2.0'],
    }
