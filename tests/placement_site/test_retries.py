"""placement_site.retries.retried and retried_write: the one
retry-in-a-transaction loop of every write service."""
import inspect
import uuid

import pytest
from django.db import IntegrityError
from django.db import OperationalError
from django.db import ProgrammingError

from allocations import services as allocation_services
from placement_site import exceptions
from placement_site import retries
from placement_site.retries import retried
from placement_site.retries import retried_write
from providers import services as provider_services
from providers.models import Inventory
from providers.models import ResourceProvider
from providers.pods import services as pod_services
from providers.services import claim_generation
from providers.services import inventories_replace


def losing(times, error):
    """A write that loses `times` races with `error`, then answers 'done'."""
    calls = []

    def write():
        calls.append(1)
        if len(calls) <= times:
            raise error
        return 'done'
    return write, calls


def test_a_lost_race_is_run_again_from_the_start(db):
    write, calls = losing(2, IntegrityError('duplicate'))
    resets = []
    assert retried(write, before_retry=lambda: resets.append(1)) == 'done'
    assert (len(calls), len(resets)) == (3, 2)


def test_a_deadlock_is_retried_and_another_database_error_is_not(db):
    locked = OperationalError('database is locked')
    write, calls = losing(1, locked)
    assert retried(write) == 'done' and len(calls) == 2
    broken = OperationalError('no such table: inventories')
    write, calls = losing(1, broken)
    with pytest.raises(OperationalError):
        retried(write)
    assert len(calls) == 1


def test_races_lost_every_time_end_in_the_exhausted_error(db):
    write, calls = losing(99, exceptions.ProviderConcurrentUpdate())
    with pytest.raises(exceptions.ProviderConcurrentUpdate):
        retried(write, also=(exceptions.ProviderConcurrentUpdate,), attempts=4,
                exhausted=exceptions.ProviderConcurrentUpdate)
    assert len(calls) == 4
    write, calls = losing(99, IntegrityError('duplicate'))
    with pytest.raises(exceptions.ConcurrentUpdate):
        retried(write, attempts=3)
    assert len(calls) == 3


# ---- retried_write: every write service, rerun whole ---------------------------------

ABORTED = OperationalError('database is locked')   # retryable, as Galera's 1213 is


def make_provider():
    return ResourceProvider.objects.create(uuid=str(uuid.uuid4()), name=str(uuid.uuid4()))


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_an_aborted_write_service_is_rerun_from_its_arguments():
    """The first attempt claimed the generation (the row said 1, the
    provider object 1) and was aborted: the rerun starts from generation 0
    again, as given, and commits once."""
    provider = make_provider()
    attempts = []

    @retried_write
    def rename(*, provider, name):
        attempts.append(provider.generation)
        claim_generation(provider)
        ResourceProvider.objects.filter(pk=provider.pk).update(name=name)
        if len(attempts) == 1:
            raise ABORTED
        return provider.generation
    assert rename(provider=provider, name='renamed') == 1
    assert attempts == [0, 0]
    assert ResourceProvider.objects.values_list('generation', 'name').get(pk=provider.pk) == \
        (1, 'renamed')


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_stale_generation_is_not_rerun_and_changes_nothing():
    provider = make_provider()
    ResourceProvider.objects.filter(pk=provider.pk).update(generation=5)   # another writer
    with pytest.raises(exceptions.ProviderConcurrentUpdate):
        inventories_replace(provider=provider, inventories={'VCPU': {'total': 8}})
    assert not Inventory.objects.filter(resource_provider=provider).exists()


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_inside_a_larger_transaction_the_larger_one_is_rerun():
    calls = []

    @retried_write
    def part():
        calls.append(1)
        raise ABORTED

    def whole():
        calls.append('whole')
        if calls.count('whole') == 1:
            part()
        return 'done'
    assert retried(whole) == 'done'
    assert calls == ['whole', 1, 'whole']


WRITE_MODULES = [provider_services, allocation_services, pod_services]


@pytest.mark.parametrize('module', WRITE_MODULES, ids=lambda m: m.__name__)
def test_every_write_service_reruns_what_the_database_aborts(module):
    """No write path without the rerun: a public service that opens a
    transaction is wrapped by retried_write or runs through retried()."""
    bare = []
    for name, function in inspect.getmembers(module, inspect.isfunction):
        if name.startswith('_') or function.__module__ != module.__name__:
            continue
        source = inspect.getsource(function)
        if 'transaction.atomic' in source:
            if not hasattr(function, '__wrapped__') and 'retried(' not in source:
                bare.append(name)
    assert bare == []


def driver_error(django_error, message, number=1064):
    """A Django error caused by MySQLdb's own, as the backend raises it."""
    MySQLdb = pytest.importorskip('MySQLdb')
    error = django_error(number, message)
    error.__cause__ = getattr(MySQLdb, django_error.__name__)(number, message)
    return error


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_write_that_met_mariadbs_broken_trigger_is_rerun_and_a_syntax_error_is_not():
    """On a Galera node MariaDB 10.11 may fail to load a sound trigger under
    load (docs/ha.md): the write runs again, after the node's open tables
    with triggers are flushed (on MariaDB; elsewhere the connection is
    closed). Our own syntax error is a bug, raised at once."""
    broken = driver_error(ProgrammingError, "Unknown trigger has an error in its body: "
                                            "'Query was empty'")
    write, calls = losing(1, broken)
    assert retried(write) == 'done' and len(calls) == 2
    ours = driver_error(ProgrammingError, 'You have an error in your SQL syntax')
    write, calls = losing(1, ours)
    with pytest.raises(ProgrammingError):
        retried(write)
    assert len(calls) == 1


def test_no_rerun_starts_after_the_ceiling(db, monkeypatch):
    """A write that waited out a long lock wait timeout is answered, not
    rerun past the server's worker timeout."""
    monkeypatch.setattr(retries, 'RETRY_CEILING_SECONDS', 0.0)
    write, calls = losing(99, OperationalError('database is locked'))
    with pytest.raises(exceptions.ConcurrentUpdate):
        retried(write)
    assert len(calls) == 1
