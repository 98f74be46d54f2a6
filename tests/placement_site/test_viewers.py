"""What each Keystone user sees in the dashboards (placement_site.viewers),
signed in against a real Keystone (tests/support/keystone.py): the whole
cloud for system admins, system readers and legacy (project) admins; a
project's own page, and nothing of any other project or provider, for its
members and readers, by the navigation and by direct URL, pages, exports,
explorer and admin alike; edits only with the rules the API's writes need;
the same figures as the API gives the same user; a policy file changing
it all with no code change; project switching and application
credentials."""
import re
import uuid

import pytest
from django.contrib.auth.models import Group
from django.contrib.auth.models import Permission
from django.contrib.auth.models import User as Account
from django.core.wsgi import get_wsgi_application
from django.test import Client

from allocations import services as allocation_services
from placement_site import keystone_signin
from placement_site import policy
from placement_site.wsgi import _with_keystone
from providers.pods import services as pod_services
from tests.support.factories import add_provider
from tests.support.keystone import Identity
from tests.support.keystone import call
from tests.support.keystone import keystone_url
from tests.support.pages import exact

pytestmark = [pytest.mark.any_database, pytest.mark.slow]

FLAVORS = 'small=VCPU:1,MEMORY_MB:1024;large=VCPU:8,MEMORY_MB:16384'


@pytest.fixture(scope='module')
def keystone():
    """Two projects and a user of each kind: system admin and reader, a legacy
    admin, project members and readers, and a member of both projects."""
    identity = Identity(keystone_url())
    identity.alpha, identity.beta = identity.project('alpha'), identity.project('beta')
    identity.names = {project: identity._call('GET', f'/projects/{project}')['project']['name']
                      for project in (identity.alpha, identity.beta)}
    roles = {
        'system admin': {'system_roles': ['admin']},
        'system reader': {'system_roles': ['reader']},
        'legacy admin': {'project_roles': [(identity.alpha, 'admin')]},
        'alpha member': {'project_roles': [(identity.alpha, 'member')]},
        'alpha reader': {'project_roles': [(identity.alpha, 'reader')]},
        'beta member': {'project_roles': [(identity.beta, 'member')]},
        'both member': {'project_roles': [(identity.alpha, 'member'), (identity.beta, 'member')],
                        'system_roles': ['reader']},
    }
    identity.users = {kind: identity.user(kind.replace(' ', '-'), **assigned)[1]
                      for kind, assigned in roles.items()}
    service_project = identity.project('service')
    _, identity.service_user = identity.user('placement',
                                             project_roles=[(service_project, 'service')])
    identity.service_project = service_project
    return identity


def claim(provider, project, **amounts):
    consumer = str(uuid.uuid4())
    allocation_services.allocations_replace([allocation_services.ConsumerAllocations(
        consumer_uuid=consumer, allocations={provider.uuid: amounts},
        project_id=project, user_id='someone', generation=None)])
    return consumer


@pytest.fixture
def cloud(db, settings, keystone):
    """Each project's compute node in its own pod, the project bound to
    it and holding an instance there."""
    settings.PLACEMENT_UI_AUTH = ['django', 'keystone']
    settings.PLACEMENT_UI_KEYSTONE_URL = keystone.url
    settings.AUTHENTICATION_BACKENDS = ['django.contrib.auth.backends.ModelBackend',
                                        'placement_site.keystone_signin.KeystoneBackend',
                                        'placement_site.viewers.PolicyPermissions']
    settings.PLACEMENT_CAPACITY_FLAVORS = FLAVORS
    # Tokens are checked with Keystone once a minute here, not on each of the
    # hundreds of pages (test_keystone_signin checks every page's check).
    settings.PLACEMENT_UI_TOKEN_RECHECK_SECONDS = 60
    found = {}
    for name, project, vcpu in (('alpha', keystone.alpha, 2), ('beta', keystone.beta, 4)):
        aggregate = str(uuid.uuid4())
        node = add_provider(f'cn-{name}', aggregates=[aggregate], inventories={
            'VCPU': {'total': 16}, 'MEMORY_MB': {'total': 32768}})
        pod = pod_services.pod_create(name=f'pod-{name}', aggregate_uuid=aggregate)
        pod_services.binding_bind(project_id=project, pod=pod)
        found[name] = {'project': project, 'node': node, 'aggregate': aggregate, 'pod': pod,
                       'consumer': claim(node, project, VCPU=vcpu, MEMORY_MB=vcpu * 1024)}
    return found


