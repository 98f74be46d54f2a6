"""Usages: GET /resource_providers/{uuid}/usages and GET /usages (1.9+),
grouped by consumer type with consumer counts from 1.38."""
import uuid as uuid_lib
from email.utils import parsedate_to_datetime
from urllib.parse import quote

import pytest
from django.utils import timezone
from django.utils.http import http_date

from tests.support.api import assert_error
from tests.support.api import assert_version_refused
from tests.support.api import new_uuid
from tests.support.state import unchanged

NOT_ACCEPTABLE = ('406 Not Acceptable\n\nThe resource could not be generated that was acceptable '
                  'to your browser (content of type text/plain. \n\n Only application/json is '
                  'provided')


def assert_http_date_of_now(value):
    """A Last-Modified of "now" (as Placement sends for what has no
    modification time): an HTTP date within a minute of the test's clock."""
    moment = parsedate_to_datetime(value)
    assert value == http_date(moment.timestamp())
    assert abs((timezone.now() - moment).total_seconds()) < 60, value


@pytest.fixture
def rp(api):
    uuid = api.create_provider()['uuid']
    api.set_inventory(uuid, {'VCPU': {'total': 16}, 'MEMORY_MB': {'total': 4096},
                             'DISK_GB': {'total': 100}})
    return uuid


@pytest.fixture
def project(api, rp):
    """A project with two INSTANCE consumers, a MIGRATION of another user,
    one consumer without a type (written at 1.37) and another project's."""
    project = f'proj-{new_uuid()}'
    assert api.allocate(new_uuid(), {rp: {'VCPU': 1, 'MEMORY_MB': 512}},
                        project=project, user='alice').status_code == 204
    assert api.allocate(new_uuid(), {rp: {'VCPU': 2}},
                        project=project, user='alice').status_code == 204
    assert api.allocate(new_uuid(), {rp: {'DISK_GB': 10}}, project=project, user='bob',
                        consumer_type='MIGRATION').status_code == 204
    untyped = {'allocations': {rp: {'resources': {'VCPU': 1}}}, 'project_id': project,
               'user_id': 'alice', 'consumer_generation': None}
    assert api.put(f'/allocations/{new_uuid()}', untyped, version='1.37').status_code == 204
    assert api.allocate(new_uuid(), {rp: {'VCPU': 4}}, project='elsewhere').status_code == 204
    return project


# ---- GET /resource_providers/{uuid}/usages ------------------------------------

def test_provider_without_inventory_has_no_usages(api):
    rp = api.create_provider()['uuid']
    response = api.get(f'/resource_providers/{rp}/usages')
    assert response.status_code == 200
    assert response.body == {'resource_provider_generation': 0, 'usages': {}}


def test_provider_usages_list_every_inventoried_class(api, rp):
    assert api.get(f'/resource_providers/{rp}/usages').body == {
        'resource_provider_generation': 1,
        'usages': {'VCPU': 0, 'MEMORY_MB': 0, 'DISK_GB': 0}}


@pytest.mark.parametrize('version', ['1.0', '1.39'])
def test_provider_usages_sum_all_consumers(api, rp, project, version):
    response = api.get(f'/resource_providers/{rp}/usages', version=version)
    assert response.status_code == 200
    assert response.body == {'resource_provider_generation': 6,
                             'usages': {'VCPU': 8, 'MEMORY_MB': 512, 'DISK_GB': 10}}


def test_provider_usages_have_cache_headers_from_1_15(api, rp):
    assert 'Last-Modified' not in api.get(f'/resource_providers/{rp}/usages', version='1.14')
    response = api.get(f'/resource_providers/{rp}/usages', version='1.15')
    assert response['Cache-Control'] == 'no-cache'
    assert_http_date_of_now(response['Last-Modified'])


def test_provider_usages_ignore_unknown_query_parameters(api, rp):
    response = api.get(f'/resource_providers/{rp}/usages?foo=bar')
    assert response.status_code == 200
    assert response.body == {'resource_provider_generation': 1,
                             'usages': {'VCPU': 0, 'MEMORY_MB': 0, 'DISK_GB': 0}}


@pytest.mark.parametrize('rp', [str(uuid_lib.UUID(int=1)), 'not-a-uuid', '12345'])
def test_provider_usages_of_an_unknown_provider_is_404(api, rp):
    with unchanged():
        assert_error(api.get(f'/resource_providers/{rp}/usages'), 404,
                     f'No resource provider with uuid {rp} found: No resource provider with '
                     f'uuid {rp} found')


