"""POST /reshaper (1.30+): inventory and the allocations against it move
between providers in one transaction, or nothing changes at all."""

import pytest

from tests.support.api import assert_error
from tests.support.api import assert_version_refused
from tests.support.api import new_uuid
from tests.support.state import unchanged

SERVICE = {'X-Roles': 'service'}
DEFAULTS = {'reserved': 0, 'min_unit': 1, 'max_unit': 2147483647, 'step_size': 1,
            'allocation_ratio': 1.0}


def reshape(api, body, **kwargs):
    kwargs.setdefault('headers', SERVICE)
    return api.post('/reshaper', body, **kwargs)


class Tree:
    """A parent with VCPU and DISK_GB inventory, an empty child, and a
    consumer holding 2 VCPU and 10 DISK_GB of the parent."""

    def __init__(self, api):
        self.parent = api.create_provider()['uuid']
        self.child = api.create_provider(parent=self.parent)['uuid']
        api.set_inventory(self.parent, {'VCPU': {'total': 8}, 'DISK_GB': {'total': 100}})
        self.consumer = new_uuid()
        response = api.allocate(self.consumer, {self.parent: {'VCPU': 2, 'DISK_GB': 10}})
        assert response.status_code == 204

    def body(self, *, parent_generation=2, child_generation=0, parent_inventories=None,
             child_inventories=None, allocations=None, consumer_generation=1, **consumer):
        part = {'allocations': allocations if allocations is not None else {
                    self.parent: {'resources': {'DISK_GB': 10}},
                    self.child: {'resources': {'VCPU': 2}}},
                'project_id': 'proj', 'user_id': 'user',
                'consumer_generation': consumer_generation, 'consumer_type': 'INSTANCE'}
        part.update(consumer)
        return {
            'inventories': {
                self.parent: {'resource_provider_generation': parent_generation,
                              'inventories': parent_inventories if parent_inventories is not None
                              else {'DISK_GB': {'total': 100}}},
                self.child: {'resource_provider_generation': child_generation,
                             'inventories': child_inventories if child_inventories is not None
                             else {'VCPU': {'total': 8}}},
            },
            'allocations': {self.consumer: part},
        }


@pytest.fixture
def tree(api):
    return Tree(api)


def inventories(api, rp):
    return api.get(f'/resource_providers/{rp}/inventories').body


def test_reshaper_needs_1_30(api, tree):
    with unchanged():
        response = reshape(api, tree.body(), version='1.29')
        error = assert_error(response, 404)
        assert error['detail'] == 'The resource could not be found.\n\n   '


def test_reshape_moves_inventory_and_allocations_to_the_child(api, tree):
    response = reshape(api, tree.body())
    assert response.status_code == 204
    assert 'Content-Type' not in response and response.content == b''
    assert inventories(api, tree.parent) == {
        'resource_provider_generation': 5, 'inventories': {'DISK_GB': {**DEFAULTS, 'total': 100}}}
    assert inventories(api, tree.child) == {
        'resource_provider_generation': 3, 'inventories': {'VCPU': {**DEFAULTS, 'total': 8}}}
    assert api.get(f'/allocations/{tree.consumer}').body == {
        'allocations': {tree.parent: {'resources': {'DISK_GB': 10}, 'generation': 5},
                        tree.child: {'resources': {'VCPU': 2}, 'generation': 3}},
        'project_id': 'proj', 'user_id': 'user', 'consumer_generation': 2,
        'consumer_type': 'INSTANCE'}
    assert api.get(f'/resource_providers/{tree.parent}/usages').body['usages'] == {'DISK_GB': 10}
    assert api.get(f'/resource_providers/{tree.child}/usages').body['usages'] == {'VCPU': 2}


def test_reshape_at_1_30_has_no_consumer_type(api, tree):
    body = tree.body()
    del body['allocations'][tree.consumer]['consumer_type']
    assert reshape(api, body, version='1.30').status_code == 204
    assert_error(reshape(api, tree.body(parent_generation=5, child_generation=3,
                                   consumer_generation=2), version='1.30'),
            400, "Additional properties are not allowed ('consumer_type' was unexpected)")


