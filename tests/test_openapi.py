"""The OpenAPI document: generated cleanly, complete, true to the API's
answers, and served with a Swagger UI whose assets come from the service."""
import copy
import json
import re
import uuid

import jsonschema
import pytest
import yaml
from django.core.management import call_command
from drf_spectacular.drainage import GENERATOR_STATS
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.validation import validate_schema

from allocations import schemas as allocation_schemas
from placement_site.openapi import openapi_schema
from providers import schemas as provider_schemas

P = provider_schemas
A = allocation_schemas
# (path, method) -> the JSON Schema the view validates the body against at
# the latest microversion, or None for an operation without a body.
OPERATIONS = {
    ('/', 'get'): None,
    ('/resource_providers', 'get'): None,
    ('/resource_providers', 'post'): P.PROVIDER_POST_1_14,
    ('/resource_providers/{uuid}', 'get'): None,
    ('/resource_providers/{uuid}', 'put'): P.PROVIDER_PUT_1_14,
    ('/resource_providers/{uuid}', 'delete'): None,
    ('/resource_providers/{uuid}/inventories', 'get'): None,
    ('/resource_providers/{uuid}/inventories', 'post'): P.INVENTORY_POST,
    ('/resource_providers/{uuid}/inventories', 'put'): P.INVENTORIES_PUT,
    ('/resource_providers/{uuid}/inventories', 'delete'): None,
    ('/resource_providers/{uuid}/inventories/{resource_class}', 'get'): None,
    ('/resource_providers/{uuid}/inventories/{resource_class}', 'put'): P.INVENTORY_PUT,
    ('/resource_providers/{uuid}/inventories/{resource_class}', 'delete'): None,
    ('/resource_providers/{uuid}/usages', 'get'): None,
    ('/resource_providers/{uuid}/aggregates', 'get'): None,
    ('/resource_providers/{uuid}/aggregates', 'put'): P.AGGREGATES_PUT_1_19,
    ('/resource_providers/{uuid}/traits', 'get'): None,
    ('/resource_providers/{uuid}/traits', 'put'): P.PROVIDER_TRAITS_PUT,
    ('/resource_providers/{uuid}/traits', 'delete'): None,
    ('/resource_providers/{uuid}/allocations', 'get'): None,
    ('/resource_classes', 'get'): None,
    ('/resource_classes', 'post'): P.RESOURCE_CLASS_POST,
    ('/resource_classes/{name}', 'get'): None,
    ('/resource_classes/{name}', 'put'): P.RESOURCE_CLASS_PUT,  # before 1.7 only
    ('/resource_classes/{name}', 'delete'): None,
    ('/traits', 'get'): None,
    ('/traits/{name}', 'get'): None,
    ('/traits/{name}', 'put'): None,
    ('/traits/{name}', 'delete'): None,
    ('/allocations', 'post'): A.ALLOCATIONS_POST_1_38,
    ('/allocations/{consumer_uuid}', 'get'): None,
    ('/allocations/{consumer_uuid}', 'put'): A.ALLOCATIONS_PUT_1_38,
    ('/allocations/{consumer_uuid}', 'delete'): None,
    ('/allocation_candidates', 'get'): None,
    ('/explain/allocation_candidates', 'get'): None,
    ('/usages', 'get'): None,
    ('/reshaper', 'post'): A.RESHAPER_POST_1_38,
}

