"""Allocations of consumers: GET/PUT/DELETE /allocations/{consumer_uuid},
POST /allocations and GET /resource_providers/{uuid}/allocations, across
microversions, with capacity checks, generations and refused input."""
import json
import uuid as uuid_lib

import pytest

from tests.support.api import assert_error
from tests.support.api import assert_version_refused
from tests.support.api import error_of
from tests.support.api import generation
from tests.support.api import new_uuid
from tests.support.state import unchanged

MAX_INT = 2147483647
INCOMPLETE = '00000000-0000-0000-0000-000000000000'
NOT_ACCEPTABLE = ('406 Not Acceptable\n\nThe resource could not be generated that was acceptable '
                  'to your browser (content of type text/plain. \n\n Only application/json is '
                  'provided')


def assert_not_acceptable_text(response):
    assert response.status_code == 406
    assert response['Content-Type'] == 'text/plain; charset=UTF-8'
    assert response.content.decode() == NOT_ACCEPTABLE


def put_body(rp, resources, **fields):
    body = {'allocations': {rp: {'resources': resources}}, 'project_id': 'proj',
            'user_id': 'user', 'consumer_generation': None, 'consumer_type': 'INSTANCE'}
    body.update(fields)
    return body


def list_body(rp, resources, **fields):
    return dict({'allocations': [{'resource_provider': {'uuid': rp}, 'resources': resources}]},
                **fields)


def usages(api, rp):
    return api.get(f'/resource_providers/{rp}/usages').body['usages']


@pytest.fixture
def rp(api):
    uuid = api.create_provider()['uuid']
    api.set_inventory(uuid, {
        'VCPU': {'total': 8},
        'MEMORY_MB': {'total': 2048, 'min_unit': 128, 'max_unit': 1024, 'step_size': 128},
    })
    return uuid


@pytest.fixture
def other_rp(api):
    uuid = api.create_provider()['uuid']
    api.set_inventory(uuid, {'VCPU': {'total': 8}})
    return uuid


# ---- GET /allocations/{consumer_uuid} ---------------------------------------

@pytest.mark.parametrize('version', ['1.0', '1.12', '1.28', '1.38'])
def test_unknown_consumer_has_no_allocations(api, version):
    response = api.get(f'/allocations/{new_uuid()}', version=version)
    assert response.status_code == 200
    assert response.body == {'allocations': {}}


def test_get_with_a_malformed_consumer_uuid_is_empty_as_in_placement(api):
    response = api.get('/allocations/not-a-uuid')
    assert response.status_code == 200
    assert response.body == {'allocations': {}}


@pytest.mark.parametrize('version, keys', [
    ('1.11', set()),
    ('1.12', {'project_id', 'user_id'}),
    ('1.28', {'project_id', 'user_id', 'consumer_generation'}),
    ('1.38', {'project_id', 'user_id', 'consumer_generation', 'consumer_type'}),
])
def test_get_body_grows_with_the_microversion(api, rp, version, keys):
    consumer = new_uuid()
    assert api.allocate(consumer, {rp: {'VCPU': 2}}, project='p1', user='u1').status_code == 204
    body = api.get(f'/allocations/{consumer}', version=version).body
    assert body['allocations'] == {rp: {'resources': {'VCPU': 2}, 'generation': 2}}
    assert set(body) - {'allocations'} == keys
    expected = {'project_id': 'p1', 'user_id': 'u1', 'consumer_generation': 1,
                'consumer_type': 'INSTANCE'}
    assert {key: body[key] for key in keys} == {key: expected[key] for key in keys}


def test_get_refuses_text_plain(api):
    assert_not_acceptable_text(api.get(f'/allocations/{new_uuid()}',
                                       headers={'Accept': 'text/plain'}))


# ---- PUT /allocations/{consumer_uuid} ---------------------------------------

def test_list_body_before_1_12_gives_an_incomplete_consumer(api, rp):
    consumer = new_uuid()
    response = api.put(f'/allocations/{consumer}', list_body(rp, {'VCPU': 1}), version='1.0')
    assert response.status_code == 204
    assert 'Content-Type' not in response
    assert api.get(f'/allocations/{consumer}', version='1.0').body == {
        'allocations': {rp: {'resources': {'VCPU': 1}, 'generation': 2}}}
    body = api.get(f'/allocations/{consumer}', version='1.38').body
    assert (body['project_id'], body['user_id']) == (INCOMPLETE, INCOMPLETE)
    assert body['consumer_type'] == 'unknown'
    assert body['consumer_generation'] == 1


