"""GET /resource_providers' filters (providers.filters.ProviderFilterSet),
read directly on the small cloud: Placement's grammar, its empty values and
refusals, at a microversion; and the dashboards' providers table, which
extends the same set, filtering as the API does."""
import pytest
from django.http import QueryDict

from placement_site import errors
from placement_site import microversion
from providers import filters
from providers.filters import ProviderFilterSet
from providers.models import ResourceProvider
from tests.support.factories import ROW

LATEST = microversion.parse(microversion.MAX_VERSION)


@pytest.fixture
def cloud(small_cloud):
    return small_cloud


def names(query, version=LATEST):
    found = ProviderFilterSet(QueryDict(query), ResourceProvider.objects.all(),
                              version=version).qs
    return sorted(found.values_list('name', flat=True))


def refusal(query, version=LATEST):
    with pytest.raises(errors.PlacementError) as refused:
        names(query, version)
    assert refused.value.status == 400
    return refused.value.detail


def test_every_filter_anded(cloud):
    assert names(f'member_of={ROW}&required=COMPUTE_NODE&resources=VCPU:1') == ['cn1']
    assert names(f'member_of=!{ROW}&required=!COMPUTE_NODE') == ['cn2-numa0', 'nfs']
    assert names(f'in_tree={cloud["cn2-numa0"].uuid}') == ['cn2', 'cn2-numa0']
    assert names('name=cn3') == ['cn3']
    assert names(f'uuid={cloud["nfs"].uuid}') == ['nfs']


def test_repeated_parameters_each_count_where_the_microversion_says(cloud):
    # required: every value from 1.39, only the last before.
    assert names('required=COMPUTE_NODE&required=HW_CPU_X86_AVX2') == ['cn1']
    assert names('required=HW_CPU_X86_AVX2&required=COMPUTE_NODE',
                 microversion.parse('1.38')) == ['cn1', 'cn2']
    assert 'Multiple member_of parameters are not supported' in refusal(
        f'member_of={ROW}&member_of={ROW}', microversion.parse('1.23'))
    # name, uuid, in_tree: the last value wins, an empty one filters nothing.
    assert names('name=cn1&name=cn3') == ['cn3']
    assert len(names('name=&uuid=&in_tree=')) == 5


def test_bad_or_empty_grammar_is_refused_with_placements_400(cloud):
    assert 'Expected \'member_of\' parameter to contain valid UUID(s)' in refusal('member_of=')
    assert refusal('required=CUSTOM_NOPE') == (
        'Invalid trait(s) in "required" parameter: No such trait(s): CUSTOM_NOPE.')
    assert 'Invalid resource class in resources parameter' in refusal('resources=CUSTOM_NO:1')
    assert refusal('resources=')
    assert names('name=cn\x00') == []    # not storable: nothing has it


def test_the_dashboards_table_filters_with_the_api_grammar(cloud, api, admin_client):
    query = f'required=COMPUTE_NODE,!HW_CPU_X86_AVX2&resources=MEMORY_MB:1&member_of=!{ROW}'
    from_api = {rp['name'] for rp in api.get(f'/resource_providers?{query}').body[
        'resource_providers']}
    page = admin_client.get(f'/ui/providers/?{query}')
    assert page.status_code == 200
    assert {row.name for row, _ in page.context['rows']} == from_api == {'cn2'}
    # The form's fields left empty filter nothing.
    assert page.context['page'].paginator.count == 1
    every = admin_client.get('/ui/providers/?name=&required=&resources=&member_of=')
    assert every.context['page'].paginator.count == 5
    refused = admin_client.get('/ui/providers/?resources=VCPU')
    assert refused.status_code == 200
    assert list(refused.context['rows']) == []
    assert 'Badly formed resources parameter' in refused.context['error']


def test_a_tree_alone_is_read_as_the_filter_set_reads_it(cloud):
    for uuid in [rp.uuid for rp in cloud.values()] + ['00000000-0000-0000-0000-000000000000']:
        by_filter_set = ProviderFilterSet(
            QueryDict(f'in_tree={uuid}'), ResourceProvider.objects.with_tree_uuids(),
            version=LATEST).qs
        assert filters.providers_in_tree(uuid) == [
            filters.Listed(*(getattr(rp, field) for field in filters.Listed._fields))
            for rp in by_filter_set], uuid


@pytest.mark.parametrize('query, tree', [
    ('in_tree=a', 'a'), ('in_tree=a&in_tree=b', 'b'),
    # Empty, or with another parameter (even an empty one): the filter set's.
    ('in_tree=', None), ('in_tree=a&name=', None), ('name=x', None), ('', None),
])
def test_only_a_lone_in_tree_is_read_apart(query, tree):
    assert filters.only_in_tree(QueryDict(query)) == tree
