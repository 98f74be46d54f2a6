"""placement_site.queries.retried: the one retry-in-a-transaction loop of
the services (allocations, pods)."""
import pytest
from django.db import IntegrityError, OperationalError

from placement_site import exceptions
from placement_site.queries import retried


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
