"""/resource_classes[/{name}]: listing, custom classes (create, rename
before 1.7, create-or-verify from 1.7, delete), read-only standard classes,
and refusal of bad input."""
import json
from urllib.parse import quote

import os_resource_classes
import pytest

from tests.support.api import UNDEFINED
from tests.support.api import assert_error
from tests.support.api import assert_not_acceptable
from tests.support.state import unchanged


def class_names(response):
    assert response.status_code == 200, response.content
    return [rc['name'] for rc in response.body['resource_classes']]


STANDARDS = list(os_resource_classes.STANDARDS)  # in Placement's id order


def rc_body(name):
    return {'name': name, 'links': [{'rel': 'self', 'href': f'/resource_classes/{name}'}]}


# ---- read ---------------------------------------------------------------------------

def test_not_there_before_1_2(api):
    assert_error(api.get('/resource_classes', version='1.1'), 404, code=None)
    assert_error(api.get('/resource_classes/VCPU', version='1.1'), 404, code=None)
    assert_error(api.post('/resource_classes', {'name': 'CUSTOM_X'}, version='1.1'), 404,
                 code=None)


def test_list_has_the_standard_classes_first(api):
    response = api.get('/resource_classes', version='1.2')
    assert class_names(response)[:3] == ['VCPU', 'MEMORY_MB', 'DISK_GB']
    assert response.body == {'resource_classes': [rc_body(name) for name in STANDARDS]}


def test_list_includes_custom_classes(api):
    assert api.post('/resource_classes', {'name': 'CUSTOM_FPGA'}).status_code == 201
    assert class_names(api.get('/resource_classes')) == STANDARDS + ['CUSTOM_FPGA']


def test_show_one(api):
    response = api.get('/resource_classes/VCPU')
    assert response.status_code == 200
    assert response.body == rc_body('VCPU')
    assert response['Cache-Control'] == 'no-cache'
    assert 'Cache-Control' not in api.get('/resource_classes/VCPU', version='1.14')


@pytest.mark.parametrize('name, shown', [('CUSTOM_NOPE', 'CUSTOM_NOPE'), ('vcpu', 'vcpu'),
                                         ('CUSTOM_%00', 'CUSTOM_\x00')])
def test_show_unknown_is_404(api, name, shown):
    assert_error(api.get(f'/resource_classes/{name}'), 404, f'No such resource class {shown}.')


@pytest.mark.parametrize('path', ['/resource_classes', '/resource_classes/VCPU'])
def test_accept_text_plain_is_406(api, path):
    assert_not_acceptable(api.get(path, headers={'Accept': 'text/plain'}))


# ---- create (POST) -------------------------------------------------------------------------

def test_create_custom_class(api):
    response = api.post('/resource_classes', {'name': 'CUSTOM_FPGA'}, version='1.2')
    assert response.status_code == 201
    assert response.content == b''
    assert response['Location'] == 'http://testserver/resource_classes/CUSTOM_FPGA'
    assert api.get('/resource_classes/CUSTOM_FPGA').body == rc_body('CUSTOM_FPGA')


def test_longest_custom_name_is_accepted(api):
    name = 'CUSTOM_' + 'A' * 248
    assert api.post('/resource_classes', {'name': name}).status_code == 201
    assert api.get(f'/resource_classes/{name}').body == rc_body(name)


@pytest.mark.parametrize('version, code', [('1.2', None), ('1.39', UNDEFINED)])
def test_create_duplicate_is_409(api, version, code):
    assert api.post('/resource_classes', {'name': 'CUSTOM_FPGA'}).status_code == 201
    with unchanged():
        response = api.post('/resource_classes', {'name': 'CUSTOM_FPGA'}, version=version)
        assert_error(response, 409, 'Conflicting resource class already exists: CUSTOM_FPGA',
                     code=code)


