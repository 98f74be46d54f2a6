"""The version document and microversion negotiation (header in, header out)."""
import pytest

from tests.conftest import error_of


def test_root_lists_the_supported_range_without_credentials(api):
    response = api.get('/', token=False, version=False)
    assert response.status_code == 200
    version = response.body['versions'][0]
    assert (version['min_version'], version['max_version']) == ('1.0', '1.39')
    assert version['id'] == 'v1.0' and version['status'] == 'CURRENT'
    assert version['links'] == [{'rel': 'self', 'href': ''}]


def test_no_header_means_microversion_1_0(api):
    response = api.get('/', version=False)
    assert response['OpenStack-API-Version'] == 'placement 1.0'
    assert response['Vary'] == 'openstack-api-version'


def test_latest_means_1_39(api):
    assert api.get('/', version='latest')['OpenStack-API-Version'] == 'placement 1.39'


@pytest.mark.parametrize('value', ['pony.horse', '1.2.3', '1', 'one.two'])
def test_malformed_version_is_400(api, value):
    response = api.get('/', version=value)
    assert response.status_code == 400
    assert 'invalid version string' in error_of(response)['detail']


@pytest.mark.parametrize('value', ['0.5', '1.40', '2.0', '1.99'])
def test_version_outside_range_is_406_with_the_range(api, value):
    response = api.get('/resource_providers', version=value)
    assert response.status_code == 406
    error = error_of(response)
    assert f'Unacceptable version header: {value}' in error['detail']
    assert (error['min_version'], error['max_version']) == ('1.0', '1.39')


def test_cache_headers_from_1_15(api):
    old, new = api.get('/', version='1.14'), api.get('/', version='1.15')
    assert 'Last-Modified' not in old and 'Cache-Control' not in old
    assert new['Cache-Control'] == 'no-cache'
    assert new['Last-Modified'].endswith(' GMT')


def test_error_codes_appear_from_1_23(api):
    assert 'code' not in error_of(api.get('/nowhere', version='1.22'))
    assert error_of(api.get('/nowhere', version='1.23'))['code'] == 'placement.undefined_code'


def test_routes_added_later_are_404_before_their_microversion(api):
    assert api.get('/resource_classes', version='1.1').status_code == 404
    assert api.get('/resource_classes', version='1.2').status_code == 200
    assert api.get('/traits', version='1.5').status_code == 404
    assert api.get('/usages?project_id=x', version='1.8').status_code == 404
