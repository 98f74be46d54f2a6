"""Shared fixtures: a Placement API client over Django's test client, small
builders that go through the API, and a database snapshot for checking that
a refused request changed nothing."""
import io
import json
import re
import uuid as uuid_lib
from contextlib import contextmanager

import pytest
from django.apps import apps
from django.contrib.auth.models import User as Account
from django.core.management import call_command
from django.db import connection, connections
from django.db.models import F
from django.test import Client
from django.test.utils import CaptureQueriesContext

from allocations import services as allocation_services
from placement_site import policy
from providers import ledger, services
from providers.candidates import summaries
from providers.models import (
    Aggregate,
    BooksChange,
    Inventory,
    ProviderAggregate,
    ResourceClass,
    ResourceProvider,
    TreeStamp,
)

LATEST = '1.39'


def pytest_configure(config):
    # The tests' accounts are made and signed in hundreds of times: hashed
    # with the cheapest hasher, not the million rounds of PBKDF2 a real
    # password gets (0.7 s a hash on this machine). Servers the tests start
    # in processes of their own keep the real one.
    from django.conf import settings
    settings.PASSWORD_HASHERS = ['django.contrib.auth.hashers.MD5PasswordHasher']


class PlacementClient:
    """Requests as a Placement client sends them: token, microversion, JSON."""

    def __init__(self, token='admin', version=LATEST):
        self.client = Client()
        self.token = token
        self.version = version

    def request(self, method, path, body=None, *, version=None, token=None, headers=None,
                content_type='application/json', raw=None):
        headers = dict(headers or {})
        token = self.token if token is None else token
        if token is not False:
            headers.setdefault('X-Auth-Token', token)
        version = self.version if version is None else version
        if version is not False:
            headers.setdefault('OpenStack-API-Version', f'placement {version}')
        headers.setdefault('Accept', 'application/json')
        data = raw if raw is not None else (json.dumps(body) if body is not None else '')
        kwargs = {'headers': headers}
        if data or content_type != 'application/json':
            kwargs['content_type'] = content_type
        response = self.client.generic(method, path, data=data, **kwargs)
        # The answer's bytes, whether sent whole or streamed.
        response.bytes = (b''.join(response.streaming_content) if response.streaming
                          else response.content)
        response.body = _json_or_none(response)
        return response

    def get(self, path, **kwargs):
        return self.request('GET', path, **kwargs)

    def post(self, path, body=None, **kwargs):
        return self.request('POST', path, body, **kwargs)

    def put(self, path, body=None, **kwargs):
        return self.request('PUT', path, body, **kwargs)

    def delete(self, path, **kwargs):
        return self.request('DELETE', path, **kwargs)

    # ---- builders (through the API, so tests exercise real behaviour) ----

    def create_provider(self, name=None, uuid=None, parent=None):
        body = {'name': name or f'rp-{uuid_lib.uuid4().hex[:8]}',
                'uuid': uuid or str(uuid_lib.uuid4())}
        if parent:
            body['parent_provider_uuid'] = parent
        response = self.post('/resource_providers', body, version=LATEST)
        assert response.status_code == 200, response.content
        return response.body

    def set_inventory(self, rp_uuid, inventories):
        return self._put_at_generation(rp_uuid, 'inventories', inventories=inventories)

    def set_traits(self, rp_uuid, traits):
        return self._put_at_generation(rp_uuid, 'traits', traits=traits)

    def set_aggregates(self, rp_uuid, aggregates):
        return self._put_at_generation(rp_uuid, 'aggregates', aggregates=aggregates)

    def _put_at_generation(self, rp_uuid, what, **body):
        """Replace one of a provider's collections at its current generation."""
        generation = self.get(f'/resource_providers/{rp_uuid}').body['generation']
        response = self.put(f'/resource_providers/{rp_uuid}/{what}',
                            {'resource_provider_generation': generation, **body})
        assert response.status_code == 200, response.content
        return response.body

    def allocate(self, consumer, allocations, *, project='proj', user='user',
                 consumer_type='INSTANCE', generation=None):
        response = self.put(f'/allocations/{consumer}', {
            'allocations': {rp: {'resources': res} for rp, res in allocations.items()},
            'project_id': project, 'user_id': user,
            'consumer_generation': generation, 'consumer_type': consumer_type})
        return response


def new_uuid():
    return str(uuid_lib.uuid4())


def generation(client, rp_uuid):
    """The provider's generation as the API reports it."""
    response = client.get(f'/resource_providers/{rp_uuid}')
    assert response.status_code == 200, response.content
    return response.body['generation']