NAME_CASES = [
    ('VCPU', "'VCPU' does not match '^CUSTOM_[A-Z0-9_]+$'"),
    ('NEW_CLASS', "'NEW_CLASS' does not match '^CUSTOM_[A-Z0-9_]+$'"),
    ('custom_fpga', "'custom_fpga' does not match '^CUSTOM_[A-Z0-9_]+$'"),
    ('CUSTOM_fpga', "does not match '^CUSTOM_[A-Z0-9_]+$'"),
    ('CUSTOM_', "'CUSTOM_' does not match '^CUSTOM_[A-Z0-9_]+$'"),
    ('CUSTOM_A B', "'CUSTOM_A B' does not match"),
    ('CUSTOM_A-B', "'CUSTOM_A-B' does not match"),
    ('CUSTOM_ÄÖ', 'does not match'),
    ('计算节点', 'does not match'),
    ('CUSTOM_' + 'A' * 249, 'is too long'),
]


@pytest.mark.parametrize('body, detail', [
    ({'name': name}, detail) for name, detail in NAME_CASES
] + [
    ({'name': ''}, "'' does not match"),
    ({'name': 5}, "5 is not of type 'string'"),
    ({'name': None}, "None is not of type 'string'"),
    ({}, "'name' is a required property"),
    ({'name': 'CUSTOM_FPGA', 'foo': 1}, "Additional properties are not allowed ('foo' was "
                                        'unexpected)'),
    (['CUSTOM_FPGA'], "['CUSTOM_FPGA'] is not of type 'object'"),
    ('CUSTOM_FPGA', "'CUSTOM_FPGA' is not of type 'object'"),
])
def test_create_with_a_bad_body_is_400(api, body, detail):
    with unchanged():
        error = assert_error(api.request('POST', '/resource_classes', raw=json.dumps(body)), 400,
                             'JSON does not validate: ')
        assert detail in error['detail']


def test_create_with_a_lone_surrogate_is_400(api):
    with unchanged():
        response = api.request('POST', '/resource_classes', raw='{"name": "CUSTOM_\\ud800"}')
        assert_error(response, 400, 'JSON does not validate: ')


@pytest.mark.parametrize('raw', ['{', '{"name": "CUSTOM_X",}', ' ', b'{"name": "\xff"}'])
def test_create_with_malformed_json_is_400(api, raw):
    with unchanged():
        assert_error(api.request('POST', '/resource_classes', raw=raw), 400, 'Malformed JSON: ')


@pytest.mark.parametrize('content_type', ['text/plain', 'application/xml'])
def test_create_with_a_wrong_content_type_is_415(api, content_type):
    with unchanged():
        response = api.post('/resource_classes', {'name': 'CUSTOM_FPGA'}, content_type=content_type)
        assert_error(response, 415, f'The media type {content_type} is not supported, use '
                                    'application/json')


def test_create_without_content_type_is_415(api):
    with unchanged():
        assert_error(api.post('/resource_classes'), 415, 'The media type None is not supported')


# ---- rename (PUT before 1.7) ---------------------------------------------------------------

def test_rename_before_1_7(api):
    assert api.post('/resource_classes', {'name': 'CUSTOM_OLD'}).status_code == 201
    response = api.put('/resource_classes/CUSTOM_OLD', {'name': 'CUSTOM_NEW'}, version='1.6')
    assert response.status_code == 200
    assert response.body == rc_body('CUSTOM_NEW')
    assert_error(api.get('/resource_classes/CUSTOM_OLD'), 404, 'No such resource class '
                                                               'CUSTOM_OLD.')
    assert api.get('/resource_classes/CUSTOM_NEW').body == rc_body('CUSTOM_NEW')
    assert class_names(api.get('/resource_classes')) == STANDARDS + ['CUSTOM_NEW']


def test_rename_carries_inventory_along(api):
    assert api.post('/resource_classes', {'name': 'CUSTOM_OLD'}).status_code == 201
    rp_uuid = api.create_provider()['uuid']
    api.set_inventory(rp_uuid, {'CUSTOM_OLD': {'total': 2}})
    response = api.put('/resource_classes/CUSTOM_OLD', {'name': 'CUSTOM_NEW'}, version='1.6')
    assert response.status_code == 200
    assert api.get(f'/resource_providers/{rp_uuid}/inventories').body == {
        'resource_provider_generation': 1, 'inventories': {'CUSTOM_NEW': {
            'total': 2, 'reserved': 0, 'min_unit': 1, 'max_unit': 2147483647, 'step_size': 1,
            'allocation_ratio': 1.0}}}