def test_list_body_with_owner_from_1_8(api, rp):
    consumer = new_uuid()
    response = api.put(f'/allocations/{consumer}',
                       list_body(rp, {'VCPU': 1}, project_id='p8', user_id='u8'), version='1.8')
    assert response.status_code == 204
    body = api.get(f'/allocations/{consumer}', version='1.12').body
    assert (body['project_id'], body['user_id']) == ('p8', 'u8')


@pytest.mark.parametrize('missing', ['project_id', 'user_id'])
def test_owner_is_required_from_1_8(api, rp, missing):
    body = list_body(rp, {'VCPU': 1}, project_id='p', user_id='u')
    del body[missing]
    with unchanged():
        response = api.put(f'/allocations/{new_uuid()}', body, version='1.8')
        assert response.status_code == 400
        assert f"'{missing}' is a required property" in error_of(response)['detail']


def test_dict_body_is_refused_before_1_12(api, rp):
    body = put_body(rp, {'VCPU': 1})
    del body['consumer_generation'], body['consumer_type']
    with unchanged():
        response = api.put(f'/allocations/{new_uuid()}', body, version='1.11')
        assert response.status_code == 400
        assert "is not of type 'array'" in error_of(response)['detail']


def test_list_body_is_refused_from_1_12(api, rp):
    with unchanged():
        response = api.put(f'/allocations/{new_uuid()}',
                           list_body(rp, {'VCPU': 1}, project_id='p', user_id='u'), version='1.12')
        assert response.status_code == 400
        assert "is not of type 'object'" in error_of(response)['detail']


def test_dict_body_at_1_12(api, rp):
    consumer = new_uuid()
    body = {'allocations': {rp: {'resources': {'VCPU': 3}, 'generation': 99}},
            'project_id': 'p', 'user_id': 'u'}
    assert api.put(f'/allocations/{consumer}', body, version='1.12').status_code == 204
    assert api.get(f'/allocations/{consumer}', version='1.12').body['allocations'] == {
        rp: {'resources': {'VCPU': 3}, 'generation': 2}}


def test_empty_allocations_are_refused_before_1_28(api, rp):
    consumer = new_uuid()
    assert api.allocate(consumer, {rp: {'VCPU': 1}}).status_code == 204
    response = api.put(f'/allocations/{consumer}',
                       {'allocations': {}, 'project_id': 'p', 'user_id': 'u'}, version='1.27')
    assert response.status_code == 400
    assert '{} should be non-empty' in error_of(response)['detail']
    assert usages(api, rp) == {'VCPU': 1, 'MEMORY_MB': 0}


def test_new_consumer_needs_a_null_generation(api, rp):
    consumer = new_uuid()
    with unchanged():
        assert_error(api.allocate(consumer, {rp: {'VCPU': 1}}, generation=0), 409,
                'consumer generation conflict - expected null but got 0',
                code='placement.concurrent_update')
    assert api.allocate(consumer, {rp: {'VCPU': 1}}, generation=None).status_code == 204
    assert api.get(f'/allocations/{consumer}').body['consumer_generation'] == 1


def test_existing_consumer_needs_its_generation(api, rp):
    consumer = new_uuid()
    assert api.allocate(consumer, {rp: {'VCPU': 1}}).status_code == 204
    assert_error(api.allocate(consumer, {rp: {'VCPU': 2}}, generation=None), 409,
            'consumer generation conflict - expected 1 but got None',
            code='placement.concurrent_update')
    assert_error(api.allocate(consumer, {rp: {'VCPU': 2}}, generation=5), 409,
            'consumer generation conflict - expected 1 but got 5',
            code='placement.concurrent_update')
    assert api.allocate(consumer, {rp: {'VCPU': 2}}, generation=1).status_code == 204
    assert api.get(f'/allocations/{consumer}').body == {
        'allocations': {rp: {'resources': {'VCPU': 2}, 'generation': 3}},
        'project_id': 'proj', 'user_id': 'user', 'consumer_generation': 2,
        'consumer_type': 'INSTANCE'}


