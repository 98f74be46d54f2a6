"""/traits[/{name}] and /resource_providers/{uuid}/traits: listing with
filters, custom traits, provider traits under the generation guard, and
refusal of bad input."""
import json
import uuid as uuid_lib
from urllib.parse import quote

import os_traits
import pytest
from django.utils.http import http_date

from providers.models import Trait
from tests.support.api import assert_error
from tests.support.api import assert_not_acceptable
from tests.support.api import assert_put_media_type_refused
from tests.support.api import generation
from tests.support.api import new_uuid
from tests.support.state import unchanged

CONCURRENT = 'placement.concurrent_update'
INVALID_TRAIT = ('The trait is invalid. A valid trait must be no longer than 255 characters, '
                 'start with the prefix "CUSTOM_" and use following characters: "A"-"Z", '
                 '"0"-"9" and "_"')
STANDARD = frozenset(os_traits.get_traits())
GENERATION_CHANGED = ("Resource provider's generation already changed. Please update the "
                      'generation and try again.')


def trait_names(response):
    """The traits listed (in no defined order), each listed once."""
    assert response.status_code == 200, response.content
    listed = response.body['traits']
    assert len(listed) == len(set(listed)), listed
    return set(listed)


@pytest.fixture
def rp(api):
    return api.create_provider(name='cn1')['uuid']


def rp_traits(rp_uuid):
    return f'/resource_providers/{rp_uuid}/traits'


# ---- /traits -------------------------------------------------------------------------

def test_not_there_before_1_6(api):
    assert_error(api.get('/traits', version='1.5'), 404, code=None)
    assert_error(api.put('/traits/CUSTOM_X', version='1.5'), 404, code=None)
    assert_error(api.get(rp_traits(new_uuid()), version='1.5'), 404, code=None)


def test_list_has_the_standard_traits(api):
    assert trait_names(api.get('/traits')) == STANDARD


def test_create_custom_trait_201_then_204(api):
    response = api.put('/traits/CUSTOM_GOLD')
    assert response.status_code == 201
    assert response.content == b''
    assert response['Location'] == 'http://testserver/traits/CUSTOM_GOLD'
    assert response['Cache-Control'] == 'no-cache'
    again = api.put('/traits/CUSTOM_GOLD')
    assert again.status_code == 204
    assert again.content == b''
    assert again['Location'] == 'http://testserver/traits/CUSTOM_GOLD'
    assert trait_names(api.get('/traits')) == STANDARD | {'CUSTOM_GOLD'}


def test_create_ignores_body_and_content_type(api):
    response = api.put('/traits/CUSTOM_GOLD', raw='{', content_type='text/plain')
    assert response.status_code == 201
    assert api.get('/traits/CUSTOM_GOLD').status_code == 204


def test_cache_headers_on_trait_writes_from_1_15(api):
    assert 'Cache-Control' not in api.put('/traits/CUSTOM_GOLD', version='1.14')
    assert api.put('/traits/CUSTOM_GOLD', version='1.15')['Cache-Control'] == 'no-cache'


def test_show_trait_is_204(api):
    assert api.put('/traits/CUSTOM_GOLD').status_code == 201
    for name in ('CUSTOM_GOLD', 'HW_CPU_X86_AVX'):
        response = api.get(f'/traits/{name}')
        assert response.status_code == 204
        assert response.content == b''
        created = Trait.objects.get(name=name).created_at
        assert response['Last-Modified'] == http_date(created.timestamp())


def test_show_trait_does_not_check_accept(api):
    assert api.get('/traits/HW_CPU_X86_AVX', headers={'Accept': 'text/plain'}).status_code == 204


@pytest.mark.parametrize('name', ['CUSTOM_NOPE', 'hw_cpu_x86_avx', 'CUSTOM_A%00'])
def test_show_unknown_trait_is_404(api, name):
    shown = name.replace('%00', '\x00')
    assert_error(api.get(f'/traits/{name}'), 404, f'No such trait(s): {shown}.')


@pytest.mark.parametrize('name', [
    'HW_CPU_X86_NEW', 'custom_gold', 'CUSTOM_gold', 'CUSTOM_', 'CUSTOM_A%20B', 'CUSTOM_A-B',
    'CUSTOM_A.B', quote('CUSTOM_ÄÖ'), quote('计算节点'), 'CUSTOM_' + 'A' * 249, 'CUSTOM_A%00',
    'CUSTOM',
])
def test_create_invalid_trait_is_400(api, name):
    with unchanged():
        assert_error(api.put(f'/traits/{name}'), 400, INVALID_TRAIT)


