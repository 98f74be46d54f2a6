"""The regular expressions the OpenAPI documents give Placement's structured
query parameters (resources, required, member_of, root_required): what they
take and refuse, and that the API answers every value they take with a 200
(save unknown resource classes and traits, and required and forbidden at
once, which no grammar can see)."""
import json
import re
import urllib.parse
import uuid

import pytest
from hypothesis import HealthCheck
from hypothesis import event
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from placement_site.openapi import MEMBER_OF_GRAMMAR
from placement_site.openapi import REQUIRED_GRAMMAR
from placement_site.openapi import RESOURCES_GRAMMAR
from placement_site.openapi import ROOT_REQUIRED_GRAMMAR
from placement_site.openapi import at_version

pytestmark = pytest.mark.any_database

LATEST = (1, 39)
AGG = 'b2f1c4d6-3a8e-4f7b-9c0d-1e2f3a4b5c6d'
AGG2 = '0A1FF86B-DA05-41FC-8EE0-EFA5ACF0A5CD'
KNOWN_TRAITS = ['HW_CPU_X86_AVX2', 'COMPUTE_NODE', 'HW_NUMA_ROOT', 'CUSTOM_FAST']
KNOWN_CUSTOM_CLASS = 'CUSTOM_GOLD'


def grammar(name, version=LATEST):
    node = {'resources': RESOURCES_GRAMMAR, 'required': REQUIRED_GRAMMAR,
            'member_of': MEMBER_OF_GRAMMAR, 'root_required': ROOT_REQUIRED_GRAMMAR}[name]
    return at_version(node, version)


def takes(name, version, value):
    """The grammar's verdict, as a JSON Schema `pattern` gives it (ECMA 262:
    `$` is the end of the string, not before a final newline)."""
    pattern = grammar(name, version)['pattern']
    assert pattern.startswith('^') and pattern.endswith('$'), pattern
    return re.fullmatch(pattern, value) is not None


def test_versioned_grammars_resolve_to_one_schema_per_microversion():
    assert grammar('required', (1, 17)) == grammar('required', (1, 21))
    assert grammar('required', (1, 21)) != grammar('required', (1, 22))
    assert grammar('required', (1, 38)) != grammar('required', (1, 39))
    assert grammar('member_of', (1, 31)) != grammar('member_of', (1, 32))
    for name in ('resources', 'required', 'member_of', 'root_required'):
        assert set(grammar(name)) >= {'type', 'pattern'} and grammar(name)['type'] == 'string'
        assert json.loads(json.dumps(grammar(name))) == grammar(name)   # no table left


@pytest.mark.parametrize('value, taken', [
    ('VCPU:2,MEMORY_MB:1024', True),
    ('CUSTOM_FOO:1', True),
    ('VCPU:1', True),
    ('DISK_GB:999999999', True),
    ('VCPU:1,CUSTOM_A_B:3,PCPU:4', True),
    ('VCPU:0', False),
    ('vcpu:1', False),
    ('VCPU', False),
    ('', False),
    ('VCPU:', False),
    (':1', False),
    ('VCPU:1,', False),
    (',VCPU:1', False),
    ('VCPU:-1', False),
    ('VCPU:01', False),
    ('VCPU:1.5', False),
    ('VCPU:1;MEMORY_MB:2', False),
    ('VCPU: 1', False),
    ('VCPU:1\n', False),
    ('FOO:1', False),          # neither standard nor custom
    ('CUSTOM_:1', False),
    ('custom_foo:1', False),
    ('VCPUS:1', False),
])
def test_resources_grammar(value, taken):
    assert takes('resources', LATEST, value) is taken


@pytest.mark.parametrize('version, value, taken', [
    ((1, 17), 'HW_CPU_X86_AVX2', True),
    ((1, 17), 'HW_CPU_X86_AVX2,COMPUTE_NODE', True),
    ((1, 17), '!HW_CPU_X86_AVX2', False),
    ((1, 21), 'HW_CPU_X86_AVX2,!COMPUTE_NODE', False),
    ((1, 22), '!HW_CPU_X86_AVX2', True),
    ((1, 22), 'HW_CPU_X86_AVX2,!COMPUTE_NODE', True),
    ((1, 22), 'in:HW_CPU_X86_AVX2,COMPUTE_NODE', False),
    ((1, 38), 'in:HW_CPU_X86_AVX2,COMPUTE_NODE', False),
    ((1, 39), 'in:HW_CPU_X86_AVX2,COMPUTE_NODE', True),
    ((1, 39), 'in:HW_CPU_X86_AVX2', True),
    ((1, 39), '!HW_CPU_X86_AVX2,COMPUTE_NODE', True),
    ((1, 39), 'in:!HW_CPU_X86_AVX2', False),
    ((1, 39), 'in:', False),
    ((1, 39), '!in:HW_CPU_X86_AVX2', False),
    ((1, 39), '!!HW_CPU_X86_AVX2', False),
    ((1, 39), '', False),
    ((1, 39), 'HW_CPU_X86_AVX2,', False),
    ((1, 39), 'HW_CPU_X86_AVX2,,COMPUTE_NODE', False),
    ((1, 39), 'hw_cpu_x86_avx2', False),
    ((1, 39), 'HW-CPU', False),
    ((1, 39), 'HW_CPU_X86_AVX2\n', False),
])
def test_required_grammar(version, value, taken):
    assert takes('required', version, value) is taken


