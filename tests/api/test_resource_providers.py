"""/resource_providers and /resource_providers/{uuid}: create, show, update
(rename, re-parent), delete, the list filters, and refusal of bad input."""
import datetime
import json
import re
import uuid as uuid_lib
from urllib.parse import quote

import pytest
from django.utils import timezone
from django.utils.http import http_date

from placement_site import api as placement_api
from providers.api.views import providers as provider_views
from providers.models import ResourceProvider
from tests.support.api import UNDEFINED
from tests.support.api import assert_error
from tests.support.api import assert_not_acceptable
from tests.support.api import lasting_headers
from tests.support.api import new_uuid
from tests.support.state import unchanged
from tests.support.state import without_event_log


def names(response):
    """The names listed (in no defined order), each listed once."""
    assert response.status_code == 200, response.content
    listed = [rp['name'] for rp in response.body['resource_providers']]
    assert len(listed) == len(set(listed)), listed
    return set(listed)


def rp_path(rp_uuid):
    return f'/resource_providers/{rp_uuid}'


def links(rp_uuid, rels=('inventories', 'usages', 'aggregates', 'traits', 'allocations')):
    """A provider's links: self, then the given relations."""
    return [{'rel': 'self', 'href': rp_path(rp_uuid)}] + [
        {'rel': rel, 'href': f'{rp_path(rp_uuid)}/{rel}'} for rel in rels]


def provider_body(rp_uuid, name, generation=0, parent=None, root=None):
    return {'uuid': rp_uuid, 'name': name, 'generation': generation, 'links': links(rp_uuid),
            'parent_provider_uuid': parent, 'root_provider_uuid': root or rp_uuid}


# ---- create -------------------------------------------------------------------

@pytest.mark.parametrize('version', ['1.0', '1.19'])
def test_create_before_1_20_is_201_without_body(api, version):
    rp_uuid = new_uuid()
    response = api.post('/resource_providers', {'name': 'cn1', 'uuid': rp_uuid}, version=version)
    assert response.status_code == 201
    assert response.content == b''
    assert response['Location'] == f'http://testserver/resource_providers/{rp_uuid}'
    assert api.get(rp_path(rp_uuid)).body == provider_body(rp_uuid, 'cn1')


def test_create_from_1_20_returns_the_provider(api):
    rp_uuid = new_uuid()
    response = api.post('/resource_providers', {'name': 'cn1', 'uuid': rp_uuid}, version='1.20')
    assert response.status_code == 200
    assert response['Location'] == f'http://testserver/resource_providers/{rp_uuid}'
    assert response['Cache-Control'] == 'no-cache'
    created = ResourceProvider.objects.get(uuid=rp_uuid).created_at
    assert response['Last-Modified'] == http_date(created.timestamp())
    assert response.body == provider_body(rp_uuid, 'cn1')


def test_create_without_uuid_generates_one(api):
    response = api.post('/resource_providers', {'name': 'cn1'})
    assert response.status_code == 200
    generated = response.body['uuid']
    assert str(uuid_lib.UUID(generated)) == generated
    assert response.body == provider_body(generated, 'cn1')
    assert api.get(rp_path(generated)).body == provider_body(generated, 'cn1')


@pytest.mark.parametrize('form', [
    lambda u: u.upper(), lambda u: u.replace('-', ''), lambda u: '{%s}' % u,
    lambda u: f'urn:uuid:{u}',
], ids=['upper', 'no-dashes', 'braces', 'urn'])
def test_create_normalises_the_uuid(api, form):
    rp_uuid = new_uuid()
    response = api.post('/resource_providers', {'name': 'cn1', 'uuid': form(rp_uuid)})
    assert response.status_code == 200
    assert response.body == provider_body(rp_uuid, 'cn1')
    assert response['Location'] == f'http://testserver/resource_providers/{rp_uuid}'
    assert api.get(rp_path(rp_uuid)).body == provider_body(rp_uuid, 'cn1')


@pytest.mark.parametrize('name', ['计算节点', 'CUSTOM_ÄÖ', 'lower case with spaces', 'x' * 200])
def test_any_name_up_to_200_characters_is_accepted(api, name):
    response = api.post('/resource_providers', {'name': name})
    assert response.status_code == 200
    assert api.get(rp_path(response.body['uuid'])).body['name'] == name


def test_duplicate_name_is_409(api):
    api.create_provider(name='cn1')
    with unchanged():
        response = api.post('/resource_providers', {'name': 'cn1', 'uuid': new_uuid()})
        assert_error(response, 409, 'Conflicting resource provider name: cn1 already exists.',
                     code='placement.duplicate_name')


@pytest.mark.parametrize('form', [str, str.upper, lambda u: u.replace('-', '')],
                         ids=['same', 'upper', 'no-dashes'])
def test_duplicate_uuid_is_409(api, form):
    rp_uuid = api.create_provider(name='cn1')['uuid']
    with unchanged():
        response = api.post('/resource_providers', {'name': 'cn2', 'uuid': form(rp_uuid)})
        assert_error(response, 409,
                     f'Conflicting resource provider uuid: {rp_uuid} already exists.',
                     code='placement.duplicate_name')


def test_duplicate_uuid_and_name_reports_the_uuid_as_placement_does(api):
    rp_uuid = api.create_provider(name='cn1')['uuid']
    response = api.post('/resource_providers', {'name': 'cn1', 'uuid': rp_uuid})
    error = assert_error(response, 409, code='placement.duplicate_name')
    assert error['detail'] == ('There was a conflict when trying to complete your request.\n\n '
                               f'Conflicting resource provider uuid: {rp_uuid} already exists.  ')