# (path, method) -> the documented answers besides 400 and 406 (every
# operation) and 401 and 403 (every operation but the root's).
ANSWERS = {
    ('/', 'get'): {'200'},
    ('/resource_providers', 'get'): {'200'},
    ('/resource_providers', 'post'): {'200', '201', '409', '415'},
    ('/resource_providers/{uuid}', 'get'): {'200', '404'},
    ('/resource_providers/{uuid}', 'put'): {'200', '404', '409', '415'},
    ('/resource_providers/{uuid}', 'delete'): {'204', '404', '409'},
    ('/resource_providers/{uuid}/inventories', 'get'): {'200', '404'},
    ('/resource_providers/{uuid}/inventories', 'post'): {'201', '404', '409', '415'},
    ('/resource_providers/{uuid}/inventories', 'put'): {'200', '404', '409', '415'},
    ('/resource_providers/{uuid}/inventories', 'delete'): {'204', '404', '405', '409'},
    ('/resource_providers/{uuid}/inventories/{resource_class}', 'get'): {'200', '404'},
    ('/resource_providers/{uuid}/inventories/{resource_class}', 'put'): {
        '200', '404', '409', '415'},
    ('/resource_providers/{uuid}/inventories/{resource_class}', 'delete'): {'204', '404', '409'},
    ('/resource_providers/{uuid}/usages', 'get'): {'200', '404'},
    ('/resource_providers/{uuid}/aggregates', 'get'): {'200', '404'},
    ('/resource_providers/{uuid}/aggregates', 'put'): {'200', '404', '409', '415'},
    ('/resource_providers/{uuid}/traits', 'get'): {'200', '404'},
    ('/resource_providers/{uuid}/traits', 'put'): {'200', '404', '409', '415'},
    ('/resource_providers/{uuid}/traits', 'delete'): {'204', '404', '409'},
    ('/resource_providers/{uuid}/allocations', 'get'): {'200', '404'},
    ('/resource_classes', 'get'): {'200', '404'},
    ('/resource_classes', 'post'): {'201', '404', '409', '415'},
    ('/resource_classes/{name}', 'get'): {'200', '404'},
    ('/resource_classes/{name}', 'put'): {'200', '201', '204', '404', '409', '415'},
    ('/resource_classes/{name}', 'delete'): {'204', '404', '409'},
    ('/traits', 'get'): {'200', '404'},
    ('/traits/{name}', 'get'): {'204', '404'},
    ('/traits/{name}', 'put'): {'201', '204', '404'},
    ('/traits/{name}', 'delete'): {'204', '404', '409'},
    ('/allocations', 'post'): {'204', '404', '409', '415'},
    ('/allocations/{consumer_uuid}', 'get'): {'200'},
    ('/allocations/{consumer_uuid}', 'put'): {'204', '409', '415'},
    ('/allocations/{consumer_uuid}', 'delete'): {'204', '404'},
    ('/allocation_candidates', 'get'): {'200', '404'},
    ('/explain/allocation_candidates', 'get'): {'200', '404'},
    ('/usages', 'get'): {'200', '404'},
    ('/reshaper', 'post'): {'204', '404', '409', '415'},
}

QUERY_PARAMETERS = {
    '/resource_providers': {'name', 'uuid', 'member_of', 'in_tree', 'resources', 'required'},
    '/allocation_candidates': {'resources', 'required', 'member_of', 'in_tree', 'groups',
                               'limit', 'group_policy', 'root_required', 'same_subtree'},
    '/usages': {'project_id', 'user_id', 'consumer_type'},
    '/explain/allocation_candidates': {'resources', 'required', 'member_of', 'in_tree', 'groups',
                                       'limit', 'group_policy', 'root_required',
                                       'same_subtree'},
    '/traits': {'name', 'associated'},
}


@pytest.fixture(scope='module')
def document():
    GENERATOR_STATS.reset()
    schema = SchemaGenerator().get_schema(request=None, public=True)
    assert not GENERATOR_STATS, (dict(GENERATOR_STATS._warn_cache),
                                 dict(GENERATOR_STATS._error_cache))
    return schema


def resolve(document, schema):
    while '$ref' in schema:
        schema = document['components']['schemas'][schema['$ref'].split('/')[-1]]
    return schema


def operations(document):
    for path, item in document['paths'].items():
        for method, operation in item.items():
            yield path, method, operation


# ---- generation ----------------------------------------------------------------

def test_the_document_generates_without_errors_or_warnings_and_validates(document):
    validate_schema(document)
    assert document['openapi'] == '3.0.3'


def test_the_spectacular_command_passes_with_validate_and_fail_on_warn(tmp_path):
    out = tmp_path / 'schema.yaml'
    call_command('spectacular', '--validate', '--fail-on-warn', '--file', str(out))
    written = yaml.safe_load(out.read_text())
    assert {(p, m) for p, m, _ in operations(written)} == set(OPERATIONS)


# ---- completeness --------------------------------------------------------------

def test_every_placement_operation_is_documented(document):
    # Placement's operations and nothing else (no /api/ or /admin/ paths).
    assert {(path, method) for path, method, _ in operations(document)} == set(OPERATIONS)
    assert set(ANSWERS) == set(OPERATIONS)