@pytest.mark.parametrize('version, value, taken', [
    ((1, 3), AGG, True),
    ((1, 3), AGG2, True),
    ((1, 3), f'in:{AGG},{AGG2}', True),
    ((1, 3), f'in:{AGG}', True),
    ((1, 31), f'!{AGG}', False),
    ((1, 31), f'!in:{AGG},{AGG2}', False),
    ((1, 32), f'!{AGG}', True),
    ((1, 32), f'!in:{AGG},{AGG2}', True),
    ((1, 32), f'in:{AGG},{AGG2}', True),
    ((1, 32), f'{AGG},{AGG2}', False),   # several need in:
    ((1, 32), '!!' + AGG, False),
    ((1, 32), 'in:', False),
    ((1, 32), f'in:{AGG},', False),
    ((1, 32), AGG.replace('-', ''), False),
    ((1, 32), AGG[:-1], False),
    ((1, 32), AGG[:-1] + 'g', False),
    ((1, 32), '-' * 36, False),
    ((1, 32), f'{{{AGG}}}', False),
    ((1, 32), f'urn:uuid:{AGG}', False),
    ((1, 32), AGG + '\n', False),
    ((1, 32), '', False),
])
def test_member_of_grammar(version, value, taken):
    assert takes('member_of', version, value) is taken


@pytest.mark.parametrize('value, taken', [
    ('HW_CPU_X86_AVX2', True),
    ('!HW_CPU_X86_AVX2', True),
    ('COMPUTE_NODE,!CUSTOM_FAST', True),
    ('in:COMPUTE_NODE', False),
    ('', False),
    ('!', False),
    ('COMPUTE_NODE,', False),
    ('compute_node', False),
])
def test_root_required_grammar(value, taken):
    assert takes('root_required', LATEST, value) is taken


# ---- the grammars and the API agree --------------------------------------------------

@pytest.fixture
def cloud(api):
    """A provider with VCPU and CUSTOM_GOLD inventory, the known traits and
    aggregate AGG; every request below finds it or finds nothing (200)."""
    assert api.put(f'/resource_classes/{KNOWN_CUSTOM_CLASS}').status_code == 201
    assert api.put('/traits/CUSTOM_FAST').status_code == 201
    rp = api.create_provider(name='cn1')['uuid']
    api.set_inventory(rp, {'VCPU': {'total': 8}, KNOWN_CUSTOM_CLASS: {'total': 4}})
    api.set_traits(rp, KNOWN_TRAITS)
    api.set_aggregates(rp, [AGG])
    return api


def get(api, path, version, **parameters):
    """GET with the parameters given as lists of values (repeated)."""
    query = urllib.parse.urlencode(
        [(name, value) for name, values in parameters.items() for value in values])
    text = f'{version[0]}.{version[1]}'
    return api.get(f'{path}?{query}', version=text)


CANDIDATES = '/allocation_candidates'
PROVIDERS = '/resource_providers'


