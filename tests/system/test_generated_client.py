"""A client generated from the OpenAPI document works against the service.

openapi-python-client generates a Python package from the latest document
served by a live server; a placement flow then goes through that package
only: a provider with inventories and traits, a custom resource class and
trait, allocation candidates, a consumer's allocations written from a
candidate, usages, clean-up, and an error answer.

Maps keyed by provider uuid or resource class name are described with
propertyNames and an additionalProperties schema, which the generator turns
into models that keep their entries (it drops objects described by
patternProperties alone); the second test round-trips real bodies through
them. Every call is left at the generated default microversion, which must
be the document's.
"""
import importlib
import io
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest
import requests
from django.core.management import call_command

pytestmark = [pytest.mark.slow, pytest.mark.any_database,
              pytest.mark.django_db(transaction=True, serialized_rollback=True)]

PACKAGE = 'placement_client'
MODULES = {
    'client': 'client',
    'errors': 'errors',
    'models': 'models',
    'create_provider': 'api.resource_providers.create_resource_provider',
    'show_provider': 'api.resource_providers.show_resource_provider',
    'delete_provider': 'api.resource_providers.delete_resource_provider',
    'update_inventories': 'api.inventories.update_inventories',
    'list_inventories': 'api.inventories.list_inventories',
    'create_class': 'api.resource_classes.create_resource_class',
    'show_class': 'api.resource_classes.show_resource_class',
    'update_trait': 'api.traits.update_trait',
    'update_provider_traits': 'api.traits.update_provider_traits',
    'list_provider_traits': 'api.traits.list_provider_traits',
    'candidates': 'api.allocation_candidates.list_allocation_candidates',
    'update_allocations': 'api.allocations.update_consumer_allocations',
    'show_allocations': 'api.allocations.show_consumer_allocations',
    'delete_allocations': 'api.allocations.delete_consumer_allocations',
    'provider_usages': 'api.usages.list_provider_usages',
    'usages': 'api.usages.list_usages',
}


def _forget_package():
    for name in [name for name in sys.modules
                 if name == PACKAGE or name.startswith(PACKAGE + '.')]:
        del sys.modules[name]


@pytest.fixture
def pc(live_server, tmp_path):
    """The package generated from the live server's latest document, its
    modules by short name, and an authenticated client for the server."""
    # Standards first (idempotent): a transactional test may start from a flushed database.
    call_command('sync_standards', stdout=io.StringIO())
    answer = requests.get(f'{live_server.url}/api/schema/',
                          params={'version': 'latest', 'format': 'json'}, timeout=30)
    assert answer.status_code == 200, answer.text[:2000]
    document = tmp_path / 'placement.json'
    document.write_bytes(answer.content)

    bin_dir = Path(sys.executable).parent  # ruff, which the generator runs, is there too
    env = {**os.environ, 'PATH': f'{bin_dir}{os.pathsep}{os.environ.get("PATH", "")}'}
    try:
        run = subprocess.run(
            [str(bin_dir / 'openapi-python-client'), 'generate', '--path', str(document),
             '--meta', 'none', '--output-path', str(tmp_path / PACKAGE)],
            capture_output=True, text=True, timeout=120, check=True, env=env, cwd=tmp_path)
    except subprocess.CalledProcessError as error:
        pytest.fail(f'openapi-python-client failed ({error.returncode}):\n'
                    f'{error.stdout}\n{error.stderr}')
    output = run.stdout + run.stderr
    assert 'Warning' not in output, output
    assert 'Error' not in output, output

    _forget_package()
    sys.path.insert(0, str(tmp_path))
    importlib.invalidate_caches()
    try:
        modules = {short: importlib.import_module(f'{PACKAGE}.{name}')
                   for short, name in MODULES.items()}
        client = modules['client'].AuthenticatedClient(
            base_url=live_server.url, token='admin', prefix='',
            auth_header_name='X-Auth-Token', raise_on_unexpected_status=True,
            headers={'Accept': 'application/json'}, timeout=30)
        yield SimpleNamespace(**modules, api=client, generator_output=output)
        client.get_httpx_client().close()
    finally:
        sys.path.remove(str(tmp_path))
        _forget_package()


def body(response):
    """The JSON body of a generated `Response`."""
    return json.loads(response.content)


