"""/resource_providers/{uuid}/inventories[/{resource_class}]: reading,
replacing, adding, changing and deleting inventory, the generation guard,
inventory in use, and refusal of bad input."""
import json
from urllib.parse import quote

import pytest

from tests.support.api import assert_error
from tests.support.api import assert_not_acceptable
from tests.support.api import generation
from tests.support.api import new_uuid
from tests.support.state import unchanged

CONCURRENT = 'placement.concurrent_update'
INUSE = 'placement.inventory.inuse'
DEFAULTS = {'reserved': 0, 'min_unit': 1, 'max_unit': 2147483647, 'step_size': 1,
            'allocation_ratio': 1.0}


@pytest.fixture
def rp(api):
    return api.create_provider(name='cn1')['uuid']


def inv_path(rp_uuid, resource_class=None):
    path = f'/resource_providers/{rp_uuid}/inventories'
    return f'{path}/{resource_class}' if resource_class else path


@pytest.fixture
def in_use(api, rp):
    """cn1 with VCPU total 8 (4 allocated) and DISK_GB total 100 (unused)."""
    api.set_inventory(rp, {'VCPU': {'total': 8}, 'DISK_GB': {'total': 100}})
    assert api.allocate(new_uuid(), {rp: {'VCPU': 4}}).status_code == 204
    return rp


# ---- read ---------------------------------------------------------------------

def test_a_new_provider_has_no_inventory(api, rp):
    response = api.get(inv_path(rp))
    assert response.status_code == 200
    assert response.body == {'resource_provider_generation': 0, 'inventories': {}}
    # As Placement: no inventory, no date (not "now"); still no-cache.
    assert 'Last-Modified' not in response
    assert response['Cache-Control'] == 'no-cache'


def test_an_inventory_list_is_dated_by_its_newest_change(api, rp):
    api.set_inventory(rp, {'VCPU': {'total': 8}})
    response = api.get(inv_path(rp))
    assert response['Last-Modified'] == api.get(inv_path(rp, 'VCPU'))['Last-Modified']


def test_show_one_inventory(api, rp):
    api.set_inventory(rp, {'VCPU': {'total': 8, 'reserved': 1}})
    response = api.get(inv_path(rp, 'VCPU'))
    assert response.status_code == 200
    assert response.body == {**DEFAULTS, 'total': 8, 'reserved': 1,
                             'resource_provider_generation': 1}
    assert response['Cache-Control'] == 'no-cache'


@pytest.mark.parametrize('resource_class', ['VGPU', 'vcpu', 'CUSTOM_NOPE'])
def test_show_missing_inventory_is_404(api, rp, resource_class):
    api.set_inventory(rp, {'VCPU': {'total': 8}})
    assert_error(api.get(inv_path(rp, resource_class)), 404,
                 f'No inventory of class {resource_class} for {rp}')


@pytest.mark.parametrize('path', ['/resource_providers/{}/inventories',
                                  '/resource_providers/{}/inventories/VCPU'])
def test_unknown_provider_is_404(api, path):
    rp_uuid = new_uuid()
    assert_error(api.get(path.format(rp_uuid)), 404,
                 f'No resource provider with uuid {rp_uuid} found')


@pytest.mark.parametrize('resource_class', [None, 'VCPU'])
def test_get_with_accept_text_plain_is_406(api, rp, resource_class):
    api.set_inventory(rp, {'VCPU': {'total': 8}})
    assert_not_acceptable(api.get(inv_path(rp, resource_class), headers={'Accept': 'text/plain'}))


# ---- replace all (PUT) ----------------------------------------------------------

def test_replace_all_fills_in_defaults_and_bumps_the_generation(api, rp):
    response = api.put(inv_path(rp), {'resource_provider_generation': 0, 'inventories': {
        'VCPU': {'total': 8}, 'MEMORY_MB': {'total': 1024, 'reserved': 512, 'min_unit': 64,
                                            'max_unit': 512, 'step_size': 64,
                                            'allocation_ratio': 1.5}}})
    assert response.status_code == 200
    expected = {'resource_provider_generation': 1, 'inventories': {
        'VCPU': {**DEFAULTS, 'total': 8},
        'MEMORY_MB': {'total': 1024, 'reserved': 512, 'min_unit': 64, 'max_unit': 512,
                      'step_size': 64, 'allocation_ratio': 1.5}}}
    assert response.body == expected
    assert api.get(inv_path(rp)).body == expected


