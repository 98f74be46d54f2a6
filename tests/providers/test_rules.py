"""The capacity rule (providers.rules): its Python and its SQL give the same
answers on random inventories, on the real database, and Inventory.used is
the allocations' sum they both read; the pool rule's give the same pools on
random aggregate memberships of a forest of trees."""
import pytest
from django.db.models import F
from django.db.models import Sum
from hypothesis import HealthCheck
from hypothesis import example
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from allocations.models import Allocation
from providers import rules
from providers.models import Aggregate
from providers.models import Inventory
from providers.models import ProviderAggregate
from providers.models import ResourceProvider
from tests.support.factories import add_allocation
from tests.support.factories import add_provider


@st.composite
def inventories(draw):
    """An inventory row as the database may hold one (over capacity too:
    Placement lets an inventory shrink below its usage)."""
    total = draw(st.integers(1, 2 ** 31 - 1))
    min_unit = draw(st.integers(1, 1000))
    return {
        'total': total,
        'reserved': draw(st.integers(0, total)),
        'allocation_ratio': draw(st.one_of(
            st.sampled_from([1.0, 1.5, 2.0, 4.0, 16.0, 0.5, 0.1, 3.0e7]),
            st.floats(0.0, 64.0, allow_nan=False, allow_infinity=False))),
        # One allocation holds it: an integer column, as Placement's.
        'used': draw(st.integers(0, min(2 * total, 2 ** 31 - 1))),
        'min_unit': min_unit,
        'max_unit': draw(st.integers(min_unit, 2 ** 31 - 1)),
        'step_size': draw(st.integers(1, 64)),
    }


@pytest.fixture
def row(db):
    """One inventory row and the one allocation whose amount is its `used`."""
    provider = add_provider('cn1', inventories={'VCPU': {'total': 10}})
    add_allocation(provider, VCPU=1)
    return Inventory.objects.get(resource_provider=provider)


def stored(row, values):
    """Write `values` into the row; `used` through its allocation, as the
    database counts it."""
    Allocation.objects.filter(resource_provider_id=row.resource_provider_id).update(
        used=values['used'])
    Inventory.objects.filter(pk=row.pk).update(
        **{name: value for name, value in values.items() if name != 'used'})
    return Inventory.objects.filter(pk=row.pk)


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=inventories(), amount=st.integers(1, 100_000))
# A subnormal ratio: a capacity so small that used / capacity overflows
# (PostgreSQL raises where it does, so nothing written may compute it).
@example(values={'total': 2, 'reserved': 0, 'allocation_ratio': 5e-324, 'used': 3,
                 'min_unit': 1, 'max_unit': 1, 'step_size': 1}, amount=1)
def test_the_python_and_the_sql_agree(row, values, amount):
    found = stored(row, values).annotate(
        capacity=rules.capacity_sql(), slots=rules.slots_sql(amount),
    ).values('capacity', 'slots', 'used').get()
    assert found['used'] == values['used']   # the allocation's amount, counted
    assert found['capacity'] == pytest.approx(
        rules.capacity(values['total'], values['reserved'], values['allocation_ratio']))
    assert int(found['slots']) == rules.slots(amount, **values)
    assert stored(row, values).filter(rules.takes_sql(amount)).exists() == rules.takes(
        amount, values['min_unit'], values['max_unit'], values['step_size'])
    assert stored(row, values).filter(rules.fits_sql(amount)).exists() == rules.fits(
        amount, **values)
    capacity = rules.capacity(values['total'], values['reserved'], values['allocation_ratio'])
    free = stored(row, values).annotate(
        free=rules.free_sql(rules.capacity_sql(), F('used'))).values_list('free', flat=True).get()
    assert free == pytest.approx(rules.free(capacity, values['used']))
    if capacity == 0 or capacity > 1e-300:   # (a subnormal one overflows the division)
        utilization = stored(row, values).annotate(
            u=rules.utilization_sql(F('used'), rules.capacity_sql())).values_list(
            'u', flat=True).get()
        expected = rules.utilization(values['used'], capacity)
        assert utilization == (None if expected is None else pytest.approx(expected))