def test_duplicate_has_no_code_before_1_23(api):
    api.create_provider(name='cn1')
    response = api.post('/resource_providers', {'name': 'cn1'}, version='1.22')
    assert_error(response, 409, 'Conflicting resource provider name: cn1', code=None)


def test_create_child_reports_parent_and_root(api):
    root = api.create_provider(name='root')['uuid']
    child = api.create_provider(name='child', parent=root)['uuid']
    grandchild = api.create_provider(name='grandchild', parent=child)
    assert grandchild == provider_body(grandchild['uuid'], 'grandchild', parent=child, root=root)
    assert api.get(rp_path(child)).body == provider_body(child, 'child', parent=root, root=root)


def test_create_with_null_parent_makes_a_root(api):
    response = api.post('/resource_providers', {'name': 'cn1', 'parent_provider_uuid': None})
    assert response.status_code == 200
    assert response.body == provider_body(response.body['uuid'], 'cn1')


def test_create_under_unknown_parent_is_400(api):
    with unchanged():
        response = api.post('/resource_providers', {'name': 'cn1', 'uuid': new_uuid(),
                                                     'parent_provider_uuid': new_uuid()})
        assert_error(response, 400, 'Object action create failed because: parent provider UUID '
                                    'does not exist.')


def test_create_under_unknown_parent_without_uuid_names_a_generated_uuid(api):
    response = api.post('/resource_providers', {'name': 'cn1', 'parent_provider_uuid': new_uuid()})
    error = assert_error(response, 400)
    # The generated uuid is random: the detail is matched as a whole around it.
    assert re.fullmatch(r'The server could not comply with the request since it is either '
                        r'malformed or otherwise incorrect\.\n\n Unable to create resource '
                        r'provider "cn1", [0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-'
                        r'[0-9a-f]{12}: Object action create failed because: parent provider '
                        r'UUID does not exist\.  ', error['detail']), error['detail']


def test_create_as_its_own_parent_is_400(api):
    rp_uuid = new_uuid()
    with unchanged():
        response = api.post('/resource_providers', {'name': 'cn1', 'uuid': rp_uuid,
                                                     'parent_provider_uuid': rp_uuid})
        assert_error(response, 400, f'Unable to create resource provider "cn1", {rp_uuid}: Object '
                                    'action create failed because: parent provider UUID cannot be '
                                    'same as UUID.')


# ---- show ---------------------------------------------------------------------

@pytest.mark.parametrize('version, rels', [
    ('1.0', ['self', 'inventories', 'usages']),
    ('1.1', ['self', 'inventories', 'usages', 'aggregates']),
    ('1.6', ['self', 'inventories', 'usages', 'aggregates', 'traits']),
    ('1.11', ['self', 'inventories', 'usages', 'aggregates', 'traits', 'allocations']),
])
def test_links_grow_with_the_microversion(api, version, rels):
    rp_uuid = api.create_provider()['uuid']
    body = api.get(rp_path(rp_uuid), version=version).body
    assert body['links'] == links(rp_uuid, rels[1:])


def test_tree_uuids_appear_from_1_14(api):
    rp_uuid = api.create_provider()['uuid']
    body = api.get(rp_path(rp_uuid), version='1.13').body
    assert sorted(body) == ['generation', 'links', 'name', 'uuid']
    body = api.get(rp_path(rp_uuid), version='1.14').body
    assert sorted(body) == ['generation', 'links', 'name', 'parent_provider_uuid',
                            'root_provider_uuid', 'uuid']
    assert body['root_provider_uuid'] == rp_uuid and body['parent_provider_uuid'] is None


@pytest.mark.parametrize('value', [str(uuid_lib.uuid4()), 'not-a-uuid', 'ab\x00cd'])
def test_show_unknown_is_404(api, value):
    response = api.get(rp_path(quote(value)))
    assert_error(response, 404, f'No resource provider with uuid {value} found')


def test_show_unicode_uuid_is_404(api):
    response = api.get(rp_path(quote('计算节点')))
    assert_error(response, 404, 'No resource provider with uuid 计算节点 found')


def test_show_is_exact_about_the_uuid_form(api):
    rp_uuid = api.create_provider()['uuid']
    assert_error(api.get(rp_path(rp_uuid.upper())), 404,
                 f'No resource provider with uuid {rp_uuid.upper()} found')


@pytest.mark.parametrize('path', ['/resource_providers', '/resource_providers/{uuid}'])
def test_get_with_accept_text_plain_is_406(api, path):
    rp_uuid = api.create_provider()['uuid']
    assert_not_acceptable(api.get(path.format(uuid=rp_uuid), headers={'Accept': 'text/plain'}))


# ---- update -------------------------------------------------------------------

def test_rename(api):
    rp_uuid = api.create_provider(name='old')['uuid']
    response = api.put(rp_path(rp_uuid), {'name': 'new'})
    assert response.status_code == 200
    assert response.body == provider_body(rp_uuid, 'new')
    assert api.get(rp_path(rp_uuid)).body == provider_body(rp_uuid, 'new')


def test_rename_to_a_taken_name_is_409(api):
    api.create_provider(name='taken')
    rp_uuid = api.create_provider(name='mine')['uuid']
    with unchanged():
        response = api.put(rp_path(rp_uuid), {'name': 'taken'})
        assert_error(response, 409, 'Conflicting resource provider taken already exists.',
                     code='placement.duplicate_name')