@pytest.mark.parametrize('path, version, name, value', [
    (PROVIDERS, (1, 4), 'resources', 'VCPU:1'),
    (PROVIDERS, (1, 4), 'resources', 'VCPU:0'),
    (PROVIDERS, (1, 4), 'resources', 'VCPU'),
    (PROVIDERS, (1, 4), 'resources', ''),
    (PROVIDERS, (1, 4), 'resources', 'VCPU:1,'),
    (PROVIDERS, (1, 4), 'resources', 'VCPU:-1'),
    (PROVIDERS, (1, 4), 'resources', 'VCPU:1.5'),
    (CANDIDATES, (1, 10), 'resources', 'VCPU:1,CUSTOM_GOLD:1'),
    (CANDIDATES, (1, 10), 'resources', 'VCPU:0'),
    (PROVIDERS, (1, 18), 'required', 'HW_CPU_X86_AVX2,COMPUTE_NODE'),
    (PROVIDERS, (1, 18), 'required', '!HW_CPU_X86_AVX2'),
    (PROVIDERS, (1, 21), 'required', 'COMPUTE_NODE,!HW_NUMA_ROOT'),
    (PROVIDERS, (1, 22), 'required', 'COMPUTE_NODE,!HW_NUMA_ROOT'),
    (PROVIDERS, (1, 38), 'required', 'in:COMPUTE_NODE,HW_NUMA_ROOT'),
    (PROVIDERS, (1, 39), 'required', 'in:COMPUTE_NODE,HW_NUMA_ROOT'),
    (PROVIDERS, (1, 39), 'required', 'in:!COMPUTE_NODE'),
    (PROVIDERS, (1, 39), 'required', 'COMPUTE_NODE,'),
    (CANDIDATES, (1, 21), 'required', 'COMPUTE_NODE,!HW_NUMA_ROOT'),
    (CANDIDATES, (1, 22), 'required', 'COMPUTE_NODE,!HW_NUMA_ROOT'),
    (PROVIDERS, (1, 3), 'member_of', AGG),
    (PROVIDERS, (1, 3), 'member_of', f'in:{AGG},{AGG2}'),
    (PROVIDERS, (1, 3), 'member_of', f'{AGG},{AGG2}'),
    (PROVIDERS, (1, 3), 'member_of', 'in:not-a-uuid'),
    (PROVIDERS, (1, 31), 'member_of', f'!{AGG}'),
    (PROVIDERS, (1, 32), 'member_of', f'!{AGG}'),
    (PROVIDERS, (1, 32), 'member_of', f'!in:{AGG},{AGG2}'),
    (CANDIDATES, (1, 31), 'member_of', f'!{AGG}'),
    (CANDIDATES, (1, 32), 'member_of', f'!in:{AGG},{AGG2}'),
    (CANDIDATES, (1, 35), 'root_required', 'COMPUTE_NODE,!HW_NUMA_ROOT'),
    (CANDIDATES, (1, 35), 'root_required', 'in:COMPUTE_NODE'),
    (CANDIDATES, (1, 35), 'root_required', '!'),
])
def test_the_grammar_and_the_api_give_the_same_verdict(cloud, path, version, name, value):
    """For these values (known names only) the API refuses exactly what the
    grammar refuses."""
    parameters = {name: [value]}
    if path == CANDIDATES and name != 'resources':
        parameters['resources'] = ['VCPU:1']
    response = get(cloud, path, version, **parameters)
    expected = 200 if takes(name, version, value) else 400
    assert response.status_code == expected, (value, response.content)


# ---- every value a grammar takes, generated -------------------------------------------

PROPERTY = settings(max_examples=50, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])


def values_of(name, version):
    return st.from_regex(grammar(name, version)['pattern'], fullmatch=True)


def known_names(data, value, pattern, known):
    """`value` with each name matching `pattern` replaced, or not, by a known
    name: values the grammar takes with a fair share of names that exist."""
    return re.sub(pattern, lambda match: data.draw(st.sampled_from([match.group(0), *known])),
                  value)


def unknown_traits(values):
    names = set()
    for value in values:
        names |= {name.lstrip('!') for name in value.removeprefix('in:').split(',')}
    return names - set(KNOWN_TRAITS)


def detail(response):
    return response.body['errors'][0]['detail']


@pytest.mark.parametrize('path, version', [(PROVIDERS, (1, 4)), (PROVIDERS, LATEST),
                                           (CANDIDATES, (1, 10)), (CANDIDATES, LATEST)])
@PROPERTY
@given(data=st.data())
def test_resources_the_grammar_takes_are_answered(cloud, path, version, data):
    value = data.draw(values_of('resources', version))
    value = known_names(data, value, r'CUSTOM_[A-Z0-9_]+(?=:)', [KNOWN_CUSTOM_CLASS])
    assert takes('resources', version, value)
    response = get(cloud, path, version, resources=[value])
    custom = set(re.findall(r'CUSTOM_[A-Z0-9_]+(?=:)', value)) - {KNOWN_CUSTOM_CLASS}
    event(f'{response.status_code}')
    if custom:   # an unknown resource class
        assert response.status_code == 400, (value, response.content)
        assert 'No such resource class' in detail(response), value
    else:
        assert response.status_code == 200, (value, response.content)