def test_replace_all_removes_what_is_not_listed(api, rp):
    api.set_inventory(rp, {'VCPU': {'total': 8}, 'DISK_GB': {'total': 100}})
    response = api.put(inv_path(rp), {'resource_provider_generation': 1,
                                      'inventories': {'DISK_GB': {'total': 50}}})
    assert response.status_code == 200
    assert response.body['inventories'] == {'DISK_GB': {**DEFAULTS, 'total': 50}}
    response = api.put(inv_path(rp), {'resource_provider_generation': 2, 'inventories': {}})
    assert response.body == {'resource_provider_generation': 3, 'inventories': {}}
    assert 'Last-Modified' not in response


def test_replace_all_with_a_stale_generation_is_409(api, rp):
    api.set_inventory(rp, {'VCPU': {'total': 8}})
    with unchanged():
        response = api.put(inv_path(rp), {'resource_provider_generation': 0,
                                          'inventories': {'VCPU': {'total': 4}}})
        assert_error(response, 409, 'resource provider generation conflict', code=CONCURRENT)


def test_replace_all_with_a_custom_class(api, rp):
    assert api.post('/resource_classes', {'name': 'CUSTOM_FPGA'}).status_code == 201
    response = api.put(inv_path(rp), {'resource_provider_generation': 0,
                                      'inventories': {'CUSTOM_FPGA': {'total': 2}}})
    assert response.status_code == 200
    assert response.body['inventories'] == {'CUSTOM_FPGA': {**DEFAULTS, 'total': 2}}


# ---- add one (POST) ----------------------------------------------------------------

def test_add_one(api, rp):
    response = api.post(inv_path(rp), {'resource_class': 'DISK_GB', 'total': 100,
                                       'reserved': 10})
    assert response.status_code == 201
    assert response['Location'] == f'http://testserver/resource_providers/{rp}/inventories/DISK_GB'
    assert response.body == {**DEFAULTS, 'total': 100, 'reserved': 10,
                             'resource_provider_generation': 1}
    assert api.get(inv_path(rp, 'DISK_GB')).body == response.body


def test_add_one_ignores_the_generation_as_placement_does(api, rp):
    response = api.post(inv_path(rp), {'resource_class': 'DISK_GB', 'total': 100,
                                       'resource_provider_generation': 99})
    assert response.status_code == 201
    assert response.body == {**DEFAULTS, 'total': 100, 'resource_provider_generation': 1}


def test_add_an_existing_class_is_409(api, rp):
    api.set_inventory(rp, {'DISK_GB': {'total': 100}})
    with unchanged():
        response = api.post(inv_path(rp), {'resource_class': 'DISK_GB', 'total': 50})
        assert_error(response, 409, 'Update conflict: ', code=CONCURRENT)


@pytest.mark.parametrize('resource_class', ['CUSTOM_NOPE'])
def test_add_an_unknown_class_is_400(api, rp, resource_class):
    with unchanged():
        response = api.post(inv_path(rp), {'resource_class': resource_class, 'total': 1})
        assert_error(response, 400, f'Unable to create inventory for resource provider {rp}: No '
                                    f'such resource class {resource_class}.')


# ---- change one (PUT) --------------------------------------------------------------

def test_change_one(api, rp):
    api.set_inventory(rp, {'VCPU': {'total': 8}, 'DISK_GB': {'total': 100}})
    response = api.put(inv_path(rp, 'VCPU'), {'resource_provider_generation': 1, 'total': 16,
                                              'allocation_ratio': 4.0})
    assert response.status_code == 200
    assert response.body == {**DEFAULTS, 'total': 16, 'allocation_ratio': 4.0,
                             'resource_provider_generation': 2}
    assert api.get(inv_path(rp)).body == {'resource_provider_generation': 2, 'inventories': {
        'VCPU': {**DEFAULTS, 'total': 16, 'allocation_ratio': 4.0},
        'DISK_GB': {**DEFAULTS, 'total': 100}}}


def test_change_one_resets_omitted_fields_to_defaults(api, rp):
    api.set_inventory(rp, {'VCPU': {'total': 8, 'reserved': 2, 'max_unit': 4}})
    response = api.put(inv_path(rp, 'VCPU'), {'resource_provider_generation': 1, 'total': 8})
    assert response.body == {**DEFAULTS, 'total': 8, 'resource_provider_generation': 2}


def test_change_one_with_a_stale_generation_is_409(api, rp):
    api.set_inventory(rp, {'VCPU': {'total': 8}})
    with unchanged():
        response = api.put(inv_path(rp, 'VCPU'), {'resource_provider_generation': 0, 'total': 4})
        assert_error(response, 409, 'resource provider generation conflict', code=CONCURRENT)