def test_update_unknown_is_404(api):
    rp_uuid = new_uuid()
    assert_error(api.put(rp_path(rp_uuid), {'name': 'x'}), 404,
                 f'No resource provider with uuid {rp_uuid} found')


def test_a_root_may_gain_a_parent_from_1_14(api):
    parent = api.create_provider(name='parent')['uuid']
    rp_uuid = api.create_provider(name='rp')['uuid']
    response = api.put(rp_path(rp_uuid), {'name': 'rp', 'parent_provider_uuid': parent},
                       version='1.14')
    assert response.status_code == 200
    assert response.body == provider_body(rp_uuid, 'rp', parent=parent, root=parent)


def test_keeping_the_same_parent_is_allowed_before_1_37(api):
    root = api.create_provider(name='root')['uuid']
    child = api.create_provider(name='child', parent=root)['uuid']
    response = api.put(rp_path(child), {'name': 'child', 'parent_provider_uuid': root},
                       version='1.36')
    assert response.status_code == 200
    assert response.body == provider_body(child, 'child', parent=root, root=root)


@pytest.fixture
def tree(api):
    """root -> child -> grandchild, and a separate root `other`."""
    root = api.create_provider(name='root')['uuid']
    child = api.create_provider(name='child', parent=root)['uuid']
    grandchild = api.create_provider(name='grandchild', parent=child)['uuid']
    other = api.create_provider(name='other')['uuid']
    return {'root': root, 'child': child, 'grandchild': grandchild, 'other': other}


@pytest.mark.parametrize('version', ['1.14', '1.36'])
def test_reparenting_is_refused_before_1_37(api, tree, version):
    with unchanged():
        response = api.put(rp_path(tree['child']),
                           {'name': 'child', 'parent_provider_uuid': tree['other']},
                           version=version)
        assert_error(response, 400, f'Unable to save resource provider {tree["child"]}: Object '
                                    'action update failed because: re-parenting a provider is '
                                    'not currently allowed.',
                     code=UNDEFINED if version == '1.36' else None)


def test_unparenting_is_refused_before_1_37(api, tree):
    with unchanged():
        response = api.put(rp_path(tree['child']), {'name': 'child', 'parent_provider_uuid': None},
                           version='1.36')
        assert_error(response, 400, 'un-parenting a provider is not currently allowed.')


def test_reparenting_from_1_37_moves_the_subtree(api, tree):
    response = api.put(rp_path(tree['child']),
                       {'name': 'child', 'parent_provider_uuid': tree['other']}, version='1.37')
    assert response.status_code == 200
    assert response.body == provider_body(tree['child'], 'child', parent=tree['other'],
                                          root=tree['other'])
    assert api.get(rp_path(tree['grandchild'])).body == provider_body(
        tree['grandchild'], 'grandchild', parent=tree['child'], root=tree['other'])
    assert names(api.get(f'/resource_providers?in_tree={tree["root"]}')) == {'root'}


def test_unparenting_from_1_37_makes_a_new_tree(api, tree):
    response = api.put(rp_path(tree['child']), {'name': 'child', 'parent_provider_uuid': None},
                       version='1.37')
    assert response.status_code == 200
    assert response.body == provider_body(tree['child'], 'child')
    assert api.get(rp_path(tree['grandchild'])).body == provider_body(
        tree['grandchild'], 'grandchild', parent=tree['child'], root=tree['child'])
    assert names(api.get(f'/resource_providers?in_tree={tree["child"]}')) == \
        {'child', 'grandchild'}


@pytest.mark.parametrize('moved, new_parent, version', [
    ('root', 'grandchild', '1.14'),
    ('root', 'child', '1.37'),
    ('child', 'grandchild', '1.37'),
    ('child', 'child', '1.37'),
])
def test_a_loop_in_the_tree_is_refused(api, tree, moved, new_parent, version):
    with unchanged():
        response = api.put(rp_path(tree[moved]),
                           {'name': moved, 'parent_provider_uuid': tree[new_parent]},
                           version=version)
        assert_error(response, 400, 'creating loop in the provider tree is not allowed.',
                     code=None if version == '1.14' else UNDEFINED)


def test_reparenting_under_an_unknown_parent_is_400(api, tree):
    with unchanged():
        response = api.put(rp_path(tree['child']),
                           {'name': 'child', 'parent_provider_uuid': new_uuid()}, version='1.37')
        assert_error(response, 400, 'parent provider UUID does not exist.')


# ---- delete -------------------------------------------------------------------

def test_delete_removes_the_provider_and_what_describes_it(api, db_snapshot):
    empty = db_snapshot()
    rp_uuid = api.create_provider()['uuid']
    assert api.put('/traits/CUSTOM_GONE').status_code == 201
    with_trait = db_snapshot()
    api.set_inventory(rp_uuid, {'VCPU': {'total': 4}})
    api.set_traits(rp_uuid, ['CUSTOM_GONE', 'HW_CPU_X86_AVX'])
    api.set_aggregates(rp_uuid, [new_uuid()])
    with_aggregate = db_snapshot()
    response = api.delete(rp_path(rp_uuid))
    assert response.status_code == 204
    assert response.content == b''
    assert_error(api.get(rp_path(rp_uuid)), 404, f'No resource provider with uuid {rp_uuid} found')
    # Everything is as before the provider, but the custom trait, (as in
    # Placement, which never deletes them) the aggregate and the event log stay.
    assert without_event_log(db_snapshot()) == without_event_log({
        **empty, 'traits': with_trait['traits'],
        'placement_aggregates': with_aggregate['placement_aggregates']})
    assert len(with_aggregate['placement_aggregates']) == 1


