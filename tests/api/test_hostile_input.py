"""Hostile input, family by family: deep nesting, non-finite numbers, huge
integers, lone surrogates, invalid UTF-8, very large bodies and very long
lists. Every one gets a 4xx in Placement's error format, never a 500, and
leaves the database as it was."""
import json

import pytest
from django.test import override_settings

from placement_site import config
from tests.support.api import assert_error
from tests.support.api import new_uuid

CONSUMER = '11111111-1111-4111-8111-111111111111'
SERVICE = {'X-Roles': 'service'}  # the reshaper is for services only
DEEP = 'Malformed JSON: nested more than 32 levels deep'


@pytest.fixture
def rp(api):
    """A provider with some VCPU and one consumer's allocation."""
    uuid = api.create_provider('hostile')['uuid']
    api.set_inventory(uuid, {'VCPU': {'total': 8}})
    assert api.allocate(CONSUMER, {uuid: {'VCPU': 1}}).status_code == 204
    return uuid


def writes(rp):
    """(method, path, microversion) of every operation that takes a body."""
    return [
        ('POST', '/resource_providers', None),
        ('PUT', f'/resource_providers/{rp}', None),
        ('POST', f'/resource_providers/{rp}/inventories', None),
        ('PUT', f'/resource_providers/{rp}/inventories', None),
        ('PUT', f'/resource_providers/{rp}/inventories/VCPU', None),
        ('PUT', f'/resource_providers/{rp}/aggregates', None),
        ('PUT', f'/resource_providers/{rp}/traits', None),
        ('POST', '/resource_classes', None),
        ('PUT', '/resource_classes/CUSTOM_HOSTILE', '1.6'),
        ('PUT', f'/allocations/{CONSUMER}', None),
        ('POST', '/allocations', None),
        ('POST', '/reshaper', None),
    ]


def refused(api, db_snapshot, method, path, raw, status, detail, version=None,
            code='placement.undefined_code'):
    before = db_snapshot()
    headers = SERVICE if path == '/reshaper' else None
    response = api.request(method, path, raw=raw, version=version, headers=headers)
    assert_error(response, status, detail, code=None if version == '1.6' else code)
    assert db_snapshot() == before, (method, path)
    return response


@pytest.mark.parametrize('raw', [
    '[' * 40 + ']' * 40,
    '{"a": ' * 40 + '1' + '}' * 40,
    '[' * 100000,             # deeper than the parser's own recursion
    '{"name": ' + '[' * 33 + ']' * 33 + '}',
], ids=['list', 'object', 'unclosed', 'inside a field'])
def test_deep_nesting_is_refused_on_every_write(api, rp, db_snapshot, raw):
    for method, path, version in writes(rp):
        refused(api, db_snapshot, method, path, raw, 400, DEEP, version)


def test_nesting_within_the_limit_reaches_the_schema(api, rp):
    """A reshape body nests 6 levels; up to 32 is parsed and validated."""
    raw = '{"name": "x", "pad": ' + '[' * 30 + ']' * 30 + '}'
    response = api.post('/resource_providers', raw=raw)
    assert_error(response, 400, "Additional properties are not allowed ('pad' was unexpected)")


NON_FINITE = [('NaN', 'NaN is not a number JSON allows'),
              ('Infinity', 'Infinity is not a number JSON allows'),
              ('-Infinity', '-Infinity is not a number JSON allows'),
              ('1e400', '1e400 is out of range for a number'),
              ('-1e400', '-1e400 is out of range for a number')]


@pytest.mark.parametrize('literal, detail', NON_FINITE, ids=[n for n, _ in NON_FINITE])
def test_non_finite_numbers_are_refused_before_any_work(api, rp, db_snapshot, literal, detail):
    generation = api.get(f'/resource_providers/{rp}').body['generation']
    bodies = [
        ('PUT', f'/resource_providers/{rp}/inventories',
         '{"resource_provider_generation": %d, "inventories": {"VCPU": {"total": 8, '
         '"allocation_ratio": %s}}}' % (generation, literal)),
        ('PUT', f'/resource_providers/{rp}/inventories/VCPU',
         '{"resource_provider_generation": %s, "total": 8}' % literal),
        ('PUT', f'/allocations/{new_uuid()}',
         '{"allocations": {"%s": {"resources": {"VCPU": %s}}}, "project_id": "p", '
         '"user_id": "u", "consumer_generation": null, "consumer_type": "INSTANCE"}'
         % (rp, literal)),
        ('PUT', f'/allocations/{CONSUMER}',
         '{"allocations": {}, "project_id": "p", "user_id": "u", '
         '"consumer_generation": %s, "consumer_type": "INSTANCE"}' % literal),
    ]
    for method, path, raw in bodies:
        refused(api, db_snapshot, method, path, raw, 400, f'Malformed JSON: {detail}')