def test_change_one_the_provider_does_not_have_is_400(api, rp):
    api.set_inventory(rp, {'VCPU': {'total': 8}})
    with unchanged():
        response = api.put(inv_path(rp, 'VGPU'), {'resource_provider_generation': 1, 'total': 4})
        assert_error(response, 400, 'No inventory record with resource class for resource '
                                    f'provider {rp}: No inventory of class VGPU found.')


@pytest.mark.parametrize('resource_class, shown', [
    ('CUSTOM_NOPE', 'CUSTOM_NOPE'), ('vcpu', 'vcpu'), ('VCPU%00', 'VCPU\x00'),
])
def test_change_one_of_an_unknown_class_is_404(api, rp, resource_class, shown):
    with unchanged():
        response = api.put(inv_path(rp, resource_class), {'resource_provider_generation': 0,
                                                          'total': 4})
        assert_error(response, 404, f'No such resource class {shown}.')


def test_change_one_of_a_unicode_class_is_404(api, rp):
    with unchanged():
        response = api.put(inv_path(rp, quote('CUSTOM_ÄÖ')), {'resource_provider_generation': 0,
                                                              'total': 4})
        assert_error(response, 404, 'No such resource class CUSTOM_')


# ---- delete -----------------------------------------------------------------------

def test_delete_one(api, rp):
    api.set_inventory(rp, {'VCPU': {'total': 8}, 'DISK_GB': {'total': 100}})
    response = api.delete(inv_path(rp, 'VCPU'))
    assert response.status_code == 204
    assert response.content == b''
    assert api.get(inv_path(rp)).body == {
        'resource_provider_generation': 2, 'inventories': {'DISK_GB': {**DEFAULTS, 'total': 100}}}


@pytest.mark.parametrize('resource_class, detail', [
    ('VGPU', 'No inventory of class VGPU found for delete'),
    ('CUSTOM_NOPE', 'No inventory of class CUSTOM_NOPE found for delete: No such resource class '
                    'CUSTOM_NOPE.'),
    ('vcpu', 'No inventory of class vcpu found for delete'),
])
def test_delete_missing_one_is_404(api, rp, resource_class, detail):
    api.set_inventory(rp, {'VCPU': {'total': 8}})
    with unchanged():
        assert_error(api.delete(inv_path(rp, resource_class)), 404, detail)


def test_delete_all_from_1_5(api, rp):
    api.set_inventory(rp, {'VCPU': {'total': 8}, 'DISK_GB': {'total': 100}})
    response = api.delete(inv_path(rp), version='1.5')
    assert response.status_code == 204
    assert api.get(inv_path(rp)).body == {'resource_provider_generation': 2, 'inventories': {}}


def test_delete_all_before_1_5_is_405(api, rp):
    api.set_inventory(rp, {'VCPU': {'total': 8}})
    with unchanged():
        response = api.delete(inv_path(rp), version='1.4')
        assert_error(response, 405, 'The method DELETE is not allowed for this resource.',
                     code=None)


@pytest.mark.parametrize('path', ['/resource_providers/{}/inventories',
                                  '/resource_providers/{}/inventories/VCPU'])
def test_delete_on_an_unknown_provider_is_404(api, path):
    rp_uuid = new_uuid()
    with unchanged():
        assert_error(api.delete(path.format(rp_uuid)), 404,
                     f'No resource provider with uuid {rp_uuid} found')


# ---- generations -------------------------------------------------------------------

# Each write, its status, and the inventories it leaves (from VCPU 8, DISK_GB 100).
WRITES = {
    'replace all': (lambda api, rp: api.put(inv_path(rp), {
        'resource_provider_generation': 1, 'inventories': {'VCPU': {'total': 8}}}),
        200, {'VCPU': 8}),
    'replace all with no change': (lambda api, rp: api.put(inv_path(rp), {
        'resource_provider_generation': 1,
        'inventories': {'VCPU': {'total': 8}, 'DISK_GB': {'total': 100}}}),
        200, {'VCPU': 8, 'DISK_GB': 100}),
    'add one': (lambda api, rp: api.post(inv_path(rp), {'resource_class': 'VGPU', 'total': 2}),
                201, {'VCPU': 8, 'DISK_GB': 100, 'VGPU': 2}),
    'change one': (lambda api, rp: api.put(inv_path(rp, 'VCPU'), {
        'resource_provider_generation': 1, 'total': 16}), 200, {'VCPU': 16, 'DISK_GB': 100}),
    'delete one': (lambda api, rp: api.delete(inv_path(rp, 'DISK_GB')), 204, {'VCPU': 8}),
    'delete all': (lambda api, rp: api.delete(inv_path(rp)), 204, {}),
}