@pytest.mark.parametrize('value', [lambda: new_uuid(), lambda: 'not-a-uuid'])
def test_delete_unknown_is_404(api, value):
    rp_uuid = value()
    assert_error(api.delete(rp_path(rp_uuid)), 404,
                 f'No resource provider with uuid {rp_uuid} found for delete')


def test_delete_is_refused_while_it_has_children(api, tree):
    with unchanged():
        response = api.delete(rp_path(tree['child']))
        assert_error(response, 409, 'Unable to delete parent resource provider '
                                    f'{tree["child"]}: It has child resource providers.',
                     code='placement.resource_provider.cannot_delete_parent')


def test_delete_is_refused_while_it_has_allocations(api):
    rp_uuid = api.create_provider()['uuid']
    api.set_inventory(rp_uuid, {'VCPU': {'total': 4}})
    consumer = new_uuid()
    assert api.allocate(consumer, {rp_uuid: {'VCPU': 1}}).status_code == 204
    with unchanged():
        response = api.delete(rp_path(rp_uuid))
        assert_error(response, 409, f'Unable to delete resource provider {rp_uuid}: Resource '
                                    'provider has allocations.',
                     code='placement.resource_provider.inuse')
    assert api.delete(f'/allocations/{consumer}').status_code == 204
    assert api.delete(rp_path(rp_uuid)).status_code == 204


def test_delete_leaves_the_rest_of_the_tree(api, tree):
    assert api.delete(rp_path(tree['grandchild'])).status_code == 204
    assert names(api.get(f'/resource_providers?in_tree={tree["root"]}')) == {'root', 'child'}


# ---- list ---------------------------------------------------------------------

def test_list_all(api):
    assert api.get('/resource_providers').body == {'resource_providers': []}
    api.create_provider(name='a')
    api.create_provider(name='b')
    response = api.get('/resource_providers')
    assert names(response) == {'a', 'b'}
    assert response['Cache-Control'] == 'no-cache'


def test_a_streamed_list_is_the_list_sent_whole(api, monkeypatch):
    for name in 'abcde':
        api.create_provider(name=name)
    # The newest change is not the newest provider's: Last-Modified must find it.
    changed = timezone.now() + datetime.timedelta(days=1)
    ResourceProvider.objects.filter(name='b').update(updated_at=changed)
    whole = api.get('/resource_providers')
    monkeypatch.setattr(placement_api, 'STREAM_AFTER', 1)
    monkeypatch.setattr(provider_views, 'LIST_CHUNK', 2)
    streamed = api.get('/resource_providers')
    assert not whole.streaming and streamed.streaming
    assert streamed.bytes == whole.bytes
    assert json.loads(whole.bytes) == json.loads(json.dumps(whole.body))
    assert lasting_headers(streamed) == lasting_headers(whole) | {'Content-Length': None}
    assert streamed['Last-Modified'] == whole['Last-Modified'] == http_date(changed.timestamp())


AGG_A, AGG_B, AGG_C = (str(uuid_lib.uuid4()) for _ in range(3))


@pytest.fixture
def forest(api):
    """root(A; AVX) -> c1(A, B; CUSTOM_A, AVX) -> g1(C; CUSTOM_A, CUSTOM_B),
    root -> c2(B; CUSTOM_B), and lone (nothing)."""
    api.put('/traits/CUSTOM_A')
    api.put('/traits/CUSTOM_B')
    rps = {'root': api.create_provider(name='root')['uuid']}
    rps['c1'] = api.create_provider(name='c1', parent=rps['root'])['uuid']
    rps['c2'] = api.create_provider(name='c2', parent=rps['root'])['uuid']
    rps['g1'] = api.create_provider(name='g1', parent=rps['c1'])['uuid']
    rps['lone'] = api.create_provider(name='lone')['uuid']
    for name, aggs, traits in (('root', [AGG_A], ['HW_CPU_X86_AVX']),
                               ('c1', [AGG_A, AGG_B], ['CUSTOM_A', 'HW_CPU_X86_AVX']),
                               ('c2', [AGG_B], ['CUSTOM_B']),
                               ('g1', [AGG_C], ['CUSTOM_A', 'CUSTOM_B'])):
        api.set_aggregates(rps[name], aggs)
        api.set_traits(rps[name], traits)
    return rps


def test_filter_by_name_and_uuid(api, forest):
    assert names(api.get('/resource_providers?name=c1')) == {'c1'}
    assert names(api.get('/resource_providers?name=nope')) == set()
    assert names(api.get(f'/resource_providers?uuid={forest["c2"]}')) == {'c2'}
    assert names(api.get(f'/resource_providers?uuid={new_uuid()}')) == set()
    assert names(api.get(f'/resource_providers?name=c1&uuid={forest["c2"]}')) == set()


@pytest.mark.parametrize('member', ['root', 'c1', 'g1'])
def test_in_tree_lists_the_whole_tree(api, forest, member):
    assert names(api.get(f'/resource_providers?in_tree={forest[member]}')) == \
        {'root', 'c1', 'c2', 'g1'}


def test_in_tree_of_an_unknown_provider_is_empty(api, forest):
    assert names(api.get(f'/resource_providers?in_tree={new_uuid()}')) == set()