@pytest.mark.parametrize('version, left_out, detail', [
    ('1.28', ('consumer_generation', 'consumer_type'),
     "'consumer_generation' is a required property"),
    ('1.27', ('consumer_type',), "('consumer_generation' was unexpected)"),
    ('1.38', ('consumer_type',), "'consumer_type' is a required property"),
    ('1.37', (), "('consumer_type' was unexpected)"),
], ids=['consumer_generation-required-from-1.28', 'consumer_generation-unknown-before-1.28',
        'consumer_type-required-from-1.38', 'consumer_type-unknown-before-1.38'])
def test_consumer_fields_follow_the_microversion(api, rp, version, left_out, detail):
    """A PUT body without the fields `left_out`: refused for a field the
    microversion requires or does not know yet."""
    body = put_body(rp, {'VCPU': 1})
    for field in left_out:
        del body[field]
    response = api.put(f'/allocations/{new_uuid()}', body, version=version)
    assert response.status_code == 400
    assert detail in error_of(response)['detail']


def test_consumer_without_type_reads_as_unknown(api, rp):
    consumer = new_uuid()
    body = put_body(rp, {'VCPU': 1})
    del body['consumer_type']
    assert api.put(f'/allocations/{consumer}', body, version='1.37').status_code == 204
    assert api.get(f'/allocations/{consumer}', version='1.38').body['consumer_type'] == 'unknown'


def test_rewrite_changes_owner_and_type(api, rp):
    consumer = new_uuid()
    assert api.allocate(consumer, {rp: {'VCPU': 1}}).status_code == 204
    response = api.allocate(consumer, {rp: {'VCPU': 1}}, project='p2', user='u2',
                            consumer_type='MIGRATION', generation=1)
    assert response.status_code == 204
    body = api.get(f'/allocations/{consumer}').body
    assert (body['project_id'], body['user_id'], body['consumer_type']) == (
        'p2', 'u2', 'MIGRATION')


def test_consumer_uuid_in_the_path_is_normalised(api, rp):
    consumer = new_uuid()
    assert api.allocate(consumer.upper(), {rp: {'VCPU': 1}}).status_code == 204
    assert api.get(f'/allocations/{consumer}').body['allocations'] == {
        rp: {'resources': {'VCPU': 1}, 'generation': 2}}


def test_unicode_owner_round_trips(api, rp):
    consumer = new_uuid()
    owner = 'pröject-中-😀'
    assert api.allocate(consumer, {rp: {'VCPU': 1}}, project=owner).status_code == 204
    assert api.get(f'/allocations/{consumer}').body['project_id'] == owner


# ---- capacity -----------------------------------------------------------------

def test_capacity_counts_reserved_and_allocation_ratio(api):
    rp = api.create_provider()['uuid']
    api.set_inventory(rp, {'VCPU': {'total': 8, 'reserved': 2, 'allocation_ratio': 2.0}})
    assert api.allocate(new_uuid(), {rp: {'VCPU': 12}}).status_code == 204
    assert_error(api.allocate(new_uuid(), {rp: {'VCPU': 1}}), 409,
            f"Unable to allocate inventory: Unable to create allocation for 'VCPU' on "
            f"resource provider '{rp}'. The requested amount would exceed the capacity.")


def test_other_consumers_usage_counts_but_own_is_replaced(api, rp):
    first, second = new_uuid(), new_uuid()
    assert api.allocate(first, {rp: {'VCPU': 6}}).status_code == 204
    with unchanged():
        assert_error(api.allocate(second, {rp: {'VCPU': 3}}), 409, 'would exceed the capacity')
    assert api.allocate(first, {rp: {'VCPU': 8}}, generation=1).status_code == 204
    assert usages(api, rp) == {'VCPU': 8, 'MEMORY_MB': 0}


@pytest.mark.parametrize('amount', [64, 1152, 200], ids=['below-min-unit', 'above-max-unit',
                                                         'off-step-size'])
def test_inventory_constraints_are_enforced(api, rp, amount):
    with unchanged():
        assert_error(api.allocate(new_uuid(), {rp: {'MEMORY_MB': amount}}), 409,
                f"Unable to create allocation for 'MEMORY_MB' on resource provider '{rp}'. "
                "The requested amount would violate inventory constraints.")


@pytest.mark.parametrize('amount', [2**31, 10**20])
def test_huge_amounts_violate_max_unit(api, amount):
    rp = api.create_provider()['uuid']
    api.set_inventory(rp, {'VCPU': {'total': MAX_INT, 'max_unit': MAX_INT,
                                    'allocation_ratio': 16.0}})
    with unchanged():
        assert_error(api.allocate(new_uuid(), {rp: {'VCPU': amount}}), 409,
                'The requested amount would violate inventory constraints.')