def test_generated_client_drives_a_placement_flow(pc):
    m = pc.models
    api = pc.api
    at = {'client': api}  # the generated default microversion: the document's

    # A provider: 200 with the provider at the latest microversion.
    rp_uuid = uuid.uuid4()
    created = pc.create_provider.sync_detailed(
        body=m.ResourceProviderCreateRequest(name='gen-client-cn1', uuid=rp_uuid), **at)
    assert created.status_code == 200, created.content
    assert created.headers['OpenStack-API-Version'] == 'placement 1.39'
    provider = created.parsed
    assert isinstance(provider, m.ResourceProvider)
    assert provider.uuid == rp_uuid
    assert provider.name == 'gen-client-cn1'
    assert provider.generation == 0
    assert provider.parent_provider_uuid is None
    assert provider.root_provider_uuid == rp_uuid
    assert {link.rel for link in provider.links} >= {'self', 'inventories', 'usages', 'traits'}

    # Its inventories, replaced with the generation just read.
    inventories = m.InventoriesReplaceRequestInventories()
    inventories['VCPU'] = m.InventoriesReplaceRequestInventoriesAdditionalProperty(total=8)
    inventories['MEMORY_MB'] = m.InventoriesReplaceRequestInventoriesAdditionalProperty(
        total=4096, max_unit=2048)
    replaced = pc.update_inventories.sync_detailed(
        rp_uuid, body=m.InventoriesReplaceRequest(
            resource_provider_generation=provider.generation, inventories=inventories), **at)
    assert replaced.status_code == 200, replaced.content
    assert isinstance(replaced.parsed, m.Inventories)
    assert replaced.parsed.resource_provider_generation == 1

    listed = pc.list_inventories.sync_detailed(rp_uuid, **at)
    assert listed.status_code == 200, listed.content
    assert isinstance(listed.parsed, m.Inventories)
    assert listed.parsed.resource_provider_generation == 1
    records = listed.parsed.inventories.additional_properties
    assert set(records) == {'VCPU', 'MEMORY_MB'}
    assert (records['VCPU'].total, records['VCPU'].reserved, records['VCPU'].min_unit,
            records['VCPU'].max_unit, records['VCPU'].step_size,
            records['VCPU'].allocation_ratio) == (8, 0, 1, 2147483647, 1, 1.0)
    assert (records['MEMORY_MB'].total, records['MEMORY_MB'].max_unit) == (4096, 2048)

    # A custom resource class and a custom trait, then the provider's traits.
    rc = pc.create_class.sync_detailed(
        body=m.ResourceClassCreateRequest(name='CUSTOM_GEN_CLIENT_FPGA'), **at)
    assert rc.status_code == 201, rc.content
    shown_rc = pc.show_class.sync_detailed('CUSTOM_GEN_CLIENT_FPGA', **at)
    assert shown_rc.status_code == 200, shown_rc.content
    assert isinstance(shown_rc.parsed, m.ResourceClass)
    assert shown_rc.parsed.name == 'CUSTOM_GEN_CLIENT_FPGA'

    trait = pc.update_trait.sync_detailed('CUSTOM_GEN_CLIENT_TRAIT', **at)
    assert trait.status_code == 201, trait.content

    traits = pc.update_provider_traits.sync_detailed(
        rp_uuid, body=m.ResourceProviderTraitsUpdateRequest(
            traits=['CUSTOM_GEN_CLIENT_TRAIT', 'HW_CPU_X86_AVX2'],
            resource_provider_generation=1), **at)
    assert traits.status_code == 200, traits.content
    assert isinstance(traits.parsed, m.ResourceProviderTraits)
    assert sorted(traits.parsed.traits) == ['CUSTOM_GEN_CLIENT_TRAIT', 'HW_CPU_X86_AVX2']
    assert traits.parsed.resource_provider_generation == 2
    listed_traits = pc.list_provider_traits.sync_detailed(rp_uuid, **at)
    assert listed_traits.status_code == 200, listed_traits.content
    assert sorted(listed_traits.parsed.traits) == ['CUSTOM_GEN_CLIENT_TRAIT', 'HW_CPU_X86_AVX2']

    # Allocation candidates: the provider, with its capacity and usage.
    found = pc.candidates.sync_detailed(
        resources='VCPU:2,MEMORY_MB:512', required=['CUSTOM_GEN_CLIENT_TRAIT'], **at)
    assert found.status_code == 200, found.content
    assert isinstance(found.parsed, m.AllocationCandidates)
    assert len(found.parsed.allocation_requests) == 1
    request = found.parsed.allocation_requests[0]
    assert isinstance(request, m.AllocationRequest)
    assert request.mappings.additional_properties == {'': [rp_uuid]}
    assert request.allocations.to_dict() == {
        str(rp_uuid): {'resources': {'VCPU': 2, 'MEMORY_MB': 512}}}
    summary = found.parsed.provider_summaries[str(rp_uuid)]
    assert isinstance(summary, m.ProviderSummary)
    assert summary.root_provider_uuid == rp_uuid
    assert summary.parent_provider_uuid is None
    assert sorted(summary.traits) == ['CUSTOM_GEN_CLIENT_TRAIT', 'HW_CPU_X86_AVX2']
    assert summary.resources.to_dict() == {'VCPU': {'capacity': 8, 'used': 0},
                                           'MEMORY_MB': {'capacity': 4096, 'used': 0}}

    # A new consumer's allocations, from the candidate.
    consumer = uuid.uuid4()
    project, user = uuid.uuid4().hex, uuid.uuid4().hex
    written = pc.update_allocations.sync_detailed(
        consumer, body=m.ConsumerAllocationsUpdateRequest(
            allocations=m.ConsumerAllocationsUpdateRequestAllocations.from_dict(
                request.allocations.to_dict()), project_id=project, user_id=user,
            consumer_generation=None, consumer_type='INSTANCE'), **at)
    assert written.status_code == 204, written.content
    assert written.parsed is None

    shown = pc.show_allocations.sync_detailed(consumer, **at)
    assert shown.status_code == 200, shown.content
    held = shown.parsed
    assert isinstance(held, m.ConsumerAllocations)
    assert (held.project_id, held.user_id, held.consumer_generation, held.consumer_type) == (
        project, user, 1, 'INSTANCE')
    assert held.allocations.to_dict() == {
        str(rp_uuid): {'resources': {'VCPU': 2, 'MEMORY_MB': 512}, 'generation': 3}}

    used = pc.provider_usages.sync_detailed(rp_uuid, **at)
    assert used.status_code == 200, used.content
    assert isinstance(used.parsed, m.ResourceProviderUsages)
    assert used.parsed.resource_provider_generation == 3
    assert used.parsed.usages.to_dict() == {'VCPU': 2, 'MEMORY_MB': 512}

    by_project = pc.usages.sync_detailed(project_id=project, **at)
    assert by_project.status_code == 200, by_project.content
    assert isinstance(by_project.parsed, m.Usages)
    assert set(by_project.parsed.usages.additional_properties) == {'INSTANCE'}
    assert by_project.parsed.usages['INSTANCE'].consumer_count == 1
    assert by_project.parsed.usages.to_dict() == {
        'INSTANCE': {'VCPU': 2, 'MEMORY_MB': 512, 'consumer_count': 1}}

    # Clean-up: the allocations, then the provider.
    deleted = pc.delete_allocations.sync_detailed(consumer, **at)
    assert deleted.status_code == 204, deleted.content
    gone = pc.show_allocations.sync_detailed(consumer, **at)
    assert gone.status_code == 200 and body(gone) == {'allocations': {}}, gone.content
    removed = pc.delete_provider.sync_detailed(rp_uuid, **at)
    assert removed.status_code == 204, removed.content

    # An error: Placement's error body, parsed.
    missing = pc.show_provider.sync_detailed(rp_uuid, **at)
    assert missing.status_code == 404, missing.content
    assert isinstance(missing.parsed, m.Error)
    [error] = missing.parsed.errors
    assert isinstance(error, m.ErrorErrorsItem)
    assert error.status == 404
    assert error.title == 'Not Found'
    assert str(rp_uuid) in error.detail
    assert error.code == 'placement.undefined_code'
    assert error.request_id == missing.headers['x-openstack-request-id']
    assert error.request_id.startswith('req-')


