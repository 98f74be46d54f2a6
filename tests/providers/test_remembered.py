"""Results remembered against the books' change log (providers.remembered):
served until the next change, never inside a transaction, and the
dashboards' and GET /capacity's figures stay those of the moment."""
import uuid

import pytest
from django.contrib.auth.models import User as Account
from django.db import connection
from django.db import transaction
from django.test import Client

from allocations import services as allocation_services
from providers import remembered
from tests.support.factories import add_allocation
from tests.support.factories import add_provider

pytestmark = pytest.mark.django_db


class Counted:
    def __init__(self):
        self.calls = 0

    def __call__(self):
        self.calls += 1
        return self.calls


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_result_is_remembered_until_the_books_change():
    node = add_provider('node', inventories={'VCPU': {'total': 16}})
    compute = Counted()
    assert remembered.remembered('default', 'k', compute) == 1
    assert remembered.remembered('default', 'k', compute) == 1
    assert remembered.remembered('default', 'other', compute) == 2
    add_allocation(node, VCPU=1)
    assert remembered.remembered('default', 'k', compute) == 3
    assert remembered.remembered('default', 'k', compute) == 3


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_inside_a_transaction_nothing_is_remembered_or_served():
    compute = Counted()
    remembered.remembered('default', 'k', compute)
    with transaction.atomic():
        assert remembered.remembered('default', 'k', compute) == 2
        assert remembered.remembered('default', 'k', compute) == 3
    assert remembered.remembered('default', 'k', compute) == 1


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_capacity_read_again_after_a_claim_counts_the_claim(api):
    node = add_provider('node', inventories={'VCPU': {'total': 8}, 'MEMORY_MB': {'total': 8192}})

    def read():
        (group,) = api.get('/capacity?resources=VCPU:2,MEMORY_MB:1024').body['groups']
        return group['fits'], group['resources']['VCPU']['used']

    assert read() == read() == (4, 0)
    owner = str(uuid.uuid4())
    allocation_services.allocations_replace([allocation_services.ConsumerAllocations(
        consumer_uuid=owner, allocations={node.uuid: {'VCPU': 2, 'MEMORY_MB': 1024}},
        project_id='p', user_id='u', generation=None)])
    assert read() == (3, 2)
    allocation_services.allocations_delete(consumer_uuid=owner)
    assert read() == (4, 0)


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_usage_page_read_again_after_an_owner_changes_shows_the_new_owner(api):
    node = add_provider('node', inventories={'VCPU': {'total': 8}})
    owner = str(uuid.uuid4())
    Account.objects.create_user('operator', password='pw', is_staff=True)
    staff = Client()
    assert staff.login(username='operator', password='pw')

    def projects():
        rows = staff.get('/ui/usage/').context['by_project']
        return {row['key'][0]: row['usages']['VCPU'] for row in rows}

    assert api.allocate(owner, {node.uuid: {'VCPU': 2}}, project='alpha').status_code == 204
    assert projects() == projects() == {'alpha': 2}
    assert api.allocate(owner, {node.uuid: {'VCPU': 2}}, project='beta',
                        generation=1).status_code == 204
    assert projects() == {'beta': 2}


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_explorer_read_again_after_a_claim_shows_the_claim(api):
    from django.test.utils import CaptureQueriesContext

    node = add_provider('node', inventories={'VCPU': {'total': 8}})
    Account.objects.create_user('operator', password='pw', is_staff=True)
    staff = Client()
    assert staff.login(username='operator', password='pw')

    def explored():
        with CaptureQueriesContext(connection) as captured:
            context = staff.get('/ui/explorer/?resources=VCPU:2&limit=5').context
        used = [summary['resources']['VCPU']['used'] for _, _, summary in context['summaries']]
        steps = [(s.constraint, s.remaining) for s in context['funnels'][0].steps]
        return used, steps, len(captured)

    used, steps, first = explored()
    again = explored()
    assert (used, steps) == ([0], [('2 VCPU', 1)]) == again[:2]
    assert again[2] < first   # the search not run again: nothing it reads changed
    assert api.allocate(str(uuid.uuid4()), {node.uuid: {'VCPU': 6}}).status_code == 204
    assert explored()[:2] == ([6], [('2 VCPU', 1)])
    assert api.allocate(str(uuid.uuid4()), {node.uuid: {'VCPU': 2}}).status_code == 204
    assert explored()[:2] == ([], [('2 VCPU', 0)])