@pytest.mark.parametrize('write', WRITES, ids=list(WRITES))
def test_every_write_bumps_the_generation(api, rp, write):
    api.set_inventory(rp, {'VCPU': {'total': 8}, 'DISK_GB': {'total': 100}})
    send, status, totals = WRITES[write]
    response = send(api, rp)
    assert response.status_code == status, response.content
    assert generation(api, rp) == 2
    assert api.get(inv_path(rp)).body == {'resource_provider_generation': 2, 'inventories': {
        name: {**DEFAULTS, 'total': total} for name, total in totals.items()}}


def test_deleting_all_of_nothing_still_bumps_the_generation(api, rp):
    assert api.delete(inv_path(rp)).status_code == 204
    assert generation(api, rp) == 1


# ---- reserved and capacity -----------------------------------------------------------

RESERVED_WRITES = {
    'replace all': lambda api, rp, inv, version: api.put(inv_path(rp), {
        'resource_provider_generation': 1, 'inventories': {'VCPU': inv}}, version=version),
    'add one': lambda api, rp, inv, version: api.post(
        inv_path(rp), {'resource_class': 'VGPU', **inv}, version=version),
    'change one': lambda api, rp, inv, version: api.put(
        inv_path(rp, 'VCPU'), {'resource_provider_generation': 1, **inv}, version=version),
}
ACTION = {'replace all': 'update', 'add one': 'create', 'change one': 'update'}


@pytest.mark.parametrize('write', RESERVED_WRITES, ids=list(RESERVED_WRITES))
def test_reserved_equal_to_total_is_refused_before_1_26(api, rp, write):
    api.set_inventory(rp, {'VCPU': {'total': 8}})
    with unchanged():
        response = RESERVED_WRITES[write](api, rp, {'total': 4, 'reserved': 4}, '1.25')
        resource_class = 'VGPU' if write == 'add one' else 'VCPU'
        assert_error(response, 400, f'Unable to {ACTION[write]} inventory for resource '
                                    f"provider {rp}: Invalid inventory for '{resource_class}' on "
                                    f"resource provider '{rp}'. The reserved value is greater "
                                    'than or equal to total.')


@pytest.mark.parametrize('write', RESERVED_WRITES, ids=list(RESERVED_WRITES))
def test_reserved_equal_to_total_is_allowed_from_1_26(api, rp, write):
    api.set_inventory(rp, {'VCPU': {'total': 8}})
    response = RESERVED_WRITES[write](api, rp, {'total': 4, 'reserved': 4}, '1.26')
    assert response.status_code == (201 if write == 'add one' else 200), response.content
    resource_class = 'VGPU' if write == 'add one' else 'VCPU'
    shown = api.get(inv_path(rp, resource_class)).body
    assert shown == {**DEFAULTS, 'total': 4, 'reserved': 4, 'resource_provider_generation': 2}


@pytest.mark.parametrize('write', RESERVED_WRITES, ids=list(RESERVED_WRITES))
def test_reserved_above_total_is_refused_from_1_26(api, rp, write):
    api.set_inventory(rp, {'VCPU': {'total': 8}})
    with unchanged():
        response = RESERVED_WRITES[write](api, rp, {'total': 4, 'reserved': 5}, '1.26')
        assert_error(response, 400, 'The reserved value is greater than total.')


def test_zero_allocation_ratio_counts_as_no_capacity_before_1_26(api, rp):
    api.set_inventory(rp, {'VCPU': {'total': 8}})
    with unchanged():
        response = api.put(inv_path(rp, 'VCPU'), {'resource_provider_generation': 1, 'total': 8,
                                                  'allocation_ratio': 0}, version='1.25')
        assert_error(response, 400, 'The reserved value is greater than or equal to total.')


# ---- inventory in use ----------------------------------------------------------------

def test_deleting_one_in_use_is_409(api, in_use):
    with unchanged():
        response = api.delete(inv_path(in_use, 'VCPU'))
        assert_error(response, 409, "Unable to delete inventory of class VCPU: Inventory for "
                                    f"'VCPU' on resource provider '{in_use}' in use.",
                     code=CONCURRENT)