def test_huge_integers_in_bodies(api, rp, db_snapshot):
    generation = api.get(f'/resource_providers/{rp}').body['generation']
    too_many_digits = '9' * 5000
    refused(api, db_snapshot, 'PUT', f'/resource_providers/{rp}/inventories',
            '{"resource_provider_generation": %s, "inventories": {}}' % too_many_digits,
            400, 'Malformed JSON: Exceeds the limit (4300 digits) for integer string conversion')
    refused(api, db_snapshot, 'PUT', f'/resource_providers/{rp}/inventories', json.dumps({
        'resource_provider_generation': generation,
        'inventories': {'VCPU': {'total': 10 ** 30}}}),
        400, 'JSON does not validate: 1000000000000000000000000000000 is greater than the '
             'maximum of 2147483647')
    refused(api, db_snapshot, 'PUT', f'/resource_providers/{rp}/inventories', json.dumps({
        'resource_provider_generation': 10 ** 30, 'inventories': {}}),
        409, 'resource provider generation conflict', code='placement.concurrent_update')
    refused(api, db_snapshot, 'PUT', f'/allocations/{new_uuid()}', json.dumps({
        'allocations': {rp: {'resources': {'VCPU': 10 ** 30}}}, 'project_id': 'p',
        'user_id': 'u', 'consumer_generation': None, 'consumer_type': 'INSTANCE'}),
        409, 'The requested amount would violate inventory constraints.')


def test_huge_integers_in_query_strings(api, rp, db_snapshot):
    too_many_digits = '9' * 5000
    before = db_snapshot()
    assert_error(api.get(f'/allocation_candidates?resources=VCPU:1&limit={too_many_digits}'),
                 400, 'Invalid query string parameters: limit: Exceeds the limit (4300 digits)')
    for path in ('/allocation_candidates', '/resource_providers'):
        assert_error(api.get(f'{path}?resources=VCPU:{too_many_digits}'), 400,
                     'Requested resource VCPU expected positive integer amount.')
        # More than anything holds: nothing fits, which is an answer, not an error.
        response = api.get(f'{path}?resources=VCPU:{10 ** 30}')
        assert response.status_code == 200
        assert response.body in ({'allocation_requests': [], 'provider_summaries': {}},
                                 {'resource_providers': []})
    response = api.get(f'/allocation_candidates?resources=VCPU:1&limit={10 ** 30}')
    assert [list(r['allocations']) for r in response.body['allocation_requests']] == [[rp]]
    assert db_snapshot() == before


def test_lone_surrogates(api, rp, db_snapshot):
    refused(api, db_snapshot, 'POST', '/resource_providers', '{"name": "\\ud800"}', 400,
            "Malformed JSON: 'utf-8' codec can't encode character '\\ud800'")
    refused(api, db_snapshot, 'PUT', f'/resource_providers/{rp}/traits',
            '{"resource_provider_generation": 2, "traits": ["\\udfff"]}', 400,
            "Malformed JSON: 'utf-8' codec can't encode character '\\udfff'")
    # The surrogate's UTF-8 form is not UTF-8 at all, in a query string too.
    assert_error(api.get('/resource_providers?name=%ED%A0%80'), 400,
                 "Invalid query string parameters: 'utf-8' codec can't decode byte 0xed")


def test_invalid_utf8(api, rp, db_snapshot):
    refused(api, db_snapshot, 'POST', '/resource_providers', b'{"name": "\xff"}', 400,
            "Malformed JSON: 'utf-8' codec can't decode byte 0xff")
    assert_error(api.get('/allocation_candidates?resources=VCPU:1&required=%FF'), 400,
                 "Invalid query string parameters: 'utf-8' codec can't decode byte 0xff")
    response = api.get('/resource_providers/%FF')
    assert_error(response, 404, 'No resource provider with uuid')


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=1024)
def test_a_body_over_the_limit_is_413(api, rp, db_snapshot):
    raw = json.dumps({'name': 'x' * 2000})
    before = db_snapshot()
    response = api.post('/resource_providers', raw=raw)
    error = assert_error(response, 413, 'The request body is larger than 1024 bytes.')
    assert error['title'] == 'Request Entity Too Large'
    assert db_snapshot() == before
    assert api.post('/resource_providers', raw=json.dumps({'name': 'small'})).status_code == 200