def sign_in(keystone, kind, *, project=None, method='password', username=None, password=None):
    client = Client()
    name = keystone.users.get(kind)
    answer = client.post('/accounts/login/', {
        'username': username or name, 'password': password or name, 'domain': 'Default',
        'project': project or '', 'method': method, 'next': '/ui/'})
    assert answer.status_code == 302, answer.content.decode()[-2000:]
    return client


# The scope each kind signs in with: a project's name, or the system.
SCOPES = {'system admin': 'system', 'system reader': 'system', 'legacy admin': 'alpha',
          'alpha member': 'alpha', 'alpha reader': 'alpha', 'beta member': 'beta'}


def signed_in(keystone, kind):
    scope = SCOPES[kind]
    project = 'system' if scope == 'system' else keystone.names[getattr(keystone, scope)]
    return sign_in(keystone, kind, project=project)


def pages_of(cloud, name):
    """Every dashboard page and export showing `name`'s (alpha or beta)
    provider, pool, pod, project or consumer, with the text that names it."""
    own = cloud[name]
    node, consumer, project = own['node'].uuid, own['consumer'], own['project']
    return {
        f'/ui/providers/{node}/': f'cn-{name}',
        f'/ui/trees/{node}/': consumer,
        f'/ui/trees/{node}/?export=csv': consumer,
        f'/ui/pools/{own["aggregate"]}/': f'cn-{name}',
        f'/ui/pools/{own["aggregate"]}/?export=json': f'cn-{name}',
        f'/ui/pods/{own["pod"].uuid}/': project,
        f'/ui/pods/{own["pod"].uuid}/?export=csv': project,
        f'/ui/consumers/{consumer}/': f'cn-{name}',
        f'/ui/consumers/{consumer}/?export=csv': 'create',
        f'/ui/projects/{project}/': consumer,
        f'/ui/projects/{project}/?export=csv': consumer,
        f'/ui/usage/?project={project}': project,
        f'/ui/usage/?project={project}&export=csv': project,
    }


def cloud_pages(cloud):
    """The whole cloud's pages, with a text each shows of beta's."""
    return {
        '/ui/': 'cn-beta', '/ui/providers/': 'cn-beta', '/ui/providers/?export=csv': 'cn-beta',
        '/ui/pools/': cloud['beta']['aggregate'], '/ui/pods/': 'pod-beta',
        '/ui/usage/': cloud['beta']['project'], '/ui/usage/?export=json': cloud['beta']['project'],
        '/ui/explorer/?resources=VCPU:1': 'cn-beta',
    }


def body(answer):
    if answer.streaming:
        return b''.join(answer.streaming_content).decode()
    return answer.content.decode()


@pytest.mark.parametrize('kind', ['system admin', 'system reader', 'legacy admin'])
def test_the_clouds_admins_and_readers_see_every_project_and_provider(cloud, keystone, kind):
    client = signed_in(keystone, kind)
    for path, shown in {**cloud_pages(cloud), **pages_of(cloud, 'alpha'),
                        **pages_of(cloud, 'beta')}.items():
        answer = client.get(path)
        assert answer.status_code == 200, (kind, path, answer.status_code)
        assert shown in body(answer), (kind, path)
    overview = client.get('/ui/').content.decode()
    assert 'href="/ui/providers/"' in overview and 'href="/admin/"' in overview
    assert client.get('/admin/providers/resourceprovider/').status_code == 200