def test_unknown_provider_is_400(api, rp):
    missing = new_uuid()
    with unchanged():
        assert_error(api.allocate(new_uuid(), {rp: {'VCPU': 1}, missing: {'VCPU': 1}}), 400,
                f"Allocation for resource provider '{missing}' that does not exist.")


def test_dashes_only_provider_uuid_is_an_unknown_provider(api):
    with unchanged():
        assert_error(api.allocate(new_uuid(), {'-' * 36: {'VCPU': 1}}), 400,
                f"Allocation for resource provider '{'-' * 36}' that does not exist.")


def test_unknown_resource_class_is_400(api, rp):
    consumer = new_uuid()
    with unchanged():
        assert_error(api.allocate(consumer, {rp: {'CUSTOM_NOPE': 1}}), 400,
                f'Unable to allocate inventory for consumer {consumer}: '
                'No such resource class CUSTOM_NOPE.')


def test_class_without_inventory_is_409(api, rp):
    with unchanged():
        assert_error(api.allocate(new_uuid(), {rp: {'DISK_GB': 1}}), 409,
                f"Unable to allocate inventory: Inventory for 'DISK_GB' on resource provider "
                f"'{rp}' invalid.")


# ---- empty allocations, DELETE and provider generations ---------------------

def test_empty_allocations_remove_the_consumer(api, rp):
    consumer = new_uuid()
    assert api.allocate(consumer, {rp: {'VCPU': 2}}).status_code == 204
    response = api.put(f'/allocations/{consumer}', {
        'allocations': {}, 'project_id': 'proj', 'user_id': 'user',
        'consumer_generation': 1, 'consumer_type': 'INSTANCE'})
    assert response.status_code == 204
    assert api.get(f'/allocations/{consumer}').body == {'allocations': {}}
    assert usages(api, rp) == {'VCPU': 0, 'MEMORY_MB': 0}
    assert api.allocate(consumer, {rp: {'VCPU': 1}}, generation=None).status_code == 204


def test_delete_removes_and_then_404s(api, rp):
    consumer = new_uuid()
    assert api.allocate(consumer, {rp: {'VCPU': 2}}).status_code == 204
    response = api.delete(f'/allocations/{consumer}')
    assert response.status_code == 204
    assert 'Content-Type' not in response and response.content == b''
    assert api.get(f'/allocations/{consumer}').body == {'allocations': {}}
    assert usages(api, rp) == {'VCPU': 0, 'MEMORY_MB': 0}
    assert_error(api.delete(f'/allocations/{consumer}'), 404,
            f"No allocations for consumer '{consumer}'")


def test_delete_with_a_malformed_consumer_uuid_is_404(api):
    with unchanged():
        assert_error(api.delete('/allocations/not-a-uuid'), 404,
                "No allocations for consumer 'not-a-uuid'")


def test_provider_generations_follow_allocation_writes(api, rp, other_rp):
    consumer = new_uuid()
    assert (generation(api, rp), generation(api, other_rp)) == (1, 1)
    assert api.allocate(consumer, {rp: {'VCPU': 1}}).status_code == 204
    assert (generation(api, rp), generation(api, other_rp)) == (2, 1)
    assert api.allocate(consumer, {other_rp: {'VCPU': 1}}, generation=1).status_code == 204
    assert (generation(api, rp), generation(api, other_rp)) == (2, 2)
    assert api.allocate(consumer, {}, generation=2).status_code == 204
    assert (generation(api, rp), generation(api, other_rp)) == (2, 3)
    assert api.allocate(consumer, {rp: {'VCPU': 1}, other_rp: {'VCPU': 1}}).status_code == 204
    assert (generation(api, rp), generation(api, other_rp)) == (3, 4)
    assert api.delete(f'/allocations/{consumer}').status_code == 204
    assert (generation(api, rp), generation(api, other_rp)) == (3, 4)


# ---- POST /allocations --------------------------------------------------------

def post_part(rp, resources, **fields):
    part = put_body(rp, resources, **fields)
    if not resources:
        part['allocations'] = {}
    return part