def test_operations_have_unique_ids_summaries_tags_and_microversions(document):
    ids = [op['operationId'] for _, _, op in operations(document)]
    assert len(ids) == len(set(ids))
    assert all(re.fullmatch('[a-z][A-Za-z]+', operation_id) for operation_id in ids)
    for path, method, operation in operations(document):
        assert operation['summary'] and len(operation['tags']) == 1, (path, method)
        assert re.search(r'available since 1\.\d+', operation['description']), (path, method)


@pytest.mark.parametrize('path, method', sorted(OPERATIONS))
def test_parameters_and_answers_are_documented(document, path, method):
    operation = document['paths'][path][method]
    parameters = {(p['in'], p['name']): p for p in operation['parameters']}
    header = parameters[('header', 'OpenStack-API-Version')]
    assert header['schema']['default'] == 'placement 1.0'
    for name in re.findall(r'{(\w+)}', path):
        assert parameters[('path', name)]['required'] is True
    documented_query = {name for where, name in parameters if where == 'query'}
    assert documented_query == (QUERY_PARAMETERS.get(path, set()) if method == 'get' else set())
    responses = operation['responses']
    authenticated = set() if path == '/' else {'401', '403'}
    assert set(responses) == {'400', '406'} | authenticated | ANSWERS[path, method]
    for status, response in responses.items():
        assert response['description'], (status, path, method)
        if status >= '400':
            assert resolve(document, response['content']['application/json']['schema'])
    if authenticated:
        assert operation['security'] == [{'AuthToken': []}]
    else:
        assert 'security' not in operation


@pytest.mark.parametrize('path, method', sorted(k for k, v in OPERATIONS.items() if v))
def test_request_bodies_are_the_schemas_the_views_validate(document, path, method):
    body = document['paths'][path][method]['requestBody']
    documented = resolve(document, body['content']['application/json']['schema'])
    expected = openapi_schema(OPERATIONS[path, method])
    without_description = {k: v for k, v in documented.items() if k != 'description'}
    assert without_description == {k: v for k, v in expected.items() if k != 'description'}
    assert '415' in document['paths'][path][method]['responses']
    # Only the bodiless create-or-verify of 1.7+ makes this body optional.
    assert body.get('required', False) is (path != '/resource_classes/{name}')


def test_openapi_schema_translates_json_schema_without_touching_it():
    original = copy.deepcopy(A.ALLOCATIONS_POST_1_38)
    translated = openapi_schema(A.ALLOCATIONS_POST_1_38)
    assert A.ALLOCATIONS_POST_1_38 == original
    text = json.dumps(translated)
    assert 'patternProperties' not in text and '"null"' not in text
    consumer = translated['additionalProperties']
    assert consumer['properties']['consumer_generation'] == {'type': 'integer', 'nullable': True}
    parent = openapi_schema(P.PROVIDER_POST_1_14)['properties']['parent_provider_uuid']
    assert parent == {'type': 'string', 'format': 'uuid', 'nullable': True}


# ---- the answers conform to the document -----------------------------------------