def test_the_body_limit_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv('PLACEMENT_MAX_BODY_SIZE', '4096')
    assert config.env_int('PLACEMENT_MAX_BODY_SIZE', 8) == 4096
    monkeypatch.setenv('PLACEMENT_MAX_BODY_SIZE', 'lots')
    with pytest.raises(ValueError) as refused_value:
        config.env_int('PLACEMENT_MAX_BODY_SIZE', 8)
    assert str(refused_value.value) == "PLACEMENT_MAX_BODY_SIZE must be a whole number, not 'lots'"
    monkeypatch.delenv('PLACEMENT_MAX_BODY_SIZE')
    assert config.env_int('PLACEMENT_MAX_BODY_SIZE', 8) == 8


@pytest.mark.slow
def test_ten_thousand_item_lists(api, rp, db_snapshot):
    names = [f'CUSTOM_T{i}' for i in range(10000)]
    generation = api.get(f'/resource_providers/{rp}').body['generation']
    response = refused(api, db_snapshot, 'PUT', f'/resource_providers/{rp}/traits', json.dumps({
        'resource_provider_generation': generation, 'traits': names}), 400, 'No such trait')
    assert response.body['errors'][0]['detail'].rstrip().endswith('CUSTOM_T9998, CUSTOM_T9999')
    refused(api, db_snapshot, 'PUT', f'/resource_providers/{rp}/aggregates', json.dumps({
        'resource_provider_generation': generation,
        'aggregates': [f'not-a-uuid-{i}' for i in range(10000)]}),
        400, "JSON does not validate: 'not-a-uuid-9999' is not a 'uuid'")
    unknown = new_uuid()
    refused(api, db_snapshot, 'POST', '/allocations', json.dumps({
        new_uuid(): {'allocations': {unknown: {'resources': {'VCPU': 1}}},
                     'project_id': 'p', 'user_id': 'u', 'consumer_generation': None,
                     'consumer_type': 'INSTANCE'} for _ in range(10000)}),
        400, f"Allocation for resource provider '{unknown}' that does not exist.")
    assert_error(api.get('/allocation_candidates?resources=VCPU:1&required=' + ','.join(names)),
                 400, 'No such trait(s): CUSTOM_T0')


@pytest.mark.parametrize('value', [None, 7, 'x', [], {'total': 'lots'}])
@pytest.mark.parametrize('name', ['', 'vcpu', 'NOT A CLASS'])
def test_inventories_keyed_by_a_name_no_class_can_have(api, rp, db_snapshot, name, value):
    # Keys outside the class-name pattern pass the schema unchecked (as in
    # Placement's); the class lookup refuses them before their values are read.
    generation = api.get(f'/resource_providers/{rp}').body['generation']
    refused(api, db_snapshot, 'PUT', f'/resource_providers/{rp}/inventories', json.dumps({
        'resource_provider_generation': generation, 'inventories': {name: value}}),
        400, f'No such resource class {name}')
    refused(api, db_snapshot, 'POST', '/reshaper', json.dumps({
        'inventories': {rp: {'resource_provider_generation': generation,
                             'inventories': {name: value}}},
        'allocations': {}}), 400, f'No such resource class {name}')


def test_allocation_ratios_stay_in_the_columns_range(api, rp, db_snapshot):
    # A ratio below the single-precision range once reached the database and
    # then made every candidate request compute an infinite capacity (500).
    generation = api.get(f'/resource_providers/{rp}').body['generation']
    refused(api, db_snapshot, 'PUT', f'/resource_providers/{rp}/inventories', json.dumps({
        'resource_provider_generation': generation,
        'inventories': {'VCPU': {'total': 8}, 'DISK_GB': {
            'total': 1, 'reserved': 2147483647, 'allocation_ratio': -1.1e308}}}),
        400, 'JSON does not validate: -1.1e+308 is less than the minimum of -3.40282e+38')
    # At the edge of the range Placement's rule accepts it (reserved above
    # total times a negative ratio is a positive capacity); candidates still
    # answer, with a finite capacity.
    edge = api.put(f'/resource_providers/{rp}/inventories', {
        'resource_provider_generation': generation,
        'inventories': {'VCPU': {'total': 8}, 'DISK_GB': {
            'total': 1, 'reserved': 2147483647, 'allocation_ratio': -3.40282e38}}})
    assert edge.status_code == 200, edge.body
    found = api.get('/allocation_candidates?resources=DISK_GB:1')
    assert found.status_code == 200, found.body
    [summary] = found.body['provider_summaries'].values()
    assert summary['resources']['DISK_GB']['capacity'] == int(2147483646 * 3.40282e38)