def test_post_needs_1_13(api, rp):
    with unchanged():
        response = api.post('/allocations', {new_uuid(): post_part(rp, {'VCPU': 1})},
                            version='1.12')
        error = assert_error(response, 404, code=None)
        assert error['detail'] == 'The resource could not be found.\n\n   '


def test_post_writes_several_consumers(api, rp, other_rp):
    first, second = new_uuid(), new_uuid()
    response = api.post('/allocations', {
        first: post_part(rp, {'VCPU': 2}),
        second: post_part(other_rp, {'VCPU': 3}, project_id='p2', consumer_type='MIGRATION'),
    })
    assert response.status_code == 204
    assert 'Content-Type' not in response
    assert api.get(f'/allocations/{first}').body == {
        'allocations': {rp: {'resources': {'VCPU': 2}, 'generation': 2}},
        'project_id': 'proj', 'user_id': 'user', 'consumer_generation': 1,
        'consumer_type': 'INSTANCE'}
    assert api.get(f'/allocations/{second}').body == {
        'allocations': {other_rp: {'resources': {'VCPU': 3}, 'generation': 2}},
        'project_id': 'p2', 'user_id': 'user', 'consumer_generation': 1,
        'consumer_type': 'MIGRATION'}


def test_post_moves_allocations_between_consumers(api, rp):
    instance, migration = new_uuid(), new_uuid()
    assert api.allocate(instance, {rp: {'VCPU': 6}}).status_code == 204
    response = api.post('/allocations', {
        instance: post_part(rp, {}, consumer_generation=1),
        migration: post_part(rp, {'VCPU': 8}, consumer_type='MIGRATION'),
    })
    assert response.status_code == 204
    assert api.get(f'/allocations/{instance}').body == {'allocations': {}}
    assert api.get(f'/allocations/{migration}').body['allocations'] == {
        rp: {'resources': {'VCPU': 8}, 'generation': 3}}
    assert usages(api, rp) == {'VCPU': 8, 'MEMORY_MB': 0}
    assert generation(api, rp) == 3


@pytest.mark.parametrize('bad_part, status, detail, code', [
    (lambda rp: post_part(rp, {'VCPU': 7}), 409, 'would exceed the capacity', None),
    (lambda rp: post_part(rp, {'DISK_GB': 1}), 409, "Inventory for 'DISK_GB'", None),
    (lambda rp: post_part(rp, {'CUSTOM_NOPE': 1}), 400,
     'Unable to allocate inventory No such resource class CUSTOM_NOPE.', None),
    (lambda rp: post_part(rp, {'MEMORY_MB': 100}), 409, 'violate inventory constraints', None),
    (lambda rp: post_part(rp, {'VCPU': 1}, consumer_generation=3), 409,
     'consumer generation conflict - expected null but got 3', 'placement.concurrent_update'),
    (lambda rp: post_part(rp, {'VCPU': 0}), 400, '0 is less than the minimum of 1', None),
], ids=['capacity', 'no-inventory', 'unknown-class', 'constraints', 'generation', 'zero'])
def test_post_is_all_or_nothing(api, rp, bad_part, status, detail, code):
    good, bad = new_uuid(), new_uuid()
    with unchanged():
        response = api.post('/allocations', {good: post_part(rp, {'VCPU': 2}), bad: bad_part(rp)})
        assert_error(response, status, detail, code=code or 'placement.undefined_code')
    assert api.get(f'/allocations/{good}').body == {'allocations': {}}


def test_post_with_an_unknown_provider_writes_nothing(api, rp):
    missing = new_uuid()
    with unchanged():
        response = api.post('/allocations', {new_uuid(): post_part(rp, {'VCPU': 2}),
                                             new_uuid(): post_part(missing, {'VCPU': 1})})
        assert_error(response, 400,
                     f"Allocation for resource provider '{missing}' that does not exist.")


@pytest.mark.parametrize('key', ['not-a-uuid', 'ü' * 36, uuid_lib.uuid4().hex])
def test_post_with_a_malformed_consumer_uuid_writes_nothing(api, rp, key):
    with unchanged():
        response = api.post('/allocations', {new_uuid(): post_part(rp, {'VCPU': 1}),
                                             key: post_part(rp, {'VCPU': 1})})
        assert_error(response, 400, "does not match any of the regexes: '^[0-9a-fA-F-]{36}$'")