def test_rename_to_the_same_name_is_200(api):
    api.post('/resource_classes', {'name': 'CUSTOM_OLD'})
    response = api.put('/resource_classes/CUSTOM_OLD', {'name': 'CUSTOM_OLD'}, version='1.6')
    assert response.status_code == 200
    assert response.body == rc_body('CUSTOM_OLD')


def test_rename_to_a_taken_name_is_409(api):
    api.post('/resource_classes', {'name': 'CUSTOM_OLD'})
    api.post('/resource_classes', {'name': 'CUSTOM_TAKEN'})
    with unchanged():
        response = api.put('/resource_classes/CUSTOM_OLD', {'name': 'CUSTOM_TAKEN'}, version='1.6')
        assert_error(response, 409, 'Resource class already exists: CUSTOM_TAKEN', code=None)


@pytest.mark.parametrize('new_name', ['CUSTOM_VCPU', 'CUSTOM_OTHER'])
def test_renaming_a_standard_class_is_400(api, new_name):
    with unchanged():
        response = api.put('/resource_classes/VCPU', {'name': new_name}, version='1.6')
        assert_error(response, 400, 'Cannot update standard resource class VCPU', code=None)


def test_renaming_an_unknown_class_is_404(api):
    with unchanged():
        response = api.put('/resource_classes/CUSTOM_NOPE', {'name': 'CUSTOM_NEW'}, version='1.6')
        assert_error(response, 404, 'No such resource class CUSTOM_NOPE.', code=None)


@pytest.mark.parametrize('body, detail', [
    ({'name': name}, detail) for name, detail in NAME_CASES
] + [
    ({}, "'name' is a required property"),
    ({'name': 5}, "5 is not of type 'string'"),
    ({'name': 'CUSTOM_NEW', 'foo': 1}, "('foo' was unexpected)"),
    (None, "None is not of type 'object'"),
])
def test_rename_with_a_bad_body_is_400(api, body, detail):
    api.post('/resource_classes', {'name': 'CUSTOM_OLD'})
    with unchanged():
        response = api.request('PUT', '/resource_classes/CUSTOM_OLD', raw=json.dumps(body),
                               version='1.6')
        error = assert_error(response, 400, 'JSON does not validate: ', code=None)
        assert detail in error['detail']


@pytest.mark.parametrize('raw', ['{', ' ', b'{"name": "\xff"}'])
def test_rename_with_malformed_json_is_400(api, raw):
    api.post('/resource_classes', {'name': 'CUSTOM_OLD'})
    with unchanged():
        response = api.request('PUT', '/resource_classes/CUSTOM_OLD', raw=raw, version='1.6')
        assert_error(response, 400, 'Malformed JSON: ', code=None)


def test_rename_with_a_wrong_content_type_is_415(api):
    api.post('/resource_classes', {'name': 'CUSTOM_OLD'})
    with unchanged():
        response = api.put('/resource_classes/CUSTOM_OLD', {'name': 'CUSTOM_NEW'}, version='1.6',
                           content_type='text/plain')
        assert_error(response, 415, 'The media type text/plain is not supported', code=None)


# ---- create or verify (PUT from 1.7) ---------------------------------------------------------

def test_put_from_1_7_creates_then_confirms(api):
    response = api.put('/resource_classes/CUSTOM_FPGA', version='1.7')
    assert response.status_code == 201
    assert response.content == b''
    assert response['Location'] == 'http://testserver/resource_classes/CUSTOM_FPGA'
    again = api.put('/resource_classes/CUSTOM_FPGA', version='1.7')
    assert again.status_code == 204
    assert again.content == b''
    assert again['Location'] == 'http://testserver/resource_classes/CUSTOM_FPGA'
    assert class_names(api.get('/resource_classes')) == STANDARDS + ['CUSTOM_FPGA']


def test_put_from_1_7_ignores_the_body(api):
    response = api.put('/resource_classes/CUSTOM_FPGA', {'name': 'CUSTOM_OTHER'})
    assert response.status_code == 201
    assert_error(api.get('/resource_classes/CUSTOM_OTHER'), 404,
                 'No such resource class CUSTOM_OTHER.')
    response = api.put('/resource_classes/CUSTOM_FPGA', raw='junk', content_type='text/plain')
    assert response.status_code == 204
    assert class_names(api.get('/resource_classes')) == STANDARDS + ['CUSTOM_FPGA']


