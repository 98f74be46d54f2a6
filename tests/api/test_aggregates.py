"""/resource_providers/{uuid}/aggregates: the 1.1 list form, the 1.19 form
with the provider generation, and refusal of bad input."""
import json
import uuid as uuid_lib
from urllib.parse import quote

import pytest

from tests.support.api import UNDEFINED
from tests.support.api import assert_error
from tests.support.api import assert_put_media_type_refused
from tests.support.api import error_of
from tests.support.api import generation
from tests.support.state import unchanged


@pytest.fixture
def rp(api):
    return api.create_provider(name='cn1')['uuid']


def agg_path(rp_uuid):
    return f'/resource_providers/{rp_uuid}/aggregates'


AGG1, AGG2 = str(uuid_lib.uuid4()), str(uuid_lib.uuid4())
NOT_ACCEPTABLE = ('406 Not Acceptable\n\nThe resource could not be generated that was acceptable '
                  'to your browser (content of type text/plain. \n\n Only application/json is '
                  'provided')


# ---- microversion 1.1 to 1.18 ------------------------------------------------------

def test_not_there_before_1_1(api, rp):
    assert_error(api.get(agg_path(rp), version='1.0'), 404, code=None)
    assert_error(api.put(agg_path(rp), [AGG1], version='1.0'), 404, code=None)


def test_1_1_lists_and_replaces_with_a_plain_list(api, rp):
    assert api.get(agg_path(rp), version='1.1').body == {'aggregates': []}
    response = api.put(agg_path(rp), [AGG1, AGG2], version='1.1')
    assert response.status_code == 200
    # The order of the aggregates is undefined; sorted lists still catch duplicates.
    assert list(response.body) == ['aggregates']
    assert sorted(response.body['aggregates']) == sorted([AGG1, AGG2])
    shown = api.get(agg_path(rp), version='1.18').body
    assert list(shown) == ['aggregates']
    assert sorted(shown['aggregates']) == sorted([AGG1, AGG2])
    assert api.put(agg_path(rp), [AGG2], version='1.1').body == {'aggregates': [AGG2]}
    assert api.put(agg_path(rp), [], version='1.1').body == {'aggregates': []}


def test_before_1_19_the_generation_stays(api, rp):
    first = api.put(agg_path(rp), [AGG1], version='1.1')
    assert (first.status_code, first.body) == (200, {'aggregates': [AGG1]})
    second = api.put(agg_path(rp), [AGG2], version='1.18')
    assert (second.status_code, second.body) == (200, {'aggregates': [AGG2]})
    assert generation(api, rp) == 0


def test_aggregates_are_shared_between_providers(api, rp):
    other = api.create_provider(name='cn2')['uuid']
    assert api.put(agg_path(rp), [AGG1], version='1.1').body == {'aggregates': [AGG1]}
    assert api.put(agg_path(other), [AGG1], version='1.1').body == {'aggregates': [AGG1]}
    assert api.get(agg_path(other)).body == {'aggregates': [AGG1],
                                             'resource_provider_generation': 0}
    assert api.put(agg_path(rp), [], version='1.1').body == {'aggregates': []}
    assert api.get(agg_path(rp)).body == {'aggregates': [], 'resource_provider_generation': 0}
    assert api.get(agg_path(other)).body == {'aggregates': [AGG1],
                                             'resource_provider_generation': 0}


@pytest.mark.parametrize('form', [str.upper, lambda u: u.replace('-', ''),
                                  lambda u: '{%s}' % u, lambda u: f'urn:uuid:{u}'],
                         ids=['upper', 'no-dashes', 'braces', 'urn'])
def test_aggregate_uuids_are_kept_as_sent(api, rp, form):
    value = form(AGG1)
    response = api.put(agg_path(rp), {'aggregates': [value], 'resource_provider_generation': 0})
    assert response.status_code == 200, response.content
    assert response.body['aggregates'] == [value]
    assert api.get(agg_path(rp)).body['aggregates'] == [value]


def test_the_1_19_body_is_refused_before_1_19(api, rp):
    with unchanged():
        response = api.put(agg_path(rp), {'aggregates': [AGG1], 'resource_provider_generation': 0},
                           version='1.18')
        assert_error(response, 400, "JSON does not validate: {'aggregates': [", code=None)
        assert "is not of type 'array'" in error_of(response)['detail']


# ---- microversion 1.19 ------------------------------------------------------------

def test_1_19_reports_and_bumps_the_generation(api, rp):
    assert api.get(agg_path(rp), version='1.19').body == {
        'aggregates': [], 'resource_provider_generation': 0}
    response = api.put(agg_path(rp), {'aggregates': [AGG1], 'resource_provider_generation': 0},
                       version='1.19')
    assert response.status_code == 200
    assert response.body == {'aggregates': [AGG1], 'resource_provider_generation': 1}
    assert api.get(agg_path(rp)).body == response.body
    assert generation(api, rp) == 1
    response = api.put(agg_path(rp), {'aggregates': [], 'resource_provider_generation': 1})
    assert response.body == {'aggregates': [], 'resource_provider_generation': 2}


def test_1_19_rewriting_the_same_aggregates_still_bumps(api, rp):
    api.set_aggregates(rp, [AGG1])
    response = api.put(agg_path(rp), {'aggregates': [AGG1], 'resource_provider_generation': 1})
    assert response.body == {'aggregates': [AGG1], 'resource_provider_generation': 2}