def vcpu_provider(client, total=8):
    """A new provider with `total` VCPU, created through `client` (after
    any settings change, since the first request builds the policy
    enforcer)."""
    uuid = client.create_provider()['uuid']
    client.set_inventory(uuid, {'VCPU': {'total': total}})
    return uuid


def allocation_body(rp):
    """PUT /allocations/{consumer}'s body (1.38+) for a new consumer of 1 VCPU of rp."""
    return {'allocations': {rp: {'resources': {'VCPU': 1}}}, 'project_id': 'proj',
            'user_id': 'user', 'consumer_generation': None, 'consumer_type': 'INSTANCE'}


def lasting_headers(response):
    """The answer's headers but those that differ from one request to the
    next (its id and time); Content-Length: None when there is none."""
    headers = {k: v for k, v in response.items()
               if k not in ('x-openstack-request-id', 'Last-Modified')}
    return {'Content-Length': None, **headers}


def _json_or_none(response):
    if (response.get('Content-Type', '').startswith('application/json') and response.bytes
            and 'Content-Encoding' not in response):
        return json.loads(response.bytes)
    return None


# uuid4()'s, with or without dashes.
UUID_IN_TEXT = re.compile(
    r'[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}', re.IGNORECASE)


def pytest_make_parametrize_id(config, val, argname):
    """Test ids name a random UUID parameter 'UUID', so that they are the same
    in every run: xdist's workers must collect the same ids, and -k, --lf and
    the ids CI lists compare across runs."""
    if isinstance(val, str) and UUID_IN_TEXT.search(val):
        # Escaped as pytest escapes the strings it makes ids of.
        return UUID_IN_TEXT.sub('UUID', val).encode('unicode_escape').decode('ascii')
    return None


@pytest.fixture
def api(db):
    return PlacementClient()


@pytest.fixture
def make_api(db):
    """A client with another token or default microversion."""
    return PlacementClient


@pytest.fixture(autouse=True)
def _sign_in_unthrottled(settings):
    """Django's test client signs in without a request, which django-axes
    refuses: sign-in throttling is off in-process except where a test turns
    it on (tests/test_signin_security.py). Servers the tests start keep it."""
    settings.AXES_ENABLED = False


@pytest.fixture(autouse=True)
def _traits_read_afresh():
    """Every test's searches start without the traits a worker remembers
    (providers.candidates.summaries), so its query counts are its own."""
    summaries.forget_traits()


@pytest.fixture(autouse=True)
def _ledger_read_afresh():
    """Every test's ledger (providers.ledger) reads its own database: a
    rolled-back or flushed one may reach the same books' version again."""
    ledger.forget()
    yield
    ledger.forget()


@pytest.fixture(autouse=True)
def _fresh_policy():
    """Tests change policy settings; every test starts from them afresh."""
    policy.reset()
    yield
    policy.reset()


# ---- the migrations' rows, back after a transactional test -------------------------
# A transactional test (live_server, transaction=True) ends with Django's flush,
# which empties every table, the standard resource classes and traits the
# migrations seeded included; one with serialized_rollback=True loads them again
# as it starts. Any other test that follows a flush gets them back here first,
# so no test depends on the order tests run in (xdist's workers take modules in
# any order).

_FLUSHED = pytest.StashKey[bool]()
_BLOCKER = pytest.StashKey[object]()


def _django_db_marker(item):
    marker = item.get_closest_marker('django_db')
    return marker.kwargs if marker else {}


def _transactional(item):
    marker = _django_db_marker(item)
    return (marker.get('transaction') or marker.get('reset_sequences')
            or {'transactional_db', 'live_server'} & set(getattr(item, 'fixturenames', ())))


@pytest.fixture(autouse=True, scope='session')
def _db_blocker_for_hooks(request, django_db_blocker):
    request.session.stash[_BLOCKER] = django_db_blocker


def restore_migrated_rows(session):
    """The rows the test databases had when migrated (as serialized for
    serialized_rollback), loaded again into emptied tables."""
    with session.stash[_BLOCKER].unblock():
        for connection in connections.all(initialized_only=True):
            contents = getattr(connection, '_test_serialized_contents', None)
            if contents:
                connection.creation.deserialize_db_from_string(contents)
    session.stash[_FLUSHED] = False


def tables_flushed(session):
    """Tell the next test that the tables were emptied."""
    session.stash[_FLUSHED] = True


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    if (item.session.stash.get(_FLUSHED, False)
            and not _django_db_marker(item).get('serialized_rollback')):
        restore_migrated_rows(item.session)


def pytest_runtest_teardown(item, nextitem):
    if _transactional(item):
        tables_flushed(item.session)