def test_longest_custom_trait_is_accepted(api):
    name = 'CUSTOM_' + 'A' * 248
    assert api.put(f'/traits/{name}').status_code == 201
    assert api.get(f'/traits/{name}').status_code == 204


def test_delete_custom_trait(api):
    assert api.put('/traits/CUSTOM_GOLD').status_code == 201
    response = api.delete('/traits/CUSTOM_GOLD')
    assert response.status_code == 204
    assert response.content == b''
    assert_error(api.get('/traits/CUSTOM_GOLD'), 404, 'No such trait(s): CUSTOM_GOLD.')


def test_delete_standard_trait_is_400(api):
    with unchanged():
        assert_error(api.delete('/traits/HW_CPU_X86_AVX'), 400,
                     'Cannot delete standard trait HW_CPU_X86_AVX.')


@pytest.mark.parametrize('name', ['CUSTOM_NOPE', 'custom_nope', 'CUSTOM_A%00'])
def test_delete_unknown_trait_is_404(api, name):
    with unchanged():
        assert_error(api.delete(f'/traits/{name}'), 404,
                     f"No such trait(s): {name.replace('%00', chr(0))}.")


def test_delete_trait_in_use_is_409(api, rp):
    assert api.put('/traits/CUSTOM_GOLD').status_code == 201
    api.set_traits(rp, ['CUSTOM_GOLD'])
    with unchanged():
        assert_error(api.delete('/traits/CUSTOM_GOLD'), 409,
                     'The trait CUSTOM_GOLD is in use by a resource provider.')
    assert api.delete(rp_traits(rp)).status_code == 204
    assert api.delete('/traits/CUSTOM_GOLD').status_code == 204


@pytest.fixture
def catalogue(api, rp):
    """CUSTOM_GOLD and CUSTOM_SILVER on cn1 with HW_CPU_X86_AVX; CUSTOM_BRONZE unused."""
    for name in ('CUSTOM_GOLD', 'CUSTOM_SILVER', 'CUSTOM_BRONZE'):
        assert api.put(f'/traits/{name}').status_code == 201
    other = api.create_provider(name='cn2')['uuid']
    api.set_traits(rp, ['CUSTOM_GOLD', 'CUSTOM_SILVER', 'HW_CPU_X86_AVX'])
    api.set_traits(other, ['CUSTOM_GOLD'])
    return rp


@pytest.mark.parametrize('query, expected', [
    ('name=in:CUSTOM_GOLD,HW_CPU_X86_AVX,CUSTOM_NOPE', {'CUSTOM_GOLD', 'HW_CPU_X86_AVX'}),
    ('name=in:CUSTOM_GOLD,', {'CUSTOM_GOLD'}),
    ('name=in:', set()),
    ('name=startswith:CUSTOM_', {'CUSTOM_GOLD', 'CUSTOM_SILVER', 'CUSTOM_BRONZE'}),
    ('name=startswith:CUSTOM_S', {'CUSTOM_SILVER'}),
    ('name=startswith:CUSTOM_&associated=true', {'CUSTOM_GOLD', 'CUSTOM_SILVER'}),
    ('name=startswith:CUSTOM_&associated=false', {'CUSTOM_BRONZE'}),
    ('name=startswith:CUSTOM_&associated=TRUE', {'CUSTOM_GOLD', 'CUSTOM_SILVER'}),
    ('name=in:CUSTOM_GOLD,CUSTOM_BRONZE&associated=false', {'CUSTOM_BRONZE'}),
    ('associated=true', {'CUSTOM_GOLD', 'CUSTOM_SILVER', 'HW_CPU_X86_AVX'}),
    ('name=in:%E8%AE%A1%E7%AE%97,CUSTOM_GOLD', {'CUSTOM_GOLD'}),
    ('name=in:A%00B', set()),
    ('name=startswith:%00', set()),
])
def test_list_filters(api, catalogue, query, expected):
    assert trait_names(api.get(f'/traits?{query}')) == expected


def test_associated_false_excludes_every_trait_in_use(api, catalogue):
    unused = trait_names(api.get('/traits?associated=false'))
    assert unused == STANDARD - {'HW_CPU_X86_AVX'} | {'CUSTOM_BRONZE'}