def test_reshape_with_only_inventories(api):
    rp = api.create_provider()['uuid']
    body = {'inventories': {rp: {'resource_provider_generation': 0,
                                 'inventories': {'VCPU': {'total': 4}}}},
            'allocations': {}}
    assert reshape(api, body).status_code == 204
    assert inventories(api, rp) == {'resource_provider_generation': 2,
                                    'inventories': {'VCPU': {**DEFAULTS, 'total': 4}}}


def test_stale_provider_generation_is_409(api, tree):
    with unchanged():
        assert_error(reshape(api, tree.body(parent_generation=1)), 409,
                f'resource provider generation conflict for provider {tree.parent}: '
                'actual: 2, given: 1', code='placement.concurrent_update')


@pytest.mark.parametrize('given', [-1, 2**31, 10**20])
def test_out_of_range_provider_generation_is_409(api, tree, given):
    with unchanged():
        assert_error(reshape(api, tree.body(child_generation=given)), 409,
                f'actual: 0, given: {given}', code='placement.concurrent_update')


def test_stale_consumer_generation_is_409(api, tree):
    with unchanged():
        assert_error(reshape(api, tree.body(consumer_generation=0)), 409,
                'consumer generation conflict - expected 1 but got 0',
                code='placement.concurrent_update')


def test_allocations_that_do_not_fit_leave_everything_unchanged(api, tree):
    with unchanged():
        assert_error(reshape(api, tree.body(child_inventories={'VCPU': {'total': 1}})), 409,
                     "Unable to allocate inventory: Unable to create allocation for 'VCPU' on "
                     f"resource provider '{tree.child}'. The requested amount would exceed the "
                     'capacity.')


def test_constraint_violations_leave_everything_unchanged(api, tree):
    with unchanged():
        body = tree.body(child_inventories={'VCPU': {'total': 8, 'step_size': 4}})
        assert_error(reshape(api, body), 409,
                     'The requested amount would violate inventory constraints.')


def test_removing_inventory_still_allocated_is_409(api, tree):
    with unchanged():
        body = tree.body(allocations={tree.parent: {'resources': {'DISK_GB': 10, 'VCPU': 2}}},
                         parent_inventories={'VCPU': {'total': 8}}, child_inventories={})
        assert_error(reshape(api, body), 409,
                f"update conflict: Inventory for 'DISK_GB' on resource provider '{tree.parent}' "
                'in use.', code='placement.inventory.inuse')


def test_unknown_provider_in_inventories_is_400(api, tree):
    missing = new_uuid()
    body = tree.body()
    body['inventories'][missing] = {'resource_provider_generation': 0, 'inventories': {}}
    with unchanged():
        assert_error(reshape(api, body), 400,
                f'Resource provider {missing} in inventories not found: '
                f'No resource provider with uuid {missing} found',
                code='placement.resource_provider.not_found')


def test_unknown_provider_in_allocations_is_400(api, tree):
    missing = new_uuid()
    with unchanged():
        body = tree.body(allocations={missing: {'resources': {'VCPU': 2}}})
        assert_error(reshape(api, body), 400,
                     f"Allocation for resource provider '{missing}' that does not exist.")


@pytest.mark.parametrize('name', ['CUSTOM_NOPE', 'vcpu'])
def test_unknown_resource_class_in_inventories_is_400(api, tree, name):
    with unchanged():
        assert_error(reshape(api, tree.body(child_inventories={name: {'total': 8}})), 400,
                f'malformed reshaper data: No such resource class {name}.')


def test_negative_allocation_ratio_is_assert_error(api, tree):
    with unchanged():
        assert_error(reshape(api, tree.body(
            child_inventories={'VCPU': {'total': 8, 'allocation_ratio': -1}})), 409,
            f"Invalid inventory for 'VCPU' on resource provider '{tree.child}'.")


def _child_inventory(value):
    return lambda tree: tree.body(child_inventories={'VCPU': value})


def _consumer(**fields):
    return lambda tree: tree.body(**fields)


def _changed(change):
    """A builder of the tree's body, changed in place by change(body, tree)."""
    def build(tree):
        body = tree.body()
        change(body, tree)
        return body
    return build


def _top(**fields):
    return _changed(lambda body, tree: body.update(fields))


def _without(key):
    return _changed(lambda body, tree: body.pop(key))


def _rekeyed(mapping, old, new):
    mapping[new] = mapping.pop(old)


def _provider_key(key):
    """The child's inventories under `key` instead of its uuid."""
    return _changed(lambda body, tree: _rekeyed(body['inventories'], tree.child, key))


