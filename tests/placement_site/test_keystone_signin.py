"""Signing in to the dashboards with a real Keystone
(placement_site.keystone_signin; tests/support/keystone.py starts Keystone):
the password checked by Keystone, the session keeping the token and
re-validating it within a bound, staff decided by Placement's policy, local
accounts still signing in beside it, and an audit line for each sign-in."""
import logging
from datetime import UTC
from datetime import datetime
from datetime import timedelta

import pytest
from django.contrib.auth.models import User as Account
from django.test import Client

from placement_site import keystone_signin
from tests.support.keystone import CountingFront
from tests.support.keystone import Identity
from tests.support.keystone import keystone_url

pytestmark = [pytest.mark.any_database, pytest.mark.slow]


@pytest.fixture(scope='module')
def keystone():
    identity = Identity(keystone_url())
    identity.project_id = identity.project('dashboards')
    identity.project_name = identity._call('GET', f'/projects/{identity.project_id}')[
        'project']['name']
    _, identity.admin_name = identity.user('ui-admin',
                                           project_roles=[(identity.project_id, 'admin')])
    _, identity.reader_name = identity.user('ui-reader',
                                            project_roles=[(identity.project_id, 'reader')])
    return identity


@pytest.fixture
def signin(db, settings, keystone):
    settings.PLACEMENT_UI_AUTH = ['django', 'keystone']
    settings.PLACEMENT_UI_KEYSTONE_URL = keystone.url
    settings.AUTHENTICATION_BACKENDS = ['django.contrib.auth.backends.ModelBackend',
                                        'placement_site.keystone_signin.KeystoneBackend']

    def sign_in(username, password, *, project=None, domain='Default'):
        client = Client()
        answer = client.post('/accounts/login/', {
            'username': username, 'password': password, 'domain': domain,
            'project': project or '', 'next': '/ui/'})
        return client, answer
    return sign_in


def test_a_project_admin_signs_in_with_keystones_password(signin, keystone, caplog):
    with caplog.at_level(logging.INFO, logger='placement.signin'):
        client, answer = signin(keystone.admin_name, keystone.admin_name,
                                project=keystone.project_name)
    assert answer.status_code == 302 and answer['Location'] == '/ui/'
    held = client.session[keystone_signin.SESSION_KEY]
    assert (held['user'], held['project_id']) == (keystone.admin_name, keystone.project_id)
    assert 'admin' in held['roles']
    account = Account.objects.get(username__startswith=keystone_signin.USERNAME_PREFIX)
    assert (account.first_name, account.is_staff, account.has_usable_password()) == (
        keystone.admin_name, True, False)
    assert client.get('/ui/').status_code == 200
    assert any(f'signed in through Keystone: user {keystone.admin_name}' in r.getMessage()
               for r in caplog.records)


@pytest.mark.parametrize('versioned', [False, True], ids=['without-v3', 'with-v3'])
@pytest.mark.parametrize('setting', ['PLACEMENT_UI_KEYSTONE_URL', 'KEYSTONE_AUTHTOKEN_AUTH_URL'])
def test_keystone_named_with_or_without_v3_signs_in_and_stays_signed_in(
        signin, keystone, settings, setting, versioned):
    """Install guides write auth_url as http://keystone:5000: keystoneauth1's
    version discovery finds the v3 API behind it, for signing in, the
    user's projects and every page's check of the token."""
    url = keystone.url.removesuffix('/v3') + ('/v3' if versioned else '')
    settings.PLACEMENT_UI_TOKEN_RECHECK_SECONDS = 0   # every page asks Keystone
    ui_own = setting == 'PLACEMENT_UI_KEYSTONE_URL'
    settings.PLACEMENT_UI_KEYSTONE_URL = url if ui_own else ''
    # The dashboards' own URL wins over the API's (nothing listens there).
    settings.KEYSTONE_AUTHTOKEN = {'auth_url': 'http://127.0.0.1:9' if ui_own else url}
    client, answer = signin(keystone.admin_name, keystone.admin_name)
    assert answer.status_code == 302
    # No project asked for: its only project, from Keystone's list of them.
    assert client.session[keystone_signin.SESSION_KEY]['project_id'] == keystone.project_id
    for _ in range(2):
        assert client.get('/ui/').status_code == 200
    assert keystone_signin.SESSION_KEY in client.session


def test_the_sign_in_form_asks_for_domain_and_project(signin):
    page = Client().get('/accounts/login/').content.decode()
    assert 'name="domain"' in page and 'name="project"' in page


def test_a_wrong_password_is_refused_and_logged(signin, keystone, caplog):
    with caplog.at_level(logging.INFO, logger='placement.signin'):
        client, answer = signin(keystone.admin_name, 'wrong', project=keystone.project_name)
    assert answer.status_code == 200
    assert 'did not match' in answer.content.decode()
    assert keystone_signin.SESSION_KEY not in client.session
    assert client.get('/ui/').status_code == 302
    assert any(f'sign-in refused by Keystone: user {keystone.admin_name}' in r.getMessage()
               for r in caplog.records)


def test_a_disabled_user_cannot_sign_in(signin, keystone):
    user_id, name = keystone.user('ui-disabled', project_roles=[(keystone.project_id, 'admin')])
    keystone.disable(user_id)
    client, answer = signin(name, name, project=keystone.project_name)
    assert answer.status_code == 200
    assert client.get('/ui/').status_code == 302