@pytest.mark.parametrize('query, detail', [
    ('name=CUSTOM_GOLD', 'Badly formatted name parameter. Expected name query string parameter in '
                         'form: ?name=[in|startswith]:[name1,name2|prefix]. Got: "CUSTOM_GOLD"'),
    ('name=', 'Badly formatted name parameter. Expected name query string parameter in form: '
              '?name=[in|startswith]:[name1,name2|prefix]. Got: ""'),
    ('associated=maybe', 'The query parameter "associated" only accepts "true" or "false"'),
    ('associated=', 'The query parameter "associated" only accepts "true" or "false"'),
    ('associated=1', 'The query parameter "associated" only accepts "true" or "false"'),
    ('foo=bar', "Invalid query string parameters: Additional properties are not allowed ('foo' "
                'was unexpected)'),
])
def test_list_bad_query_is_400(api, catalogue, query, detail):
    with unchanged():
        assert_error(api.get(f'/traits?{query}'), 400, detail)


def test_list_with_undecodable_query_string_is_400(api):
    response = api.get('/traits?name=in:%FF')
    assert_error(response, 400, "Invalid query string parameters: 'utf-8' codec can't decode byte "
                                '0xff in position 3')


def test_list_with_accept_text_plain_is_406(api):
    assert_not_acceptable(api.get('/traits', headers={'Accept': 'text/plain'}))


@pytest.mark.parametrize('method, path', [('POST', '/traits'), ('DELETE', '/traits'),
                                          ('POST', '/traits/CUSTOM_GOLD'),
                                          ('PATCH', '/traits/CUSTOM_GOLD')])
def test_other_methods_are_405(api, method, path):
    with unchanged():
        assert_error(api.request(method, path, {}), 405,
                     f'The method {method} is not allowed for this resource.')


# ---- /resource_providers/{uuid}/traits -------------------------------------------------

def test_a_new_provider_has_no_traits(api, rp):
    response = api.get(rp_traits(rp))
    assert response.status_code == 200
    assert response.body == {'traits': [], 'resource_provider_generation': 0}


def assert_traits_set(api, rp, traits, at, expected):
    """PUT `traits` on rp at generation `at`: 200, and the answer and a read
    after it both give the `expected` traits (in any order) at the next
    generation."""
    response = api.put(rp_traits(rp), {'traits': traits,
                                       'resource_provider_generation': at})
    assert response.status_code == 200
    for body in (response.body, api.get(rp_traits(rp)).body):
        assert {**body, 'traits': sorted(body['traits'])} == {
            'traits': expected, 'resource_provider_generation': at + 1}


def test_set_provider_traits(api, rp):
    assert api.put('/traits/CUSTOM_GOLD').status_code == 201
    assert_traits_set(api, rp, ['CUSTOM_GOLD', 'HW_CPU_X86_AVX'], 0,
                      expected=['CUSTOM_GOLD', 'HW_CPU_X86_AVX'])
    assert generation(api, rp) == 1


def test_set_replaces_the_whole_set(api, rp):
    api.set_traits(rp, ['HW_CPU_X86_AVX', 'HW_CPU_X86_SSE'])
    assert_traits_set(api, rp, ['HW_CPU_X86_SSE', 'HW_CPU_X86_AVX2'], 1,
                      expected=['HW_CPU_X86_AVX2', 'HW_CPU_X86_SSE'])


def test_setting_the_same_traits_keeps_the_generation(api, rp):
    api.set_traits(rp, ['HW_CPU_X86_AVX'])
    response = api.put(rp_traits(rp), {'traits': ['HW_CPU_X86_AVX', 'HW_CPU_X86_AVX'],
                                       'resource_provider_generation': 1})
    assert response.body == {'traits': ['HW_CPU_X86_AVX'], 'resource_provider_generation': 1}


@pytest.mark.parametrize('version, code', [('1.6', None), ('1.39', CONCURRENT)])
def test_set_with_a_stale_generation_is_409(api, rp, version, code):
    api.set_traits(rp, ['HW_CPU_X86_AVX'])
    with unchanged():
        response = api.put(rp_traits(rp), {'traits': [], 'resource_provider_generation': 0},
                           version=version)
        assert_error(response, 409, GENERATION_CHANGED, code=code)


@pytest.mark.parametrize('generation_value', [2 ** 31, 10 ** 20, -1])
def test_set_with_a_huge_or_negative_generation_is_409(api, rp, generation_value):
    with unchanged():
        response = api.put(rp_traits(rp), {'traits': [],
                                           'resource_provider_generation': generation_value})
        assert_error(response, 409, GENERATION_CHANGED, code=CONCURRENT)


def test_delete_provider_traits(api, rp):
    api.set_traits(rp, ['HW_CPU_X86_AVX'])
    response = api.delete(rp_traits(rp))
    assert response.status_code == 204
    assert response.content == b''
    assert api.get(rp_traits(rp)).body == {'traits': [], 'resource_provider_generation': 2}
    assert api.delete(rp_traits(rp)).status_code == 204
    assert generation(api, rp) == 2


