"""HTTP-level behaviour shared by every route: unknown paths, methods,
content negotiation, body content types, error formats, request ids,
Location headers and bodiless answers."""
import gzip
import json
import re

import pytest

from placement_site import api as placement_api
from placement_site import compression
from tests.support.api import allocation_body
from tests.support.api import error_of
from tests.support.api import lasting_headers
from tests.support.api import new_uuid
from tests.support.api import vcpu_provider
from tests.support.state import unchanged

pytestmark = pytest.mark.any_database

REQUEST_ID = re.compile(r'^req-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$')
NOT_FOUND_DETAIL = 'The resource could not be found.\n\n   '


@pytest.fixture
def rp(api):
    return vcpu_provider(api)


# ---- 404 and 405 -----------------------------------------------------------------

@pytest.mark.parametrize('path', [
    '/nowhere', '/resource_providers/', '/allocations/', '/RESOURCE_PROVIDERS', '/usages/x',
    '/reshaper/x', '/resource_providers/{rp}/', '/resource_providers/{rp}/allocations/x',
    '/resource_providers/{rp}/nothing',
])
def test_unknown_paths_are_404(api, rp, path):
    response = api.get(path.format(rp=rp))
    assert response.status_code == 404
    assert response['Content-Type'] == 'application/json'
    assert 'Vary' not in response
    assert response['OpenStack-API-Version'] == 'placement 1.39'
    error = error_of(response)
    assert error == {'status': 404, 'title': 'Not Found', 'detail': NOT_FOUND_DETAIL,
                     'code': 'placement.undefined_code',
                     'request_id': response['x-openstack-request-id']}


@pytest.mark.parametrize('method, path, allow', [
    ('GET', '/allocations', 'POST'),
    ('PUT', '/allocations', 'POST'),
    ('PATCH', '/allocations/{consumer}', 'GET, PUT, DELETE'),
    ('POST', '/allocations/{consumer}', 'GET, PUT, DELETE'),
    ('PUT', '/usages', 'GET'),
    ('PATCH', '/usages', 'GET'),
    ('GET', '/reshaper', 'POST'),
    ('DELETE', '/reshaper', 'POST'),
    ('DELETE', '/resource_providers', 'GET, POST'),
    ('POST', '/resource_providers/{rp}', 'GET, DELETE, PUT'),
    ('POST', '/resource_providers/{rp}/usages', 'GET'),
    ('PUT', '/resource_providers/{rp}/allocations', 'GET'),
    ('POST', '/traits', 'GET'),
    ('DELETE', '/', 'GET'),
])
def test_wrong_method_is_405_with_allow(api, rp, method, path, allow):
    response = api.request(method, path.format(rp=rp, consumer=new_uuid()))
    assert response.status_code == 405
    assert response['Allow'] == allow
    error = error_of(response)
    assert error['title'] == 'Method Not Allowed'
    assert error['detail'] == (f'The method {method} is not allowed for this resource. \n\n '
                               'The method specified is not allowed for this resource.')
    assert error['code'] == 'placement.undefined_code'


@pytest.mark.parametrize('method', ['HEAD', 'OPTIONS'])
@pytest.mark.parametrize('path, allow', [
    ('/', 'GET'),
    ('/allocations/{consumer}', 'GET, PUT, DELETE'),
    ('/usages', 'GET'),
    ('/resource_providers', 'GET, POST'),
])
def test_head_and_options_are_405(api, method, path, allow):
    response = api.request(method, path.format(consumer=new_uuid()))
    assert response.status_code == 405
    assert response['Allow'] == allow


def test_options_detail_names_the_method(api):
    response = api.request('OPTIONS', '/usages')
    assert response.status_code == 405
    assert error_of(response)['detail'] == (
        'The method OPTIONS is not allowed for this resource. \n\n '
        'The method specified is not allowed for this resource.')


def test_405_writes_nothing(api, rp):
    with unchanged():
        response = api.post(f'/allocations/{new_uuid()}', allocation_body(rp))
        assert response.status_code == 405
        assert response['Allow'] == 'GET, PUT, DELETE'


# ---- Accept and content types ------------------------------------------------------