def test_deleting_all_in_use_is_409(api, in_use):
    with unchanged():
        response = api.delete(inv_path(in_use))
        assert_error(response, 409, f"Inventory for 'VCPU' on resource provider '{in_use}' in use.",
                     code=INUSE)


def test_classes_in_use_are_listed_by_class_id_as_placement_does(api, rp):
    # Written custom class first: the detail still lists standard classes
    # first, in os-resource-classes' order, then custom ones.
    assert api.put('/resource_classes/CUSTOM_FPGA', version='1.7').status_code == 201
    api.set_inventory(rp, {'CUSTOM_FPGA': {'total': 2}, 'MEMORY_MB': {'total': 1024},
                           'VCPU': {'total': 8}})
    assert api.allocate(new_uuid(), {rp: {'CUSTOM_FPGA': 1, 'MEMORY_MB': 512,
                                          'VCPU': 1}}).status_code == 204
    with unchanged():
        response = api.delete(inv_path(rp))
        assert_error(response, 409, f"Inventory for 'VCPU, MEMORY_MB, CUSTOM_FPGA' on resource "
                                    f"provider '{rp}' in use.", code=INUSE)


def test_replacing_all_without_a_class_in_use_is_409(api, in_use):
    with unchanged():
        response = api.put(inv_path(in_use), {
            'resource_provider_generation': generation(api, in_use),
            'inventories': {'DISK_GB': {'total': 100}}})
        assert_error(response, 409, f"update conflict: Inventory for 'VCPU' on resource provider "
                                    f"'{in_use}' in use.", code=INUSE)


def test_an_unused_class_can_go_while_another_is_in_use(api, in_use):
    assert api.delete(inv_path(in_use, 'DISK_GB')).status_code == 204
    response = api.put(inv_path(in_use), {'resource_provider_generation': generation(api, in_use),
                                          'inventories': {'VCPU': {'total': 8}}})
    assert response.status_code == 200
    assert response.body == {'resource_provider_generation': 4,
                             'inventories': {'VCPU': {**DEFAULTS, 'total': 8}}}


# Changes that leave cn1's 4 allocated VCPU over capacity, with that capacity.
SHRINKS = pytest.mark.parametrize('change, capacity', [
    ({'total': 3}, 3.0), ({'total': 8, 'reserved': 5}, 3.0),
    ({'total': 8, 'allocation_ratio': 0.25}, 2.0),
    # The capacity is shown as computed, a float: 3.9000000000000004.
    ({'total': 6, 'reserved': 3, 'allocation_ratio': 1.3}, (6 - 3) * 1.3),
], ids=['total', 'reserved', 'ratio', 'mixed'])


@SHRINKS
def test_shrinking_below_usage_is_accepted_with_a_warning(api, in_use, caplog, change,
                                                          capacity):
    # Placement's rule, which nova-compute's inventory reports rely on.
    gen = generation(api, in_use)
    single = api.put(inv_path(in_use, 'VCPU'), {'resource_provider_generation': gen, **change})
    assert single.status_code == 200, single.content
    assert single.body == {**DEFAULTS, **change, 'resource_provider_generation': gen + 1}
    bulk = api.put(inv_path(in_use), {'resource_provider_generation': gen + 1, 'inventories': {
        'VCPU': change, 'DISK_GB': {'total': 100}}})
    assert bulk.status_code == 200, bulk.content
    assert bulk.body['inventories']['VCPU'] == {**DEFAULTS, **change}
    warnings = [r.getMessage() for r in caplog.records
                if r.name == 'placement.inventories' and r.levelname == 'WARNING']
    assert warnings == [f'Resource provider {in_use} is now over-capacity for VCPU: '
                        f'4 used, capacity {capacity}'] * 2
    # The allocations stay; the provider is over capacity, so nothing more fits.
    assert api.get(f'/resource_providers/{in_use}/usages').body['usages']['VCPU'] == 4
    more = api.allocate(new_uuid(), {in_use: {'VCPU': 1}})
    assert more.status_code == 409, more.content


@SHRINKS
def test_shrinking_below_usage_is_409_when_the_site_refuses_it(api, in_use, settings,
                                                               change, capacity):
    settings.PLACEMENT_REFUSE_OVERCOMMITTED_INVENTORY = True
    gen = generation(api, in_use)
    refused = ('There was a conflict when trying to complete your request.\n\n update conflict: '
               f"Inventory for 'VCPU' on resource provider '{in_use}' would leave its allocations "
               f'over capacity: 4 used, capacity {capacity}.  ')
    with unchanged():
        single = api.put(inv_path(in_use, 'VCPU'), {'resource_provider_generation': gen, **change})
        assert assert_error(single, 409, code=INUSE)['detail'] == refused
        bulk = api.put(inv_path(in_use), {'resource_provider_generation': gen, 'inventories': {
            'VCPU': change, 'DISK_GB': {'total': 100}}})
        assert assert_error(bulk, 409, code=INUSE)['detail'] == refused


