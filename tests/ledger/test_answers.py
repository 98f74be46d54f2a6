"""Answers the ledger holds while claims leave them as they are
(providers.ledger.keep_answer): the explorer's search for resources alone
is held across claims that neither touch a tree it shows nor change which
inventories take the amounts, and is searched again otherwise; held or not,
it is what searching now answers."""
import random
import uuid

import pytest
from django.http import QueryDict

from allocations import services as allocation_services
from allocations.ui import explorer
from placement_site.exceptions import PlacementDomainError
from providers import ledger
from providers.ledger import live
from providers.models import ResourceProvider
from tests.support.factories import add_provider

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

QUERY = 'resources=VCPU:2,MEMORY_MB:1024&limit=3'


@pytest.fixture
def nodes(db):
    return [add_provider(f'node{index:02}', inventories={
        'VCPU': {'total': 8}, 'MEMORY_MB': {'total': 8192}}) for index in range(12)]


def explored():
    query = QueryDict(QUERY)
    return explorer._explored(query, query)


def held():
    """The explorer's answer the ledger holds, or None."""
    query = QueryDict(QUERY)
    return ledger.held_answer('default', ('explorer', query.urlencode(), query.urlencode()))


def searched_now():
    query = QueryDict(QUERY)
    return explorer._explore(query, query)[0]


def claim(node, vcpu):
    consumer = str(uuid.uuid4())
    allocation_services.allocations_replace([allocation_services.ConsumerAllocations(
        consumer, {node.uuid: {'VCPU': vcpu, 'MEMORY_MB': 64}}, project_id='p', user_id='u',
        generation=None)])
    return consumer


def shown(answer):
    return {uuid for _, uuid, _ in answer['summaries']}


def test_a_search_held_while_claims_leave_it_as_it_is(nodes):
    first = explored()
    on_show = shown(first)
    assert len(first['candidates']) == 3
    elsewhere = next(n for n in reversed(nodes) if n.uuid not in on_show)
    searches = live.ledger('default').moves
    claim(elsewhere, 1)               # 7 VCPU left there: it still takes 2
    assert explored() is not None
    assert held() is not None
    assert explored() == searched_now() == first
    assert len(searches) >= 1


def test_a_claim_that_changes_what_takes_the_amounts_spoils_it(nodes):
    explored()
    tail = nodes[-1]
    claim(tail, 7)                    # 1 VCPU left: it no longer takes 2
    assert held() is None
    assert explored() == searched_now()


def test_a_claim_on_a_shown_tree_spoils_it(nodes):
    first = explored()
    shown_node = ResourceProvider.objects.get(uuid=sorted(shown(first))[0])
    claim(shown_node, 1)
    assert held() is None
    again = explored()
    assert again == searched_now() != first   # its used VCPU moved


def test_held_or_searched_again_it_is_the_search_of_the_moment(nodes):
    rng = random.Random(3)
    held = []
    for _ in range(25):
        if held and rng.random() < 0.4:
            allocation_services.allocations_delete(consumer_uuid=held.pop())
        else:
            try:
                held.append(claim(rng.choice(nodes), rng.randint(1, 4)))
            except PlacementDomainError:
                pass
        assert explored() == searched_now()