def test_provider_usages_refuse_text_plain(api, rp):
    response = api.get(f'/resource_providers/{rp}/usages', headers={'Accept': 'text/plain'})
    assert response.status_code == 406
    assert response['Content-Type'] == 'text/plain; charset=UTF-8'
    assert response.content.decode() == NOT_ACCEPTABLE


@pytest.mark.parametrize('version, literal', [('1.40', None), ('0.1', None), ('x.y', 'x')])
def test_provider_usages_refuse_bad_versions(api, rp, version, literal):
    response = api.get(f'/resource_providers/{rp}/usages', version=version)
    assert_version_refused(response, version, literal)


# ---- GET /usages ----------------------------------------------------------------

def test_project_usages_need_1_9(api, project):
    response = api.get(f'/usages?project_id={project}', version='1.8')
    error = assert_error(response, 404, code=None)
    assert error['detail'] == 'The resource could not be found.\n\n   '


@pytest.mark.parametrize('version', ['1.9', '1.37'])
def test_project_usages_before_1_38(api, project, version):
    response = api.get(f'/usages?project_id={project}', version=version)
    assert response.status_code == 200
    assert response.body == {'usages': {'VCPU': 4, 'MEMORY_MB': 512, 'DISK_GB': 10}}


def test_project_usages_of_one_user(api, project):
    response = api.get(f'/usages?project_id={project}&user_id=alice', version='1.9')
    assert response.body == {'usages': {'VCPU': 4, 'MEMORY_MB': 512}}


def test_project_usages_have_cache_headers_from_1_15(api, project):
    assert 'Last-Modified' not in api.get(f'/usages?project_id={project}', version='1.14')
    response = api.get(f'/usages?project_id={project}', version='1.15')
    assert response['Cache-Control'] == 'no-cache'
    assert_http_date_of_now(response['Last-Modified'])


@pytest.mark.parametrize('version', ['1.9', '1.38'])
def test_unknown_project_has_no_usages(api, project, version):
    response = api.get(f'/usages?project_id={new_uuid()}', version=version)
    assert response.status_code == 200
    assert response.body == {'usages': {}}


def test_usages_by_consumer_type_from_1_38(api, project):
    response = api.get(f'/usages?project_id={project}', version='1.38')
    assert response.status_code == 200
    assert response.body == {'usages': {
        'INSTANCE': {'VCPU': 3, 'MEMORY_MB': 512, 'consumer_count': 2},
        'MIGRATION': {'DISK_GB': 10, 'consumer_count': 1},
        'unknown': {'VCPU': 1, 'consumer_count': 1},
    }}


def test_usages_by_consumer_type_of_one_user(api, project):
    response = api.get(f'/usages?project_id={project}&user_id=alice', version='1.38')
    assert response.body == {'usages': {
        'INSTANCE': {'VCPU': 3, 'MEMORY_MB': 512, 'consumer_count': 2},
        'unknown': {'VCPU': 1, 'consumer_count': 1},
    }}


@pytest.mark.parametrize('consumer_type, expected', [
    ('all', {'all': {'VCPU': 4, 'MEMORY_MB': 512, 'DISK_GB': 10, 'consumer_count': 4}}),
    ('unknown', {'unknown': {'VCPU': 1, 'consumer_count': 1}}),
    ('INSTANCE', {'INSTANCE': {'VCPU': 3, 'MEMORY_MB': 512, 'consumer_count': 2}}),
    ('MIGRATION', {'MIGRATION': {'DISK_GB': 10, 'consumer_count': 1}}),
    ('NOBODY', {}),
])
def test_usages_filtered_by_consumer_type(api, project, consumer_type, expected):
    response = api.get(f'/usages?project_id={project}&consumer_type={consumer_type}',
                       version='1.39')
    assert response.status_code == 200
    assert response.body == {'usages': expected}


def test_usages_of_all_types_in_an_unknown_project(api, project):
    response = api.get(f'/usages?project_id={new_uuid()}&consumer_type=all', version='1.38')
    assert response.body == {'usages': {}}


def test_unicode_project_ids_are_matched(api, rp):
    project = f'pröject-中-{new_uuid()}'
    assert api.allocate(new_uuid(), {rp: {'VCPU': 2}}, project=project).status_code == 204
    response = api.get(f'/usages?project_id={quote(project)}', version='1.9')
    assert response.body == {'usages': {'VCPU': 2}}


def test_usages_refuse_text_plain(api):
    response = api.get('/usages?project_id=p', headers={'Accept': 'text/plain'})
    assert response.status_code == 406
    assert response['Content-Type'] == 'text/plain; charset=UTF-8'
    assert response.content.decode() == NOT_ACCEPTABLE