@pytest.mark.parametrize('change', [
    {'total': 4}, {'total': 8, 'reserved': 4}, {'total': 8, 'allocation_ratio': 0.5},
    {'total': 2, 'allocation_ratio': 2.0}, {'total': 8, 'max_unit': 1, 'step_size': 3},
], ids=['total', 'reserved', 'ratio', 'ratio-up', 'unit-limits'])
def test_shrinking_to_exactly_the_usage_is_allowed(api, in_use, change):
    gen = generation(api, in_use)
    response = api.put(inv_path(in_use, 'VCPU'), {'resource_provider_generation': gen, **change})
    assert response.status_code == 200, response.content
    response = api.put(inv_path(in_use), {'resource_provider_generation': gen + 1, 'inventories': {
        'VCPU': change}})
    assert response.status_code == 200, response.content


# ---- bad input ------------------------------------------------------------------------

RECORD_CASES = [
    ({'total': 0}, '0 is less than the minimum of 1'),
    ({'total': -1}, '-1 is less than the minimum of 1'),
    ({'total': 2 ** 31}, '2147483648 is greater than the maximum of 2147483647'),
    ({'total': 10 ** 20}, 'is greater than the maximum of 2147483647'),
    ({'total': 'x'}, "'x' is not of type 'integer'"),
    ({'total': 1.5}, "1.5 is not of type 'integer'"),
    ({'total': None}, "None is not of type 'integer'"),
    ({'total': True}, "True is not of type 'integer'"),
    ({'total': 8, 'reserved': -1}, '-1 is less than the minimum of 0'),
    ({'total': 8, 'reserved': 2 ** 31}, 'is greater than the maximum of 2147483647'),
    ({'total': 8, 'reserved': 10 ** 20}, 'is greater than the maximum of 2147483647'),
    ({'total': 8, 'min_unit': 0}, '0 is less than the minimum of 1'),
    ({'total': 8, 'min_unit': 2 ** 31}, 'is greater than the maximum of 2147483647'),
    ({'total': 8, 'max_unit': -1}, '-1 is less than the minimum of 1'),
    ({'total': 8, 'max_unit': 10 ** 20}, 'is greater than the maximum of 2147483647'),
    ({'total': 8, 'step_size': 0}, '0 is less than the minimum of 1'),
    ({'total': 8, 'step_size': 2 ** 31}, 'is greater than the maximum of 2147483647'),
    ({'total': 8, 'allocation_ratio': 'x'}, "'x' is not of type 'number'"),
    ({'total': 8, 'allocation_ratio': 10 ** 40}, 'is greater than the maximum of 3.40282e+38'),
    ({'total': 8, 'allocation_ratio': 3.5e38}, 'is greater than the maximum of 3.40282e+38'),
    ({'total': 8, 'foo': 1}, "Additional properties are not allowed ('foo' was unexpected)"),
    ({'total': 8, 'used': 1}, "('used' was unexpected)"),
]


@pytest.mark.parametrize('body, detail', [
    ({'resource_provider_generation': 1, **record}, detail) for record, detail in RECORD_CASES
] + [
    ({'total': 8, 'resource_provider_generation': '1'}, "'1' is not of type 'integer'"),
    ({'total': 8, 'resource_provider_generation': None}, "None is not of type 'integer'"),
    ({'reserved': 1, 'resource_provider_generation': 1}, "'total' is a required property"),
    ({'total': 8}, "'resource_provider_generation' is a required property"),
    ({'total': 8, 'resource_provider_generation': 1, 'resource_class': 'VCPU'},
     "('resource_class' was unexpected)"),
    ([8], "[8] is not of type 'object'"),
    (None, "None is not of type 'object'"),
])
def test_change_one_with_a_bad_body_is_400(api, rp, body, detail):
    api.set_inventory(rp, {'VCPU': {'total': 8}})
    with unchanged():
        response = api.request('PUT', inv_path(rp, 'VCPU'), raw=json.dumps(body))
        error = assert_error(response, 400, 'JSON does not validate: ')
        assert detail in error['detail']


