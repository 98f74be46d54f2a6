"""Signing in safely: throttling (django-axes, settings AXES_*) locks a
user name at a client address after wrong passwords, refuses a locked
sign-in even with the right password and lifts the lock after the window;
the address is the connection's or a trusted proxy's X-Real-IP; a session
ends hours after signing in."""
import copy
import io
import logging
import logging.config
from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.contrib.auth.models import User as Account
from django.contrib.sessions.models import Session
from django.db.models import F
from django.test import Client

from placement_site import settings as defaults

pytestmark = pytest.mark.any_database


@pytest.fixture(autouse=True)
def _throttled(settings):
    settings.AXES_ENABLED = True


@pytest.fixture
def operator(db):
    return Account.objects.create_user('operator', password='right', is_staff=True)


def sign_in(username, password, address='10.0.0.1', real_ip=None):
    client = Client(REMOTE_ADDR=address, **({'HTTP_X_REAL_IP': real_ip} if real_ip else {}))
    answer = client.post('/accounts/login/', {'username': username, 'password': password,
                                              'next': '/ui/'})
    return client, answer


def signed_in(client):
    return client.get('/ui/').status_code == 200


def test_the_sixth_sign_in_after_five_wrong_passwords_is_refused_until_the_window_ends(operator):
    for _ in range(5):
        _, answer = sign_in('operator', 'wrong', address='10.0.0.1')
        assert answer.status_code in (200, 429)
    client, answer = sign_in('operator', 'right', address='10.0.0.1')
    assert answer.status_code == 429
    assert 'Sign-in locked' in answer.content.decode()
    assert not signed_in(client)
    # The window passes.
    AccessAttempt.objects.update(attempt_time=F('attempt_time') - timedelta(minutes=16))
    client, answer = sign_in('operator', 'right', address='10.0.0.1')
    assert answer.status_code == 302
    assert signed_in(client)


def test_four_wrong_passwords_do_not_lock(operator):
    for _ in range(4):
        sign_in('operator', 'wrong')
    client, answer = sign_in('operator', 'right')
    assert answer.status_code == 302 and signed_in(client)


def test_a_lock_holds_one_user_at_one_address(operator):
    """Behind a proxy every user may share one address: wrong passwords for
    one user lock that user there, not a colleague at the same address,
    nor that user elsewhere."""
    Account.objects.create_user('colleague', password='theirs', is_staff=True)
    for _ in range(5):
        sign_in('operator', 'wrong', address='10.0.0.1')
    assert sign_in('operator', 'right', address='10.0.0.1')[1].status_code == 429
    client, answer = sign_in('colleague', 'theirs', address='10.0.0.1')
    assert answer.status_code == 302 and signed_in(client)
    client, answer = sign_in('operator', 'right', address='10.0.0.2')
    assert answer.status_code == 302 and signed_in(client)


def test_the_address_is_a_trusted_proxys_header_and_no_one_elses(operator, settings):
    """X-Real-IP names the client only from PLACEMENT_TRUSTED_PROXIES: from
    anyone else a new address in each attempt neither escapes the lock of
    the connection's address nor is recorded."""
    settings.PLACEMENT_TRUSTED_PROXIES = ['10.0.0.0/24']
    for n in range(5):
        sign_in('operator', 'wrong', address='192.0.2.9', real_ip=f'198.51.100.{n}')
    assert sign_in('operator', 'right', address='192.0.2.9',
                   real_ip='198.51.100.77')[1].status_code == 429
    # Through the trusted proxy: the client it names is locked, another is not.
    for _ in range(5):
        sign_in('operator', 'wrong', address='10.0.0.5', real_ip='198.51.100.1')
    assert sign_in('operator', 'right', address='10.0.0.5',
                   real_ip='198.51.100.1')[1].status_code == 429
    client, answer = sign_in('operator', 'right', address='10.0.0.5', real_ip='198.51.100.2')
    assert answer.status_code == 302 and signed_in(client)
    assert set(AccessAttempt.objects.values_list('ip_address', flat=True)) >= {
        '192.0.2.9', '198.51.100.1'}
    assert not AccessAttempt.objects.filter(ip_address__in=['10.0.0.5', '198.51.100.0'])


def test_a_session_ends_hours_after_signing_in(operator, settings):
    client, _ = sign_in('operator', 'right')
    cookie = client.cookies[settings.SESSION_COOKIE_NAME]
    assert cookie['max-age'] == 8 * 3600
    assert signed_in(client)
    Session.objects.update(expire_date=F('expire_date') - timedelta(hours=8, seconds=1))
    assert not signed_in(client)


def test_sign_ins_and_refusals_are_audit_lines(operator, caplog):
    with caplog.at_level(logging.INFO, logger='placement.signin'):
        sign_in('operator', 'wrong', address='10.1.2.3')
        sign_in('operator', 'right', address='10.1.2.4')
    assert [r.getMessage() for r in caplog.records if r.name == 'placement.signin'] == [
        'sign-in refused: user operator from 10.1.2.3',
        'signed in: user operator (local account) from 10.1.2.4']


@pytest.fixture
def written(settings):
    """What the server's logging writes as configured by default (no
    PLACEMENT_LOG_LEVEL): its console, into a buffer."""
    config = copy.deepcopy(defaults.LOGGING)
    assert config['loggers']['placement']['level'] == 'WARNING'
    stream = io.StringIO()
    config['handlers']['console']['stream'] = stream
    logging.config.dictConfig(config)
    yield stream
    logging.config.dictConfig(defaults.LOGGING)


def test_audit_lines_are_written_at_the_default_log_level(operator, written):
    """Refusals, the lock, sign-in and sign-out are written; the API's
    request lines (INFO of placement.requests) are not."""
    for _ in range(5):
        sign_in('operator', 'wrong', address='10.1.2.3')
    sign_in('operator', 'right', address='10.1.2.3')
    client, _ = sign_in('operator', 'right', address='10.1.2.4')
    client.post('/accounts/logout/')
    assert Client().get('/resource_providers', HTTP_X_AUTH_TOKEN='admin').status_code == 200
    lines = written.getvalue()
    for line in ('WARNING placement.signin sign-in refused: user operator from 10.1.2.3',
                 'WARNING placement.signin sign-in locked: user operator from 10.1.2.3',
                 'INFO placement.signin signed in: user operator (local account) from 10.1.2.4',
                 'INFO placement.signin signed out: user operator from 10.1.2.4'):
        assert line in lines
    assert 'placement.requests' not in lines