def test_put_from_1_7_does_not_rename(api):
    assert api.post('/resource_classes', {'name': 'CUSTOM_OLD'}).status_code == 201
    assert api.put('/resource_classes/CUSTOM_OLD', {'name': 'CUSTOM_NEW'}).status_code == 204
    assert api.get('/resource_classes/CUSTOM_OLD').body == rc_body('CUSTOM_OLD')
    assert_error(api.get('/resource_classes/CUSTOM_NEW'), 404, 'No such resource class CUSTOM_NEW.')


@pytest.mark.parametrize('name, detail', [(quote(name), detail) for name, detail in NAME_CASES
                                          if name not in ('CUSTOM_ÄÖ', '计算节点')] + [
    (quote('CUSTOM_ÄÖ'), 'does not match'),
    (quote('计算节点'), 'does not match'),
    ('CUSTOM_A%00', 'Malformed JSON: Invalid control character'),
    ('CUSTOM_A%22B', "Malformed JSON: Expecting ',' delimiter"),
    ('CUSTOM_A%5C%5CB', "'CUSTOM_A\\\\B' does not match"),
])
def test_put_from_1_7_with_an_invalid_name_is_400(api, name, detail):
    with unchanged():
        assert_error(api.put(f'/resource_classes/{name}', version='1.7'), 400, detail, code=None)


# ---- delete -----------------------------------------------------------------------------

def test_delete_custom_class(api):
    assert api.post('/resource_classes', {'name': 'CUSTOM_FPGA'}).status_code == 201
    response = api.delete('/resource_classes/CUSTOM_FPGA')
    assert response.status_code == 204
    assert response.content == b''
    assert_error(api.get('/resource_classes/CUSTOM_FPGA'), 404,
                 'No such resource class CUSTOM_FPGA.')
    assert class_names(api.get('/resource_classes')) == STANDARDS
    assert api.post('/resource_classes', {'name': 'CUSTOM_FPGA'}).status_code == 201


@pytest.mark.parametrize('name', ['VCPU', 'DISK_GB', 'VGPU'])
def test_delete_standard_class_is_400(api, name):
    with unchanged():
        assert_error(api.delete(f'/resource_classes/{name}'), 400, 'Error in delete resource '
                     f'class: Cannot delete standard resource class {name}.')


@pytest.mark.parametrize('name, shown', [('CUSTOM_NOPE', 'CUSTOM_NOPE'), ('vcpu', 'vcpu'),
                                         ('CUSTOM_A%00', 'CUSTOM_A\x00')])
def test_delete_unknown_class_is_404(api, name, shown):
    with unchanged():
        assert_error(api.delete(f'/resource_classes/{name}'), 404,
                     f'No such resource class {shown}.')


@pytest.mark.parametrize('version, code', [('1.6', None), ('1.39', UNDEFINED)])
def test_delete_class_in_use_is_409(api, version, code):
    api.post('/resource_classes', {'name': 'CUSTOM_FPGA'})
    rp_uuid = api.create_provider()['uuid']
    api.set_inventory(rp_uuid, {'CUSTOM_FPGA': {'total': 2}})
    with unchanged():
        response = api.delete('/resource_classes/CUSTOM_FPGA', version=version)
        assert_error(response, 409, 'Error in delete resource class: Cannot delete resource class '
                                    'CUSTOM_FPGA. Class is in use in inventory.', code=code)
    assert api.delete(f'/resource_providers/{rp_uuid}/inventories').status_code == 204
    assert api.delete('/resource_classes/CUSTOM_FPGA').status_code == 204


@pytest.mark.parametrize('method, path', [('DELETE', '/resource_classes'),
                                          ('PUT', '/resource_classes'),
                                          ('POST', '/resource_classes/CUSTOM_FPGA'),
                                          ('PATCH', '/resource_classes/CUSTOM_FPGA')])
def test_other_methods_are_405(api, method, path):
    with unchanged():
        assert_error(api.request(method, path, {'name': 'CUSTOM_FPGA'}), 405,
                     f'The method {method} is not allowed for this resource.')