@pytest.mark.parametrize('version, code', [('1.19', None), ('1.39', 'placement.concurrent_update')])
def test_1_19_stale_generation_is_409(api, rp, version, code):
    api.set_aggregates(rp, [AGG1])
    with unchanged():
        response = api.put(agg_path(rp), {'aggregates': [AGG2], 'resource_provider_generation': 0},
                           version=version)
        assert_error(response, 409, "Resource provider's generation already changed. Please update "
                                    'the generation and try again.', code=code)
    assert api.get(agg_path(rp)).body['aggregates'] == [AGG1]


@pytest.mark.parametrize('generation_value', [2 ** 31, 10 ** 20, -1])
def test_huge_or_negative_generation_is_409(api, rp, generation_value):
    with unchanged():
        response = api.put(agg_path(rp), {'aggregates': [AGG1],
                                          'resource_provider_generation': generation_value})
        assert_error(response, 409, "Resource provider's generation already changed.",
                     code='placement.concurrent_update')


# ---- bad input ------------------------------------------------------------------------

@pytest.mark.parametrize('body, detail', [
    ([AGG1, AGG1], 'has non-unique elements'),
    (['not-a-uuid'], "'not-a-uuid' is not a 'uuid'"),
    (['计算节点'], "is not a 'uuid'"),
    ([AGG1[:-1]], "is not a 'uuid'"),
    ([5], "5 is not of type 'string'"),
    ([None], "None is not of type 'string'"),
    ({'aggregates': [AGG1]}, "is not of type 'array'"),
    (AGG1, "is not of type 'array'"),
    (None, "None is not of type 'array'"),
])
def test_1_1_bad_body_is_400(api, rp, body, detail):
    api.put(agg_path(rp), [AGG2], version='1.1')
    with unchanged():
        response = api.request('PUT', agg_path(rp), raw=json.dumps(body), version='1.1')
        error = assert_error(response, 400, 'JSON does not validate: ', code=None)
        assert detail in error['detail']


@pytest.mark.parametrize('body, detail', [
    ([AGG1], "is not of type 'object'"),
    ({'aggregates': [AGG1]}, "'resource_provider_generation' is a required property"),
    ({'resource_provider_generation': 0}, "'aggregates' is a required property"),
    ({'aggregates': [AGG1], 'resource_provider_generation': 0, 'foo': 1},
     "Additional properties are not allowed ('foo' was unexpected)"),
    ({'aggregates': [AGG1], 'resource_provider_generation': '0'},
     "'0' is not of type 'integer'"),
    ({'aggregates': [AGG1], 'resource_provider_generation': None},
     "None is not of type 'integer'"),
    ({'aggregates': AGG1, 'resource_provider_generation': 0}, "is not of type 'array'"),
    ({'aggregates': [AGG1, AGG1], 'resource_provider_generation': 0},
     'has non-unique elements'),
    ({'aggregates': ['not-a-uuid'], 'resource_provider_generation': 0},
     "'not-a-uuid' is not a 'uuid'"),
    ({'aggregates': ['计算节点'], 'resource_provider_generation': 0}, "is not a 'uuid'"),
    ({'aggregates': [5], 'resource_provider_generation': 0}, "5 is not of type 'string'"),
])
def test_1_19_bad_body_is_400(api, rp, body, detail):
    api.set_aggregates(rp, [AGG2])
    with unchanged():
        error = assert_error(api.request('PUT', agg_path(rp), raw=json.dumps(body)), 400,
                             'JSON does not validate: ')
        assert detail in error['detail']


def test_lone_surrogate_aggregate_is_400(api, rp):
    with unchanged():
        response = api.request('PUT', agg_path(rp), raw='{"aggregates": ["\\ud800"], '
                                                        '"resource_provider_generation": 0}')
        assert_error(response, 400, 'JSON does not validate: ')


@pytest.mark.parametrize('raw', ['[', '{"aggregates": [}', ' ', b'["\xff"]'])
@pytest.mark.parametrize('version', ['1.1', '1.39'])
def test_malformed_json_is_400(api, rp, raw, version):
    with unchanged():
        response = api.request('PUT', agg_path(rp), raw=raw, version=version)
        assert_error(response, 400, 'Malformed JSON: ',
                     code=None if version == '1.1' else UNDEFINED)


@pytest.mark.parametrize('content_type', ['text/plain', 'application/xml'])
def test_wrong_content_type_is_415(api, rp, content_type):
    assert_put_media_type_refused(api, agg_path(rp), content_type,
                                  {'aggregates': [AGG1], 'resource_provider_generation': 0})


def test_missing_content_type_is_415(api, rp):
    assert_put_media_type_refused(api, agg_path(rp), None)


def test_get_with_accept_text_plain_is_406(api, rp):
    response = api.get(agg_path(rp), headers={'Accept': 'text/plain'})
    assert response.status_code == 406
    assert response['Content-Type'] == 'text/plain; charset=UTF-8'
    assert response.content.decode() == NOT_ACCEPTABLE


@pytest.mark.parametrize('value', [str(uuid_lib.uuid4()), 'not-a-uuid'])
def test_unknown_provider_is_404(api, value):
    with unchanged():
        assert_error(api.get(agg_path(quote(value))), 404,
                     f'No resource provider with uuid {value} found')
        response = api.put(agg_path(quote(value)), {'aggregates': [],
                                                    'resource_provider_generation': 0})
        assert_error(response, 404, f'No resource provider with uuid {value} found')


@pytest.mark.parametrize('method', ['POST', 'DELETE', 'PATCH'])
def test_other_methods_are_405(api, rp, method):
    api.set_aggregates(rp, [AGG1])
    with unchanged():
        response = api.request(method, agg_path(rp), [])
        assert_error(response, 405, f'The method {method} is not allowed for this resource.')
