"""Keystone mode end to end: the real keystonemiddleware auth_token in front
of the Django application (placement_site.wsgi._with_keystone), validating
tokens issued by a real Keystone (tests/support/keystone.py: Keystone from
PyPI, fernet tokens), with Placement's policy deciding on the roles and
project Keystone reports."""
import uuid

import pytest
from django.core.wsgi import get_wsgi_application

from placement_site.wsgi import _with_keystone
from providers.models import ResourceProvider
from tests.support.keystone import VERSION
from tests.support.keystone import Identity
from tests.support.keystone import call
from tests.support.keystone import keystone_url

pytestmark = [pytest.mark.any_database, pytest.mark.slow]


@pytest.fixture(scope='module')
def keystone():
    """A real Keystone with a project, its admin and reader, a user with the
    admin role on the system, and the service user auth_token validates
    tokens as."""
    identity = Identity(keystone_url())
    identity.project_id = identity.project('placement-tests')
    service_project = identity.project('service')
    _, identity.service_user = identity.user('placement',
                                             project_roles=[(service_project, 'service')])
    identity.service_project = service_project
    _, identity.admin_name = identity.user('project-admin',
                                           project_roles=[(identity.project_id, 'admin')])
    _, identity.reader_name = identity.user('project-reader',
                                            project_roles=[(identity.project_id, 'reader')])
    _, identity.system_admin_name = identity.user('system-admin', system_roles=['admin'])
    return identity


@pytest.fixture(scope='module')
def tokens(keystone):
    return {
        'admin': keystone.token(keystone.admin_name, project_id=keystone.project_id),
        'reader': keystone.token(keystone.reader_name, project_id=keystone.project_id),
        'system admin': keystone.token(keystone.system_admin_name, system=True),
    }


@pytest.fixture
def app(db, settings, keystone):
    """The WSGI application as wsgi.py builds it with PLACEMENT_AUTH_STRATEGY=keystone."""
    settings.PLACEMENT_AUTH_STRATEGY = 'keystone'
    settings.KEYSTONE_AUTHTOKEN = {
        'auth_url': keystone.url,
        'www_authenticate_uri': keystone.url,
        'auth_type': 'password',
        'username': keystone.service_user,
        'password': keystone.service_user,
        'project_id': keystone.service_project,
        'user_domain_id': 'default',
    }
    return _with_keystone(get_wsgi_application())


def assert_forbidden(response, rule):
    """Placement's 403: the token was good, the policy said no."""
    assert response.status_code == 403, response.content
    assert response.json() == {'errors': [{
        'status': 403, 'title': 'Forbidden',
        'detail': f'Access was denied to this resource.\n\n Policy does not allow {rule} to be '
                  'performed.  ',
        'code': 'placement.undefined_code',
        'request_id': response.headers['x-openstack-request-id']}]}


def assert_refused_by_keystonemiddleware(response, keystone):
    assert response.status_code == 401, response.content
    assert response.headers['www-authenticate'] == f'Keystone uri="{keystone.url}"'
    # keystonemiddleware's own body, not Placement's: the app was never reached.
    assert response.json() == {'error': {
        'code': 401, 'title': 'Unauthorized',
        'message': 'The request you have made requires authentication.'}}
    assert 'openstack-api-version' not in response.headers


def test_root_answers_without_a_token(app):
    response = call(app, 'GET', '/')
    assert response.status_code == 200
    assert response.json() == {'versions': [{
        'id': 'v1.0', 'min_version': '1.0', 'max_version': '1.39', 'status': 'CURRENT',
        'links': [{'rel': 'self', 'href': ''}]}]}


def test_api_without_a_token_is_refused(app, keystone):
    assert_refused_by_keystonemiddleware(call(app, 'GET', '/resource_providers'), keystone)


def test_api_with_an_unknown_token_is_refused(app, keystone):
    response = call(app, 'GET', '/resource_providers', token='no-such-token')
    assert_refused_by_keystonemiddleware(response, keystone)


def test_admin_token_lists_providers(app, tokens):
    rp = str(uuid.uuid4())
    created = call(app, 'POST', '/resource_providers', token=tokens['admin'],
                   body={'name': 'cn1', 'uuid': rp})
    assert created.status_code == 200, created.content
    response = call(app, 'GET', '/resource_providers', token=tokens['admin'])
    assert response.status_code == 200, response.content
    assert response.headers['openstack-api-version'] == VERSION
    assert [(p['uuid'], p['name']) for p in response.json()['resource_providers']] == [(rp, 'cn1')]