# ---- a small cloud built through the services, for reads tested directly ----------

ROW = str(uuid_lib.uuid4())       # host aggregate of cn1 and cn3
STORAGE = str(uuid_lib.uuid4())   # shared by nfs and the tree of cn2 (through its child)


def add_provider(name, parent=None, inventories=None, traits=(), aggregates=()):
    rp = services.provider_create(name=name, parent_provider_uuid=parent.uuid if parent else None)
    if inventories:
        services.inventories_replace(provider=rp, inventories=inventories)
    if traits:
        services.traits_replace(provider=rp, trait_names=list(traits))
    if aggregates:
        services.aggregates_replace(provider=rp, aggregate_uuids=list(aggregates))
    return rp


def add_allocation(rp, **amounts):
    allocation_services.allocations_replace([allocation_services.ConsumerAllocations(
        consumer_uuid=str(uuid_lib.uuid4()), allocations={rp.uuid: amounts},
        project_id='p', user_id='u', generation=None)])


@pytest.fixture
def small_cloud(db):
    """cn1: 8 VCPU (ratio 2, 3 used), 100 DISK_GB; cn2 with a NUMA child of 4
    VCPU (max_unit 2, step 2); cn3: 1 VCPU; nfs: 1000 DISK_GB (50 reserved),
    sharing with cn2's tree through the child's aggregate."""
    rps = {}
    rps['cn1'] = add_provider('cn1', inventories={
        'VCPU': {'total': 8, 'allocation_ratio': 2.0}, 'DISK_GB': {'total': 100}},
        traits=['HW_CPU_X86_AVX2', 'COMPUTE_NODE'], aggregates=[ROW])
    rps['cn2'] = add_provider('cn2', inventories={'MEMORY_MB': {'total': 1024}},
                              traits=['COMPUTE_NODE'])
    rps['cn2-numa0'] = add_provider('cn2-numa0', parent=rps['cn2'], inventories={
        'VCPU': {'total': 4, 'max_unit': 2, 'step_size': 2}},
        traits=['HW_NUMA_ROOT'], aggregates=[STORAGE])
    rps['cn3'] = add_provider('cn3', inventories={'VCPU': {'total': 1}}, aggregates=[ROW])
    rps['nfs'] = add_provider('nfs', inventories={'DISK_GB': {'total': 1000, 'reserved': 50}},
                              traits=['MISC_SHARES_VIA_AGGREGATE'], aggregates=[STORAGE])
    add_allocation(rps['cn1'], VCPU=3, DISK_GB=40)
    return rps


def snapshot():
    """Every row of every Placement table, for before/after comparisons
    (not the books' change log nor the tree stamps, which only move on:
    providers.change_log, providers.ledger.stamps)."""
    state = {}
    for app_label in ('providers', 'allocations', 'pods'):
        for model in apps.get_app_config(app_label).get_models():
            if model in (BooksChange, TreeStamp):
                continue
            state[model._meta.db_table] = sorted(
                (tuple(sorted(row.items())) for row in model.objects.values()), key=repr)
    return state


def without_event_log(state):
    """A snapshot without the event log, which keeps the history of what
    was undone."""
    return {table: rows for table, rows in state.items()
            if table not in ('events', 'event_providers')}


@pytest.fixture
def db_snapshot(db):
    return snapshot


@contextmanager
def unchanged():
    """`with unchanged():` the block changes no row of any table (as
    snapshot() sees them)."""
    before = snapshot()
    yield
    assert snapshot() == before


@pytest.fixture
def refused(db_snapshot):
    """`with refused(Error, message):` the block raises exactly Error with
    that message, and no row of any table changed."""
    @contextmanager
    def refused(error, message):
        before = db_snapshot()
        with pytest.raises(error) as caught:
            yield caught
        assert type(caught.value) is error
        assert str(caught.value) == message
        assert db_snapshot() == before
    return refused


def error_of(response):
    """The single error of a Placement error body."""
    errors = response.body['errors']
    assert len(errors) == 1
    return errors[0]


ERROR_TITLES = {400: 'Bad Request', 403: 'Forbidden', 404: 'Not Found',
                405: 'Method Not Allowed', 409: 'Conflict', 412: 'Precondition Failed',
                413: 'Request Entity Too Large', 415: 'Unsupported Media Type'}
UNDEFINED = 'placement.undefined_code'


def assert_error(response, status, detail=None, code=UNDEFINED):
    """A Placement JSON error body; code=None for microversions before 1.23."""
    assert response.status_code == status, response.content
    assert response['Content-Type'] == 'application/json'
    error = error_of(response)
    assert error['status'] == status
    assert error['title'] == ERROR_TITLES[status]
    assert error['request_id'] == response['x-openstack-request-id']
    assert error['request_id'].startswith('req-')
    if code is None:
        assert 'code' not in error
    else:
        assert error['code'] == code
    if detail is not None:
        assert detail in error['detail']
    return error