@pytest.mark.parametrize('path, version, repeat', [
    (PROVIDERS, (1, 3), 1), (PROVIDERS, (1, 24), 3), (PROVIDERS, (1, 31), 3),
    (PROVIDERS, (1, 32), 3), (PROVIDERS, LATEST, 3),
    (CANDIDATES, (1, 21), 1), (CANDIDATES, (1, 24), 3), (CANDIDATES, LATEST, 3)])
@PROPERTY
@given(data=st.data())
def test_member_of_values_the_grammar_takes_are_answered(cloud, path, version, repeat, data):
    # Repeatable (an array in the document) from 1.24.
    values = data.draw(st.lists(values_of('member_of', version), min_size=1, max_size=repeat))
    values = [known_names(data, value, r'[0-9a-fA-F-]{36}', [AGG]) for value in values]
    assert all(takes('member_of', version, value) for value in values)
    parameters = {'member_of': values}
    if path == CANDIDATES:
        parameters['resources'] = ['VCPU:1']
    response = get(cloud, path, version, **parameters)
    assert response.status_code == 200, (values, response.content)
    found = response.body.get('resource_providers', response.body.get('allocation_requests'))
    event(f'found {len(found)}')


@pytest.mark.parametrize('path, version, repeat', [
    (PROVIDERS, (1, 18), 1), (PROVIDERS, (1, 22), 1), (PROVIDERS, LATEST, 3),
    (CANDIDATES, (1, 17), 1), (CANDIDATES, (1, 22), 1), (CANDIDATES, LATEST, 3)])
@PROPERTY
@given(data=st.data())
def test_required_values_the_grammar_takes_are_answered(cloud, path, version, repeat, data):
    # Repeatable (an array in the document) from 1.39.
    values = data.draw(st.lists(values_of('required', version), min_size=1, max_size=repeat))
    values = [known_names(data, value, r'[A-Z0-9_]+', KNOWN_TRAITS) for value in values]
    assert all(takes('required', version, value) for value in values)
    parameters = {'required': values}
    if path == CANDIDATES:
        parameters['resources'] = ['VCPU:1']
    response = get(cloud, path, version, **parameters)
    conflict = path == CANDIDATES and required_and_forbidden(values)
    unknown = unknown_traits(values)
    event(f'{response.status_code} conflict={bool(conflict)} unknown={bool(unknown)}')
    if conflict or unknown:
        assert response.status_code == 400, (values, response.content)
        reasons = (['Conflicting required and forbidden traits'] if conflict else []) + (
            ['No such trait'] if unknown else [])
        assert any(reason in detail(response) for reason in reasons), (values, detail(response))
    else:
        assert response.status_code == 200, (values, response.content)


def required_and_forbidden(values):
    """True when the values forbid every trait of a required (any-of) set: a
    400 of GET /allocation_candidates that no regular expression can see."""
    required, forbidden = [], set()
    for value in values:
        if value.startswith('in:'):
            required.append(set(value[3:].split(',')))
        else:
            names = value.split(',')
            required += [{name} for name in names if not name.startswith('!')]
            forbidden |= {name[1:] for name in names if name.startswith('!')}
    return any(any_of <= forbidden for any_of in required)


@pytest.mark.parametrize('version', [(1, 35), LATEST])
@PROPERTY
@given(data=st.data())
def test_root_required_values_the_grammar_takes_are_answered(cloud, version, data):
    value = data.draw(values_of('root_required', version))
    value = known_names(data, value, r'[A-Z0-9_]+', KNOWN_TRAITS)
    assert takes('root_required', version, value)
    response = get(cloud, CANDIDATES, version, resources=['VCPU:1'], root_required=[value])
    names = value.split(',')
    conflict = {n for n in names if not n.startswith('!')} & {n[1:] for n in names
                                                             if n.startswith('!')}
    unknown = unknown_traits([value])
    event(f'{response.status_code} conflict={bool(conflict)} unknown={bool(unknown)}')
    if conflict or unknown:
        assert response.status_code == 400, (value, response.content)
    else:
        assert response.status_code == 200, (value, response.content)


@PROPERTY
@given(value=values_of('member_of', LATEST))
def test_generated_member_of_values_are_canonical_uuids(value):
    # The document asks for canonical uuids (8-4-4-4-12), so every value it
    # takes names real aggregates.
    for aggregate in re.sub(r'^!?(in:)?', '', value).split(','):
        assert str(uuid.UUID(aggregate)) == aggregate.lower()