def test_free_is_never_below_zero_and_utilization_unknown_without_capacity():
    assert rules.free(13.5, 3) == 10.5
    assert rules.free(10.0, 12) == 0.0       # an inventory lowered below its use
    assert rules.room(10.0, 12) == -2.0      # ... which the search weighs below 0
    assert rules.utilization(3, 12.0) == 0.25
    assert rules.utilization(3, 0.0) is None
    assert rules.percent(3, 12.0) == 25.0
    assert rules.percent(0, 0.0) is None
    assert rules.whole_capacity(10, 1, 1.5) == 13   # 13.5, truncated as Placement does
    assert rules.holds(13.5, 13.5) and not rules.holds(14, 13.5)


def test_slots_are_the_claims_that_fit_one_after_another():
    values = {'total': 10, 'reserved': 1, 'allocation_ratio': 1.5, 'used': 3,
              'min_unit': 2, 'max_unit': 4, 'step_size': 2}
    # capacity 13.5: 3 + 2 + 2 + 2 + 2 + 2 = 13 fits, a sixth claim of 2 does not.
    assert rules.slots(2, **values) == 5
    assert rules.fits(2, **{**values, 'used': 3 + 4 * 2})
    assert not rules.fits(2, **{**values, 'used': 3 + 5 * 2})
    assert rules.slots(3, **values) == 0   # off step_size
    assert rules.slots(6, **values) == 0   # over max_unit


def test_used_is_the_sum_of_the_allocations(row):
    add_allocation(row.resource_provider, VCPU=3)
    row.refresh_from_db()
    assert row.used == Allocation.objects.filter(
        resource_provider_id=row.resource_provider_id).aggregate(Sum('used'))['used__sum'] == 4


@settings(max_examples=300, deadline=None)
@given(values=inventories(), amount=st.integers(1, 100_000))
@pytest.mark.any_database
def test_an_inventory_refuses_a_claim_exactly_when_it_does_not_fit(values, amount):
    refused = rules.refusals(amount, **values)
    assert (refused == ()) == rules.fits(amount, **values)
    assert ('capacity' in refused) == (
        values['used'] + amount > rules.capacity(values['total'], values['reserved'],
                                                 values['allocation_ratio']))
    assert (set(refused) <= {'capacity'}) == rules.takes(
        amount, values['min_unit'], values['max_unit'], values['step_size'])


@pytest.fixture
def forest(db):
    """Two compute nodes with NUMA nodes (one with a VF under it), a lone
    shared-storage provider, and two aggregates."""
    cn1 = add_provider('cn1')
    numa = add_provider('cn1-numa0', parent=cn1)
    add_provider('cn1-numa0-vf', parent=numa)
    cn2 = add_provider('cn2')
    add_provider('cn2-numa0', parent=cn2)
    add_provider('nfs')
    aggregates = [Aggregate.objects.create(uuid=f'{n:08d}-0000-0000-0000-000000000000')
                  for n in range(2)]
    return list(ResourceProvider.objects.order_by('pk')), aggregates


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(links=st.sets(st.tuples(st.integers(0, 5), st.integers(0, 1))))
def test_the_pool_rule_in_python_and_in_sql_agree(forest, links):
    providers, aggregates = forest
    ProviderAggregate.objects.all().delete()
    ProviderAggregate.objects.bulk_create(
        ProviderAggregate(resource_provider=providers[p], aggregate=aggregates[a])
        for p, a in links)
    own = {rp.pk: {aggregates[a].pk for p, a in links if providers[p] == rp} for rp in providers}
    for aggregate in aggregates:
        members = ProviderAggregate.objects.filter(aggregate=aggregate).values(
            'resource_provider_id')
        in_sql = set(ResourceProvider.objects.filter(rules.in_pool_sql(members)).values_list(
            'pk', flat=True))
        in_python = {rp.pk for rp in providers if aggregate.pk in rules.pools_of(
            own[rp.pk], own[rp.root_provider_id] if rp.root_provider_id != rp.pk else set())}
        assert in_sql == in_python