@pytest.mark.parametrize('member', ['root', 'g1', 'unknown'])
def test_a_tree_read_alone_answers_as_the_filtered_list_does(api, forest, member):
    """in_tree alone is read apart (providers.filters.providers_in_tree):
    the same bytes and headers as with another, empty, parameter."""
    tree = forest.get(member, new_uuid())
    alone = api.get(f'/resource_providers?in_tree={tree}')
    filtered = api.get(f'/resource_providers?in_tree={tree}&name=')
    assert alone.status_code == filtered.status_code == 200
    assert alone.content == filtered.content
    assert alone.get('Last-Modified') == filtered.get('Last-Modified')


@pytest.mark.parametrize('query, expected', [
    (f'member_of={AGG_A}', {'c1', 'root'}),
    (f'member_of=in:{AGG_A},{AGG_C}', {'c1', 'g1', 'root'}),
    (f'member_of=!{AGG_A}', {'c2', 'g1', 'lone'}),
    (f'member_of=!in:{AGG_A},{AGG_C}', {'c2', 'lone'}),
    (f'member_of={AGG_A}&member_of={AGG_B}', {'c1'}),
    (f'member_of=in:{AGG_A},{AGG_C}&member_of=!{AGG_B}', {'g1', 'root'}),
    (f'member_of={AGG_A.upper()}', set()),
])
def test_member_of(api, forest, query, expected):
    assert names(api.get(f'/resource_providers?{query}')) == expected


def test_member_of_single_aggregate_from_1_3(api, forest):
    assert names(api.get(f'/resource_providers?member_of={AGG_B}', version='1.3')) == {'c1', 'c2'}
    assert names(api.get(f'/resource_providers?member_of=in:{AGG_B},{AGG_C}',
                         version='1.3')) == {'c1', 'c2', 'g1'}


def test_repeated_member_of_is_refused_before_1_24(api, forest):
    response = api.get(f'/resource_providers?member_of={AGG_A}&member_of={AGG_B}',
                       version='1.23')
    assert_error(response, 400, 'Multiple member_of parameters are not supported')


@pytest.mark.parametrize('value', [f'!{AGG_A}', f'!in:{AGG_A},{AGG_B}'])
def test_forbidden_member_of_is_refused_before_1_32(api, forest, value):
    response = api.get(f'/resource_providers?member_of={value}', version='1.31')
    assert_error(response, 400, 'Forbidden member_of parameters are not supported in the '
                                'specified microversion')


@pytest.mark.parametrize('query, expected', [
    ('required=HW_CPU_X86_AVX', {'c1', 'root'}),
    ('required=HW_CPU_X86_AVX,CUSTOM_A', {'c1'}),
    ('required=!HW_CPU_X86_AVX', {'c2', 'g1', 'lone'}),
    ('required=!CUSTOM_A,!CUSTOM_B', {'root', 'lone'}),
    ('required=CUSTOM_A,!CUSTOM_B', {'c1'}),
    ('required=in:CUSTOM_A,CUSTOM_B', {'c1', 'c2', 'g1'}),
    ('required=in:CUSTOM_A,CUSTOM_B&required=!HW_CPU_X86_AVX', {'c2', 'g1'}),
    ('required=CUSTOM_A&required=CUSTOM_B', {'g1'}),
    ('required=in:CUSTOM_A,HW_CPU_X86_AVX&required=in:CUSTOM_B,HW_CPU_X86_AVX', {'c1', 'g1',
                                                                                'root'}),
    ('required=HW_CPU_X86_SSE', set()),
])
def test_required_traits(api, forest, query, expected):
    assert names(api.get(f'/resource_providers?{query}')) == expected


def test_required_from_1_18(api, forest):
    assert names(api.get('/resource_providers?required=CUSTOM_A,CUSTOM_B',
                         version='1.18')) == {'g1'}


def test_repeated_required_before_1_39_uses_the_last(api, forest):
    response = api.get('/resource_providers?required=CUSTOM_A&required=CUSTOM_B', version='1.38')
    assert names(response) == {'c2', 'g1'}


def test_forbidden_trait_is_refused_before_1_22(api, forest):
    response = api.get('/resource_providers?required=!CUSTOM_A', version='1.21')
    assert_error(response, 400, "Expected 'required' parameter value of the form: "
                                'HW_CPU_X86_VMX,CUSTOM_MAGIC. Got: !CUSTOM_A', code=None)


def test_any_of_traits_is_refused_before_1_39(api, forest):
    response = api.get('/resource_providers?required=in:CUSTOM_A,CUSTOM_B', version='1.38')
    assert_error(response, 400, "The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' only supported "
                                'since microversion 1.39. Got: in:CUSTOM_A,CUSTOM_B')


def test_filters_combine(api, forest):
    query = (f'in_tree={forest["g1"]}&member_of={AGG_A}&required=!CUSTOM_A'
             f'&name=root&uuid={forest["root"]}')
    assert names(api.get(f'/resource_providers?{query}')) == {'root'}


