"""Cross-origin requests, as oslo.middleware's CORS filter answers them in
front of OpenStack Placement, when PLACEMENT_CORS_ALLOWED_ORIGINS is set."""
import pytest

pytestmark = pytest.mark.any_database

VALID = 'http://valid.example.com'
INVALID = 'http://invalid.example.com'
CORS_HEADERS = ('Access-Control-Allow-Origin', 'Access-Control-Allow-Credentials',
                'Access-Control-Max-Age', 'Access-Control-Allow-Methods',
                'Access-Control-Allow-Headers', 'Access-Control-Expose-Headers')
EXPOSED = ('X-Auth-Token,X-Openstack-Request-Id,X-Subject-Token,X-Service-Token,'
           'OpenStack-API-Version')


@pytest.fixture
def cors(settings, make_api):
    settings.PLACEMENT_CORS_ALLOWED_ORIGINS = [VALID]
    settings.PLACEMENT_CORS_ALLOW_HEADERS = ['openstack-api-version', 'x-custom']
    return make_api()


def preflight(client, path='/resource_providers', origin=VALID, method='GET', headers=None):
    request_headers = {'Origin': origin}
    if method:
        request_headers['Access-Control-Request-Method'] = method
    if headers:
        request_headers['Access-Control-Request-Headers'] = headers
    return client.request('OPTIONS', path, token=False, version=False, headers=request_headers)


def no_cors_headers(response):
    return not any(name in response for name in CORS_HEADERS)


@pytest.mark.parametrize('path', ['/', '/resource_providers', '/allocations/x', '/nowhere'])
@pytest.mark.parametrize('method', ['GET', 'PUT', 'DELETE'])
def test_preflight_from_a_valid_origin(cors, path, method):
    response = preflight(cors, path, method=method)
    assert response.status_code == 200
    assert response['Access-Control-Allow-Origin'] == VALID
    assert response['Access-Control-Allow-Credentials'] == 'true'
    assert response['Access-Control-Max-Age'] == '3600'
    assert response['Access-Control-Allow-Methods'] == method
    assert response['Vary'] == 'Origin'
    assert 'Access-Control-Allow-Headers' not in response
    assert 'Content-Type' not in response and response.content == b''


def test_preflight_echoes_allowed_request_headers(cors):
    response = preflight(cors, headers='openstack-api-version, X-Custom')
    assert response.status_code == 200
    assert response['Access-Control-Allow-Headers'] == 'openstack-api-version,X-Custom'


def test_preflight_with_simple_request_headers(cors):
    response = preflight(cors, headers='Content-Type, Accept')
    assert response.status_code == 200
    assert response['Access-Control-Allow-Origin'] == VALID
    assert response['Access-Control-Allow-Headers'] == 'Content-Type,Accept'


@pytest.mark.parametrize('method', ['HEAD', 'OPTIONS', 'TRACE'])
def test_preflight_refuses_methods_placement_does_not_allow(cors, method):
    response = preflight(cors, method=method)
    assert response.status_code == 200
    assert no_cors_headers(response)


def test_preflight_allows_placement_headers_by_default(settings, make_api):
    settings.PLACEMENT_CORS_ALLOWED_ORIGINS = [VALID]
    settings.PLACEMENT_CORS_ALLOW_HEADERS = []
    requested = 'X-Auth-Token, OpenStack-API-Version, X-Roles, X-Openstack-Request-Id'
    response = preflight(make_api(), headers=requested)
    assert response.status_code == 200
    assert response['Access-Control-Allow-Origin'] == VALID
    assert response['Access-Control-Allow-Headers'] == requested.replace(', ', ',')


@pytest.mark.parametrize('kwargs', [
    {'origin': INVALID},
    {'origin': 'http://valid.example.com.evil'},
    {'method': None},
    {'method': 'FOO'},
    {'headers': 'x-not-allowed'},
    {'headers': 'X-Auth-Token, Content-Type'},
], ids=['invalid-origin', 'origin-suffix', 'no-method', 'unknown-method',
        'header-not-allowed', 'auth-header-not-allowed'])
def test_refused_preflight_is_200_without_cors_headers(cors, kwargs):
    response = preflight(cors, **kwargs)
    assert response.status_code == 200
    assert no_cors_headers(response)
    assert response.content == b''


def test_options_without_origin_is_a_bare_200(cors):
    response = cors.request('OPTIONS', '/resource_providers')
    assert response.status_code == 200
    assert no_cors_headers(response)


def test_simple_request_from_a_valid_origin(cors):
    response = cors.get('/resource_providers', headers={'Origin': VALID})
    assert response.status_code == 200
    assert response['Access-Control-Allow-Origin'] == VALID
    assert response['Access-Control-Allow-Credentials'] == 'true'
    assert response['Vary'] == 'openstack-api-version,Origin'
    assert response.body == {'resource_providers': []}


def test_simple_request_exposes_placement_headers(cors):
    response = cors.get('/resource_providers', headers={'Origin': VALID})
    assert response['Access-Control-Expose-Headers'] == EXPOSED


@pytest.mark.parametrize('kwargs, status', [
    ({'path': '/nowhere'}, 404),
    ({'path': '/resource_providers', 'token': False}, 401),
])
def test_error_answers_carry_cors_headers(cors, kwargs, status):
    response = cors.get(kwargs.pop('path'), headers={'Origin': VALID}, **kwargs)
    assert response.status_code == status
    assert response['Access-Control-Allow-Origin'] == VALID
    assert response['Access-Control-Allow-Credentials'] == 'true'
    assert response['Access-Control-Expose-Headers'] == EXPOSED
    # Error answers do not vary on the microversion, as in Placement.
    assert response['Vary'] == 'Origin'


@pytest.mark.parametrize('headers', [{'Origin': INVALID}, {}])
def test_simple_request_from_elsewhere_has_no_cors_headers(cors, headers):
    response = cors.get('/resource_providers', headers=headers)
    assert response.status_code == 200
    assert no_cors_headers(response)
    assert response['Vary'] == 'openstack-api-version'


def test_wildcard_origin_allows_any_origin(settings, make_api):
    settings.PLACEMENT_CORS_ALLOWED_ORIGINS = ['*']
    response = preflight(make_api(), origin=INVALID)
    assert response.status_code == 200
    assert response['Access-Control-Allow-Origin'] == '*'
    assert response['Access-Control-Allow-Methods'] == 'GET'
    assert response['Vary'] == 'Origin'


def test_without_cors_settings_options_is_405(settings, make_api):
    settings.PLACEMENT_CORS_ALLOWED_ORIGINS = []
    client = make_api()
    response = preflight(client, path='/')
    assert response.status_code == 405
    assert response['Allow'] == 'GET'
    assert no_cors_headers(response)
    response = client.get('/resource_providers', headers={'Origin': VALID})
    assert response.status_code == 200
    assert no_cors_headers(response)