@pytest.mark.parametrize('body, detail', [
    ({}, '{} should be non-empty'),
    ([], "[] is not of type 'object'"),
    ('x', "'x' is not of type 'object'"),
    (lambda rp: {new_uuid(): dict(post_part(rp, {'VCPU': 1}), extra=1)},
     "('extra' was unexpected)"),
    (lambda rp: {new_uuid(): {'allocations': {rp: {'resources': {'VCPU': 1}}}}},
     "is a required property"),
    (lambda rp: {new_uuid(): post_part(rp, {'VCPU': 1}, consumer_type='bad type')},
     "'bad type' does not match '^[A-Z0-9_]+$'"),
    (lambda rp: {new_uuid(): post_part(rp, {'VCPU': -1})}, '-1 is less than the minimum of 1'),
    (lambda rp: {new_uuid(): post_part(rp, {'VCPU': 1}, consumer_generation='1')},
     "'1' is not of type 'integer', 'null'"),
])
def test_post_refuses_bad_bodies(api, rp, body, detail):
    with unchanged():
        response = api.post('/allocations', body(rp) if callable(body) else body)
        assert_error(response, 400, detail)


def test_post_refuses_malformed_json(api):
    with unchanged():
        assert_error(api.post('/allocations', raw='{"x": '), 400, 'Malformed JSON: Expecting value')


# ---- refused PUT bodies ---------------------------------------------------------

def _without(key):
    def build(rp):
        body = put_body(rp, {'VCPU': 1})
        del body[key]
        return body
    return build


BAD_PUT_BODIES = {
    'zero-amount': (lambda rp: put_body(rp, {'VCPU': 0}), '0 is less than the minimum of 1'),
    'negative-amount': (lambda rp: put_body(rp, {'VCPU': -1}), '-1 is less than the minimum of 1'),
    'string-amount': (lambda rp: put_body(rp, {'VCPU': '1'}), "'1' is not of type 'integer'"),
    'float-amount': (lambda rp: put_body(rp, {'VCPU': 1.5}), "1.5 is not of type 'integer'"),
    'bool-amount': (lambda rp: put_body(rp, {'VCPU': True}), "True is not of type 'integer'"),
    'null-amount': (lambda rp: put_body(rp, {'VCPU': None}), "None is not of type 'integer'"),
    'no-resources': (lambda rp: put_body(rp, {}), '{} should be non-empty'),
    'lowercase-class': (lambda rp: put_body(rp, {'vcpu': 1}),
                        "'vcpu' does not match any of the regexes: '^[A-Z0-9_]+$'"),
    'unicode-class': (lambda rp: put_body(rp, {'VÇPU': 1}),
                      "'VÇPU' does not match any of the regexes"),
    'unknown-field': (lambda rp: put_body(rp, {'VCPU': 1}, extra=1),
                      "Additional properties are not allowed ('extra' was unexpected)"),
    'unknown-provider-field': (
        lambda rp: put_body(rp, {'VCPU': 1}, allocations={rp: {'resources': {'VCPU': 1}, 'x': 1}}),
        "('x' was unexpected)"),
    'provider-without-resources': (lambda rp: put_body(rp, {'VCPU': 1}, allocations={rp: {}}),
                                   "'resources' is a required property"),
    'string-provider-generation': (
        lambda rp: put_body(rp, {'VCPU': 1},
                            allocations={rp: {'resources': {'VCPU': 1}, 'generation': 'x'}}),
        "'x' is not of type 'integer'"),
    'list-allocations': (lambda rp: put_body(rp, {}, allocations=[]), "[] is not of type 'object'"),
    'string-allocations': (lambda rp: put_body(rp, {}, allocations='all'),
                           "'all' is not of type 'object'"),
    'invalid-provider-uuid': (
        lambda rp: put_body(rp, {}, allocations={'not-a-uuid': {'resources': {'VCPU': 1}}}),
        "'not-a-uuid' does not match any of the regexes: '^[0-9a-fA-F-]{36}$'"),
    'provider-uuid-without-dashes': (
        lambda rp: put_body(rp, {}, allocations={rp.replace('-', ''): {'resources': {'VCPU': 1}}}),
        'does not match any of the regexes'),
    'integer-project': (lambda rp: put_body(rp, {'VCPU': 1}, project_id=1),
                        "1 is not of type 'string'"),
    'empty-project': (lambda rp: put_body(rp, {'VCPU': 1}, project_id=''),
                      "'' should be non-empty"),
    'long-user': (lambda rp: put_body(rp, {'VCPU': 1}, user_id='u' * 256), 'is too long'),
    'null-user': (lambda rp: put_body(rp, {'VCPU': 1}, user_id=None),
                  "None is not of type 'string'"),
    'string-consumer-generation': (lambda rp: put_body(rp, {'VCPU': 1}, consumer_generation='0'),
                                   "'0' is not of type 'integer', 'null'"),
    'lowercase-consumer-type': (lambda rp: put_body(rp, {'VCPU': 1}, consumer_type='instance'),
                                "'instance' does not match '^[A-Z0-9_]+$'"),
    'dashed-consumer-type': (lambda rp: put_body(rp, {'VCPU': 1}, consumer_type='INST-ANCE'),
                             "'INST-ANCE' does not match '^[A-Z0-9_]+$'"),
    'empty-consumer-type': (lambda rp: put_body(rp, {'VCPU': 1}, consumer_type=''),
                            "'' does not match '^[A-Z0-9_]+$'"),
    'unicode-consumer-type': (lambda rp: put_body(rp, {'VCPU': 1}, consumer_type='ÜNICODE'),
                              "'ÜNICODE' does not match '^[A-Z0-9_]+$'"),
    'long-consumer-type': (lambda rp: put_body(rp, {'VCPU': 1}, consumer_type='X' * 256),
                           'is too long'),
    'null-consumer-type': (lambda rp: put_body(rp, {'VCPU': 1}, consumer_type=None),
                           "None is not of type 'string'"),
    'empty-mapping': (lambda rp: put_body(rp, {'VCPU': 1}, mappings={'g': []}),
                      '[] should be non-empty'),
    'invalid-mapping-uuid': (lambda rp: put_body(rp, {'VCPU': 1}, mappings={'g': ['nope']}),
                             "'nope' is not a 'uuid'"),
    'list-mappings': (lambda rp: put_body(rp, {'VCPU': 1}, mappings=[]),
                      "[] is not of type 'object'"),
    'missing-allocations': (_without('allocations'), "'allocations' is a required property"),
    'missing-project': (_without('project_id'), "'project_id' is a required property"),
    'missing-consumer-generation': (_without('consumer_generation'),
                                    "'consumer_generation' is a required property"),
    'missing-consumer-type': (_without('consumer_type'), "'consumer_type' is a required property"),
}