@pytest.mark.parametrize('inventory, used, amount, found', [
    ({'total': 8}, 6, 2, True),
    ({'total': 8}, 6, 3, False),
    ({'total': 8, 'reserved': 4}, 0, 4, True),
    ({'total': 8, 'reserved': 4}, 0, 5, False),
    ({'total': 4, 'allocation_ratio': 2.0}, 0, 8, True),
    ({'total': 4, 'allocation_ratio': 2.0}, 0, 9, False),
    ({'total': 10, 'reserved': 2, 'allocation_ratio': 1.5}, 4, 8, True),
    ({'total': 10, 'reserved': 2, 'allocation_ratio': 1.5}, 4, 9, False),
    ({'total': 8, 'min_unit': 2}, 0, 1, False),
    ({'total': 8, 'min_unit': 2}, 0, 2, True),
    ({'total': 8, 'max_unit': 4}, 0, 4, True),
    ({'total': 8, 'max_unit': 4}, 0, 5, False),
    ({'total': 8, 'step_size': 2}, 0, 3, False),
    ({'total': 8, 'step_size': 2}, 0, 4, True),
    ({'total': 8, 'reserved': 8}, 0, 1, False),
])
def test_resources_filter_is_capacity_aware(api, inventory, used, amount, found):
    rp_uuid = api.create_provider(name='cn')['uuid']
    api.set_inventory(rp_uuid, {'VCPU': inventory})
    if used:
        assert api.allocate(new_uuid(), {rp_uuid: {'VCPU': used}}).status_code == 204
    expected = {'cn'} if found else set()
    assert names(api.get(f'/resource_providers?resources=VCPU:{amount}')) == expected


def test_resources_filter_needs_every_class_on_the_provider_itself(api):
    both = api.create_provider(name='both')['uuid']
    api.set_inventory(both, {'VCPU': {'total': 4}, 'MEMORY_MB': {'total': 1024}})
    vcpu_only = api.create_provider(name='vcpu-only')['uuid']
    api.set_inventory(vcpu_only, {'VCPU': {'total': 4}})
    api.create_provider(name='child-of-vcpu-only', parent=vcpu_only)
    assert names(api.get('/resource_providers?resources=VCPU:1,MEMORY_MB:1024')) == {'both'}
    assert names(api.get('/resource_providers?resources=VCPU:1,MEMORY_MB:1025')) == set()
    assert names(api.get('/resource_providers?resources=VCPU:4', version='1.4')) == \
        {'both', 'vcpu-only'}


def test_usage_of_other_providers_does_not_count(api):
    busy = api.create_provider(name='busy')['uuid']
    idle = api.create_provider(name='idle')['uuid']
    for rp_uuid in (busy, idle):
        api.set_inventory(rp_uuid, {'VCPU': {'total': 4}})
    assert api.allocate(new_uuid(), {busy: {'VCPU': 4}}).status_code == 204
    assert names(api.get('/resource_providers?resources=VCPU:4')) == {'idle'}


@pytest.mark.parametrize('query', [
    'resources=VCPU:100000000000000000000', 'resources=VCPU:9223372036854775808',
    'resources=VCPU:2147483648',
])
def test_huge_resource_amounts_match_nothing(api, query):
    rp_uuid = api.create_provider()['uuid']
    api.set_inventory(rp_uuid, {'VCPU': {'total': 2147483647}})
    assert names(api.get(f'/resource_providers?{query}')) == set()


@pytest.mark.parametrize('param, version', [
    ('member_of', '1.2'), ('resources', '1.3'), ('in_tree', '1.13'), ('required', '1.17'),
    ('foo', '1.39'),
])
def test_filters_before_their_microversion_are_400(api, param, version):
    value = {'member_of': AGG_A, 'resources': 'VCPU:1', 'in_tree': AGG_A,
             'required': 'HW_CPU_X86_AVX', 'foo': 'bar'}[param]
    response = api.get(f'/resource_providers?{param}={value}', version=version)
    code = UNDEFINED if version == '1.39' else None
    assert_error(response, 400, 'Invalid query string parameters: Additional properties are not '
                                f"allowed ('{param}' was unexpected)", code=code)


@pytest.mark.parametrize('query, detail', [
    ('uuid=not-a-uuid', "Invalid query string parameters: 'not-a-uuid' is not a 'uuid'"),
    (f'uuid={AGG_A.replace("-", "")}', "is not a 'uuid'"),
    ('in_tree=not-a-uuid', "Invalid query string parameters: 'not-a-uuid' is not a 'uuid'"),
    ('in_tree=%E8%AE%A1%E7%AE%97', "is not a 'uuid'"),
    ('member_of=not-a-uuid', "Expected 'member_of' parameter to contain valid UUID(s). Got: "
                             'not-a-uuid'),
    ('member_of=', "Expected 'member_of' parameter to contain valid UUID(s). Got: "),
    ('member_of=in:', "Expected 'member_of' parameter to contain valid UUID(s)."),
    (f'member_of=in:{AGG_A},', "Expected 'member_of' parameter to contain valid UUID(s)."),
    (f'member_of={AGG_A},{AGG_B}', "Multiple values for 'member_of' must be prefixed with the "
                                   "'in:' or '!in:' keyword using the valid microversion."),
    ('resources=', 'Badly formed resources parameter. Expected resources query string '
                   'parameter in form: ?resources=VCPU:2,MEMORY_MB:1024. Got: empty string.'),
    ('resources=VCPU', 'Badly formed resources parameter. Expected resources query string '
                       'parameter in form: ?resources=VCPU:2,MEMORY_MB:1024. Got: VCPU.'),
    ('resources=VCPU:1:2', 'Got: VCPU:1:2.'),
    ('resources=VCPU:1,', 'Badly formed resources parameter.'),
    ('resources=VCPU:x', 'Requested resource VCPU expected positive integer amount. Got: x.'),
    ('resources=VCPU:1.5', 'Requested resource VCPU expected positive integer amount.'),
    ('resources=VCPU:0', 'Requested resource VCPU requires amount >= 1. Got: 0.'),
    ('resources=VCPU:-1', 'Requested resource VCPU requires amount >= 1. Got: -1.'),
    ('resources=vcpu:1', 'Invalid resource class in resources parameter: No such resource '
                         'class vcpu.'),
    ('resources=CUSTOM_NOPE:1', 'No such resource class CUSTOM_NOPE.'),
    ('resources=%E8%AE%A1%E7%AE%97:1', 'No such resource class 计算.'),
    ('resources=VCPU%00:1', 'No such resource class VCPU\x00.'),
    ('required=', "Expected 'required' parameter value of the form: HW_CPU_X86_VMX,"
                  '!CUSTOM_MAGIC. Got an empty trait in: '),
    ('required=!', 'Got an empty trait in: !'),
    ('required=HW_CPU_X86_AVX,', 'Got an empty trait in: HW_CPU_X86_AVX,'),
    ('required=in:', 'Got an empty trait in: in:'),
    ('required=in:HW_CPU_X86_AVX,!CUSTOM_A', "The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' does "
                                             'not support forbidden traits.'),
    ('required=CUSTOM_NOPE', 'Invalid trait(s) in "required" parameter: No such trait(s): '
                             'CUSTOM_NOPE.'),
    ('required=hw_cpu_x86_avx', 'No such trait(s): hw_cpu_x86_avx.'),
    ('required=%E8%AE%A1%E7%AE%97', 'No such trait(s): 计算.'),
    ('required=A%00B', 'No such trait(s): A\x00B.'),
    ('required=in:HW_CPU_X86_AVX,CUSTOM_NOPE', 'No such trait(s): CUSTOM_NOPE.'),
    ('required=CUSTOM_NOPE&required=HW_CPU_X86_AVX', 'No such trait(s): CUSTOM_NOPE.'),
])
def test_bad_list_query_is_400(api, query, detail):
    api.create_provider()
    with unchanged():
        assert_error(api.get(f'/resource_providers?{query}'), 400, detail)