@pytest.mark.parametrize('record, detail', RECORD_CASES + [
    ({'reserved': 1}, "'total' is a required property"),
    (8, "8 is not of type 'object'"),
])
def test_replace_all_with_a_bad_record_is_400(api, rp, record, detail):
    api.set_inventory(rp, {'VCPU': {'total': 8}})
    with unchanged():
        response = api.request('PUT', inv_path(rp), raw=json.dumps(
            {'resource_provider_generation': 1, 'inventories': {'VCPU': record}}))
        error = assert_error(response, 400, 'JSON does not validate: ')
        assert detail in error['detail']


@pytest.mark.parametrize('body, detail', [
    ({'resource_provider_generation': 1}, "'inventories' is a required property"),
    ({'inventories': {}}, "'resource_provider_generation' is a required property"),
    ({'resource_provider_generation': 1, 'inventories': []}, "[] is not of type 'object'"),
    ({'resource_provider_generation': 1, 'inventories': {}, 'foo': 1},
     "Additional properties are not allowed ('foo' was unexpected)"),
    ({'resource_provider_generation': 'x', 'inventories': {}}, "'x' is not of type 'integer'"),
    ({'resource_provider_generation': None, 'inventories': {}}, "None is not of type 'integer'"),
    ([], "[] is not of type 'object'"),
])
def test_replace_all_with_a_bad_body_is_400(api, rp, body, detail):
    api.set_inventory(rp, {'VCPU': {'total': 8}})
    with unchanged():
        error = assert_error(api.request('PUT', inv_path(rp), raw=json.dumps(body)), 400,
                             'JSON does not validate: ')
        assert detail in error['detail']


@pytest.mark.parametrize('generation_value', [2 ** 31, 10 ** 20, -1])
@pytest.mark.parametrize('target', ['all', 'one'])
def test_huge_or_negative_generations_are_conflicts(api, rp, generation_value, target):
    api.set_inventory(rp, {'VCPU': {'total': 8}})
    with unchanged():
        if target == 'all':
            response = api.put(inv_path(rp), {'resource_provider_generation': generation_value,
                                              'inventories': {'VCPU': {'total': 4}}})
        else:
            response = api.put(inv_path(rp, 'VCPU'), {'resource_provider_generation':
                                                      generation_value, 'total': 4})
        assert_error(response, 409, 'resource provider generation conflict', code=CONCURRENT)


@pytest.mark.parametrize('resource_class', ['vcpu', 'CUSTOM_ÄÖ', '计算节点', 'CUSTOM A', ''])
def test_replace_all_with_an_invalid_class_name_is_400(api, rp, resource_class):
    api.set_inventory(rp, {'VCPU': {'total': 8}})
    with unchanged():
        response = api.put(inv_path(rp), {'resource_provider_generation': 1,
                                          'inventories': {resource_class: {'total': 1}}})
        assert_error(response, 400, 'Unknown resource class in inventory for resource provider '
                                    f'{rp}: No such resource class {resource_class}.')


@pytest.mark.parametrize('raw_name, detail', [
    ('\\ud800', 'Malformed JSON'),
    ('VCPU\\u0000', 'Malformed JSON: NUL characters'),
])
def test_replace_all_with_an_unstorable_class_name_is_400(api, rp, raw_name, detail):
    # Deliberately refused before any lookup: neither can be stored, and
    # PostgreSQL cannot even compare a NUL (OpenStack Placement answers 500).
    raw = ('{"resource_provider_generation": 0, '
           f'"inventories": {{"{raw_name}": {{"total": 1}}}}}}')
    with unchanged():
        assert_error(api.request('PUT', inv_path(rp), raw=raw), 400, detail)


def test_add_one_with_a_lone_surrogate_class_is_400(api, rp):
    with unchanged():
        response = api.request('POST', inv_path(rp),
                               raw='{"resource_class": "\\ud800", "total": 1}')
        assert_error(response, 400, 'JSON does not validate: ')


def test_replace_all_with_an_unknown_custom_class_is_400(api, rp):
    with unchanged():
        response = api.put(inv_path(rp), {'resource_provider_generation': 0,
                                          'inventories': {'CUSTOM_NOPE': {'total': 1}}})
        assert_error(response, 400, 'No such resource class CUSTOM_NOPE.')