def assert_put_media_type_refused(client, path, content_type, body=None):
    """A PUT of `body` to `path` sent as `content_type` (without a body, and
    so without a Content-Type: content_type None) is Placement's 415 and
    changes nothing."""
    with unchanged():
        response = (client.put(path) if body is None
                    else client.put(path, body, content_type=content_type))
        assert_error(response, 415, f'The media type {content_type} is not supported, '
                                    'use application/json')


def assert_version_refused(response, version, literal=None):
    """Placement's answer to the version header `version`: a 406 for one it
    cannot serve or, where its part `literal` is not a number, a 400."""
    if literal is None:
        status, detail = 406, ('The resource could not be generated that was acceptable to your '
                               'browser (content of type application/json. \n\n Invalid '
                               f'microversion: Unacceptable version header: {version}')
    else:
        status, detail = 400, ('The server could not comply with the request since it is either '
                               'malformed or otherwise incorrect.\n\n Invalid microversion: '
                               f'invalid version string: {version}; invalid literal for int() '
                               f"with base 10: '{literal}'  ")
    assert response.status_code == status
    error = error_of(response)
    assert (error['status'], error['detail']) == (status, detail)


def assert_not_acceptable(response):
    """The plain-text 406 Placement sends for Accept: text/plain."""
    assert response.status_code == 406
    assert response['Content-Type'].startswith('text/plain')
    text = response.content.decode()
    assert text.startswith('406 Not Acceptable')
    assert 'Only application/json is provided' in text


# ---- the Django admin and the dashboards -------------------------------------------

@pytest.fixture
def staff(db):
    """A client signed in as a staff account (not a superuser)."""
    client = Client()
    Account.objects.create_user('operator', password='pw', is_staff=True)
    assert client.login(username='operator', password='pw')
    return client


def changelist(client, url, query=''):
    """The rows the admin changelist at `url` shows for `query`."""
    response = client.get(url + query)
    assert response.status_code == 200, response.content
    return response.context['cl'].result_list


def assert_admin_read_only(client, url, obj):
    """The admin of the changelist at `url` has no add page and refuses to
    delete `obj`."""
    assert client.get(f'{url}add/').status_code == 403
    assert client.post(f'{url}{obj.pk}/delete/', {'post': 'yes'}).status_code == 403


def count_queries(action):
    """How many SQL queries action() makes, with no provider's traits
    remembered (providers.candidates.summaries)."""
    summaries.forget_traits()
    with CaptureQueriesContext(connection) as captured:
        action()
    return len(captured)


def bulk_trees(count, *, start, name, pool):
    """`count` compute trees written in bulk, for when only their shape
    matters: roots f'{name}{i}' (i from `start`) with 500 DISK_GB (10
    reserved) in aggregate `pool`, each with a child f'{name}{i}-numa0' with
    16 VCPU at allocation ratio 4. Returns (roots, children)."""
    classes = dict(ResourceClass.objects.values_list('name', 'id'))
    aggregate, _ = Aggregate.objects.get_or_create(uuid=pool)
    roots = ResourceProvider.objects.bulk_create([
        ResourceProvider(uuid=str(uuid_lib.uuid4()), name=f'{name}{i}')
        for i in range(start, start + count)])
    ResourceProvider.objects.filter(root_provider__isnull=True).update(root_provider_id=F('id'))
    numas = ResourceProvider.objects.bulk_create([
        ResourceProvider(uuid=str(uuid_lib.uuid4()), name=f'{r.name}-numa0',
                         parent_provider_id=r.pk, root_provider_id=r.pk) for r in roots])
    Inventory.objects.bulk_create(
        [Inventory(resource_provider_id=r.pk, resource_class_id=classes['DISK_GB'], total=500,
                   reserved=10) for r in roots]
        + [Inventory(resource_provider_id=n.pk, resource_class_id=classes['VCPU'], total=16,
                     allocation_ratio=4.0) for n in numas])
    ProviderAggregate.objects.bulk_create([
        ProviderAggregate(resource_provider_id=r.pk, aggregate=aggregate) for r in roots])
    return roots, numas


def command_result(name, *args):
    """(exit code, output) of `manage.py NAME ARGS`, run in-process."""
    out = io.StringIO()
    try:
        call_command(name, *args, stdout=out)
        code = 0
    except SystemExit as exit:
        code = exit.code
    return code, out.getvalue()