@pytest.mark.parametrize('kind, own, other', [('alpha member', 'alpha', 'beta'),
                                              ('alpha reader', 'alpha', 'beta'),
                                              ('beta member', 'beta', 'alpha')])
def test_a_projects_members_and_readers_see_their_project_alone(cloud, keystone, kind, own,
                                                                 other):
    client = signed_in(keystone, kind)
    mine, theirs = cloud[own], cloud[other]
    first = client.get('/ui/')
    assert first.status_code == 302 and first['Location'] == f'/ui/projects/{mine["project"]}/'

    page = client.get(first['Location'])
    assert page.status_code == 200
    html = exact(page.content.decode())
    # Its usage per class, its consumer and where it sits, its pod and how
    # many more of each flavor fit there.
    vcpu = 2 if own == 'alpha' else 4
    assert re.search(rf'data-class="VCPU">.*?data-field="used">{vcpu}<', html, re.S)
    assert mine['consumer'] in html and f'cn-{own}' in html and f'pod-{own}' in html
    fits = dict(re.findall(r'data-flavor="(\w+)" data-fits="(\d+)"', html))
    assert fits == {'small': str(16 - vcpu), 'large': '1' if own == 'alpha' else '1'}
    assert 'href="/ui/providers/' not in html and 'href="/admin/' not in html
    export = body(client.get(f'/ui/projects/{mine["project"]}/?export=csv'))
    assert mine['consumer'] in export
    assert client.get(f'/ui/consumers/{mine["consumer"]}/').status_code == 200

    # Nothing of the other project, nor any provider page, by direct URL.
    for path in [*cloud_pages(cloud), *pages_of(cloud, other), *pages_of(cloud, own)]:
        if path == '/ui/' or path.startswith((f'/ui/projects/{mine["project"]}/',
                                              f'/ui/consumers/{mine["consumer"]}/')):
            continue
        answer = client.get(path)
        assert answer.status_code in (403, 404), (kind, path, answer.status_code)
        shown = body(answer).replace(path.partition('?')[0], '')   # a 404 names the path
        for secret in (theirs['consumer'], f'cn-{other}', f'pod-{other}'):
            assert secret not in shown, (kind, path, secret)
    for text in (theirs['consumer'], f'cn-{other}', theirs['project']):
        assert text not in html and text not in export
    assert client.get('/admin/').status_code == 302   # not staff: the admin's sign-in


def test_the_not_allowed_page_says_who_and_why(cloud, keystone):
    client = signed_in(keystone, 'alpha reader')
    answer = client.get('/ui/providers/')
    assert answer.status_code == 403
    html = ' '.join(answer.content.decode().split())
    assert 'id="not-allowed"' in html and keystone.users['alpha reader'] in html
    assert f'project {keystone.names[keystone.alpha]}' in html and 'reader' in html
    assert "the cloud's policy does not let you see the whole cloud" in html
    assert f'href="/ui/projects/{keystone.alpha}/"' in html


def test_a_reader_never_reaches_an_edit(cloud, keystone):
    node = cloud['alpha']['node']
    change = f'/admin/providers/resourceprovider/{node.pk}/change/'
    reader = signed_in(keystone, 'system reader')
    shown = reader.get(change)
    assert shown.status_code == 200 and 'name="_save"' not in shown.content.decode()
    assert reader.get('/admin/providers/resourceprovider/add/').status_code == 403
    refused = reader.post(change, {'name': 'renamed'})
    assert refused.status_code == 403
    node.refresh_from_db()
    assert node.name == 'cn-alpha'
    # A system admin's writes need the API's project-scoped rules: read-only too.
    assert signed_in(keystone, 'system admin').get(
        '/admin/providers/resourceprovider/add/').status_code == 403
    # The legacy admin passes placement:resource_providers:create.
    admin = signed_in(keystone, 'legacy admin')
    assert admin.get('/admin/providers/resourceprovider/add/').status_code == 200
    # Local accounts and sign-in records are no Keystone user's business.
    assert admin.get('/admin/auth/user/').status_code == 403
    assert 'auth/user' not in admin.get('/admin/').content.decode()