@pytest.mark.parametrize('build, detail', BAD_PUT_BODIES.values(), ids=BAD_PUT_BODIES.keys())
def test_put_refuses_bad_bodies(api, rp, build, detail):
    with unchanged():
        response = api.put(f'/allocations/{new_uuid()}', build(rp))
        assert 'JSON does not validate: ' in assert_error(response, 400, detail)['detail']


@pytest.mark.parametrize('raw, detail', [
    ('{"allocations": ', 'Malformed JSON: Expecting value'),
    ("{'allocations': {}}", 'Malformed JSON: Expecting property name enclosed in double quotes'),
    (b'\xc3\x28', "Malformed JSON: 'utf-8' codec can't decode byte 0xc3"),
    ('null', "JSON does not validate: None is not of type 'object'"),
    ('[]', "JSON does not validate: [] is not of type 'object'"),
    ('42', "JSON does not validate: 42 is not of type 'object'"),
], ids=['truncated', 'single-quotes', 'bad-utf8', 'null', 'list', 'number'])
def test_put_refuses_malformed_json(api, raw, detail):
    with unchanged():
        assert_error(api.put(f'/allocations/{new_uuid()}', raw=raw), 400, detail)


def test_put_refuses_an_empty_json_body(api):
    with unchanged():
        response = api.put(f'/allocations/{new_uuid()}',
                           headers={'Content-Type': 'application/json'})
        assert_error(response, 400, 'Malformed JSON: Expecting value: line 1 column 1 (char 0)')


@pytest.mark.parametrize('literal, detail', [
    ('NaN', 'NaN is not a number JSON allows'),
    ('Infinity', 'Infinity is not a number JSON allows'),
    ('1e400', '1e400 is out of range for a number'),
])
def test_put_refuses_non_finite_amounts(api, rp, literal, detail):
    raw = json.dumps(put_body(rp, {'VCPU': 1})).replace('"VCPU": 1', f'"VCPU": {literal}')
    with unchanged():
        assert_error(api.put(f'/allocations/{new_uuid()}', raw=raw), 400,
                     f'Malformed JSON: {detail}')


