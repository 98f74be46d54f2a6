"""The OpenAPI documents: one per microversion, generated cleanly, valid
OpenAPI 3.1, complete for their microversion, true to the API's answers
at that microversion, and served with a Swagger UI whose assets come from
the service.

The tables below are written from the API (what the views serve, at which
microversions), not read from the generator or the views' descriptions,
so a document that loses or gains an operation, a parameter or an answer
fails here.
"""
import copy
import functools
import json
import re
import urllib.parse
import uuid

import jsonschema
import openapi_spec_validator
import pytest
import referencing
import referencing.jsonschema
import yaml
from django.core.management import call_command
from drf_spectacular.drainage import GENERATOR_STATS
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.validation import validate_schema

from allocations import schemas as allocation_schemas
from placement_site import microversion
from placement_site.api import validate
from placement_site.errors import PlacementError
from placement_site.microversion import ByVersion
from placement_site.openapi import MEMBER_OF_GRAMMAR
from placement_site.openapi import REQUIRED_GRAMMAR
from placement_site.openapi import RESOURCES_GRAMMAR
from placement_site.openapi import ROOT_REQUIRED_GRAMMAR
from placement_site.openapi import UUID_KEY
from placement_site.openapi import at_version
from placement_site.openapi import describing
from placement_site.openapi import keyed_maps
from placement_site.openapi import openapi_schema
from placement_site.validation import UUID_PATTERN
from providers import schemas as provider_schemas
from providers import trends
from providers.api import pool_labels
from providers.api import what_if
from providers.pods import schemas as pod_schemas

pytestmark = pytest.mark.any_database

P = provider_schemas
A = allocation_schemas
POD = pod_schemas
VERSIONS = microversion.VERSIONS
LATEST = microversion.MAX_VERSION
RP = '/resource_providers/{uuid}'


def vt(text):
    """'1.20' -> (1, 20)."""
    major, minor = text.split('.')
    return int(major), int(minor)


def versions_from(first, last=LATEST):
    return [v for v in VERSIONS if vt(first) <= vt(v) <= vt(last)]


# ---- what the API has, per microversion ------------------------------------------

# (path, method) -> the first microversion that has the operation.
OPERATIONS = {
    ('/', 'get'): '1.0',
    ('/resource_providers', 'get'): '1.0',
    ('/resource_providers', 'post'): '1.0',
    ('/resource_providers/{uuid}', 'get'): '1.0',
    ('/resource_providers/{uuid}', 'put'): '1.0',
    ('/resource_providers/{uuid}', 'delete'): '1.0',
    ('/resource_providers/{uuid}/inventories', 'get'): '1.0',
    ('/resource_providers/{uuid}/inventories', 'post'): '1.0',
    ('/resource_providers/{uuid}/inventories', 'put'): '1.0',
    ('/resource_providers/{uuid}/inventories', 'delete'): '1.5',
    ('/resource_providers/{uuid}/inventories/{resource_class}', 'get'): '1.0',
    ('/resource_providers/{uuid}/inventories/{resource_class}', 'put'): '1.0',
    ('/resource_providers/{uuid}/inventories/{resource_class}', 'delete'): '1.0',
    ('/resource_providers/{uuid}/usages', 'get'): '1.0',
    ('/resource_providers/{uuid}/aggregates', 'get'): '1.1',
    ('/resource_providers/{uuid}/aggregates', 'put'): '1.1',
    ('/resource_providers/{uuid}/traits', 'get'): '1.6',
    ('/resource_providers/{uuid}/traits', 'put'): '1.6',
    ('/resource_providers/{uuid}/traits', 'delete'): '1.6',
    ('/resource_providers/{uuid}/allocations', 'get'): '1.0',
    ('/resource_classes', 'get'): '1.2',
    ('/resource_classes', 'post'): '1.2',
    ('/resource_classes/{name}', 'get'): '1.2',
    ('/resource_classes/{name}', 'put'): '1.2',
    ('/resource_classes/{name}', 'delete'): '1.2',
    ('/traits', 'get'): '1.6',
    ('/traits/{name}', 'get'): '1.6',
    ('/traits/{name}', 'put'): '1.6',
    ('/traits/{name}', 'delete'): '1.6',
    ('/allocations', 'post'): '1.13',
    ('/allocations/{consumer_uuid}', 'get'): '1.0',
    ('/allocations/{consumer_uuid}', 'put'): '1.0',
    ('/allocations/{consumer_uuid}', 'delete'): '1.0',
    ('/allocation_candidates', 'get'): '1.10',
    ('/explain/allocation_candidates', 'get'): '1.10',
    ('/events', 'get'): '1.0',
    ('/capacity/trends', 'get'): '1.0',
    ('/capacity', 'get'): '1.0',
    ('/capacity/what-if', 'post'): '1.0',
    ('/pods', 'get'): '1.0',
    ('/pods', 'post'): '1.0',
    ('/pods/{uuid}', 'get'): '1.0',
    ('/pods/{uuid}', 'put'): '1.0',
    ('/pods/{uuid}', 'delete'): '1.0',
    ('/pod_bindings', 'get'): '1.0',
    ('/pod_bindings', 'post'): '1.0',
    ('/pod_bindings/{uuid}', 'get'): '1.0',
    ('/pod_bindings/{uuid}', 'delete'): '1.0',
    ('/pool_labels/{uuid}', 'get'): '1.0',
    ('/pool_labels/{uuid}', 'put'): '1.0',
    ('/pool_labels/{uuid}', 'delete'): '1.0',
    ('/usages', 'get'): '1.9',
    ('/reshaper', 'post'): '1.30',
}


def operations_at(version):
    return {key for key, since in OPERATIONS.items() if vt(version) >= vt(since)}


# (path, method) -> the documented answers besides 400, 406 and 414 (every
# operation) and 401 and 403 (every operation but the root's), at every
# microversion that has the operation...
ANSWERS = {
    ('/', 'get'): {'200'},
    ('/resource_providers', 'get'): {'200'},
    ('/resource_providers', 'post'): {'409', '415'},
    ('/resource_providers/{uuid}', 'get'): {'200', '404'},
    ('/resource_providers/{uuid}', 'put'): {'200', '404', '409', '415'},
    ('/resource_providers/{uuid}', 'delete'): {'204', '404', '409'},
    ('/resource_providers/{uuid}/inventories', 'get'): {'200', '404'},
    ('/resource_providers/{uuid}/inventories', 'post'): {'201', '404', '409', '415'},
    ('/resource_providers/{uuid}/inventories', 'put'): {'200', '404', '409', '415'},
    ('/resource_providers/{uuid}/inventories', 'delete'): {'204', '404', '409'},
    ('/resource_providers/{uuid}/inventories/{resource_class}', 'get'): {'200', '404'},
    ('/resource_providers/{uuid}/inventories/{resource_class}', 'put'): {
        '200', '404', '409', '415'},
    ('/resource_providers/{uuid}/inventories/{resource_class}', 'delete'): {'204', '404', '409'},
    ('/resource_providers/{uuid}/usages', 'get'): {'200', '404'},
    ('/resource_providers/{uuid}/aggregates', 'get'): {'200', '404'},
    ('/resource_providers/{uuid}/aggregates', 'put'): {'200', '404', '415'},
    ('/resource_providers/{uuid}/traits', 'get'): {'200', '404'},
    ('/resource_providers/{uuid}/traits', 'put'): {'200', '404', '409', '415'},
    ('/resource_providers/{uuid}/traits', 'delete'): {'204', '404', '409'},
    ('/resource_providers/{uuid}/allocations', 'get'): {'200', '404'},
    ('/resource_classes', 'get'): {'200'},
    ('/resource_classes', 'post'): {'201', '409', '415'},
    ('/resource_classes/{name}', 'get'): {'200', '404'},
    ('/resource_classes/{name}', 'put'): set(),
    ('/resource_classes/{name}', 'delete'): {'204', '404', '409'},
    ('/traits', 'get'): {'200'},
    ('/traits/{name}', 'get'): {'204', '404'},
    ('/traits/{name}', 'put'): {'201', '204'},
    ('/traits/{name}', 'delete'): {'204', '404', '409'},
    ('/allocations', 'post'): {'204', '409', '415'},
    ('/allocations/{consumer_uuid}', 'get'): {'200'},
    ('/allocations/{consumer_uuid}', 'put'): {'204', '409', '415'},
    ('/allocations/{consumer_uuid}', 'delete'): {'204', '404'},
    ('/allocation_candidates', 'get'): {'200'},
    ('/explain/allocation_candidates', 'get'): {'200'},
    ('/events', 'get'): {'200'},
    ('/capacity/trends', 'get'): {'200', '404'},
    ('/capacity', 'get'): {'200'},
    ('/capacity/what-if', 'post'): {'200', '415'},
    ('/pods', 'get'): {'200'},
    ('/pods', 'post'): {'201', '409', '415'},
    ('/pods/{uuid}', 'get'): {'200', '404'},
    ('/pods/{uuid}', 'put'): {'200', '404', '409', '415'},
    ('/pods/{uuid}', 'delete'): {'204', '404', '409'},
    ('/pod_bindings', 'get'): {'200'},
    ('/pod_bindings', 'post'): {'200', '201', '409', '415'},
    ('/pod_bindings/{uuid}', 'get'): {'200', '404'},
    ('/pod_bindings/{uuid}', 'delete'): {'204', '404', '409'},
    ('/pool_labels/{uuid}', 'get'): {'200', '404'},
    ('/pool_labels/{uuid}', 'put'): {'200', '404', '415'},
    ('/pool_labels/{uuid}', 'delete'): {'204', '404'},
    ('/usages', 'get'): {'200'},
    ('/reshaper', 'post'): {'204', '409', '415'},
}
# Ours: the resources with an ETag (placement_site.conditional) answer 304 to
# a read and 412 to a write when a conditional header says so.
CONDITIONAL = {
    '/resource_providers/{uuid}': ('get', 'put', 'delete'),
    '/resource_providers/{uuid}/inventories': ('get', 'post', 'put', 'delete'),
    '/resource_providers/{uuid}/inventories/{resource_class}': ('get', 'put', 'delete'),
    '/resource_providers/{uuid}/aggregates': ('get', 'put'),
    '/resource_providers/{uuid}/traits': ('get', 'put', 'delete'),
    '/allocations/{consumer_uuid}': ('get', 'put', 'delete'),
}
for path, methods in CONDITIONAL.items():
    for method in methods:
        ANSWERS[path, method] = ANSWERS[path, method] | {'304' if method == 'get' else '412'}