def as_json_schema(schema):
    """OpenAPI 3.0's `nullable` as JSON Schema, for checking real answers."""
    if isinstance(schema, list):
        return [as_json_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    result = {key: as_json_schema(value) for key, value in schema.items() if key != 'nullable'}
    if schema.get('nullable') and 'type' in schema:
        result['type'] = [schema['type'], 'null']
    return result


def assert_conforms(document, path, method, response):
    answer = document['paths'][path][method]['responses'][str(response.status_code)]
    if 'content' not in answer:
        assert not response.content, (path, method)
        return
    schema = as_json_schema({**answer['content']['application/json']['schema'],
                             'components': document['components']})
    jsonschema.validate(json.loads(response.content), schema,
                        format_checker=jsonschema.FormatChecker())


def test_answers_at_the_latest_microversion_match_their_schemas(document, api):
    parent = api.create_provider(name='cn1')['uuid']
    child = api.create_provider(name='cn1-numa0', parent=parent)['uuid']
    api.set_inventory(parent, {'DISK_GB': {'total': 100}})
    api.set_inventory(child, {'VCPU': {'total': 8, 'allocation_ratio': 4.0},
                              'MEMORY_MB': {'total': 4096}})
    api.set_traits(child, ['HW_CPU_X86_AVX2'])
    api.set_aggregates(parent, [str(uuid.uuid4())])
    consumer = str(uuid.uuid4())
    assert api.allocate(consumer, {child: {'VCPU': 2}, parent: {'DISK_GB': 10}}).status_code == 204
    rp = '/resource_providers/{uuid}'
    checks = [
        ('/', '/', 200),
        ('/resource_providers', '/resource_providers?in_tree=' + parent, 200),
        (rp, f'/resource_providers/{child}', 200),
        (rp + '/inventories', f'/resource_providers/{child}/inventories', 200),
        (rp + '/inventories/{resource_class}', f'/resource_providers/{child}/inventories/VCPU',
         200),
        (rp + '/usages', f'/resource_providers/{child}/usages', 200),
        (rp + '/aggregates', f'/resource_providers/{parent}/aggregates', 200),
        (rp + '/traits', f'/resource_providers/{child}/traits', 200),
        (rp + '/allocations', f'/resource_providers/{child}/allocations', 200),
        ('/resource_classes', '/resource_classes', 200),
        ('/resource_classes/{name}', '/resource_classes/VCPU', 200),
        ('/traits', '/traits?associated=true', 200),
        ('/traits/{name}', '/traits/HW_CPU_X86_AVX2', 204),
        ('/allocations/{consumer_uuid}', f'/allocations/{consumer}', 200),
        ('/allocation_candidates',
         '/allocation_candidates?resources=VCPU:1&resources1=DISK_GB:5&group_policy=none', 200),
        ('/explain/allocation_candidates', '/explain/allocation_candidates?resources=VCPU:99',
         200),
        ('/usages', '/usages?project_id=proj', 200),
        ('/resource_providers/{uuid}', f'/resource_providers/{uuid.uuid4()}', 404),
    ]
    for path, url, status in checks:
        response = api.get(url)
        assert response.status_code == status, (url, response.content)
        assert_conforms(document, path, 'get', response)

    created = api.post('/resource_providers', {'name': 'cn2'})
    assert created.status_code == 200
    assert_conforms(document, '/resource_providers', 'post', created)
    created_at_1_19 = api.post('/resource_providers', {'name': 'cn3'}, version='1.19')
    assert created_at_1_19.status_code == 201
    assert_conforms(document, '/resource_providers', 'post', created_at_1_19)
    inventory = api.post(f'/resource_providers/{parent}/inventories',
                         {'resource_class': 'IPV4_ADDRESS', 'total': 16})
    assert inventory.status_code == 201
    assert_conforms(document, rp + '/inventories', 'post', inventory)
    usages_1_9 = api.get('/usages?project_id=proj', version='1.9')
    assert usages_1_9.status_code == 200
    assert_conforms(document, '/usages', 'get', usages_1_9)
    unauthenticated = api.get('/resource_providers', token=False)
    assert unauthenticated.status_code == 401
    assert_conforms(document, '/resource_providers', 'get', unauthenticated)


# ---- served documents ------------------------------------------------------------

def test_the_schema_is_served_as_openapi_3(client, db):
    response = client.get('/api/schema/')
    assert response.status_code == 200
    assert response['Content-Type'] == 'application/vnd.oai.openapi; charset=utf-8'
    served = yaml.safe_load(response.content)
    assert served['openapi'] == '3.0.3'
    assert {(p, m) for p, m, _ in operations(served)} == set(OPERATIONS)
    as_json = client.get('/api/schema/?format=json')
    assert as_json.status_code == 200
    assert as_json['Content-Type'] == 'application/vnd.oai.openapi+json'
    assert json.loads(as_json.content) == served


def test_swagger_ui_is_served_with_assets_from_the_service(client, db):
    response = client.get('/api/docs/')
    assert response.status_code == 200
    assert response['Content-Type'] == 'text/html; charset=utf-8'
    page = response.content.decode()
    assets = re.findall(r'<script[^>]*\ssrc="([^"]+)"', page)
    assets += re.findall(r'<link[^>]*\shref="([^"]+)"', page)
    sidecar = '/static/drf_spectacular_sidecar/swagger-ui-dist/'
    assert assets == [sidecar + 'swagger-ui-bundle.js', sidecar + 'swagger-ui-standalone-preset.js',
                      sidecar + 'favicon-32x32.png', sidecar + 'swagger-ui.css']
    assert not re.search(r'https?://', page)
    for asset in assets:
        assert asset.startswith('/static/'), asset
        served = client.get(asset)
        assert served.status_code == 200, asset
        assert b''.join(served.streaming_content), asset
        served.close()