@pytest.fixture
def api(cloud, settings, keystone):
    settings.PLACEMENT_AUTH_STRATEGY = 'keystone'
    settings.KEYSTONE_AUTHTOKEN = {
        'auth_url': keystone.url, 'www_authenticate_uri': keystone.url,
        'auth_type': 'password', 'username': keystone.service_user,
        'password': keystone.service_user, 'project_id': keystone.service_project,
        'user_domain_id': 'default'}
    return _with_keystone(get_wsgi_application())


def usage_on_page(html):
    return {name: int(used.replace(',', '')) for name, used in re.findall(
        r'data-class="(\w+)"><td><strong>\w+</strong></td><td class="num" '
        r'data-field="used">([\d,]+)<', exact(html))}


@pytest.mark.parametrize('kind, own, other', [('alpha reader', 'alpha', 'beta'),
                                              ('beta member', 'beta', 'alpha'),
                                              ('legacy admin', 'alpha', 'beta')])
def test_the_api_and_the_pages_give_the_same_user_the_same_figures(api, cloud, keystone,
                                                                  kind, own, other):
    client = signed_in(keystone, kind)
    token = client.session[keystone_signin.SESSION_KEY]['token']
    for name in (own, other):
        project = cloud[name]['project']
        through_api = call(api, 'GET', f'/usages?project_id={project}', token=token,
                           headers={'OpenStack-API-Version': 'placement 1.9'})
        page = client.get(f'/ui/projects/{project}/')
        if through_api.status_code == 200:
            assert page.status_code == 200
            assert usage_on_page(page.content.decode()) == through_api.json()['usages']
        else:   # the API refuses another project's usages: so does the page
            assert (name, through_api.status_code, page.status_code) == (other, 403, 403)
    providers = call(api, 'GET', '/resource_providers', token=token)
    page = client.get('/ui/providers/')
    if providers.status_code == 200:
        assert page.status_code == 200
        assert {p['uuid'] for p in providers.json()['resource_providers']} == set(
            re.findall(r'<tr data-uuid="([^"]+)"', page.content.decode()))
    else:
        assert (providers.status_code, page.status_code) == (403, 403)


def test_a_policy_file_narrowing_the_provider_list_narrows_the_dashboards(cloud, keystone,
                                                                          settings, tmp_path,
                                                                          api):
    admin = signed_in(keystone, 'legacy admin')
    token = admin.session[keystone_signin.SESSION_KEY]['token']
    assert admin.get('/ui/providers/').status_code == 200
    rules = tmp_path / 'policy.yaml'
    # Only the beta project's admins may list providers now.
    rules.write_text(f'"placement:resource_providers:list": '
                     f'"role:admin and project_id:{keystone.beta}"\n')
    settings.PLACEMENT_POLICY_FILE = str(rules)
    policy.reset()
    try:
        assert call(api, 'GET', '/resource_providers', token=token).status_code == 403
        assert admin.get('/ui/providers/').status_code == 403
        first = admin.get('/ui/')   # alpha's admin: alpha's own page only
        assert first.status_code == 302
        assert first['Location'] == f'/ui/projects/{keystone.alpha}/'
        # Another project's usages stay open to an admin (placement:usages), in both.
        assert call(api, 'GET', f'/usages?project_id={keystone.beta}',
                    token=token).status_code == 200
        assert admin.get(f'/ui/projects/{keystone.beta}/').status_code == 200
        assert admin.get('/ui/pods/').status_code == 403
        # System readers keep the cloud: their part of the rule is untouched.
        assert signed_in(keystone, 'system reader').get('/ui/providers/').status_code == 200
    finally:
        settings.PLACEMENT_POLICY_FILE = None
        policy.reset()