# ... and those of some microversions only: (path, method) -> [(answers,
# first, last)], first / last None for open.
VERSIONED_ANSWERS = {
    ('/resource_providers', 'post'): [({'201'}, None, '1.19'), ({'200'}, '1.20', None)],
    # Generations of aggregates are checked (and bumped) from 1.19 only.
    ('/resource_providers/{uuid}/aggregates', 'put'): [({'409'}, '1.19', None)],
    # Before 1.7 a rename with a body; from 1.7 a bodiless create-or-verify
    # that can neither miss the class, nor conflict, nor read a body.
    ('/resource_classes/{name}', 'put'): [({'200', '404', '409', '415'}, None, '1.6'),
                                          ({'201', '204'}, '1.7', None)],
}


def answers_at(path, method, version):
    answers = {'400', '406', '414'} | ANSWERS[path, method]
    if path != '/':
        answers |= {'401', '403'}
    for statuses, first, last in VERSIONED_ANSWERS.get((path, method), ()):
        if (first is None or vt(version) >= vt(first)) and (
                last is None or vt(version) <= vt(last)):
            answers |= statuses
    return answers


# path -> {query parameter: first microversion} (GET only).
CANDIDATE_QUERY = {'resources': '1.10', 'limit': '1.16', 'required': '1.17', 'member_of': '1.21',
                   'groups': '1.25', 'group_policy': '1.25', 'in_tree': '1.31',
                   'root_required': '1.35', 'same_subtree': '1.36'}
QUERY_PARAMETERS = {
    '/resource_providers': {'name': '1.0', 'uuid': '1.0', 'member_of': '1.3', 'resources': '1.4',
                            'in_tree': '1.14', 'required': '1.18'},
    '/allocation_candidates': CANDIDATE_QUERY,
    '/explain/allocation_candidates': CANDIDATE_QUERY,
    '/usages': {'project_id': '1.9', 'user_id': '1.9', 'consumer_type': '1.38'},
    '/traits': {'name': '1.6', 'associated': '1.6'},
    '/events': {name: '1.0' for name in ('provider', 'consumer', 'type', 'since', 'marker',
                                         'limit')},
    '/pods': {name: '1.0' for name in ('availability_zone', 'state', 'affinity')},
    '/capacity/trends': {name: '1.0' for name in ('aggregate', 'resource_class', 'since', 'days',
                                                  'format')},
    '/capacity': {name: '1.0' for name in ('group_by', 'resources', 'resource_class', 'format',
                                           'view')},
    '/pod_bindings': {name: '1.0' for name in ('project_id', 'pod', 'affinity', 'open',
                                               'marker', 'limit')},
}


def query_parameters_at(path, version):
    return {name for name, since in QUERY_PARAMETERS.get(path, {}).items()
            if vt(version) >= vt(since)}


# Request bodies: (path, method) -> the schema the view validates with, or
# the table (ByVersion) it takes the schema of the request's version from.
BODIES = {
    ('/resource_providers', 'post'): P.PROVIDER_POST_BY_VERSION,
    ('/resource_providers/{uuid}', 'put'): P.PROVIDER_PUT_BY_VERSION,
    ('/resource_providers/{uuid}/aggregates', 'put'): P.AGGREGATES_PUT_BY_VERSION,
    ('/resource_classes/{name}', 'put'): P.RESOURCE_CLASS_PUT_BY_VERSION,
    ('/allocations/{consumer_uuid}', 'put'): A.ALLOCATIONS_PUT_BY_VERSION,
    ('/allocations', 'post'): A.ALLOCATIONS_POST_BY_VERSION,
    ('/reshaper', 'post'): A.RESHAPER_POST_BY_VERSION,
    ('/resource_providers/{uuid}/inventories', 'post'): P.INVENTORY_POST,
    ('/resource_providers/{uuid}/inventories/{resource_class}', 'put'): P.INVENTORY_PUT,
    ('/resource_providers/{uuid}/inventories', 'put'): P.INVENTORIES_PUT,
    ('/resource_providers/{uuid}/traits', 'put'): P.PROVIDER_TRAITS_PUT,
    ('/resource_classes', 'post'): P.RESOURCE_CLASS_POST,
    ('/pods', 'post'): POD.POD_POST,
    ('/pods/{uuid}', 'put'): POD.POD_PUT,
    ('/pod_bindings', 'post'): POD.BINDING_POST,
    ('/pool_labels/{uuid}', 'put'): pool_labels.POOL_LABEL_PUT,
    ('/capacity/what-if', 'post'): what_if.WHAT_IF_BODY,
}
BODY_TABLES = {key: body for key, body in BODIES.items() if isinstance(body, ByVersion)}


def body_schema_at(path, method, version):
    """The JSON Schema the view validates the body with at `version`, None without one."""
    body = BODIES.get((path, method))
    return body.at(microversion.parse(version)) if isinstance(body, ByVersion) else body


# ---- the documents ------------------------------------------------------------------

@functools.cache
def _generate(version):
    GENERATOR_STATS.reset()
    with describing(microversion.parse(version)):
        schema = SchemaGenerator().get_schema(request=None, public=True)
    problems = (dict(GENERATOR_STATS._warn_cache), dict(GENERATOR_STATS._error_cache))
    return json.dumps(schema), problems


def document_at(version):
    """The document of microversion `version` ('X.Y'), as generated (a fresh copy)."""
    text, problems = _generate(version)
    assert problems == ({}, {}), (version, problems)
    return json.loads(text)


def latest_document():
    """The document generated outside describing(): the latest microversion's."""
    GENERATOR_STATS.reset()
    schema = SchemaGenerator().get_schema(request=None, public=True)
    assert not GENERATOR_STATS, (dict(GENERATOR_STATS._warn_cache),
                                 dict(GENERATOR_STATS._error_cache))
    return json.loads(json.dumps(schema))


def operations(document):
    for path, item in document['paths'].items():
        for method, operation in item.items():
            yield path, method, operation


def resolve(document, schema):
    while '$ref' in schema:
        schema = document['components']['schemas'][schema['$ref'].split('/')[-1]]
    return schema