def test_put_refuses_a_body_that_is_not_utf8(api, rp):
    raw = json.dumps(put_body(rp, {'VCPU': 1})).encode('utf-16')
    with unchanged():
        assert_error(api.put(f'/allocations/{new_uuid()}', raw=raw), 400,
                "Malformed JSON: 'utf-8' codec can't decode byte 0xff in position 0")


def test_put_refuses_a_lone_surrogate_without_a_500(api, rp):
    raw = json.dumps(put_body(rp, {'VCPU': 1})).replace('"proj"', '"\\ud800"')
    with unchanged():
        response = api.put(f'/allocations/{new_uuid()}', raw=raw)
        assert_error(response, 400, "Malformed JSON: 'utf-8' codec can't encode character "
                                    "'\\ud800' in position 0: surrogates not allowed")


@pytest.mark.parametrize('value', [-1, 2**31, 10**20])
def test_out_of_range_consumer_generation_conflicts(api, rp, value):
    with unchanged():
        assert_error(api.allocate(new_uuid(), {rp: {'VCPU': 1}}, generation=value), 409,
                f'consumer generation conflict - expected null but got {value}',
                code='placement.concurrent_update')


@pytest.mark.parametrize('path_uuid', ['not-a-uuid', '12345', 'ü', str(uuid_lib.uuid4()) + '0',
                                       'g' * 32])
def test_put_refuses_a_malformed_consumer_uuid(api, rp, path_uuid):
    with unchanged():
        assert_error(api.put(f'/allocations/{path_uuid}', put_body(rp, {'VCPU': 1})), 400,
                f'Malformed consumer_uuid: {path_uuid}')


@pytest.mark.parametrize('method, path, body', [
    ('PUT', '/allocations/{consumer}', lambda rp: put_body(rp, {'VCPU': 1})),
    ('POST', '/allocations', lambda rp: {new_uuid(): post_part(rp, {'VCPU': 1})}),
])
@pytest.mark.parametrize('version, literal', [('1.40', None), ('2.0', None), ('0.9', None),
                                              ('one.two', 'one'), ('1.2.3', '2.3')])
def test_bad_version_headers_write_nothing(api, rp, method, path, body, version, literal):
    with unchanged():
        response = api.request(method, path.format(consumer=new_uuid()), body(rp), version=version)
        assert_version_refused(response, version, literal)


# ---- GET /resource_providers/{uuid}/allocations -------------------------------

@pytest.mark.parametrize('version, with_generation', [('1.0', False), ('1.27', False),
                                                      ('1.28', True)])
def test_provider_allocations(api, rp, version, with_generation):
    first, second = new_uuid(), new_uuid()
    assert api.allocate(first, {rp: {'VCPU': 1, 'MEMORY_MB': 256}}).status_code == 204
    assert api.allocate(second, {rp: {'VCPU': 2}}).status_code == 204
    response = api.get(f'/resource_providers/{rp}/allocations', version=version)
    assert response.status_code == 200
    expected = {first: {'resources': {'VCPU': 1, 'MEMORY_MB': 256}},
                second: {'resources': {'VCPU': 2}}}
    if with_generation:
        for entry in expected.values():
            entry['consumer_generation'] = 1
    assert response.body == {'allocations': expected, 'resource_provider_generation': 3}


def test_provider_without_allocations(api):
    rp = api.create_provider()['uuid']
    assert api.get(f'/resource_providers/{rp}/allocations').body == {
        'allocations': {}, 'resource_provider_generation': 0}


@pytest.mark.parametrize('rp', [str(uuid_lib.UUID(int=7)), 'not-a-uuid'])
def test_provider_allocations_of_an_unknown_provider_is_404(api, rp):
    assert_error(api.get(f'/resource_providers/{rp}/allocations'), 404,
            f"Resource provider '{rp}' not found: No resource provider with uuid {rp} found")


def test_provider_allocations_of_a_unicode_provider_is_404(api):
    assert_error(api.get('/resource_providers/%C3%BC/allocations'), 404,
                 "Resource provider 'ü' not found: No resource provider with uuid ü found")


def test_provider_allocations_refuse_text_plain(api, rp):
    assert_not_acceptable_text(api.get(f'/resource_providers/{rp}/allocations',
                                       headers={'Accept': 'text/plain'}))