def test_a_system_scoped_token_is_refused_as_placement_refuses_it(app, tokens):
    """Placement's rules are for project scope (system scope was dropped in
    2023.1): even the system's admin is forbidden, by the policy's scope
    check (oslo.policy's InvalidScope names only the rule), not by
    keystonemiddleware."""
    response = call(app, 'GET', '/resource_providers', token=tokens['system admin'])
    assert response.status_code == 403, response.content
    assert response.json()['errors'][0]['detail'] == (
        'Access was denied to this resource.\n\n placement:resource_providers:list  ')


def test_admin_token_creates_a_provider(app, tokens):
    rp = str(uuid.uuid4())
    response = call(app, 'POST', '/resource_providers', token=tokens['admin'],
                    body={'name': 'cn-keystone', 'uuid': rp})
    assert response.status_code == 200, response.content
    path = f'/resource_providers/{rp}'
    expected = {
        'uuid': rp, 'name': 'cn-keystone', 'generation': 0,
        'links': [{'rel': 'self', 'href': path}] + [
            {'rel': rel, 'href': f'{path}/{rel}'}
            for rel in ('inventories', 'usages', 'aggregates', 'traits', 'allocations')],
        'parent_provider_uuid': None, 'root_provider_uuid': rp}
    assert response.json() == expected
    assert ResourceProvider.objects.filter(uuid=rp, name='cn-keystone').exists()
    shown = call(app, 'GET', path, token=tokens['admin'])
    assert shown.status_code == 200
    assert shown.json() == expected


def test_reader_token_is_forbidden_by_policy(app, tokens):
    response = call(app, 'GET', '/resource_providers', token=tokens['reader'])
    assert_forbidden(response, 'placement:resource_providers:list')


def test_reader_token_writes_nothing(app, tokens):
    response = call(app, 'POST', '/resource_providers', token=tokens['reader'],
                    body={'name': 'cn-reader', 'uuid': str(uuid.uuid4())})
    assert_forbidden(response, 'placement:resource_providers:create')
    assert not ResourceProvider.objects.filter(name='cn-reader').exists()


def test_context_carries_the_project_keystone_reports(app, keystone, tokens):
    """A project reader may see its own project's usages, not another's."""
    own = call(app, 'GET', f'/usages?project_id={keystone.project_id}', token=tokens['reader'])
    assert own.status_code == 200, own.content
    assert own.json()['usages'] == {}
    other = call(app, 'GET', f'/usages?project_id={uuid.uuid4().hex}', token=tokens['reader'])
    assert_forbidden(other, 'placement:usages')


def test_identity_headers_from_the_client_are_ignored(app, keystone, tokens):
    """keystonemiddleware replaces X-Roles / X-User-Id sent by the client."""
    forged = {'X-Roles': 'admin', 'X-User-Id': 'admin-user', 'X-Project-Id': keystone.project_id}
    response = call(app, 'GET', '/resource_providers', token=tokens['reader'], headers=forged)
    assert_forbidden(response, 'placement:resource_providers:list')
    spoofed = call(app, 'GET', '/resource_providers',
                   headers={**forged, 'X-Identity-Status': 'Confirmed'})
    assert_refused_by_keystonemiddleware(spoofed, keystone)


def test_a_revoked_token_is_refused(app, keystone):
    token = keystone.token(keystone.admin_name, project_id=keystone.project_id)
    keystone.revoke(token)
    response = call(app, 'GET', '/resource_providers', token=token)
    assert_refused_by_keystonemiddleware(response, keystone)


def test_a_disabled_users_token_is_refused(app, keystone):
    user_id, name = keystone.user('disabled', project_roles=[(keystone.project_id, 'admin')])
    token = keystone.token(name, project_id=keystone.project_id)
    keystone.disable(user_id)
    response = call(app, 'GET', '/resource_providers', token=token)
    assert_refused_by_keystonemiddleware(response, keystone)


@pytest.mark.parametrize('path', ['/admin/login/', '/api/schema/'])
def test_admin_and_api_docs_are_not_guarded_by_keystonemiddleware(app, path):
    for token in (None, 'no-such-token'):
        response = call(app, 'GET', path, token=token)
        assert response.status_code == 200, (path, response.status_code)
        assert 'www-authenticate' not in response.headers