def inline(document, schema):
    """`schema` with every reference to a component replaced by the component."""
    if isinstance(schema, list):
        return [inline(document, item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    if '$ref' in schema:
        rest = {key: value for key, value in schema.items() if key != '$ref'}
        return {**inline(document, resolve(document, schema)), **inline(document, rest)}
    return {key: inline(document, value) for key, value in schema.items()}


def walk(node, where=()):
    """(location, dict) for every dict in a JSON document."""
    if isinstance(node, dict):
        yield where, node
        for key, value in node.items():
            yield from walk(value, where + (key,))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from walk(value, where + (index,))


def without_description(schema):
    return {key: value for key, value in schema.items() if key != 'description'}


# ---- generation -------------------------------------------------------------------------

# Where something changed, and the ends: drf-spectacular's validator (about
# a second a document) checks these; openapi-spec-validator checks them all.
VALIDATED = ['1.0', '1.1', '1.2', '1.6', '1.7', '1.10', '1.12', '1.14', '1.19', '1.20', '1.25',
             '1.28', '1.30', '1.33', '1.36', '1.38', '1.39']


@pytest.mark.parametrize('version', VERSIONS)
def test_every_microversion_has_a_valid_openapi_3_1_document(version):
    document = document_at(version)   # no generator warnings or errors
    assert document['openapi'] == '3.1.0'
    assert document['info']['version'] == version
    assert f'describes microversion {version};' in document['info']['description']
    openapi_spec_validator.validate(document)
    if version in VALIDATED:
        validate_schema(document)


def test_the_default_document_is_the_latest_microversion():
    document = latest_document()
    assert document['info']['version'] == LATEST
    assert document == document_at(LATEST)


def test_documents_differ_where_the_api_does():
    # A generator that ignored the version would pass many per-version
    # checks vacuously for the latest; documents of neighbouring
    # microversions must differ where the API changed.
    for older, newer in (('1.0', '1.1'), ('1.19', '1.20'), ('1.6', '1.7'), ('1.14', '1.15'),
                         ('1.37', '1.38'), ('1.38', '1.39')):
        assert without_info(document_at(older)) != without_info(document_at(newer)), (
            older, newer)


def without_info(document):
    return {key: value for key, value in document.items() if key != 'info'}


def test_the_spectacular_command_passes_with_validate_and_fail_on_warn(tmp_path):
    out = tmp_path / 'schema.yaml'
    call_command('spectacular', '--validate', '--fail-on-warn', '--file', str(out))
    written = yaml.safe_load(out.read_text())
    assert written['openapi'] == '3.1.0'
    assert written['info']['version'] == LATEST
    assert {(p, m) for p, m, _ in operations(written)} == set(OPERATIONS)


# ---- completeness -----------------------------------------------------------------------

def test_the_tables_cover_every_operation():
    assert set(ANSWERS) == set(OPERATIONS)
    assert set(VERSIONED_ANSWERS) <= set(OPERATIONS)
    assert set(BODIES) <= set(OPERATIONS)
    # Every ByVersion table of body schemas is one of BODY_TABLES.
    tables = {id(value) for module in (P, A) for name, value in vars(module).items()
              if isinstance(value, ByVersion) and 'QUERY' not in name}
    assert tables == {id(table) for table in BODY_TABLES.values()}
    # A table starts at the microversion of its operation.
    for key, table in BODY_TABLES.items():
        assert table.spans()[0][0] == vt(OPERATIONS[key]), key


@pytest.mark.parametrize('version', VERSIONS)
def test_each_document_has_the_operations_of_its_microversion(version):
    document = document_at(version)
    # Placement's operations of that microversion, and nothing else (no
    # /api/ or /admin/ paths, no operation of a later microversion).
    assert {(path, method) for path, method, _ in operations(document)} == operations_at(version)
    assert all(item for item in document['paths'].values())


def test_operations_arrive_with_their_microversions():
    assert ('/allocation_candidates', 'get') not in operations_at('1.0')
    for operation, before, since in (
            (('/resource_providers/{uuid}/aggregates', 'get'), '1.0', '1.1'),
            (('/resource_classes', 'get'), '1.1', '1.2'),
            (('/resource_providers/{uuid}/inventories', 'delete'), '1.4', '1.5'),
            (('/traits', 'get'), '1.5', '1.6'),
            (('/usages', 'get'), '1.8', '1.9'),
            (('/allocation_candidates', 'get'), '1.9', '1.10'),
            (('/allocations', 'post'), '1.12', '1.13'),
            (('/reshaper', 'post'), '1.29', '1.30')):
        path, method = operation
        assert method not in document_at(before)['paths'].get(path, {}), (operation, before)
        assert method in document_at(since)['paths'][path], (operation, since)


@pytest.mark.parametrize('version', ['1.0', '1.2', '1.6', '1.13', '1.30', LATEST])
def test_operations_have_unique_ids_summaries_tags_and_microversions(version):
    document = document_at(version)
    ids = [op['operationId'] for _, _, op in operations(document)]
    assert len(ids) == len(set(ids))
    assert all(re.fullmatch('[a-z][A-Za-z]+', operation_id) for operation_id in ids)
    for path, method, operation in operations(document):
        assert operation['summary'] and len(operation['tags']) == 1, (path, method)
        since = OPERATIONS[path, method]
        assert f'**Microversions:** available since {since}.' in operation['description'], (
            path, method)


def test_operation_ids_are_stable_across_microversions():
    ids = {}
    for version in VERSIONS:
        for path, method, operation in operations(document_at(version)):
            ids.setdefault((path, method), set()).add(operation['operationId'])
    assert all(len(names) == 1 for names in ids.values()), ids


# ---- parameters and answers ---------------------------------------------------------------

@pytest.mark.parametrize('version', VERSIONS)
def test_parameters_are_those_of_the_microversion(version):
    document = document_at(version)
    for path, method, operation in operations(document):
        parameters = {(p['in'], p['name']): p for p in operation['parameters']}
        assert len(parameters) == len(operation['parameters']), (path, method)
        # The document describes requests that name its microversion; a
        # request without the header is valid, 1.0's.
        header = parameters[('header', 'OpenStack-API-Version')]
        assert header['schema'] == {'type': 'string', 'enum': [f'placement {version}'],
                                    'default': f'placement {version}'}, (path, method)
        assert header.get('required', False) is False, (path, method)
        path_names = re.findall(r'{(\w+)}', path)
        assert {name for where, name in parameters if where == 'path'} == set(path_names)
        for name in path_names:
            assert parameters[('path', name)]['required'] is True
        documented = {name for where, name in parameters if where == 'query'}
        expected = query_parameters_at(path, version) if method == 'get' else set()
        assert documented == expected, (path, method)
        assert {where for where, _ in parameters} <= {'header', 'path', 'query'}


def query_parameter(document, path, name):
    for parameter in document['paths'][path]['get']['parameters']:
        if parameter['in'] == 'query' and parameter['name'] == name:
            return parameter
    raise AssertionError(f'no {name} on GET {path}')


@pytest.mark.parametrize('version', versions_from('1.3'))
def test_member_of_is_one_value_before_1_24_then_repeatable(version):
    paths = ['/resource_providers']
    if vt(version) >= (1, 21):
        paths += ['/allocation_candidates', '/explain/allocation_candidates']
    grammar = at_version(MEMBER_OF_GRAMMAR, vt(version))
    assert ('!?' in grammar['pattern']) is (vt(version) >= (1, 32))
    for path in paths:
        schema = query_parameter(document_at(version), path, 'member_of')['schema']
        if vt(version) < (1, 24):
            assert schema == grammar, path
        else:
            assert schema == {'type': 'array', 'items': grammar}, path


@pytest.mark.parametrize('version', versions_from('1.17'))
def test_required_is_one_value_before_1_39_then_repeatable(version):
    paths = ['/allocation_candidates', '/explain/allocation_candidates']
    if vt(version) >= (1, 18):
        paths += ['/resource_providers']
    grammar = at_version(REQUIRED_GRAMMAR, vt(version))
    for path in paths:
        parameter = query_parameter(document_at(version), path, 'required')
        if vt(version) < (1, 39):
            assert parameter['schema'] == grammar, path
        else:
            assert parameter['schema'] == {'type': 'array', 'items': grammar}, path
            assert parameter['style'] == 'form' and parameter['explode'] is True


@pytest.mark.parametrize('version', versions_from('1.4'))
def test_resources_takes_its_grammar_and_is_required_on_candidates_until_1_24(version):
    document = document_at(version)
    listed = query_parameter(document, '/resource_providers', 'resources')
    assert listed['schema'] == RESOURCES_GRAMMAR
    assert not listed.get('required', False)
    if vt(version) < (1, 10):
        return
    for path in ('/allocation_candidates', '/explain/allocation_candidates'):
        parameter = query_parameter(document, path, 'resources')
        assert parameter['schema']['pattern'] == RESOURCES_GRAMMAR['pattern']
        assert parameter.get('required', False) is (vt(version) <= (1, 24)), path


@pytest.mark.parametrize('version', versions_from('1.25'))
def test_request_groups_take_the_suffixes_and_kinds_of_the_microversion(version):
    document = document_at(version)
    groups = query_parameter(document, '/allocation_candidates', 'groups')['schema']
    validator = jsonschema.Draft202012Validator(groups, format_checker=jsonschema.FormatChecker())
    at = vt(version)
    aggregate = str(uuid.uuid4())
    # {query parameter: value} -> does the document take it?
    cases = {
        'resources1': ('VCPU:1', True),
        'resources12': ('VCPU:1,MEMORY_MB:64', True),
        'resources1 ': ('VCPU:1', False),
        'resources0': ('VCPU:1', at >= (1, 33)),      # a name from 1.33, not a number
        'resources_a': ('VCPU:1', at >= (1, 33)),
        'resourcesX-1': ('VCPU:1', at >= (1, 33)),
        'resources' + 'a' * 65: ('VCPU:1', False),
        'required1': ('HW_CPU_X86_AVX2', True),
        'member_of1': (aggregate, True),
        'member_of2': (f'in:{aggregate},{aggregate}', True),
        'in_tree1': (aggregate, at >= (1, 31)),
        'limit1': ('1', False),
        'group_policy1': ('none', False),
        'foo1': ('x', False),
    }
    for name, (value, taken) in cases.items():
        assert validator.is_valid({name: value}) is taken, (version, name)
    # ... and each kind takes the grammar of its unsuffixed parameter.
    for name, value, taken in (('resources1', 'VCPU:0', False), ('resources1', 'vcpu:1', False),
                               ('required1', '!HW_CPU_X86_AVX2', at >= (1, 22)),
                               ('required1', 'in:HW_CPU_X86_AVX2', at >= (1, 39)),
                               ('member_of1', '!' + aggregate, at >= (1, 32)),
                               ('member_of1', 'not-a-uuid', False),
                               ('in_tree1', 'not-a-uuid', False)):
        assert validator.is_valid({name: value}) is taken, (version, name, value)
    if at >= (1, 35):
        assert query_parameter(document, '/allocation_candidates',
                               'root_required')['schema'] == ROOT_REQUIRED_GRAMMAR


@pytest.mark.parametrize('version', VERSIONS)
def test_answers_are_those_of_the_microversion(version):
    document = document_at(version)
    for path, method, operation in operations(document):
        responses = operation['responses']
        assert set(responses) == answers_at(path, method, version), (path, method)
        # 415 exactly where there is a body to declare.
        assert ('415' in responses) is ('requestBody' in operation), (path, method)
        for status, response in responses.items():
            assert response['description'], (status, path, method)
            if status == '414':
                # The HTTP server's page for a request line too long, not the service's.
                assert list(response['content']) == ['text/html'], (path, method)
            elif status >= '400':
                schema = response['content']['application/json']['schema']
                name = 'Unauthorized' if status == '401' else 'Error'
                assert schema == {'$ref': f'#/components/schemas/{name}'}, (status, path)
        if path == '/':
            assert 'security' not in operation
        else:
            assert operation['security'] == [{'AuthToken': []}], (path, method)


@pytest.mark.parametrize('version', ['1.7', LATEST])
def test_put_resource_class_documents_only_its_answers_from_1_7(api, version):
    # What the API does: a body of any type is not read (no 415), a missing
    # class is created (no 404), an existing one confirmed (no 409); and the
    # document says no more.
    response = api.put('/resource_classes/CUSTOM_GOLD', raw='not json', content_type='text/plain',
                       version=version)
    assert response.status_code == 201, response.content
    response = api.put('/resource_classes/CUSTOM_GOLD', {'name': 'CUSTOM_SILVER'},
                       version=version)
    assert response.status_code == 204, response.content
    operation = document_at(version)['paths']['/resource_classes/{name}']['put']
    assert 'requestBody' not in operation
    assert set(operation['responses']) == answers_at('/resource_classes/{name}', 'put', version)


def test_answers_change_with_their_microversions():
    def statuses(version, path, method):
        return set(document_at(version)['paths'][path][method]['responses'])

    assert {'201'} <= statuses('1.19', '/resource_providers', 'post')
    assert '200' not in statuses('1.19', '/resource_providers', 'post')
    assert {'200'} <= statuses('1.20', '/resource_providers', 'post')
    assert '201' not in statuses('1.20', '/resource_providers', 'post')
    assert '200' in statuses('1.6', '/resource_classes/{name}', 'put')
    assert {'201', '204'} & statuses('1.6', '/resource_classes/{name}', 'put') == set()
    assert {'201', '204'} <= statuses('1.7', '/resource_classes/{name}', 'put')
    assert '200' not in statuses('1.7', '/resource_classes/{name}', 'put')
    # The old "not yet" answers are gone with the operations they guarded.
    assert '405' not in statuses('1.5', '/resource_providers/{uuid}/inventories', 'delete')
    assert '404' not in statuses('1.2', '/resource_classes', 'get')
    assert '404' not in statuses('1.10', '/allocation_candidates', 'get')


@pytest.mark.parametrize('version', ['1.0', '1.14', '1.15', '1.19', '1.20', LATEST])
def test_cache_headers_are_documented_from_1_15(version):
    document = document_at(version)
    cached = set()
    for path, method, operation in operations(document):
        for status, response in operation['responses'].items():
            headers = set(response.get('headers', {}))
            assert 'x-openstack-request-id' in headers, (path, method, status)
            if status < '400':
                assert 'OpenStack-API-Version' in headers, (path, method, status)
            assert ('Last-Modified' in headers) is ('Cache-Control' in headers)
            if 'Last-Modified' in headers:
                cached.add((path, method, status))
    if vt(version) < (1, 15):
        assert cached == set()
    else:
        assert {('/resource_providers/{uuid}', 'get', '200'), ('/traits/{name}', 'get', '204'),
                ('/resource_providers', 'get', '200')} <= cached
        # The provider POST answers with a body (and cache headers) from 1.20.
        assert (('/resource_providers', 'post', '200') in cached) is (vt(version) >= (1, 20))
        assert ('/resource_providers', 'post', '201') not in cached
        assert ('/explain/allocation_candidates', 'get', '200') not in cached


# ---- request bodies ------------------------------------------------------------------------

def published(schema):
    """A body schema of the views as the documents publish it: openapi_schema()
    (canonical uuid keys, real class and trait names), maps as keyed_maps()
    gives them."""
    return keyed_maps(openapi_schema(schema))


def documented_body(document, path, method):
    body = document['paths'][path][method].get('requestBody')
    if body is None:
        return None
    assert list(body['content']) == ['application/json'], (path, method)
    assert body['required'] is True, (path, method)
    return inline(document, body['content']['application/json']['schema'])


@pytest.mark.parametrize('version', VERSIONS)
def test_request_bodies_are_the_schemas_the_views_validate(version):
    document = document_at(version)
    for path, method, _operation in operations(document):
        expected = body_schema_at(path, method, version)
        documented = documented_body(document, path, method)
        if expected is None:
            assert documented is None, (path, method)
            continue
        assert documented is not None, (path, method)
        assert without_description(documented) == without_description(
            published(expected)), (path, method)


@pytest.mark.parametrize('key', sorted(BODY_TABLES))
def test_every_span_of_a_body_table_is_published(key):
    path, method = key
    table = BODY_TABLES[key]
    spans = table.spans()
    for index, (first, schema) in enumerate(spans):
        # The first and the last microversion of the span.
        last = spans[index + 1][0] if index + 1 < len(spans) else None
        versions = [v for v in VERSIONS if vt(v) >= first and (last is None or vt(v) < last)]
        assert versions, (key, first)
        for version in (versions[0], versions[-1]):
            documented = documented_body(document_at(version), path, method)
            if schema is None:
                assert documented is None, (key, version)
            else:
                assert without_description(documented) == without_description(
                    published(schema)), (key, version)


U1 = '5f1c3a9e-2b7d-4c8e-9a1f-0d3e6b2c4a7f'
U2 = '9A8B7C6D-5E4F-4A3B-8C2D-1E0F9A8B7C6D'


def sample_bodies(path, method, version):
    """Bodies the view of (path, method) takes at `version`."""
    at = vt(version)
    parent = ([{'name': 'cn', 'parent_provider_uuid': U1},
               {'name': 'cn', 'parent_provider_uuid': None}] if at >= (1, 14) else [])
    allocations = allocation_body(at, {U1: {'VCPU': 1, 'CUSTOM_GOLD': 2}, U2: {'DISK_GB': 1}})
    if at >= (1, 34):   # '' names the unsuffixed group
        allocations = {**allocations, 'mappings': {'': [U1], '1': [U1], '_a': [U2]}}
    bodies = {
        ('/resource_providers', 'post'): [{'name': 'cn'}, {'name': 'cn', 'uuid': U1}, *parent],
        (RP, 'put'): [{'name': 'cn'}, *parent],
        (RP + '/inventories', 'post'): [
            {'resource_class': 'VCPU', 'total': 8},
            {'resource_class': 'CUSTOM_GOLD', 'total': 8, 'reserved': 1, 'min_unit': 1,
             'max_unit': 4, 'step_size': 1, 'allocation_ratio': 1.5}],
        (RP + '/inventories/{resource_class}', 'put'): [
            {'resource_provider_generation': 1, 'total': 8, 'reserved': 2}],
        (RP + '/inventories', 'put'): [
            {'resource_provider_generation': 1,
             'inventories': {'VCPU': {'total': 8}, 'CUSTOM_GOLD': {'total': 1, 'reserved': 1}}}],
        (RP + '/aggregates', 'put'): [
            {'aggregates': [U1, U2], 'resource_provider_generation': 1} if at >= (1, 19)
            else [U1, U2]],
        (RP + '/traits', 'put'): [{'traits': ['HW_CPU_X86_AVX2', 'CUSTOM_FAST'],
                                   'resource_provider_generation': 1}],
        ('/resource_classes', 'post'): [{'name': 'CUSTOM_GOLD'}],
        ('/resource_classes/{name}', 'put'): [{'name': 'CUSTOM_GOLD'}],
        ('/allocations/{consumer_uuid}', 'put'): [allocations],
        ('/allocations', 'post'): [{U1: allocations, U2: {**allocations, 'allocations': {}}}],
        ('/reshaper', 'post'): [{
            'inventories': {U1: {'resource_provider_generation': 1,
                                 'inventories': {'VCPU': {'total': 8}}}},
            'allocations': {U2: allocations}}],
        ('/pods', 'post'): [{'name': 'Pod1'}, {
            'name': 'Pod1', 'uuid': U1, 'aggregate': U2, 'availability_zone': 'az1',
            'affinity_tags': {'resource': 'CAD'}, 'thresholds': {'VCPU': 80, 'DISK_GB': 90.5},
            'state': 'maintenance'}],
        ('/pods/{uuid}', 'put'): [{'state': 'enabled'},
                                  {'name': 'Pod2', 'thresholds': {'CUSTOM_GOLD': 50}}],
        ('/pod_bindings', 'post'): [
            {'project_id': 'p'},
            {'project_id': 'p', 'affinity': 'resource=CAD', 'availability_zone': 'az1',
             'resources': {'VCPU': 2, 'DISK_GB': 1}},
            {'project_id': 'p', 'affinity': None, 'pod': U1}],
        ('/pool_labels/{uuid}', 'put'): [{'label': 'Gold'}],
        ('/capacity/what-if', 'post'): [
            {}, {'resources': 'VCPU:1,MEMORY_MB:512'},
            {'add_hosts': [{'count': 2, 'inventories': {'VCPU': {'total': 8}},
                            'aggregates': [U1], 'traits': ['HW_CPU_X86_AVX2']}],
             'remove_hosts': {'names': ['cn*']},
             'set_inventories': [{'resource_class': 'VCPU', 'allocation_ratio': 2.0}]}],
    }
    return bodies[path, method]


def variants(body):
    """(what changed, body) for changes one place deep anywhere in `body`."""
    def at(node, where, change):
        if not where:
            return change(node)
        copied = copy.deepcopy(node)
        target = copied
        for step in where[:-1]:
            target = target[step]
        target[where[-1]] = change(target[where[-1]])
        return copied

    yield 'as is', body
    for where, node in walk(body):
        # In a map keyed by resource class, a key no class has (the view's
        # schema leaves that to the lookup, a 400 too).
        keyed_by_class = node and all(re.fullmatch('[A-Z0-9_]+', key) for key in node)
        yield ('unknown name' if keyed_by_class else 'extra key'), at(
            body, where, lambda n: {**n, 'bogus': 1})
        for key in node:
            yield 'key dropped', at(body, where, lambda n, k=key: {
                name: value for name, value in n.items() if name != k})
            renames = []
            if re.fullmatch(UUID_PATTERN, key):
                renames += [('uuid key', key.upper()), ('uuid key', key.lower()),
                            ('non-canonical uuid key', '-' * 36),
                            ('non-canonical uuid key', key.replace('-', '')[:32] + '0000')]
            if key in ('VCPU', 'DISK_GB', 'CUSTOM_GOLD'):
                renames += [('unknown name', 'NOT_A_CLASS'), ('unknown name', key.lower()),
                            ('custom name', 'CUSTOM_OTHER')]
            for what, name in renames:
                yield what, at(body, where, lambda n, k=key, r=name: {
                    (r if old == k else old): value for old, value in n.items()})
            for value in (None, 'x', -1, 0, 1.5, [], {}):
                yield 'value', at(body, where + (key,), lambda _, v=value: v)
    if isinstance(body, list):
        for value in ([], ['not-a-uuid'], body + body[:1], None, {}):
            yield 'value', value
    if isinstance(body, dict) and isinstance(body.get('traits'), list):
        for name in ('NOT_A_TRAIT', 'hw_cpu', ''):
            yield 'unknown name', {**body, 'traits': [name]}
    if isinstance(body, dict) and body.get('resource_class'):
        for name, what in (('NOT_A_CLASS', 'unknown name'), ('vcpu', 'bad name')):
            yield what, {**body, 'resource_class': name}


def takes(schema, instance, format_checker):
    return jsonschema.Draft202012Validator(
        schema, format_checker=format_checker).is_valid(instance)


def view_takes(schema, instance):
    try:
        validate(instance, schema, '{}')
    except PlacementError:
        return False
    return True


@pytest.mark.parametrize('key', sorted(BODIES))
def test_published_bodies_take_what_the_views_take(key):
    """The document's body schema takes a body exactly when the view's does,
    but for keys that are not canonical uuids and names of no resource class
    or trait, which the document (more strictly than the view's schema,
    whose 400 then comes from the lookup) leaves out."""
    path, method = key
    checked, previous = 0, None
    for version in VERSIONS:
        schema = body_schema_at(path, method, version)
        if vt(version) < vt(OPERATIONS[key]) or schema is None:
            continue
        # A version whose schema and samples are the previous one's gives
        # the same verdicts: its documented body is that schema published
        # (test_request_bodies_are_the_schemas_the_views_validate).
        if (schema, sample_bodies(path, method, version)) == previous:
            continue
        previous = (schema, sample_bodies(path, method, version))
        document = document_at(version)
        body = document['paths'][path][method]['requestBody']['content']['application/json']
        for sample in sample_bodies(path, method, version):
            assert view_takes(schema, sample), (version, sample)
            for what, instance in variants(sample):
                by_view = view_takes(schema, instance)
                by_document = validator_for(document, body['schema']).is_valid(instance)
                # keyed_maps() only rewrites: the same verdict as before it.
                assert by_document is takes(openapi_schema(schema), instance,
                                            jsonschema.FormatChecker()), (version, what, instance)
                if what in ('non-canonical uuid key', 'unknown name'):
                    assert not by_document, (version, what, instance)
                if by_document:
                    assert by_view, (version, what, instance)
                elif by_view:
                    assert what in ('non-canonical uuid key', 'unknown name', 'custom name'), (
                        version, what, instance)
                checked += 1
    assert checked > 5


@pytest.mark.parametrize('version', ['1.34', LATEST])
def test_allocation_requests_of_candidates_are_bodies_the_document_takes(api, version):
    # The documented workflow: an allocation request (with the unsuffixed
    # group's "" in its mappings) is the body of PUT /allocations/{consumer}.
    rp = api.create_provider(name='cn1')['uuid']
    api.set_inventory(rp, {'VCPU': {'total': 8}})
    candidates = api.get('/allocation_candidates?resources=VCPU:1', version=version).body
    request = candidates['allocation_requests'][0]
    assert request['mappings'] == {'': [rp]}
    body = allocation_body(vt(version), {})
    body.update(request)
    response = api.put(f'/allocations/{uuid.uuid4()}', body, version=version)
    assert response.status_code == 204, response.content
    document = document_at(version)
    for path, method, instance in (
            ('/allocations/{consumer_uuid}', 'put', body),
            ('/allocations', 'post', {str(uuid.uuid4()): body}),
            ('/reshaper', 'post', {'inventories': {rp: {'resource_provider_generation': 1,
                                                        'inventories': {}}},
                                   'allocations': {str(uuid.uuid4()): body}})):
        schema = document['paths'][path][method]['requestBody']['content']['application/json']
        assert_valid(document, schema['schema'], instance, (version, method, path))


def test_put_resource_class_reads_a_body_only_before_1_7():
    assert documented_body(document_at('1.6'), '/resource_classes/{name}', 'put') is not None
    assert documented_body(document_at('1.7'), '/resource_classes/{name}', 'put') is None
    assert documented_body(document_at(LATEST), '/resource_classes/{name}', 'put') is None


def test_openapi_schema_asks_for_canonical_uuid_keys_without_touching_the_original():
    original = copy.deepcopy(A.ALLOCATIONS_POST_1_38)
    translated = openapi_schema(A.ALLOCATIONS_POST_1_38)
    assert A.ALLOCATIONS_POST_1_38 == original
    assert list(translated['patternProperties']) == [UUID_KEY]
    consumer = translated['patternProperties'][UUID_KEY]
    assert list(consumer['properties']['allocations']['patternProperties']) == [UUID_KEY]
    # JSON Schema as it is otherwise: type lists and anyOf with null stay.
    assert consumer['properties']['consumer_generation'] == {'type': ['integer', 'null']}
    assert UUID_PATTERN not in json.dumps(translated)
    parent = openapi_schema(P.PROVIDER_POST_1_14)['properties']['parent_provider_uuid']
    assert parent == {'anyOf': [{'type': 'string', 'format': 'uuid'}, {'type': 'null'}]}
    # Canonical: the validation pattern takes 36 dashes, the document does not.
    assert re.search(UUID_PATTERN, '-' * 36) and not re.search(UUID_KEY, '-' * 36)
    assert re.search(UUID_KEY, str(uuid.uuid4()))
    assert not re.search(UUID_KEY, str(uuid.uuid4()).replace('-', ''))


# ---- closed answers, no leftovers, links --------------------------------------------------

def object_schemas(document, schema, seen=None):
    """Every subschema of `schema`, following references once."""
    seen = set() if seen is None else seen
    for where, node in walk(schema):
        if '$ref' in node:
            name = node['$ref'].split('/')[-1]
            if name not in seen:
                seen.add(name)
                yield from object_schemas(document, document['components']['schemas'][name],
                                          seen)
        elif where[-1:] not in (('properties',), ('patternProperties',), ('example',)):
            yield where, node


OBJECT_KEYWORDS = {'properties', 'patternProperties', 'additionalProperties', 'propertyNames'}


def open_objects(document, path, method):
    """Where the success answers of an operation allow properties they do not
    list. Closed: records with `additionalProperties: false`; maps with a
    schema for their values (`additionalProperties`) and, where they also
    list properties, for their keys (`propertyNames`)."""
    found = []
    for status, response in document['paths'][path][method]['responses'].items():
        if status >= '400' or 'content' not in response:
            continue
        schema = response['content']['application/json']['schema']
        for where, node in object_schemas(document, schema):
            if node.get('type') == 'object' or OBJECT_KEYWORDS & set(node):
                if 'additionalProperties' not in node:
                    found.append((status, where, 'open'))
                elif ('properties' in node and node['additionalProperties'] is not False
                      and 'propertyNames' not in node):
                    found.append((status, where, 'extra properties allowed'))
    return found


@pytest.mark.parametrize('version', VERSIONS)
def test_success_answers_are_closed_schemas(version):
    document = document_at(version)
    for path, method, _ in operations(document):
        if (path, method) != ('/', 'get'):   # see the test below
            assert open_objects(document, path, method) == [], (path, method)
    # The walk sees the objects: an open one is found.
    probe = copy.deepcopy(document)
    probe['components']['schemas']['Inventory'].pop('additionalProperties')
    assert open_objects(probe, RP + '/inventories/{resource_class}', 'get')


def test_the_version_document_is_closed():
    assert open_objects(document_at(LATEST), '/', 'get') == []


@pytest.mark.parametrize('version', VERSIONS)
def test_no_openapi_3_0_or_internal_keys_are_left(version):
    document = document_at(version)
    for where, node in walk(document):
        # (Headers are named x-..., as x-openstack-request-id.)
        leftovers = {key for key in node if key == 'nullable' or (
            key.startswith('x-') and where[-1:] != ('headers',))}
        assert not leftovers, (where, leftovers)


def test_nullable_values_are_json_schema_type_lists():
    provider = document_at(LATEST)['components']['schemas']['ResourceProvider']
    assert provider['properties']['parent_provider_uuid']['type'] == ['string', 'null']
    summary = document_at(LATEST)['components']['schemas']['ProviderSummary']
    assert summary['properties']['parent_provider_uuid']['type'] == ['string', 'null']
    # Fields of later microversions are absent from older documents.
    old = document_at('1.13')['components']['schemas']['ResourceProvider']
    assert {'parent_provider_uuid', 'root_provider_uuid'} & set(old['properties']) == set()
    assert 'parent_provider_uuid' not in old.get('required', [])


def link_problems(document):
    by_id = {operation['operationId']: operation for _, _, operation in operations(document)}
    problems, count = [], 0
    for path, method, operation in operations(document):
        for status, response in operation['responses'].items():
            for name, link in response.get('links', {}).items():
                count += 1
                target = by_id.get(link['operationId'])
                if target is None:
                    problems.append((path, method, status, name, 'no such operation'))
                    continue
                names = {p['name'] for p in target['parameters'] if p['in'] in ('path', 'query')}
                required = {p['name'] for p in target['parameters']
                            if p['in'] == 'path'}
                if not set(link['parameters']) <= names:
                    problems.append((path, method, status, name, 'unknown parameters'))
                if not required <= set(link['parameters']):
                    problems.append((path, method, status, name, 'path parameters left out'))
                for expression in link['parameters'].values():
                    if not re.fullmatch(r'\$(response\.body|request\.body|request\.path)'
                                        r'(#/[\w/]+|\.\w+)', expression):
                        problems.append((path, method, status, name, expression))
    return problems, count


@pytest.mark.parametrize('version', VERSIONS)
def test_links_name_operations_and_parameters_of_the_same_document(version):
    problems, count = link_problems(document_at(version))
    assert count
    assert problems == []


def test_links_connect_the_documented_operations():
    document = document_at(LATEST)

    def links(path, method, status):
        return document['paths'][path][method]['responses'][status].get('links', {})

    provider_targets = {'showResourceProvider', 'listInventories', 'createInventory',
                        'updateInventories', 'listProviderAggregates', 'listProviderTraits',
                        'listProviderUsages', 'listProviderAllocations'}
    for path, method in (('/resource_providers', 'post'), ('/resource_providers/{uuid}', 'get')):
        found = links(path, method, '200')
        assert provider_targets <= {link['operationId'] for link in found.values()}
        assert all(link['parameters'] == {'uuid': '$response.body#/uuid'}
                   for link in found.values())
    inventory = links('/resource_providers/{uuid}/inventories', 'post', '201')
    assert {link['operationId'] for link in inventory.values()} == {
        'showInventory', 'updateInventory', 'deleteInventory'}
    assert all(link['parameters'] == {'uuid': '$request.path.uuid',
                                      'resource_class': '$request.body#/resource_class'}
               for link in inventory.values())
    consumer = links('/allocations/{consumer_uuid}', 'put', '204')
    assert {'showConsumerAllocations', 'deleteConsumerAllocations'} <= {
        link['operationId'] for link in consumer.values()}
    created_class = links('/resource_classes', 'post', '201')
    assert 'showResourceClass' in {link['operationId'] for link in created_class.values()}
    for status in ('201', '204'):
        assert 'showTrait' in {link['operationId']
                               for link in links('/traits/{name}', 'put', status).values()}
    # Links lead only to operations of the same microversion.
    for version, present, absent in (
            ('1.0', {'listInventories'}, {'listProviderAggregates', 'listProviderTraits'}),
            ('1.1', {'listProviderAggregates'}, {'listProviderTraits'}),
            ('1.6', {'listProviderAggregates', 'listProviderTraits'}, set())):
        found = {link['operationId'] for link in document_at(version)['paths'][RP]['get'][
            'responses']['200']['links'].values()}
        assert present <= found and not absent & found, version
    # At 1.19 POST /resource_providers has no body to link from.
    assert 'links' not in document_at('1.19')['paths']['/resource_providers']['post'][
        'responses']['201']


# ---- the answers conform to the documents ------------------------------------------------

def validator_for(document, schema):
    """A Draft 2020-12 validator for `schema`, its references resolved in the
    document's components."""
    resource = referencing.Resource.from_contents(
        {'$schema': 'https://json-schema.org/draft/2020-12/schema',
         'components': document['components']},
        default_specification=referencing.jsonschema.DRAFT202012)
    registry = referencing.Registry().with_resource('urn:placement-openapi', resource)
    schema = json.loads(json.dumps(schema).replace('"#/components/',
                                                   '"urn:placement-openapi#/components/'))
    return jsonschema.Draft202012Validator(schema, registry=registry,
                                           format_checker=jsonschema.FormatChecker())


def assert_valid(document, schema, instance, what):
    errors = sorted(validator_for(document, schema).iter_errors(instance), key=str)
    assert not errors, (what, [f'{list(e.absolute_path)}: {e.message}' for e in errors])


def assert_conforms(document, path, method, response):
    """The real answer is one the document gives: status, body and headers."""
    version = document['info']['version']
    operation = document['paths'][path][method]
    status = str(response.status_code)
    what = (version, method, path, status)
    # A streamed answer (GET /capacity?format=csv) is read whole here.
    body = b''.join(response.streaming_content) if response.streaming else response.content
    assert status in operation['responses'], (what, body)
    answer = operation['responses'][status]
    if 'content' not in answer:
        assert not body, (what, body)
    elif response['Content-Type'] == 'text/csv; charset=utf-8':
        # An alternative answer (GET /capacity?format=csv): documented, text.
        assert 'text/csv' in answer['content'], what
        assert_valid(document, answer['content']['text/csv']['schema'], body.decode(), what)
    else:
        assert response['Content-Type'] == 'application/json', what
        assert_valid(document, answer['content']['application/json']['schema'],
                     json.loads(body), what)
    headers = answer.get('headers', {})
    for name in ('Location', 'Last-Modified', 'Cache-Control'):
        assert (name in headers) is response.has_header(name), (what, name)
    for name in ('x-openstack-request-id', 'OpenStack-API-Version'):
        if name in headers:
            assert response.has_header(name), (what, name)


class Exercise:
    """Requests at one microversion, each answer checked against that
    microversion's document, each body sent against its request schema."""

    def __init__(self, api, version):
        self.api = api
        self.version = version
        self.document = document_at(version)
        self.done = set()

    def has(self, path, method):
        return method in self.document['paths'].get(path, {})

    def since(self, version):
        return vt(self.version) >= vt(version)

    def __call__(self, method, path, url, status, body=None, **kwargs):
        assert self.has(path, method), (self.version, method, path)
        operation = self.document['paths'][path][method]
        if body is not None and kwargs.get('content_type', 'application/json') == (
                'application/json'):
            request_body = operation['requestBody']['content']['application/json']['schema']
            assert_valid(self.document, request_body, body, ('request', method, path))
        response = self.api.request(method.upper(), url, body, version=self.version, **kwargs)
        assert response.status_code == status, (self.version, method, url, response.content)
        assert_conforms(self.document, path, method, response)
        self.done.add((path, method))
        return response


def allocation_body(version, allocations, generation=None):
    """PUT /allocations/{consumer_uuid}'s body at `version`: {rp: {class: amount}}."""
    if version < (1, 12):
        body = {'allocations': [{'resource_provider': {'uuid': rp}, 'resources': resources}
                                for rp, resources in allocations.items()]}
    else:
        body = {'allocations': {rp: {'resources': resources}
                                for rp, resources in allocations.items()}}
    if version >= (1, 8):
        body.update(project_id='proj', user_id='user')
    if version >= (1, 28):
        body['consumer_generation'] = generation
    if version >= (1, 38):
        body['consumer_type'] = 'INSTANCE'
    return body


def exercise_every_operation(api, version):
    """Every operation of the microversion's document, with its successes and
    some errors, against a small cloud; returns the operations exercised."""
    run = Exercise(api, version)
    v = vt(version)
    parent = api.create_provider(name='cn1')['uuid']
    child = api.create_provider(name='cn1-numa0', parent=parent)['uuid']
    api.set_inventory(parent, {'DISK_GB': {'total': 100}})
    api.set_inventory(child, {'VCPU': {'total': 8, 'allocation_ratio': 4.0},
                              'MEMORY_MB': {'total': 4096}})
    api.set_traits(child, ['HW_CPU_X86_AVX2'])
    aggregate = str(uuid.uuid4())
    api.set_aggregates(parent, [aggregate])
    consumer = str(uuid.uuid4())
    assert api.allocate(consumer, {child: {'VCPU': 2}, parent: {'DISK_GB': 10}}).status_code == 204
    missing = str(uuid.uuid4())

    # ---- reads
    run('get', '/', '/', 200, token=False)
    run('get', '/resource_providers', '/resource_providers', 200)
    run('get', '/resource_providers', '/resource_providers?name=cn1', 200)
    run('get', '/resource_providers', '/resource_providers?bogus=1', 400)
    run('get', '/resource_providers', '/resource_providers', 401, token=False)
    if run.since('1.3'):
        run('get', '/resource_providers', f'/resource_providers?member_of={aggregate}', 200)
    if run.since('1.4'):
        run('get', '/resource_providers', '/resource_providers?resources=VCPU:1', 200)
    if run.since('1.14'):
        run('get', '/resource_providers', f'/resource_providers?in_tree={parent}', 200)
    if run.since('1.18'):
        run('get', '/resource_providers', '/resource_providers?required=HW_CPU_X86_AVX2', 200)
    run('get', RP, f'/resource_providers/{child}', 200)
    run('get', RP, f'/resource_providers/{missing}', 404)
    run('get', RP + '/inventories', f'/resource_providers/{child}/inventories', 200)
    run('get', RP + '/inventories', f'/resource_providers/{missing}/inventories', 404)
    run('get', RP + '/inventories/{resource_class}',
        f'/resource_providers/{child}/inventories/VCPU', 200)
    run('get', RP + '/inventories/{resource_class}',
        f'/resource_providers/{child}/inventories/PCI_DEVICE', 404)
    run('get', RP + '/usages', f'/resource_providers/{child}/usages', 200)
    run('get', RP + '/allocations', f'/resource_providers/{child}/allocations', 200)
    run('get', RP + '/allocations', f'/resource_providers/{missing}/allocations', 404)
    if run.since('1.1'):
        run('get', RP + '/aggregates', f'/resource_providers/{parent}/aggregates', 200)
    if run.since('1.6'):
        run('get', RP + '/traits', f'/resource_providers/{child}/traits', 200)
    if run.since('1.2'):
        run('get', '/resource_classes', '/resource_classes', 200)
        run('get', '/resource_classes/{name}', '/resource_classes/VCPU', 200)
        run('get', '/resource_classes/{name}', '/resource_classes/CUSTOM_NOPE', 404)
    if run.since('1.6'):
        run('get', '/traits', '/traits?associated=true', 200)
        run('get', '/traits', '/traits?name=startswith:HW_', 200)
        run('get', '/traits/{name}', '/traits/HW_CPU_X86_AVX2', 204)
        run('get', '/traits/{name}', '/traits/CUSTOM_NOPE', 404)
    run('get', '/allocations/{consumer_uuid}', f'/allocations/{consumer}', 200)
    run('get', '/allocations/{consumer_uuid}', f'/allocations/{missing}', 200)
    if run.since('1.10'):
        candidates = run('get', '/allocation_candidates', '/allocation_candidates?resources=VCPU:1',
                         200)
        assert candidates.body['allocation_requests']
        if run.since('1.17'):
            run('get', '/allocation_candidates',
                '/allocation_candidates?resources=VCPU:1&required=HW_CPU_X86_AVX2', 200)
        if run.since('1.25'):
            run('get', '/allocation_candidates', '/allocation_candidates?resources=DISK_GB:5'
                '&resources1=VCPU:1&resources2=MEMORY_MB:128&group_policy=none', 200)
        run('get', '/allocation_candidates', '/allocation_candidates?resources=VCPU:0', 400)
        run('get', '/explain/allocation_candidates',
            '/explain/allocation_candidates?resources=VCPU:99', 200)
        run('get', '/explain/allocation_candidates',
            '/explain/allocation_candidates?resources=VCPU:1,DISK_GB:5', 200)
    run('get', '/events', '/events?type=resource_provider.create&limit=1', 200)
    run('get', '/events', '/events?type=resource_provider.created', 400)
    trends.snapshot_take()
    trends.snapshot_take()
    run('get', '/capacity/trends', '/capacity/trends', 200)
    run('get', '/capacity/trends',
        f'/capacity/trends?aggregate={aggregate}&resource_class=VCPU,DISK_GB&days=30', 200)
    run('get', '/capacity/trends', f'/capacity/trends?aggregate={missing}', 404)
    run('get', '/capacity/trends', '/capacity/trends?days=0', 400)
    # ---- pool labels (ours: the same at every microversion)
    run('get', '/pool_labels/{uuid}', f'/pool_labels/{aggregate}', 200)
    run('get', '/pool_labels/{uuid}', f'/pool_labels/{missing}', 404)
    run('put', '/pool_labels/{uuid}', f'/pool_labels/{aggregate}', 200, {'label': 'Gold'})
    run('put', '/pool_labels/{uuid}', f'/pool_labels/{missing}', 404, {'label': 'Gold'})
    run('delete', '/pool_labels/{uuid}', f'/pool_labels/{aggregate}', 204)
    run('delete', '/pool_labels/{uuid}', f'/pool_labels/{missing}', 404)
    # ---- capacity (ours: the same at every microversion)
    run('get', '/capacity', '/capacity', 200)
    run('get', '/capacity', '/capacity?group_by=aggregate&resources=VCPU:1,DISK_GB:5', 200)
    run('get', '/capacity', '/capacity?group_by=root&resource_class=VCPU&format=csv', 200)
    run('get', '/capacity', '/capacity?group_by=trait&resources=CUSTOM_NOPE:1', 400)
    run('get', '/capacity', '/capacity?view=stranded&group_by=aggregate', 200)
    run('get', '/capacity', '/capacity?view=stranded&resource_class=VCPU&format=csv', 200)
    run('get', '/capacity', '/capacity?view=stranded&resources=VCPU:1', 400)
    run('post', '/capacity/what-if', '/capacity/what-if', 200, {
        'add_hosts': [{'count': 2, 'inventories': {'VCPU': {'total': 8}},
                       'aggregates': [aggregate]}],
        'remove_hosts': {'names': ['*1']},
        'set_inventories': [{'resource_class': 'VCPU', 'allocation_ratio': 2.0}]})
    run('post', '/capacity/what-if', '/capacity/what-if', 200, {'resources': 'VCPU:1'})
    run('post', '/capacity/what-if', '/capacity/what-if', 400,
        {'remove_hosts': {'hosts': ['nope']}})

    # ---- pods and pod bindings (ours: the same at every microversion)
    pod = run('post', '/pods', '/pods', 201, {'name': 'Pod1', 'aggregate': aggregate,
                                              'thresholds': {'VCPU': 80}}).body
    run('post', '/pods', '/pods', 409, {'name': 'Pod1'})
    run('post', '/pods', '/pods', 415, raw='{"name": "x"}', content_type='text/plain')
    run('get', '/pods', '/pods', 200)
    run('get', '/pods', '/pods?state=maintenance&affinity=', 200)
    run('get', '/pods', '/pods?state=retired', 400)
    run('get', '/pods/{uuid}', f'/pods/{pod["uuid"]}', 200)
    run('get', '/pods/{uuid}', f'/pods/{missing}', 404)
    run('put', '/pods/{uuid}', f'/pods/{pod["uuid"]}', 200, {'availability_zone': 'az1'})
    run('put', '/pods/{uuid}', f'/pods/{missing}', 404, {'name': 'x'})
    cad = run('post', '/pods', '/pods', 201, {'name': 'Pod2',
                                              'affinity_tags': {'resource': 'CAD'}}).body
    run('put', '/pods/{uuid}', f'/pods/{cad["uuid"]}', 409, {'name': 'Pod1'})
    bound = run('post', '/pod_bindings', '/pod_bindings', 201, {'project_id': 'proj'}).body
    run('post', '/pod_bindings', '/pod_bindings', 200, {'project_id': 'proj', 'affinity': None,
                                                        'resources': {'VCPU': 1}})
    run('post', '/pod_bindings', '/pod_bindings', 409, {'project_id': 'proj',
                                                        'affinity': 'resource=GPU'})
    run('post', '/pod_bindings', '/pod_bindings', 201, {'project_id': 'proj',
                                                        'affinity': 'resource=CAD',
                                                        'pod': cad['uuid']})
    run('get', '/pod_bindings', '/pod_bindings?project_id=proj&limit=1', 200)
    run('get', '/pod_bindings', '/pod_bindings?open=maybe', 400)
    run('get', '/pod_bindings/{uuid}', f'/pod_bindings/{bound["uuid"]}', 200)
    run('get', '/pod_bindings/{uuid}', f'/pod_bindings/{missing}', 404)
    run('delete', '/pods/{uuid}', f'/pods/{pod["uuid"]}', 409)
    run('delete', '/pod_bindings/{uuid}', f'/pod_bindings/{bound["uuid"]}', 204)
    run('delete', '/pod_bindings/{uuid}', f'/pod_bindings/{bound["uuid"]}', 409)
    run('delete', '/pod_bindings/{uuid}', f'/pod_bindings/{missing}', 404)
    spare = run('post', '/pods', '/pods', 201, {'name': 'Pod3'}).body
    run('delete', '/pods/{uuid}', f'/pods/{spare["uuid"]}', 204)
    run('delete', '/pods/{uuid}', f'/pods/{spare["uuid"]}', 404)
    if run.since('1.9'):
        run('get', '/usages', '/usages?project_id=proj', 200)
        run('get', '/usages', '/usages', 400)
        if run.since('1.38'):
            run('get', '/usages', '/usages?project_id=proj&consumer_type=all', 200)

    # ---- writes
    run('post', '/resource_providers', '/resource_providers', 409, {'name': 'cn1'})
    run('post', '/resource_providers', '/resource_providers', 415, raw='{"name": "x"}',
        content_type='text/plain')
    created = run('post', '/resource_providers', '/resource_providers',
                  200 if run.since('1.20') else 201, {'name': 'cn2'})
    new = created['Location'].rstrip('/').split('/')[-1]
    if run.since('1.20'):
        assert created.body['uuid'] == new
    renamed = run('put', RP, f'/resource_providers/{new}', 200, {'name': 'cn2-renamed'})
    generation = renamed.body['generation']
    inventory = run('post', RP + '/inventories', f'/resource_providers/{new}/inventories', 201,
                    {'resource_class': 'VCPU', 'total': 16})
    generation = inventory.body['resource_provider_generation']
    run('post', RP + '/inventories', f'/resource_providers/{new}/inventories', 409,
        {'resource_class': 'VCPU', 'total': 16})
    inventory = run('put', RP + '/inventories/{resource_class}',
                    f'/resource_providers/{new}/inventories/VCPU', 200,
                    {'resource_provider_generation': generation, 'total': 32})
    generation = inventory.body['resource_provider_generation']
    run('put', RP + '/inventories/{resource_class}',
        f'/resource_providers/{new}/inventories/VCPU', 409,
        {'resource_provider_generation': generation - 1, 'total': 32})
    inventories = run('put', RP + '/inventories', f'/resource_providers/{new}/inventories', 200,
                      {'resource_provider_generation': generation,
                       'inventories': {'VCPU': {'total': 32}, 'DISK_GB': {'total': 10}}})
    generation = inventories.body['resource_provider_generation']
    if run.since('1.1'):
        body = ({'aggregates': [aggregate], 'resource_provider_generation': generation}
                if run.since('1.19') else [aggregate])
        aggregates = run('put', RP + '/aggregates', f'/resource_providers/{new}/aggregates',
                         200, body)
        if run.since('1.19'):
            generation = aggregates.body['resource_provider_generation']
            run('put', RP + '/aggregates', f'/resource_providers/{new}/aggregates', 409,
                {'aggregates': [], 'resource_provider_generation': generation - 1})
    if run.since('1.6'):
        traits = run('put', RP + '/traits', f'/resource_providers/{new}/traits', 200,
                     {'traits': ['HW_CPU_X86_AVX2'], 'resource_provider_generation': generation})
        generation = traits.body['resource_provider_generation']
    mine = str(uuid.uuid4())
    run('put', '/allocations/{consumer_uuid}', f'/allocations/{mine}', 204,
        allocation_body(v, {new: {'VCPU': 1}, parent: {'DISK_GB': 1}}))
    run('put', '/allocations/{consumer_uuid}', f'/allocations/{mine}', 409,
        allocation_body(v, {new: {'VCPU': 1000}}, generation=1))
    run('get', '/allocations/{consumer_uuid}', f'/allocations/{mine}', 200)
    run('get', RP + '/allocations', f'/resource_providers/{new}/allocations', 200)
    run('get', RP + '/usages', f'/resource_providers/{new}/usages', 200)
    if run.since('1.9'):
        run('get', '/usages', '/usages?project_id=proj&user_id=user', 200)
    if run.since('1.13'):
        theirs = str(uuid.uuid4())
        body = allocation_body(v, {new: {'VCPU': 1}})
        run('post', '/allocations', '/allocations', 204, {theirs: body})
        run('get', '/allocations/{consumer_uuid}', f'/allocations/{theirs}', 200)
        run('delete', '/allocations/{consumer_uuid}', f'/allocations/{theirs}', 204)
    if run.since('1.30'):
        generation = api.get(f'/resource_providers/{new}').body['generation']
        reshape = {'inventories': {new: {'resource_provider_generation': generation,
                                         'inventories': {'VCPU': {'total': 64},
                                                         'DISK_GB': {'total': 10}}}},
                   'allocations': {}}
        # The admin token lacks the service role the policy asks for.
        run('post', '/reshaper', '/reshaper', 403, reshape)
        run('post', '/reshaper', '/reshaper', 204, reshape, headers={'X-Roles': 'service'})
        run('post', '/reshaper', '/reshaper', 409, reshape, headers={'X-Roles': 'service'})
    if run.since('1.5'):
        run('delete', RP + '/inventories', f'/resource_providers/{new}/inventories', 409)
    run('delete', RP + '/inventories/{resource_class}',
        f'/resource_providers/{new}/inventories/VCPU', 409)
    run('delete', '/allocations/{consumer_uuid}', f'/allocations/{mine}', 204)
    run('delete', '/allocations/{consumer_uuid}', f'/allocations/{mine}', 404)
    run('delete', RP + '/inventories/{resource_class}',
        f'/resource_providers/{new}/inventories/DISK_GB', 204)
    if run.since('1.5'):
        run('delete', RP + '/inventories', f'/resource_providers/{new}/inventories', 204)
    if run.since('1.6'):
        run('delete', RP + '/traits', f'/resource_providers/{new}/traits', 204)
        run('delete', RP + '/traits', f'/resource_providers/{missing}/traits', 404)
    run('delete', RP, f'/resource_providers/{parent}', 409)
    run('delete', RP, f'/resource_providers/{new}', 204)
    run('delete', RP, f'/resource_providers/{new}', 404)

    if run.since('1.2'):
        run('post', '/resource_classes', '/resource_classes', 201, {'name': 'CUSTOM_GOLD'})
        run('post', '/resource_classes', '/resource_classes', 409, {'name': 'CUSTOM_GOLD'})
        if run.since('1.7'):
            run('put', '/resource_classes/{name}', '/resource_classes/CUSTOM_SILVER', 201)
            run('put', '/resource_classes/{name}', '/resource_classes/CUSTOM_SILVER', 204)
        else:
            renamed = run('put', '/resource_classes/{name}', '/resource_classes/CUSTOM_GOLD', 200,
                          {'name': 'CUSTOM_SILVER'})
            assert renamed.body['name'] == 'CUSTOM_SILVER'
            run('put', '/resource_classes/{name}', '/resource_classes/CUSTOM_GOLD', 404,
                {'name': 'CUSTOM_BRONZE'})
        run('delete', '/resource_classes/{name}', '/resource_classes/CUSTOM_SILVER', 204)
        run('delete', '/resource_classes/{name}', '/resource_classes/CUSTOM_SILVER', 404)
    if run.since('1.6'):
        run('put', '/traits/{name}', '/traits/CUSTOM_FAST', 201)
        run('put', '/traits/{name}', '/traits/CUSTOM_FAST', 204)
        run('put', '/traits/{name}', '/traits/HW_NOT_CUSTOM', 400)
        run('delete', '/traits/{name}', '/traits/CUSTOM_FAST', 204)
        run('delete', '/traits/{name}', '/traits/CUSTOM_FAST', 404)
    return run


# Every microversion where an answer, a body or a parameter changed, and
# the ends of the range.
EXERCISED = ['1.0', '1.1', '1.2', '1.4', '1.5', '1.6', '1.7', '1.8', '1.9', '1.10', '1.11',
             '1.12', '1.13', '1.14', '1.15', '1.17', '1.18', '1.19', '1.20', '1.22', '1.23',
             '1.24', '1.25', '1.27', '1.28', '1.29', '1.30', '1.31', '1.33', '1.34', '1.36',
             '1.37', '1.38', '1.39']


@pytest.mark.parametrize('version', EXERCISED)
def test_answers_at_each_microversion_match_its_document(api, version):
    run = exercise_every_operation(api, version)
    # Every operation the document has was exercised, and only those.
    assert run.done == operations_at(version)


def test_answers_of_one_microversion_do_not_fit_the_documents_of_others(api):
    # The checks above can fail: answers of a microversion are held to its
    # own document, not to a looser one.
    child = api.create_provider(name='cn1')['uuid']
    api.set_inventory(child, {'VCPU': {'total': 8}})
    consumer = str(uuid.uuid4())
    assert api.allocate(consumer, {child: {'VCPU': 2}}).status_code == 204
    created_1_20 = api.post('/resource_providers', {'name': 'cn2'}, version='1.20')
    with pytest.raises(AssertionError):   # 200 is not an answer of 1.19
        assert_conforms(document_at('1.19'), '/resource_providers', 'post', created_1_20)
    created_1_19 = api.post('/resource_providers', {'name': 'cn3'}, version='1.19')
    with pytest.raises(AssertionError):   # nor 201 of 1.20
        assert_conforms(document_at('1.20'), '/resource_providers', 'post', created_1_19)


# A microversion that changed an answer, and the one before it: each side's
# answer fits its own document and not the other side's (one way where the
# change only adds an optional field).
CHANGED_ANSWERS = [
    ('/allocations/{consumer}', '/allocations/{consumer_uuid}', '1.11', '1.12', False),
    ('/allocations/{consumer}', '/allocations/{consumer_uuid}', '1.27', '1.28', False),
    ('/allocations/{consumer}', '/allocations/{consumer_uuid}', '1.37', '1.38', False),
    ('/resource_providers/{child}', RP, '1.13', '1.14', True),
    ('/resource_providers?name=cn1', '/resource_providers', '1.13', '1.14', True),
    ('/resource_providers/{child}/aggregates', RP + '/aggregates', '1.18', '1.19', True),
    ('/resource_providers/{child}/allocations', RP + '/allocations', '1.27', '1.28', True),
    ('/usages?project_id=proj', '/usages', '1.37', '1.38', True),
    ('/allocation_candidates?resources=VCPU:1', '/allocation_candidates', '1.11', '1.12', True),
    ('/allocation_candidates?resources=VCPU:1', '/allocation_candidates', '1.16', '1.17', True),
    ('/allocation_candidates?resources=VCPU:1', '/allocation_candidates', '1.28', '1.29', True),
    ('/allocation_candidates?resources=VCPU:1', '/allocation_candidates', '1.33', '1.34', True),
]


@pytest.mark.parametrize('url, path, older, newer, both_ways', CHANGED_ANSWERS)
def test_answers_fit_only_the_document_of_their_microversion(api, url, path, older, newer,
                                                             both_ways):
    child = api.create_provider(name='cn1')['uuid']
    api.set_inventory(child, {'VCPU': {'total': 8}})
    consumer = str(uuid.uuid4())
    assert api.allocate(consumer, {child: {'VCPU': 2}}).status_code == 204
    url = url.format(child=child, consumer=consumer)
    pairs = [(newer, older)] + ([(older, newer)] if both_ways else [])
    for served, other in pairs:
        response = api.get(url, version=served)
        assert_conforms(document_at(served), path, 'get', response)
        with pytest.raises(AssertionError):
            assert_conforms(document_at(other), path, 'get', response)


def test_list_shaped_allocation_requests_before_1_12(api):
    rp = api.create_provider(name='cn1')['uuid']
    api.set_inventory(rp, {'VCPU': {'total': 8}})
    document = document_at('1.10')
    schema = document['components']['schemas']['AllocationRequest']
    assert schema['properties']['allocations']['type'] == 'array'
    response = api.get('/allocation_candidates?resources=VCPU:1', version='1.10')
    assert response.body['allocation_requests'] == [
        {'allocations': [{'resource_provider': {'uuid': rp}, 'resources': {'VCPU': 1}}]}]
    assert_conforms(document, '/allocation_candidates', 'get', response)


def test_errors_conform_with_and_without_codes(api):
    for version in ('1.0', '1.22', '1.23', LATEST):
        response = api.get(f'/resource_providers/{uuid.uuid4()}', version=version)
        assert response.status_code == 404
        assert ('code' in response.body['errors'][0]) is (vt(version) >= (1, 23))
        assert_conforms(document_at(version), RP, 'get', response)


@pytest.mark.parametrize('path, version, parameter, query', [
    ('/resource_providers', '1.3', 'member_of', 'member_of=AGG'),
    ('/resource_providers', '1.4', 'resources', 'resources=VCPU:1'),
    ('/resource_providers', '1.14', 'in_tree', 'in_tree=RP'),
    ('/resource_providers', '1.18', 'required', 'required=HW_CPU_X86_AVX2'),
    ('/allocation_candidates', '1.16', 'limit', 'resources=VCPU:1&limit=1'),
    ('/allocation_candidates', '1.17', 'required', 'resources=VCPU:1&required=HW_CPU_X86_AVX2'),
    ('/allocation_candidates', '1.21', 'member_of', 'resources=VCPU:1&member_of=AGG'),
    ('/allocation_candidates', '1.25', 'groups', 'resources=DISK_GB:1&resources1=VCPU:1'),
    ('/allocation_candidates', '1.25', 'group_policy', 'resources=VCPU:1&group_policy=none'),
    ('/allocation_candidates', '1.31', 'in_tree', 'resources=VCPU:1&in_tree=RP'),
    ('/allocation_candidates', '1.35', 'root_required',
     'resources=VCPU:1&root_required=HW_CPU_X86_AVX2'),
    ('/allocation_candidates', '1.36', 'same_subtree',
     'resources=DISK_GB:1&resources1=VCPU:1&same_subtree=1'),
    ('/explain/allocation_candidates', '1.16', 'limit', 'resources=VCPU:1&limit=1'),
    ('/explain/allocation_candidates', '1.35', 'root_required',
     'resources=VCPU:1&root_required=HW_CPU_X86_AVX2'),
    ('/usages', '1.38', 'consumer_type', 'project_id=proj&consumer_type=INSTANCE'),
])
def test_query_parameters_are_accepted_from_their_documented_microversion(
        api, path, version, parameter, query):
    """The document's first microversion of a query parameter is the API's:
    refused (400) one microversion earlier, accepted from it."""
    rp = api.create_provider(name='cn1')['uuid']
    api.set_inventory(rp, {'VCPU': {'total': 8}, 'DISK_GB': {'total': 10}})
    api.set_traits(rp, ['HW_CPU_X86_AVX2'])
    aggregate = str(uuid.uuid4())
    api.set_aggregates(rp, [aggregate])
    url = f"{path}?{query.replace('AGG', aggregate).replace('RP', rp)}"
    previous = VERSIONS[VERSIONS.index(version) - 1]

    def documented(at):
        return {p['name'] for p in document_at(at)['paths'][path]['get']['parameters']
                if p['in'] == 'query'}

    assert parameter not in documented(previous)
    assert parameter in documented(version)
    too_early = api.get(url, version=previous)
    assert too_early.status_code == 400, too_early.content
    assert_conforms(document_at(previous), path, 'get', too_early)
    accepted = api.get(url, version=version)
    assert accepted.status_code == 200, accepted.content
    assert_conforms(document_at(version), path, 'get', accepted)


# ---- served documents -----------------------------------------------------------------------

def test_the_schema_is_served_as_openapi_3_1_of_the_latest_microversion(client, db):
    response = client.get('/api/schema/')
    assert response.status_code == 200
    assert response['Content-Type'] == 'application/vnd.oai.openapi; charset=utf-8'
    served = yaml.safe_load(response.content)
    assert served['openapi'] == '3.1.0'
    assert served['info']['version'] == LATEST
    assert {(p, m) for p, m, _ in operations(served)} == set(OPERATIONS)
    as_json = client.get('/api/schema/?format=json')
    assert as_json.status_code == 200
    assert as_json['Content-Type'] == 'application/vnd.oai.openapi+json'
    assert json.loads(as_json.content) == served
    latest = client.get('/api/schema/?version=latest&format=json')
    assert json.loads(latest.content) == served


@pytest.mark.parametrize('version', ['1.0', '1.7', '1.20', '1.30', LATEST])
def test_the_document_of_a_microversion_is_served(client, db, version):
    response = client.get(f'/api/schema/?version={version}&format=json')
    assert response.status_code == 200
    served = json.loads(response.content)
    assert served['info']['version'] == version
    assert {(p, m) for p, m, _ in operations(served)} == operations_at(version)
    assert served == document_at(version)
    as_yaml = client.get(f'/api/schema/?version={version}')
    assert yaml.safe_load(as_yaml.content) == served


@pytest.mark.parametrize('version', ['1.40', '2.0', '0.9', 'abc', '1', '', '1.2.3'])
def test_an_unknown_microversion_has_no_document(client, db, version):
    response = client.get(f'/api/schema/?version={urllib.parse.quote(version)}&format=json')
    assert response.status_code == 400, (version, response.content)


def test_swagger_ui_is_served_with_assets_from_the_service(client, db):
    response = client.get('/api/docs/')
    assert response.status_code == 200
    assert response['Content-Type'] == 'text/html; charset=utf-8'
    page = response.content.decode()
    assets = re.findall(r'<script[^>]*\ssrc="([^"]+)"', page)
    assets += re.findall(r'<link[^>]*\shref="([^"]+)"', page)
    sidecar = '/static/drf_spectacular_sidecar/swagger-ui-dist/'
    start_up = '/api/docs/?script='   # the page's own start-up script, not inline
    assert assets == [sidecar + 'swagger-ui-bundle.js', sidecar + 'swagger-ui-standalone-preset.js',
                      start_up, sidecar + 'favicon-32x32.png', sidecar + 'swagger-ui.css']
    assert not re.search(r'<script(?![^>]*\ssrc=)[^>]*>', page)   # no inline script
    assert not re.search(r'https?://', page)
    script = client.get(start_up)
    assert script.status_code == 200
    assert script['Content-Type'].startswith('application/javascript')
    assets.remove(start_up)
    for asset in assets:
        assert asset.startswith('/static/'), asset
        served = client.get(asset)
        assert served.status_code == 200, asset
        assert b''.join(served.streaming_content), asset
        served.close()


def test_conditional_headers_are_documented_where_they_are_honoured():
    document = document_at(LATEST)
    for path, method, operation in operations(document):
        headers = {p['name'] for p in operation.get('parameters', ()) if p['in'] == 'header'}
        methods = CONDITIONAL.get(path, ())
        if method not in methods:
            assert not headers & {'If-Match', 'If-None-Match'}, (path, method)
            continue
        wanted = {'If-None-Match'} if method == 'get' else {'If-Match', 'If-None-Match'}
        assert headers & {'If-Match', 'If-None-Match'} == wanted, (path, method)
        with_etag = {status for status, response in operation['responses'].items()
                     if 'ETag' in response.get('headers', {})}
        if method == 'get':
            assert with_etag == {'200', '304'}, path
        elif (path, method) in {('/resource_providers/{uuid}', 'delete'),
                                ('/allocations/{consumer_uuid}', 'delete')}:
            assert not with_etag, path   # the resource is gone
        else:
            assert with_etag == {s for s in operation['responses'] if s < '300'}, (path, method)