def test_generated_models_keep_keyed_maps(pc):
    m = pc.models
    rp = str(uuid.uuid4())
    lost = []

    def round_trip(model, value):
        if model.from_dict(value).to_dict() != value:
            lost.append(model.__name__)

    round_trip(m.Inventories, {'resource_provider_generation': 1, 'inventories': {'VCPU': {
        'total': 8, 'reserved': 0, 'min_unit': 1, 'max_unit': 8, 'step_size': 1,
        'allocation_ratio': 16.0}}})
    round_trip(m.AllocationCandidates, {
        'allocation_requests': [{'allocations': {rp: {'resources': {'VCPU': 2}}},
                                 'mappings': {'': [rp]}}],
        'provider_summaries': {rp: {'resources': {'VCPU': {'capacity': 128, 'used': 0}},
                                    'traits': [], 'parent_provider_uuid': None,
                                    'root_provider_uuid': rp}}})
    round_trip(m.ConsumerAllocationsUpdateRequest, {
        'allocations': {rp: {'resources': {'VCPU': 2}}}, 'project_id': 'p', 'user_id': 'u',
        'consumer_generation': None, 'consumer_type': 'INSTANCE'})
    round_trip(m.ConsumerAllocations, {
        'allocations': {rp: {'resources': {'VCPU': 2}, 'generation': 3}},
        'project_id': 'p', 'user_id': 'u', 'consumer_generation': 1,
        'consumer_type': 'INSTANCE'})
    round_trip(m.ResourceProviderUsages, {'resource_provider_generation': 3,
                                          'usages': {'VCPU': 2}})
    round_trip(m.Usages, {'usages': {'INSTANCE': {'VCPU': 2, 'consumer_count': 1}}})
    assert lost == [], f'models that drop map entries: {lost}'