BAD_QUERIES = {
    'no-project': ('', "'project_id' is a required property"),
    'user-only': ('user_id=alice', "'project_id' is a required property"),
    'empty-project': ('project_id=', "'' should be non-empty"),
    'long-project': ('project_id=' + 'p' * 256, 'is too long'),
    'empty-user': ('project_id=p&user_id=', "'' should be non-empty"),
    'long-user': ('project_id=p&user_id=' + 'u' * 256, 'is too long'),
    'unknown-parameter': ('project_id=p&foo=bar',
                          "Additional properties are not allowed ('foo' was unexpected)"),
    'lowercase-type': ('project_id=p&consumer_type=instance',
                       "'instance' does not match '^[A-Z0-9_]+$|^all|^unknown$'"),
    'dashed-type': ('project_id=p&consumer_type=INST-ANCE',
                    "'INST-ANCE' does not match '^[A-Z0-9_]+$|^all|^unknown$'"),
    'empty-type': ('project_id=p&consumer_type=',
                   "'' does not match '^[A-Z0-9_]+$|^all|^unknown$'"),
    'unicode-type': ('project_id=p&consumer_type=' + quote('ÜNICODE'),
                     "'ÜNICODE' does not match '^[A-Z0-9_]+$|^all|^unknown$'"),
    'spaced-type': ('project_id=p&consumer_type=A%20B',
                    "'A B' does not match '^[A-Z0-9_]+$|^all|^unknown$'"),
    'long-type': ('project_id=p&consumer_type=' + 'X' * 256, 'is too long'),
}


@pytest.mark.parametrize('query, detail', BAD_QUERIES.values(), ids=BAD_QUERIES.keys())
def test_usages_refuse_bad_queries(api, project, query, detail):
    with unchanged():
        error = assert_error(api.get(f'/usages?{query}', version='1.38'), 400, detail)
        assert 'Invalid query string parameters: ' in error['detail']


@pytest.mark.parametrize('encoded, reason', [
    ('%FF', 'byte 0xff in position 0: invalid start byte'),
    ('%ED%A0%80', 'byte 0xed in position 0: invalid continuation byte'),
    ('p%C3', 'byte 0xc3 in position 1: unexpected end of data'),
])
def test_usages_refuse_an_undecodable_project_id(api, project, encoded, reason):
    response = api.get(f'/usages?project_id={encoded}', version='1.38')
    assert_error(response, 400, "Invalid query string parameters: 'utf-8' codec can't decode "
                                + reason)


def test_consumer_type_filter_is_unknown_before_1_38(api, project):
    error = assert_error(api.get(f'/usages?project_id={project}&consumer_type=all', version='1.37'),
                    400, "Additional properties are not allowed ('consumer_type' was unexpected)")
    assert 'Invalid query string parameters' in error['detail']


def test_errors_have_no_code_before_1_23(api):
    response = api.get('/usages', version='1.9')
    error = assert_error(response, 400, "'project_id' is a required property", code=None)
    assert set(error) == {'status', 'title', 'detail', 'request_id'}


@pytest.mark.parametrize('version, literal', [('1.40', None), ('-1.5', None), ('1.x', 'x')])
def test_usages_refuse_bad_versions(api, version, literal):
    assert_version_refused(api.get('/usages?project_id=p', version=version), version, literal)


# ---- key order ------------------------------------------------------------------

def test_usages_list_classes_in_class_id_order_as_placement(api):
    # Placement's rows come grouped by resource class id; the same JSON,
    # byte for byte, whatever order the inventory or allocations were written in.
    rp = api.create_provider()['uuid']
    api.set_inventory(rp, {'DISK_GB': {'total': 100}, 'MEMORY_MB': {'total': 4096},
                           'VCPU': {'total': 16}})
    project = f'proj-{new_uuid()}'
    assert api.allocate(new_uuid(), {rp: {'DISK_GB': 10}}, project=project).status_code == 204
    assert api.allocate(new_uuid(), {rp: {'VCPU': 1}}, project=project).status_code == 204
    assert list(api.get(f'/resource_providers/{rp}/usages').body['usages']) == [
        'VCPU', 'MEMORY_MB', 'DISK_GB']
    assert list(api.get(f'/resource_providers/{rp}/inventories').body['inventories']) == [
        'VCPU', 'MEMORY_MB', 'DISK_GB']
    assert list(api.get(f'/usages?project_id={project}', version='1.9').body['usages']) == [
        'VCPU', 'DISK_GB']