@pytest.mark.parametrize('query', ['name=a%00b', 'name=%E8%AE%A1%E7%AE%97', 'name=a&name=b'])
def test_odd_names_in_the_list_query_match_nothing(api, query):
    api.create_provider(name='a')
    assert names(api.get(f'/resource_providers?{query}')) == set()


def test_an_empty_name_filter_is_ignored_as_placement_does(api):
    api.create_provider(name='a')
    api.create_provider(name='b')
    assert names(api.get('/resource_providers?name=')) == {'a', 'b'}


# ---- bad bodies -----------------------------------------------------------------

def _body_cases(uuid_value):
    return [
        ({'name': 'x' * 201}, 'is too long'),
        ({}, "'name' is a required property"),
        ({'uuid': uuid_value}, "'name' is a required property"),
        ({'name': 5}, "5 is not of type 'string'"),
        ({'name': None}, "None is not of type 'string'"),
        ({'name': ['cn1']}, "['cn1'] is not of type 'string'"),
        ({'name': 'cn1', 'foo': 1}, "Additional properties are not allowed ('foo' was unexpected)"),
        ({'name': 'cn1', 'generation': 0}, "('generation' was unexpected)"),
        ({'name': 'cn1', 'parent_provider_uuid': 'xyz'}, "'xyz' is not a 'uuid'"),
        ({'name': 'cn1', 'parent_provider_uuid': 5}, 'is not valid under any of the given schemas'),
        ({'name': 'cn1', 'parent_provider_uuid': uuid_value[:-1]}, "is not a 'uuid'"),
        (['cn1'], "['cn1'] is not of type 'object'"),
        ('cn1', "'cn1' is not of type 'object'"),
        (None, "None is not of type 'object'"),
        (5, "5 is not of type 'object'"),
    ]


POST_ONLY_CASES = [
    ({'name': 'cn1', 'uuid': 'not-a-uuid'}, "'not-a-uuid' is not a 'uuid'"),
    ({'name': 'cn1', 'uuid': '计算节点'}, "is not a 'uuid'"),
    ({'name': 'cn1', 'uuid': 5}, "5 is not of type 'string'"),
    ({'name': 'cn1', 'uuid': None}, "None is not of type 'string'"),
    ({'name': 'cn1', 'uuid': str(uuid_lib.uuid4()) + 'a'}, "is not a 'uuid'"),
    ({'name': 'cn1', 'uuid': str(uuid_lib.uuid4())[:-1]}, "is not a 'uuid'"),
]


@pytest.mark.parametrize('body, detail', _body_cases(str(uuid_lib.uuid4())) + POST_ONLY_CASES)
def test_create_with_bad_body_is_400(api, body, detail):
    with unchanged():
        response = api.request('POST', '/resource_providers', raw=json.dumps(body))
        error = assert_error(response, 400, 'JSON does not validate: ')
        assert detail in error['detail']


@pytest.mark.parametrize('body, detail', _body_cases(str(uuid_lib.uuid4())) + [
    ({'name': 'cn1', 'uuid': str(uuid_lib.uuid4())}, "('uuid' was unexpected)"),
])
def test_update_with_bad_body_is_400(api, body, detail):
    rp_uuid = api.create_provider(name='cn0')['uuid']
    with unchanged():
        response = api.request('PUT', rp_path(rp_uuid), raw=json.dumps(body))
        error = assert_error(response, 400, 'JSON does not validate: ')
        assert detail in error['detail']