@pytest.mark.parametrize('body, detail', [
    ({'resource_class': 'VGPU'}, "'total' is a required property"),
    ({'total': 1}, "'resource_class' is a required property"),
    ({'resource_class': 'vgpu', 'total': 1}, "'vgpu' does not match '^[A-Z0-9_]+$'"),
    ({'resource_class': 'CUSTOM_ÄÖ', 'total': 1}, "does not match '^[A-Z0-9_]+$'"),
    ({'resource_class': '计算节点', 'total': 1}, "does not match '^[A-Z0-9_]+$'"),
    ({'resource_class': 'CUSTOM A', 'total': 1}, "does not match '^[A-Z0-9_]+$'"),
    ({'resource_class': '', 'total': 1}, "'' does not match '^[A-Z0-9_]+$'"),
    ({'resource_class': 5, 'total': 1}, "5 is not of type 'string'"),
    ({'resource_class': 'VGPU', 'total': 1, 'resource_provider_generation': 'x'},
     "'x' is not of type 'integer'"),
    ([], "[] is not of type 'object'"),
] + [({'resource_class': 'VGPU', **record}, detail) for record, detail in RECORD_CASES])
def test_add_one_with_a_bad_body_is_400(api, rp, body, detail):
    with unchanged():
        error = assert_error(api.request('POST', inv_path(rp), raw=json.dumps(body)), 400,
                             'JSON does not validate: ')
        assert detail in error['detail']


@pytest.mark.parametrize('raw, detail', [
    ('{', 'Malformed JSON: Expecting property name enclosed in double quotes'),
    ('{"resource_provider_generation": 1, ', 'Malformed JSON: Expecting property name'),
    (' ', 'Malformed JSON: Expecting value'),
    ('{"total": 01}', 'Malformed JSON: Expecting'),
    (b'{"total": "\xff"}', "Malformed JSON: 'utf-8' codec can't decode byte 0xff"),
])
@pytest.mark.parametrize('method, resource_class', [('PUT', None), ('POST', None),
                                                    ('PUT', 'VCPU')])
def test_malformed_json_is_400(api, rp, method, resource_class, raw, detail):
    api.set_inventory(rp, {'VCPU': {'total': 8}})
    with unchanged():
        assert_error(api.request(method, inv_path(rp, resource_class), raw=raw), 400, detail)


@pytest.mark.parametrize('content_type', ['text/plain', 'application/xml',
                                          'application/x-www-form-urlencoded'])
@pytest.mark.parametrize('method, resource_class', [('PUT', None), ('POST', None),
                                                    ('PUT', 'VCPU')])
def test_wrong_content_type_is_415(api, rp, method, resource_class, content_type):
    api.set_inventory(rp, {'VCPU': {'total': 8}})
    with unchanged():
        response = api.request(method, inv_path(rp, resource_class),
                               {'resource_provider_generation': 1, 'total': 4, 'inventories': {}},
                               content_type=content_type)
        assert_error(response, 415, f'The media type {content_type} is not supported, use '
                                    'application/json')


@pytest.mark.parametrize('method, resource_class', [('PUT', None), ('POST', None),
                                                    ('PUT', 'VCPU')])
def test_missing_content_type_is_415(api, rp, method, resource_class):
    api.set_inventory(rp, {'VCPU': {'total': 8}})
    with unchanged():
        assert_error(api.request(method, inv_path(rp, resource_class)), 415,
                     'The media type None is not supported, use application/json')


@pytest.mark.parametrize('method, resource_class', [('PUT', None), ('POST', None),
                                                    ('PUT', 'VCPU')])
def test_writes_to_an_unknown_provider_are_404(api, method, resource_class):
    rp_uuid = new_uuid()
    body = ({'resource_class': 'VCPU', 'total': 4} if method == 'POST' else
            {'resource_provider_generation': 0, 'total': 4} if resource_class else
            {'resource_provider_generation': 0, 'inventories': {}})
    with unchanged():
        response = api.request(method, inv_path(rp_uuid, resource_class), body)
        assert_error(response, 404, f'No resource provider with uuid {rp_uuid} found')


@pytest.mark.parametrize('value', ['not-a-uuid', 'ab\x00cd'])
def test_invalid_provider_uuid_in_the_path_is_404(api, value):
    with unchanged():
        for response in (api.get(inv_path(quote(value))), api.get(inv_path(quote(value), 'VCPU')),
                         api.delete(inv_path(quote(value), 'VCPU'))):
            assert_error(response, 404, f'No resource provider with uuid {value} found')


@pytest.mark.parametrize('path', ['/resource_providers/{}/inventories',
                                  '/resource_providers/{}/inventories/VCPU'])
def test_patch_is_405(api, rp, path):
    assert_error(api.request('PATCH', path.format(rp), {}), 405,
                 'The method PATCH is not allowed for this resource.')
