"""Provider summaries: the traits a worker remembers between searches, and
when it reads them again."""
import datetime as dt

import pytest
from django.db import connection
from django.http import QueryDict
from django.test.utils import CaptureQueriesContext

from placement_site import microversion
from providers import services
from providers.candidates import parse
from providers.candidates import select_candidates
from providers.candidates import summaries
from providers.models import ProviderTrait
from providers.models import ResourceProvider
from providers.models import Trait

LATEST = microversion.parse(microversion.MAX_VERSION)
TEXT = 'resources=VCPU:1'


@pytest.fixture
def cloud(small_cloud):
    return small_cloud


def search():
    """(the answer's summaries as (uuid, traits), the queries it took)."""
    with CaptureQueriesContext(connection) as queries:
        result = select_candidates(parse(QueryDict(TEXT), LATEST))
    return {s.uuid: s.traits for s in result.summaries}, len(queries)


def traits_of(answer, provider):
    return answer[provider.uuid]


def test_a_search_over_unchanged_providers_reads_no_traits(cloud):
    first, cold = search()
    again, warm = search()
    assert again == first  # the same names, in the same order
    assert set(traits_of(again, cloud['cn1'])) == {'COMPUTE_NODE', 'HW_CPU_X86_AVX2'}
    assert warm == cold - 2  # neither the providers' trait ids nor the names


def test_traits_changed_through_the_services_are_read_again(cloud):
    search()
    cn1 = ResourceProvider.objects.get(pk=cloud['cn1'].pk)
    services.traits_replace(provider=cn1, trait_names=['COMPUTE_NODE', 'HW_CPU_X86_SSE'])
    answer, queries = search()
    assert set(traits_of(answer, cloud['cn1'])) == {'COMPUTE_NODE', 'HW_CPU_X86_SSE'}
    assert traits_of(answer, cloud['cn3']) == []
    _, cold = search_cold()
    assert queries == cold


def search_cold():
    summaries.forget_traits()
    return search()


def test_a_provider_back_at_its_generation_at_another_time_is_read_again(cloud):
    """A database restored to an older state and written again (or a test's
    rolled-back rows) can bring a provider back to a generation it had, with
    other traits: its updated_at tells them apart."""
    search()
    cn1 = cloud['cn1']
    sse = Trait.objects.get(name='HW_CPU_X86_SSE')
    ProviderTrait.objects.create(resource_provider_id=cn1.pk, trait=sse)
    # Rows changed behind the services' back, generation and time unchanged:
    # what was read before is what the worker still answers.
    assert 'HW_CPU_X86_SSE' not in traits_of(search()[0], cn1)
    ResourceProvider.objects.filter(pk=cn1.pk).update(
        updated_at=dt.datetime(2030, 1, 1, tzinfo=dt.UTC))
    assert 'HW_CPU_X86_SSE' in traits_of(search()[0], cn1)


def test_an_answer_larger_than_the_memory_is_not_remembered(cloud, monkeypatch):
    monkeypatch.setattr(summaries._TRAITS_READ, 'size', 1)
    first, cold = search()
    assert len(first) == 2
    assert summaries._TRAITS_READ._by_id == {}
    assert search() == (first, cold)


def test_a_full_memory_is_forgotten_at_once(cloud, monkeypatch):
    monkeypatch.setattr(summaries._TRAITS_READ, 'size', 2)
    answer, _ = search()
    assert len(summaries._TRAITS_READ._by_id) == 2
    another = summaries.ProviderSummary(10**9, 'another', None, 10**9, (1, 'then'))
    summaries._TRAITS_READ.remember([another])
    assert list(summaries._TRAITS_READ._by_id) == [another.id]
    _, queries = search()
    assert queries == search_cold()[1]