@pytest.mark.parametrize('method', ['POST', 'PUT'])
def test_parent_before_1_14_is_an_unknown_field(api, method):
    parent = api.create_provider(name='parent')['uuid']
    rp_uuid = api.create_provider(name='rp')['uuid']
    path = '/resource_providers' if method == 'POST' else rp_path(rp_uuid)
    with unchanged():
        response = api.request(method, path, {'name': 'rp2', 'parent_provider_uuid': parent},
                               version='1.13')
        assert_error(response, 400, "Additional properties are not allowed ('parent_provider_uuid' "
                                    'was unexpected)', code=None)


@pytest.mark.parametrize('raw, detail', [
    ('{', 'Malformed JSON: Expecting property name enclosed in double quotes'),
    ('{"name": "a",}', 'Malformed JSON: Expecting property name enclosed in double quotes: '
                       'line 1 column 14 (char 13)'),
    (' ', 'Malformed JSON: Expecting value: line 1 column 2 (char 1)'),
    ("{'name': 'a'}", 'Malformed JSON: Expecting property name enclosed in double quotes'),
    ('{"name": "a"} x', 'Malformed JSON: Extra data'),
    (b'{"name": "\xff"}', "Malformed JSON: 'utf-8' codec can't decode byte 0xff"),
])
@pytest.mark.parametrize('method', ['POST', 'PUT'])
def test_malformed_json_is_400(api, method, raw, detail):
    rp_uuid = api.create_provider(name='cn0')['uuid']
    path = '/resource_providers' if method == 'POST' else rp_path(rp_uuid)
    with unchanged():
        assert_error(api.request(method, path, raw=raw), 400, detail)


def assert_write_refused(api, method, status, detail, body=None, **kwargs):
    """A POST of `body` to /resource_providers, or a PUT of it to a provider
    'cn0' (made first), is refused with `status` and `detail` and changes
    nothing."""
    rp_uuid = api.create_provider(name='cn0')['uuid']
    path = '/resource_providers' if method == 'POST' else rp_path(rp_uuid)
    with unchanged():
        assert_error(api.request(method, path, body, **kwargs), status, detail)


@pytest.mark.parametrize('content_type, shown', [
    ('text/plain', 'text/plain'), ('application/xml', 'application/xml'),
    ('application/x-www-form-urlencoded', 'application/x-www-form-urlencoded'),
    ('application/json-patch+json', 'application/json-patch+json'),
])
@pytest.mark.parametrize('method', ['POST', 'PUT'])
def test_wrong_content_type_is_415(api, method, content_type, shown):
    assert_write_refused(api, method, 415,
                         f'The media type {shown} is not supported, use application/json',
                         {'name': 'cn1'}, content_type=content_type)


@pytest.mark.parametrize('method', ['POST', 'PUT'])
def test_missing_content_type_and_body_is_415(api, method):
    assert_write_refused(api, method, 415,
                         'The media type None is not supported, use application/json')


@pytest.mark.parametrize('method', ['POST', 'PUT'])
def test_body_without_content_type_is_400(api, method):
    assert_write_refused(api, method, 400, 'content-type header required when content-length > 0',
                         {'name': 'cn1'}, content_type='')


def test_content_type_parameters_are_allowed(api):
    response = api.post('/resource_providers', {'name': 'cn1'},
                        content_type='application/json; charset=UTF-8')
    assert response.status_code == 200
    assert response.body == provider_body(response.body['uuid'], 'cn1')


def test_content_type_is_matched_exactly_as_placement_does(api):
    with unchanged():
        response = api.post('/resource_providers', {'name': 'cn1'}, content_type='APPLICATION/JSON')
        assert_error(response, 415, 'The media type APPLICATION/JSON is not supported')


def test_nul_in_a_name_is_never_a_server_error(api):
    # Refused before any lookup on every database: PostgreSQL cannot store a NUL.
    with unchanged():
        response = api.post('/resource_providers', {'name': 'a\x00b'})
        assert_error(response, 400, 'Malformed JSON: NUL characters (\\u0000) are not allowed')


@pytest.mark.parametrize('method', ['PATCH', 'OPTIONS'])
def test_other_methods_are_405(api, method):
    response = api.request(method, '/resource_providers')
    assert response['Allow'] == 'GET, POST'
    error = assert_error(response, 405)
    assert error['detail'] == (f'The method {method} is not allowed for this resource. \n\n '
                               'The method specified is not allowed for this resource.')


def test_head_is_405_without_a_body(api):
    response = api.request('HEAD', '/resource_providers')
    assert response.status_code == 405
    assert response['Allow'] == 'GET, POST'
    assert response.content == b''


@pytest.mark.parametrize('method', ['POST', 'PUT'])
@pytest.mark.parametrize('name, character, position', [('\\ud800', '\\ud800', 0),
                                                     ('cn\\udfffx', '\\udfff', 2)])
def test_lone_surrogate_in_a_name_is_400(api, method, name, character, position):
    rp_uuid = api.create_provider(name='cn0')['uuid']
    path = '/resource_providers' if method == 'POST' else rp_path(rp_uuid)
    with unchanged():
        response = api.request(method, path, raw='{"name": "%s"}' % name)
        assert_error(response, 400, "Malformed JSON: 'utf-8' codec can't encode character "
                                    f"'{character}' in position {position}: surrogates not allowed")


@pytest.mark.parametrize('query', ['name=%FF', 'required=%FF', 'name=%ED%A0%80'])
def test_undecodable_query_string_is_400(api, query):
    response = api.get(f'/resource_providers?{query}')
    assert_error(response, 400, "Invalid query string parameters: 'utf-8' codec can't decode byte")