@pytest.mark.parametrize('path', [
    '/resource_providers', '/resource_providers/{rp}', '/resource_providers/{rp}/usages',
    '/resource_providers/{rp}/allocations', '/allocations/{consumer}', '/usages?project_id=p',
    '/resource_classes', '/traits',
])
def test_get_with_accept_text_plain_is_406(api, rp, path):
    response = api.get(path.format(rp=rp, consumer=new_uuid()), headers={'Accept': 'text/plain'})
    assert response.status_code == 406
    assert response['Content-Type'] == 'text/plain; charset=UTF-8'
    assert response.content.decode() == (
        '406 Not Acceptable\n\nThe resource could not be generated that was acceptable to '
        'your browser (content of type text/plain. \n\n Only application/json is provided')


@pytest.mark.parametrize('accept, content_type, text', [
    ('application/xml', 'text/plain; charset=UTF-8',
     '406 Not Acceptable\n\nThe resource could not be generated that was acceptable to your '
     'browser (content of type application/xml. \n\n Only application/json is provided'),
    ('application/json;q=0, text/html', 'text/html; charset=UTF-8',
     '<html>\n <head>\n  <title>406 Not Acceptable</title>\n </head>\n <body>\n'
     '  <h1>406 Not Acceptable</h1>\n  The resource could not be generated that was acceptable '
     'to your browser\n(content of type application/json;q=0, text/html. <br /><br />\n'
     'Only application/json is provided\n </body>\n</html>'),
])
def test_get_refusing_json_is_406(api, accept, content_type, text):
    response = api.get('/resource_providers', headers={'Accept': accept})
    assert response.status_code == 406
    assert response['Content-Type'] == content_type
    assert response.content.decode() == text


@pytest.mark.parametrize('accept', ['application/*', '*/*', 'text/html, application/json;q=0.9'])
def test_get_accepting_json_somehow_is_200(api, accept):
    response = api.get('/resource_providers', headers={'Accept': accept})
    assert response.status_code == 200
    assert response['Content-Type'] == 'application/json'


def test_root_ignores_accept(api):
    response = api.get('/', headers={'Accept': 'text/plain'})
    assert response.status_code == 200
    assert response['Content-Type'] == 'application/json'


@pytest.mark.parametrize('content_type', ['text/plain', 'application/xml',
                                          'application/x-www-form-urlencoded', 'json'])
@pytest.mark.parametrize('method, path', [
    ('PUT', '/allocations/{consumer}'),
    ('POST', '/allocations'),
    ('POST', '/reshaper'),
    ('POST', '/resource_providers'),
    ('PUT', '/resource_providers/{rp}/inventories'),
])
def test_body_that_is_not_json_is_415(api, rp, content_type, method, path):
    with unchanged():
        response = api.request(method, path.format(rp=rp, consumer=new_uuid()),
                               raw='{"name": "x"}', content_type=content_type,
                               headers={'X-Roles': 'admin,service'})
        assert response.status_code == 415
        error = error_of(response)
        assert error['title'] == 'Unsupported Media Type'
        assert error['detail'] == (
            f'The request media type {content_type} is not supported by this server. \n\n '
            f'The media type {content_type} is not supported, use application/json')


def test_json_with_a_charset_is_accepted(api, rp):
    response = api.put(f'/allocations/{new_uuid()}', raw=json.dumps(allocation_body(rp)),
                       content_type='application/json; charset=UTF-8')
    assert response.status_code == 204


@pytest.mark.parametrize('method, path', [
    ('PUT', '/allocations/{consumer}'),
    ('POST', '/allocations'),
    ('POST', '/resource_providers'),
    ('GET', '/resource_providers'),
    ('POST', '/nowhere'),
])
def test_body_without_content_type_is_400(api, rp, method, path):
    with unchanged():
        response = api.request(method, path.format(rp=rp, consumer=new_uuid()),
                               raw=json.dumps(allocation_body(rp)), content_type='')
        assert response.status_code == 400
        assert error_of(response)['detail'] == (
            'The server could not comply with the request since it is either malformed or '
            'otherwise incorrect.\n\n content-type header required when content-length > 0  ')


def test_body_without_content_type_answers_without_vary(api, rp):
    response = api.put(f'/allocations/{new_uuid()}', raw='{}', content_type='')
    assert response.status_code == 400
    assert response['OpenStack-API-Version'] == 'placement 1.39'
    assert 'Vary' not in response


# ---- error formats ---------------------------------------------------------------------

@pytest.mark.parametrize('accept', ['', '*/*', 'application/json'])
def test_errors_are_json_by_default(api, accept):
    response = api.get('/nowhere', headers={'Accept': accept})
    assert response.status_code == 404
    assert response['Content-Type'] == 'application/json'
    assert error_of(response)['detail'] == NOT_FOUND_DETAIL