def _consumer_key(key):
    """The consumer's allocations under `key` instead of its uuid."""
    return _changed(lambda body, tree: _rekeyed(body['allocations'], tree.consumer, key))


def _consumer_without(key):
    return _changed(lambda body, tree: body['allocations'][tree.consumer].pop(key))


BAD_BODIES = {
    'empty-object': (lambda tree: {}, "'inventories' is a required property"),
    'no-allocations': (_without('allocations'), "'allocations' is a required property"),
    'no-providers': (_top(inventories={}), '{} should be non-empty'),
    'list-allocations': (_top(allocations=[]), "[] is not of type 'object'"),
    'unknown-field': (_top(extra=1),
                      "Additional properties are not allowed ('extra' was unexpected)"),
    'zero-total': (_child_inventory({'total': 0}), '0 is less than the minimum of 1'),
    'negative-total': (_child_inventory({'total': -1}), '-1 is less than the minimum of 1'),
    'total-2**31': (_child_inventory({'total': 2**31}),
                    '2147483648 is greater than the maximum of 2147483647'),
    'total-10**20': (_child_inventory({'total': 10**20}),
                     '100000000000000000000 is greater than the maximum of 2147483647'),
    'string-total': (_child_inventory({'total': '8'}), "'8' is not of type 'integer'"),
    'no-total': (_child_inventory({}), "'total' is a required property"),
    'negative-reserved': (_child_inventory({'total': 8, 'reserved': -1}),
                          '-1 is less than the minimum of 0'),
    'huge-ratio': (_child_inventory({'total': 8, 'allocation_ratio': 1e39}),
                   '1e+39 is greater than the maximum of 3.40282e+38'),
    'unknown-inventory-field': (_child_inventory({'total': 8, 'bogus': 1}),
                                "('bogus' was unexpected)"),
    'string-generation': (_consumer(child_generation='0'), "'0' is not of type 'integer'"),
    'null-generation': (_consumer(child_generation=None), "None is not of type 'integer'"),
    'list-inventories': (_consumer(child_inventories=[]), "[] is not of type 'object'"),
    'invalid-provider-uuid': (_provider_key('nope'),
                              "'nope' does not match any of the regexes: '^[0-9a-fA-F-]{36}$'"),
    'invalid-consumer-uuid': (_consumer_key('not-a-consumer'),
                              "'not-a-consumer' does not match any of the regexes"),
    'zero-amount': (lambda tree: tree.body(allocations={tree.child: {'resources': {'VCPU': 0}}}),
                    '0 is less than the minimum of 1'),
    'lowercase-consumer-type': (_consumer(consumer_type='instance'),
                                "'instance' does not match '^[A-Z0-9_]+$'"),
    'unicode-consumer-type': (_consumer(consumer_type='ÏNSTANCE'),
                              "'ÏNSTANCE' does not match '^[A-Z0-9_]+$'"),
    'no-consumer-generation': (_consumer_without('consumer_generation'),
                               "'consumer_generation' is a required property"),
}


@pytest.mark.parametrize('build, detail', BAD_BODIES.values(), ids=BAD_BODIES.keys())
def test_bad_bodies_are_400_and_change_nothing(api, tree, build, detail):
    with unchanged():
        error = assert_error(reshape(api, build(tree)), 400, detail)
        assert 'JSON does not validate: ' in error['detail']


@pytest.mark.parametrize('raw, detail', [
    ('{', 'Malformed JSON: Expecting property name enclosed in double quotes'),
    ('{"inventories": }', 'Malformed JSON: Expecting value'),
    ('[]', "JSON does not validate: [] is not of type 'object'"),
])
def test_malformed_json_is_400(api, raw, detail):
    with unchanged():
        assert_error(api.post('/reshaper', raw=raw, headers=SERVICE), 400, detail)


def test_body_must_be_json(api, tree):
    with unchanged():
        response = api.post('/reshaper', raw='{}', content_type='text/plain', headers=SERVICE)
        assert_error(response, 415,
                     'The media type text/plain is not supported, use application/json')


@pytest.mark.parametrize('version, literal', [('1.40', None), ('9.9', None), ('1.3o', '3o')])
def test_bad_versions_change_nothing(api, tree, version, literal):
    with unchanged():
        assert_version_refused(reshape(api, tree.body(), version=version), version, literal)
