"""Authentication (noauth2) and authorization with Placement's policy rules:
defaults, the deprecated legacy defaults, scope, and a policy file."""
import json

import pytest

from tests.support.api import allocation_body
from tests.support.api import error_of
from tests.support.api import new_uuid
from tests.support.api import vcpu_provider
from tests.support.state import unchanged

pytestmark = pytest.mark.any_database

UNAUTHORIZED_MESSAGE = (
    'This server could not verify that you are authorized to access the document you '
    'requested. Either you supplied the wrong credentials (e.g., bad password), or your '
    'browser does not understand how to supply the credentials required.<br /><br />\n\n\n')


def forbidden(response, rule):
    assert response.status_code == 403, response.content
    error = error_of(response)
    assert error['title'] == 'Forbidden'
    assert error['detail'] == (f'Access was denied to this resource.\n\n '
                               f'Policy does not allow {rule} to be performed.  ')
    assert error['code'] == 'placement.undefined_code'
    assert error['request_id'] == response['x-openstack-request-id']


@pytest.fixture
def rp(api):
    return vcpu_provider(api)


def reshaper_body(rp, generation=1):
    return {'inventories': {rp: {'resource_provider_generation': generation,
                                 'inventories': {'VCPU': {'total': 16}}}},
            'allocations': {}}


# ---- authentication ----------------------------------------------------------------

@pytest.mark.parametrize('method, path', [
    ('GET', '/resource_providers'),
    ('GET', '/allocations/{consumer}'),
    ('PUT', '/allocations/{consumer}'),
    ('GET', '/usages?project_id=proj'),
    ('POST', '/reshaper'),
    ('GET', '/nowhere'),
])
def test_no_token_is_401(api, rp, method, path):
    with unchanged():
        body = allocation_body(rp) if method == 'PUT' else None
        response = api.request(method, path.format(consumer=new_uuid()), body, token=False)
        assert response.status_code == 401
        assert response['Content-Type'] == 'application/json'
        assert response.body == {'code': '401 Unauthorized', 'title': 'Unauthorized',
                                 'message': UNAUTHORIZED_MESSAGE}
        assert 'OpenStack-API-Version' not in response


def test_401_is_html_for_browsers(api):
    response = api.get('/resource_providers', token=False, headers={'Accept': 'text/html'})
    assert response.status_code == 401
    assert response['Content-Type'] == 'text/html; charset=UTF-8'
    assert response.content.decode() == (
        '<html>\n <head>\n  <title>401 Unauthorized</title>\n </head>\n <body>\n'
        '  <h1>401 Unauthorized</h1>\n  ' + UNAUTHORIZED_MESSAGE + '\n </body>\n</html>')


def test_root_needs_no_token(api):
    response = api.get('/', token=False)
    assert response.status_code == 200
    assert response.body == {'versions': [{
        'id': 'v1.0', 'min_version': '1.0', 'max_version': '1.39', 'status': 'CURRENT',
        'links': [{'rel': 'self', 'href': ''}]}]}


# ---- default rules -------------------------------------------------------------------

def test_admin_token_is_admin(api, rp):
    assert api.get('/resource_providers').status_code == 200
    assert api.put(f'/allocations/{new_uuid()}', allocation_body(rp)).status_code == 204


@pytest.mark.parametrize('method, path, rule', [
    ('GET', '/resource_providers', 'placement:resource_providers:list'),
    ('GET', '/resource_providers/{rp}', 'placement:resource_providers:show'),
    ('GET', '/resource_providers/{rp}/usages', 'placement:resource_providers:usages'),
    ('GET', '/resource_providers/{rp}/allocations',
     'placement:resource_providers:allocations:list'),
    ('GET', '/allocations/{consumer}', 'placement:allocations:list'),
    ('DELETE', '/allocations/{consumer}', 'placement:allocations:delete'),
    ('GET', '/usages?project_id=user', 'placement:usages'),
    ('GET', '/traits', 'placement:traits:list'),
])
def test_plain_user_is_forbidden(make_api, rp, method, path, rule):
    user = make_api(token='user')
    forbidden(user.request(method, path.format(rp=rp, consumer=new_uuid())), rule)


@pytest.mark.parametrize('method, path, body, rule', [
    ('PUT', '/allocations/{consumer}', 'allocation', 'placement:allocations:update'),
    ('POST', '/allocations', 'many', 'placement:allocations:manage'),
    ('POST', '/reshaper', 'reshape', 'placement:reshaper:reshape'),
    ('PUT', '/allocations/{consumer}', '{not json', 'placement:allocations:update'),
])
def test_forbidden_writes_change_nothing(make_api, rp, method, path, body, rule):
    payload = {'allocation': allocation_body(rp), 'many': {new_uuid(): allocation_body(rp)},
               'reshape': reshaper_body(rp)}.get(body)
    raw = None if payload is not None else body
    with unchanged():
        response = make_api(token='user').request(method, path.format(consumer=new_uuid()),
                                                  payload, raw=raw)
        forbidden(response, rule)


def test_policy_is_checked_before_the_body(make_api):
    response = make_api(token='user').put('/allocations/not-a-uuid', raw='{')
    forbidden(response, 'placement:allocations:update')


def test_x_roles_replace_the_token_roles(make_api):
    admin_as_member = make_api(token='admin')
    response = admin_as_member.get('/resource_providers', headers={'X-Roles': 'member'})
    forbidden(response, 'placement:resource_providers:list')
    user_as_admin = make_api(token='user')
    assert user_as_admin.get('/resource_providers', headers={'X-Roles': 'admin'}).status_code == 200