def test_errors_are_html_for_text_html(api):
    response = api.get('/nowhere', headers={'Accept': 'text/html'})
    assert response['Content-Type'] == 'text/html; charset=UTF-8'
    assert response.content.decode() == (
        '<html>\n <head>\n  <title>404 Not Found</title>\n </head>\n <body>\n'
        '  <h1>404 Not Found</h1>\n  The resource could not be found.<br /><br />\n\n\n\n'
        ' </body>\n</html>')


@pytest.mark.parametrize('accept', ['text/plain', 'application/xml'])
def test_errors_are_plain_text_otherwise(api, accept):
    response = api.get('/nowhere', headers={'Accept': accept})
    assert response['Content-Type'] == 'text/plain; charset=UTF-8'
    assert response.content.decode() == '404 Not Found\n\nThe resource could not be found.\n\n   '


def test_html_errors_escape_the_detail(api):
    response = api.put('/allocations/<b>', raw='{}', headers={'Accept': 'text/html'})
    assert response.status_code == 400
    assert response['Content-Type'] == 'text/html; charset=UTF-8'
    assert response.content.decode() == (
        '<html>\n <head>\n  <title>400 Bad Request</title>\n </head>\n <body>\n'
        '  <h1>400 Bad Request</h1>\n  The server could not comply with the request since it is '
        'either malformed or otherwise incorrect.<br /><br />\nMalformed consumer_uuid: '
        '&lt;b&gt;\n\n\n </body>\n</html>')


def test_errors_before_1_23_have_no_code(api):
    response = api.get('/nowhere', version='1.22')
    assert response.status_code == 404
    assert error_of(response) == {'status': 404, 'title': 'Not Found',
                                  'detail': NOT_FOUND_DETAIL,
                                  'request_id': response['x-openstack-request-id']}


# ---- request ids -----------------------------------------------------------------------

@pytest.mark.parametrize('method, path, kwargs, status, placement_error', [
    ('GET', '/', {'token': False}, 200, False),
    ('GET', '/resource_providers', {}, 200, False),
    ('GET', '/nowhere', {}, 404, True),
    ('PATCH', '/usages', {}, 405, True),
    # The 401 comes from the auth layer in front of Placement: no 'errors'.
    ('GET', '/resource_providers', {'token': False}, 401, False),
    ('GET', '/resource_providers', {'token': 'user'}, 403, True),
    ('GET', '/resource_providers', {'version': '1.99'}, 406, True),
    ('GET', '/resource_providers', {'version': 'x'}, 400, True),
    ('DELETE', '/allocations/{consumer}', {}, 404, True),
])
def test_every_answer_has_a_request_id(api, method, path, kwargs, status, placement_error):
    response = api.request(method, path.format(consumer=new_uuid()), **kwargs)
    assert response.status_code == status
    assert REQUEST_ID.match(response['x-openstack-request-id'])
    if placement_error:
        assert error_of(response)['request_id'] == response['x-openstack-request-id']
    else:
        assert 'errors' not in response.body


def test_request_ids_differ(api):
    ids = {api.get('/')['x-openstack-request-id'] for _ in range(3)}
    assert len(ids) == 3


def test_204_has_a_request_id(api, rp):
    response = api.put(f'/allocations/{new_uuid()}', allocation_body(rp))
    assert response.status_code == 204
    assert REQUEST_ID.match(response['x-openstack-request-id'])


# ---- Location and bodiless answers -------------------------------------------------

def created_provider(api, version, status):
    """POST /resource_providers of a new provider at `version`: `status`,
    and a Location naming the provider. Returns its uuid and the answer."""
    uuid = new_uuid()
    response = api.post('/resource_providers', {'name': f'rp-{uuid}', 'uuid': uuid},
                        version=version)
    assert response.status_code == status
    assert response['Location'] == f'http://testserver/resource_providers/{uuid}'
    return uuid, response


def test_provider_creation_before_1_20_has_a_location(api):
    _, response = created_provider(api, '1.19', 201)
    assert 'Content-Type' not in response and response.content == b''


def test_provider_creation_from_1_20_has_a_location_and_a_body(api):
    uuid, response = created_provider(api, '1.20', 200)
    path = f'/resource_providers/{uuid}'
    assert response.body == {
        'uuid': uuid, 'name': f'rp-{uuid}', 'generation': 0,
        'links': [{'rel': 'self', 'href': path}] + [
            {'rel': rel, 'href': f'{path}/{rel}'}
            for rel in ('inventories', 'usages', 'aggregates', 'traits', 'allocations')],
        'parent_provider_uuid': None, 'root_provider_uuid': uuid}