@pytest.mark.parametrize('value', [str(uuid_lib.uuid4()), 'not-a-uuid'])
def test_unknown_provider_is_404(api, value):
    with unchanged():
        path = rp_traits(quote(value))
        assert_error(api.get(path), 404, f'No resource provider with uuid {value} found')
        assert_error(api.put(path, {'traits': [], 'resource_provider_generation': 0}), 404,
                     f'No resource provider with uuid {value} found')
        assert_error(api.delete(path), 404, f'No resource provider with uuid {value} found')


@pytest.mark.parametrize('traits, detail', [
    (['CUSTOM_NOPE'], 'No such trait CUSTOM_NOPE'),
    (['CUSTOM_NOPE', 'CUSTOM_NOPE2'], 'No such trait CUSTOM_NOPE, CUSTOM_NOPE2'),
    (['HW_CPU_X86_AVX', 'custom_x'], 'No such trait custom_x'),
    (['计算节点'], 'No such trait 计算节点'),
    (['CUSTOM_ÄÖ'], 'No such trait CUSTOM_ÄÖ'),
    # Refused before any lookup: PostgreSQL cannot even compare a NUL.
    (['A\x00'], 'Malformed JSON: NUL characters'),
])
def test_set_unknown_traits_is_400(api, rp, traits, detail):
    api.set_traits(rp, ['HW_CPU_X86_SSE'])
    with unchanged():
        response = api.put(rp_traits(rp), {'traits': traits, 'resource_provider_generation': 1})
        assert_error(response, 400, detail)


def test_set_with_a_lone_surrogate_is_400(api, rp):
    with unchanged():
        response = api.request('PUT', rp_traits(rp),
                               raw='{"traits": ["\\ud800"], "resource_provider_generation": 0}')
        assert_error(response, 400, "Malformed JSON: 'utf-8' codec can't encode character "
                                    "'\\ud800' in position 0: surrogates not allowed")


@pytest.mark.parametrize('body, detail', [
    ({'traits': []}, "'resource_provider_generation' is a required property"),
    ({'resource_provider_generation': 1}, "'traits' is a required property"),
    ({'traits': 'HW_CPU_X86_AVX', 'resource_provider_generation': 1},
     "'HW_CPU_X86_AVX' is not of type 'array'"),
    ({'traits': [5], 'resource_provider_generation': 1}, "5 is not of type 'string'"),
    ({'traits': [None], 'resource_provider_generation': 1}, "None is not of type 'string'"),
    ({'traits': [''], 'resource_provider_generation': 1}, "'' should be non-empty"),
    ({'traits': ['A' * 256], 'resource_provider_generation': 1}, 'is too long'),
    ({'traits': [], 'resource_provider_generation': '1'}, "'1' is not of type 'integer'"),
    ({'traits': [], 'resource_provider_generation': None}, "None is not of type 'integer'"),
    ({'traits': [], 'resource_provider_generation': 1, 'foo': 1},
     "Additional properties are not allowed ('foo' was unexpected)"),
    (['HW_CPU_X86_AVX'], "['HW_CPU_X86_AVX'] is not of type 'object'"),
    (None, "None is not of type 'object'"),
])
def test_set_with_a_bad_body_is_400(api, rp, body, detail):
    api.set_traits(rp, ['HW_CPU_X86_SSE'])
    with unchanged():
        error = assert_error(api.request('PUT', rp_traits(rp), raw=json.dumps(body)), 400,
                             'JSON does not validate: ')
        assert detail in error['detail']


@pytest.mark.parametrize('raw', ['{', '{"traits": [}', ' ', b'{"traits": ["\xff"]}'])
def test_set_with_malformed_json_is_400(api, rp, raw):
    with unchanged():
        assert_error(api.request('PUT', rp_traits(rp), raw=raw), 400, 'Malformed JSON: ')


@pytest.mark.parametrize('content_type', ['text/plain', 'application/xml'])
def test_set_with_a_wrong_content_type_is_415(api, rp, content_type):
    assert_put_media_type_refused(api, rp_traits(rp), content_type,
                                  {'traits': [], 'resource_provider_generation': 0})


def test_set_without_content_type_is_415(api, rp):
    assert_put_media_type_refused(api, rp_traits(rp), None)


def test_provider_traits_with_accept_text_plain_is_406(api, rp):
    assert_not_acceptable(api.get(rp_traits(rp), headers={'Accept': 'text/plain'}))