def test_service_role_is_allowed(make_api, rp):
    nova = make_api(token='nova:service-project')
    headers = {'X-Roles': 'service'}
    assert nova.get('/resource_providers', headers=headers).status_code == 200
    response = nova.put(f'/allocations/{new_uuid()}', allocation_body(rp), headers=headers)
    assert response.status_code == 204
    assert nova.post('/reshaper', reshaper_body(rp, generation=2),
                     headers=headers).status_code == 204


def test_system_scope_is_forbidden_because_rules_are_project_scoped(make_api, rp):
    admin = make_api(token='admin')
    headers = {'OpenStack-System-Scope': 'all'}
    with unchanged():
        for response, rule in [
            (admin.get('/resource_providers', headers=headers),
             'placement:resource_providers:list'),
            (admin.put(f'/allocations/{new_uuid()}', allocation_body(rp), headers=headers),
             'placement:allocations:update'),
        ]:
            assert response.status_code == 403
            assert error_of(response)['detail'] == (
                f'Access was denied to this resource.\n\n {rule}  ')


def test_system_scope_is_judged_by_roles_without_scope_enforcement(settings, make_api):
    settings.PLACEMENT_ENFORCE_SCOPE = False
    admin = make_api(token='admin')
    response = admin.get('/resource_providers', headers={'OpenStack-System-Scope': 'all'})
    assert response.status_code == 200


# ---- project readers and usages ---------------------------------------------------

@pytest.mark.parametrize('new_defaults', [True, False])
def test_project_reader_reads_own_usages_only(settings, make_api, new_defaults):
    settings.PLACEMENT_ENFORCE_NEW_DEFAULTS = new_defaults
    admin = make_api(token='admin')
    rp = vcpu_provider(admin)
    assert admin.allocate(new_uuid(), {rp: {'VCPU': 3}}, project='proj1').status_code == 204
    reader = make_api(token='alice:proj1')
    headers = {'X-Roles': 'reader'}
    response = reader.get('/usages?project_id=proj1', headers=headers)
    assert response.status_code == 200
    assert response.body == {'usages': {'INSTANCE': {'VCPU': 3, 'consumer_count': 1}}}
    forbidden(reader.get('/usages?project_id=proj2', headers=headers), 'placement:usages')
    forbidden(reader.get('/resource_providers', headers=headers),
              'placement:resource_providers:list')
    forbidden(reader.get('/usages?project_id=proj1', headers={'X-Roles': 'member'}),
              'placement:usages')


# ---- legacy defaults ------------------------------------------------------------------

def test_new_defaults_keep_the_reshaper_for_services(settings, make_api):
    settings.PLACEMENT_ENFORCE_NEW_DEFAULTS = True
    admin = make_api(token='admin')
    rp = vcpu_provider(admin)
    with unchanged():
        forbidden(admin.post('/reshaper', reshaper_body(rp)),
                  'placement:reshaper:reshape')


def test_legacy_defaults_let_admin_reshape(settings, make_api):
    settings.PLACEMENT_ENFORCE_NEW_DEFAULTS = False
    admin = make_api(token='admin')
    rp = vcpu_provider(admin)
    response = admin.post('/reshaper', reshaper_body(rp))
    assert response.status_code == 204
    assert admin.get(f'/resource_providers/{rp}/inventories').body == {
        'resource_provider_generation': 3, 'inventories': {'VCPU': {
            'total': 16, 'reserved': 0, 'min_unit': 1, 'max_unit': 2147483647, 'step_size': 1,
            'allocation_ratio': 1.0}}}


def test_legacy_defaults_still_forbid_plain_users(settings, make_api):
    settings.PLACEMENT_ENFORCE_NEW_DEFAULTS = False
    forbidden(make_api(token='user').get('/resource_providers'),
              'placement:resource_providers:list')


# ---- policy file ------------------------------------------------------------------

def test_policy_file_overrides_a_rule(settings, make_api, tmp_path):
    policy_file = tmp_path / 'policy.yaml'
    policy_file.write_text('"placement:resource_providers:list": "role:reader"\n'
                           '"placement:usages": "@"\n')
    settings.PLACEMENT_POLICY_FILE = str(policy_file)
    reader = make_api(token='alice:proj1')
    assert reader.get('/resource_providers', headers={'X-Roles': 'reader'}).status_code == 200
    assert make_api(token='user').get('/usages?project_id=other').status_code == 200
    forbidden(make_api(token='admin').get('/resource_providers'),
              'placement:resource_providers:list')
    assert make_api(token='admin').get('/resource_classes').status_code == 200
    forbidden(reader.get('/traits', headers={'X-Roles': 'reader'}), 'placement:traits:list')


def test_json_policy_file_overrides_a_base_rule(settings, make_api, tmp_path):
    policy_file = tmp_path / 'policy.json'
    policy_file.write_text(json.dumps({'admin_or_service_api': 'role:operator'}))
    settings.PLACEMENT_POLICY_FILE = str(policy_file)
    operator = make_api(token='olga')
    assert operator.get('/resource_providers', headers={'X-Roles': 'operator'}).status_code == 200
    forbidden(make_api(token='admin').get('/resource_providers'),
              'placement:resource_providers:list')
