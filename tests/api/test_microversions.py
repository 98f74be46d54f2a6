"""The version document and microversion negotiation (header in, header out)."""
from email.utils import parsedate_to_datetime

import os_resource_classes
import pytest
from django.utils import timezone
from django.utils.http import http_date

from tests.support.api import error_of

pytestmark = pytest.mark.any_database


def test_root_lists_the_supported_range_without_credentials(api):
    response = api.get('/', token=False, version=False)
    assert response.status_code == 200
    assert response.body == {'versions': [{
        'id': 'v1.0', 'min_version': '1.0', 'max_version': '1.39', 'status': 'CURRENT',
        'links': [{'rel': 'self', 'href': ''}]}]}


def test_no_header_means_microversion_1_0(api):
    response = api.get('/', version=False)
    assert response['OpenStack-API-Version'] == 'placement 1.0'
    assert response['Vary'] == 'openstack-api-version'


def test_latest_means_1_39(api):
    assert api.get('/', version='latest')['OpenStack-API-Version'] == 'placement 1.39'


@pytest.mark.parametrize('value, reason', [
    ('pony.horse', "invalid literal for int() with base 10: 'pony'"),
    ('1.2.3', "invalid literal for int() with base 10: '2.3'"),
    ('1', "Version.__new__() missing 1 required positional argument: 'minor'"),
    ('one.two', "invalid literal for int() with base 10: 'one'"),
])
def test_malformed_version_is_400(api, value, reason):
    response = api.get('/', version=value)
    assert response.status_code == 400
    assert error_of(response)['detail'] == (
        'The server could not comply with the request since it is either malformed or otherwise '
        f'incorrect.\n\n Invalid microversion: invalid version string: {value}; {reason}  ')


@pytest.mark.parametrize('value', ['0.5', '1.40', '2.0', '1.99'])
def test_version_outside_range_is_406_with_the_range(api, value):
    response = api.get('/resource_providers', version=value)
    assert response.status_code == 406
    error = error_of(response)
    assert error == {
        'status': 406, 'title': 'Not Acceptable',
        'detail': 'The resource could not be generated that was acceptable to your browser '
                  '(content of type application/json. \n\n Invalid microversion: Unacceptable '
                  f'version header: {value}',
        'request_id': response['x-openstack-request-id'],
        'min_version': '1.0', 'max_version': '1.39'}


def test_cache_headers_from_1_15(api):
    old, new = api.get('/', version='1.14'), api.get('/', version='1.15')
    assert 'Last-Modified' not in old and 'Cache-Control' not in old
    assert new['Cache-Control'] == 'no-cache'
    # The root has no modification time: Placement sends the current time.
    moment = parsedate_to_datetime(new['Last-Modified'])
    assert new['Last-Modified'] == http_date(moment.timestamp())
    assert abs((timezone.now() - moment).total_seconds()) < 60


def test_error_codes_appear_from_1_23(api):
    assert 'code' not in error_of(api.get('/nowhere', version='1.22'))
    assert error_of(api.get('/nowhere', version='1.23'))['code'] == 'placement.undefined_code'


def test_routes_added_later_are_404_before_their_microversion(api):
    for path, version in [('/resource_classes', '1.1'), ('/traits', '1.5'),
                          ('/usages?project_id=x', '1.8')]:
        response = api.get(path, version=version)
        assert response.status_code == 404, path
        assert error_of(response) == {'status': 404, 'title': 'Not Found',
                                      'detail': 'The resource could not be found.\n\n   ',
                                      'request_id': response['x-openstack-request-id']}
    response = api.get('/resource_classes', version='1.2')
    assert response.status_code == 200
    assert [rc['name'] for rc in response.body['resource_classes']] == list(
        os_resource_classes.STANDARDS)