def test_a_project_reader_is_not_staff_by_placements_policy(signin, keystone):
    client, answer = signin(keystone.reader_name, keystone.reader_name,
                            project=keystone.project_name)
    assert answer.status_code == 302
    account = Account.objects.get(first_name=keystone.reader_name)
    assert account.is_staff is False
    # Its project's page, and nothing of the whole cloud (tests/placement_site/test_viewers.py).
    assert client.get('/ui/')['Location'] == f'/ui/projects/{keystone.project_id}/'
    assert client.get('/ui/providers/').status_code == 403


def test_a_revoked_token_signs_out_on_the_next_page_with_a_message(signin, keystone, settings):
    settings.PLACEMENT_UI_TOKEN_RECHECK_SECONDS = 0   # every page asks Keystone
    client, _ = signin(keystone.admin_name, keystone.admin_name, project=keystone.project_name)
    assert client.get('/ui/').status_code == 200
    keystone.revoke(client.session[keystone_signin.SESSION_KEY]['token'])
    after = client.get('/ui/', follow=True)
    assert after.redirect_chain[-1][0].startswith('/accounts/login/')
    assert 'Your Keystone sign-in has ended' in after.content.decode()
    assert keystone_signin.SESSION_KEY not in client.session


@pytest.fixture
def counted(signin, keystone, settings):
    """The dashboards ask Keystone through a front counting its requests."""
    front = CountingFront(keystone.url)
    settings.PLACEMENT_UI_KEYSTONE_URL = front.url
    yield front
    front.close()


def test_pages_within_the_default_bound_do_not_ask_keystone(signin, keystone, counted):
    """By default Keystone's answer holds for a minute: pages after signing
    in cost no round trip to Keystone, and a token revoked meanwhile is
    still honoured (the documented bound)."""
    client, _ = signin(keystone.admin_name, keystone.admin_name, project=keystone.project_name)
    assert counted.asked['POST', '/v3/auth/tokens']   # Keystone is reached through the front
    for _ in range(3):
        assert client.get('/ui/').status_code == 200
    keystone.revoke(client.session[keystone_signin.SESSION_KEY]['token'])
    assert client.get('/ui/').status_code == 200
    assert counted.validations() == 0


def test_keystone_is_asked_again_once_the_bound_has_passed(signin, keystone, counted, settings,
                                                          monkeypatch):
    """A valid token asked again once the bound has passed and kept, its
    answer holding for another bound; a token revoked within it honoured
    without asking Keystone, and refused once it has passed. The clock is
    moved on, not waited for: a busy machine cannot stretch the bound."""
    settings.PLACEMENT_UI_TOKEN_RECHECK_SECONDS = BOUND = 60
    clock = [datetime.now(UTC)]
    monkeypatch.setattr(keystone_signin, 'now', lambda: clock[0])
    client, _ = signin(keystone.admin_name, keystone.admin_name, project=keystone.project_name)
    clock[0] += timedelta(seconds=BOUND + 1)
    assert client.get('/ui/').status_code == 200
    assert counted.validations() == 1
    keystone.revoke(client.session[keystone_signin.SESSION_KEY]['token'])
    assert client.get('/ui/').status_code == 200   # within the bound: Keystone not asked
    assert counted.validations() == 1
    clock[0] += timedelta(seconds=BOUND + 1)
    after = client.get('/ui/', follow=True)
    assert 'Your Keystone sign-in has ended' in after.content.decode()
    assert counted.validations() == 2
    assert keystone_signin.SESSION_KEY not in client.session


def test_an_expired_token_is_refused_within_the_bound(signin, keystone, counted):
    client, _ = signin(keystone.admin_name, keystone.admin_name, project=keystone.project_name)
    session = client.session
    session[keystone_signin.SESSION_KEY]['expires_at'] = (
        datetime.now(UTC) - timedelta(seconds=1)).isoformat()
    session.save()
    after = client.get('/ui/', follow=True)
    assert 'Your Keystone sign-in has ended' in after.content.decode()
    assert counted.validations() == 0   # the token's own expiry, without asking


def test_signing_out_ends_the_session_and_its_token_at_once(signin, keystone, settings):
    client, _ = signin(keystone.admin_name, keystone.admin_name, project=keystone.project_name)
    assert client.get('/ui/').status_code == 200
    token = client.session[keystone_signin.SESSION_KEY]['token']
    assert keystone.validate(token) == 200
    cookie = client.cookies[settings.SESSION_COOKIE_NAME].value
    client.post('/accounts/logout/')
    again = Client()
    again.cookies[settings.SESSION_COOKIE_NAME] = cookie   # the old cookie, within the bound
    assert again.get('/ui/').status_code == 302
    assert keystone.validate(token) == 404   # revoked: the API refuses it too


def test_local_accounts_sign_in_beside_keystone(signin):
    Account.objects.create_user('operator', password='pw', is_staff=True)
    client, answer = signin('operator', 'pw')
    assert answer.status_code == 302
    assert client.get('/ui/').status_code == 200
    assert keystone_signin.SESSION_KEY not in client.session
