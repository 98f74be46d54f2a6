"""The fixtures every test may ask for (an API client, a small cloud, a
signed-in staff client, a database snapshot) and the hooks that keep tests
apart; the helpers they are built on are tests/support's."""
import re
from contextlib import contextmanager

import pytest
from django.contrib.auth.models import User as Account
from django.db import connections
from django.test import Client

from placement_site import policy
from providers import ledger
from providers.candidates import summaries
from tests.support.api import PlacementClient
from tests.support.factories import ROW
from tests.support.factories import STORAGE
from tests.support.factories import add_allocation
from tests.support.factories import add_provider
from tests.support.state import snapshot


def pytest_configure(config):
    # The tests' accounts are made and signed in hundreds of times: hashed
    # with the cheapest hasher, not the million rounds of PBKDF2 a real
    # password gets (0.7 s a hash on this machine). Servers the tests start
    # in processes of their own keep the real one.
    from django.conf import settings
    settings.PASSWORD_HASHERS = ['django.contrib.auth.hashers.MD5PasswordHasher']


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
    it on (tests/placement_site/test_signin_security.py). Servers the tests start keep it."""
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


@pytest.fixture
def db_snapshot(db):
    return snapshot


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


# ---- the Django admin and the dashboards -------------------------------------------

@pytest.fixture
def staff(db):
    """A client signed in as a staff account (not a superuser)."""
    client = Client()
    Account.objects.create_user('operator', password='pw', is_staff=True)
    assert client.login(username='operator', password='pw')
    return client