def test_resource_class_creation_has_a_location(api):
    response = api.post('/resource_classes', {'name': 'CUSTOM_LOCATED'}, version='1.2')
    assert response.status_code == 201
    assert response['Location'] == 'http://testserver/resource_classes/CUSTOM_LOCATED'
    assert 'Content-Type' not in response


@pytest.mark.parametrize('path, version', [('/traits/CUSTOM_LOCATED', '1.6'),
                                           ('/resource_classes/CUSTOM_LOCATED', '1.7')])
def test_idempotent_puts_have_a_location(api, path, version):
    first, second = api.put(path, version=version), api.put(path, version=version)
    assert (first.status_code, second.status_code) == (201, 204)
    for response in (first, second):
        assert response['Location'] == f'http://testserver{path}'
        assert 'Content-Type' not in response and response.content == b''


@pytest.mark.parametrize('method, path, payload', [
    ('PUT', '/allocations/{consumer}',
     lambda rp: dict(allocation_body(rp), consumer_generation=1)),
    ('POST', '/allocations', lambda rp: {new_uuid(): allocation_body(rp)}),
    ('DELETE', '/allocations/{consumer}', lambda rp: None),
    ('DELETE', '/resource_providers/{rp}/traits', lambda rp: None),
])
def test_204_answers_have_no_content_type(api, rp, method, path, payload):
    consumer = new_uuid()
    assert api.allocate(consumer, {rp: {'VCPU': 1}}).status_code == 204
    response = api.request(method, path.format(rp=rp, consumer=consumer), payload(rp))
    assert response.status_code == 204
    assert 'Content-Type' not in response
    assert response.content == b''


# ---- only Placement's headers ------------------------------------------------------

BROWSER_HEADERS = ('X-Frame-Options', 'X-Content-Type-Options', 'Referrer-Policy',
                   'Cross-Origin-Opener-Policy', 'Content-Security-Policy')


@pytest.mark.parametrize('path', ['/', '/resource_providers', '/traits', '/nowhere'])
def test_api_answers_carry_no_browser_security_headers(api, path):
    # Placement sends none of them; the adoption check compares headers.
    response = api.get(path)
    assert [h for h in BROWSER_HEADERS if h in response] == []


@pytest.mark.parametrize('path', ['/admin/login/', '/accounts/login/', '/api/docs/'])
def test_the_browser_pages_keep_them(client, db, path):
    response = client.get(path)
    assert response.status_code == 200
    assert all(h in response for h in BROWSER_HEADERS)
    assert "script-src" not in response['Content-Security-Policy']  # default-src 'self' rules
    assert response['Content-Security-Policy'].startswith("default-src 'self';")


# ---- gzip ----------------------------------------------------------------------------

@pytest.fixture
def small_gzip_threshold(monkeypatch):
    """Every answer of 100 bytes or more counts as large."""
    monkeypatch.setattr(compression, 'MIN_SIZE', 100)


def test_a_large_answer_is_gzipped_for_a_client_that_accepts_it(api, rp, small_gzip_threshold):
    plain = api.get('/resource_providers')
    zipped = api.get('/resource_providers', headers={'Accept-Encoding': 'gzip, deflate'})
    assert 'Content-Encoding' not in plain and 'Accept-Encoding' not in plain.get('Vary', '')
    assert zipped['Content-Encoding'] == 'gzip'
    assert 'Accept-Encoding' in zipped['Vary']
    assert int(zipped['Content-Length']) == len(zipped.content)
    assert gzip.decompress(zipped.content) == plain.content


def test_a_small_answer_is_sent_as_it_is(api, rp):
    plain = api.get(f'/resource_providers/{rp}')
    zipped = api.get(f'/resource_providers/{rp}', headers={'Accept-Encoding': 'gzip'})
    assert 'Content-Encoding' not in zipped
    assert zipped.content == plain.content
    assert lasting_headers(zipped) == lasting_headers(plain)


def test_a_streamed_answer_is_gzipped_as_it_goes(api, rp, monkeypatch):
    monkeypatch.setattr(placement_api, 'STREAM_AFTER', 1)
    plain = api.get('/allocation_candidates?resources=VCPU:1')
    zipped = api.get('/allocation_candidates?resources=VCPU:1',
                     headers={'Accept-Encoding': 'gzip'})
    assert plain.streaming and zipped.streaming
    assert zipped['Content-Encoding'] == 'gzip'
    assert gzip.decompress(zipped.bytes) == plain.bytes