def test_a_user_of_several_projects_switches_between_them(cloud, keystone):
    client = sign_in(keystone, 'both member')   # no project: the first by name
    alpha, beta = keystone.alpha, keystone.beta
    assert client.get('/ui/')['Location'] == f'/ui/projects/{alpha}/'
    page = client.get(f'/ui/projects/{alpha}/').content.decode()
    assert 'id="switch-scope"' in page and keystone.names[beta] in page
    assert client.post('/accounts/scope/', {'scope': beta}).status_code == 302
    assert client.session[keystone_signin.SESSION_KEY]['project_id'] == beta
    assert client.get('/ui/')['Location'] == f'/ui/projects/{beta}/'
    assert client.get(f'/ui/projects/{alpha}/').status_code == 403
    # The system (the user is a system reader too): the whole cloud.
    client.post('/accounts/scope/', {'scope': 'system'})
    assert client.get('/ui/providers/').status_code == 200
    assert Account.objects.get(first_name=keystone.users['both member']).is_staff
    # A project that is not the user's is refused, the scope kept.
    refused = client.post('/accounts/scope/', {'scope': uuid.uuid4().hex}, follow=True)
    assert 'not one you can switch to' in refused.content.decode()
    assert client.session[keystone_signin.SESSION_KEY]['system'] is True


def test_an_application_credential_signs_in_to_its_project(cloud, keystone):
    credential, secret = keystone.application_credential(keystone.users['alpha member'],
                                                         keystone.alpha)
    client = sign_in(keystone, None, method='application_credential', username=credential,
                     password=secret)
    held = client.session[keystone_signin.SESSION_KEY]
    assert (held['project_id'], held['method'], held['projects']) == (
        keystone.alpha, 'application_credential', [])
    assert client.get('/ui/')['Location'] == f'/ui/projects/{keystone.alpha}/'
    assert client.get(f'/ui/projects/{keystone.beta}/').status_code == 403
    wrong = Client().post('/accounts/login/', {
        'username': credential, 'password': 'wrong', 'method': 'application_credential'})
    assert wrong.status_code == 200 and '_auth_user_id' not in wrong.client.session


def test_an_expired_token_signs_out_on_the_next_page(cloud, keystone):
    client = signed_in(keystone, 'alpha member')
    session = client.session
    session[keystone_signin.SESSION_KEY]['expires_at'] = '2000-01-01T00:00:00+00:00'
    session.save()
    after = client.get('/ui/', follow=True)
    assert after.redirect_chain[-1][0].startswith('/accounts/login/')
    assert 'Your Keystone sign-in has ended' in after.content.decode()


def test_local_accounts_get_the_same_through_groups(cloud):
    """The "operator read-only" group views everything and changes nothing;
    a group named project:<id> gives that project's page alone."""
    read_only = Group.objects.get(name='operator read-only')
    operator = Account.objects.create_user('ro', password='pw', is_staff=True)
    operator.groups.add(read_only)
    client = Client()
    client.login(username='ro', password='pw')
    node = cloud['beta']['node']
    assert client.get('/ui/providers/').status_code == 200
    assert client.get(f'/admin/providers/resourceprovider/{node.pk}/change/').status_code == 200
    assert client.get('/admin/providers/resourceprovider/add/').status_code == 403
    assert not read_only.permissions.exclude(codename__startswith='view_').exists()
    assert read_only.permissions.filter(codename='view_resourceprovider').exists()

    tenant = Account.objects.create_user('tenant', password='pw')
    tenant.groups.add(Group.objects.create(name=f'project:{cloud["alpha"]["project"]}'))
    client = Client()
    client.login(username='tenant', password='pw')
    assert client.get('/ui/')['Location'] == f'/ui/projects/{cloud["alpha"]["project"]}/'
    assert cloud['alpha']['consumer'] in client.get(
        f'/ui/projects/{cloud["alpha"]["project"]}/').content.decode()
    assert client.get(f'/ui/projects/{cloud["beta"]["project"]}/').status_code == 403
    assert client.get('/ui/providers/').status_code == 403
    assert Permission.objects.exists()
