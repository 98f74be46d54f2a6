"""The dashboards: staff only, the numbers the API gives, and a constant
number of queries whatever the size of the cloud."""
import re
import uuid

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.db.models import F
from django.test import Client
from django.test.utils import CaptureQueriesContext

from allocations.models import Allocation, Consumer, ConsumerType, Project
from allocations.models import User as PlacementUser
from providers.models import (Aggregate, Inventory, ProviderAggregate, ProviderTrait,
                              ResourceClass, ResourceProvider, Trait)

POOL = 'aaaaaaaa-0000-4000-8000-000000000001'


@pytest.fixture
def staff(db):
    client = Client()
    User.objects.create_user('operator', password='pw', is_staff=True)
    assert client.login(username='operator', password='pw')
    return client


def grow_cloud(count, start=0):
    """`count` compute trees (root + NUMA child), an NFS pool and instances,
    written in bulk: only the shape matters for query counts."""
    classes = dict(ResourceClass.objects.values_list('name', 'id'))
    avx2 = Trait.objects.get(name='HW_CPU_X86_AVX2')
    pool, _ = Aggregate.objects.get_or_create(uuid=POOL)
    project, _ = Project.objects.get_or_create(external_id='proj')
    user, _ = PlacementUser.objects.get_or_create(external_id='user')
    instance, _ = ConsumerType.objects.get_or_create(name='INSTANCE')
    roots = ResourceProvider.objects.bulk_create([
        ResourceProvider(uuid=str(uuid.uuid4()), name=f'cn{i}') for i in range(start, start + count)])
    ResourceProvider.objects.filter(root_provider__isnull=True).update(root_provider_id=F('id'))
    numas = ResourceProvider.objects.bulk_create([
        ResourceProvider(uuid=str(uuid.uuid4()), name=f'{r.name}-numa0', parent_provider_id=r.pk,
                         root_provider_id=r.pk) for r in roots])
    Inventory.objects.bulk_create(
        [Inventory(resource_provider_id=r.pk, resource_class_id=classes['DISK_GB'], total=500,
                   reserved=10) for r in roots] +
        [Inventory(resource_provider_id=n.pk, resource_class_id=classes['VCPU'], total=16,
                   allocation_ratio=4.0) for n in numas])
    ProviderTrait.objects.bulk_create([ProviderTrait(resource_provider_id=r.pk, trait=avx2)
                                       for r in roots])
    ProviderAggregate.objects.bulk_create([ProviderAggregate(resource_provider_id=r.pk,
                                                             aggregate=pool) for r in roots])
    consumers = Consumer.objects.bulk_create([
        Consumer(uuid=str(uuid.uuid4()), project=project, user=user, consumer_type=instance)
        for _ in numas])
    Allocation.objects.bulk_create(
        [Allocation(resource_provider_id=n.pk, consumer_id=c.pk, resource_class_id=classes['VCPU'],
                    used=8) for n, c in zip(numas, consumers)] +
        [Allocation(resource_provider_id=r.pk, consumer_id=c.pk,
                    resource_class_id=classes['DISK_GB'], used=100)
         for r, c in zip(roots, consumers)])
    return roots


def pages():
    root = ResourceProvider.objects.filter(parent_provider__isnull=True).order_by('pk').first()
    return ['/ui/', '/ui/providers/', '/ui/providers/?sort=-utilization&trait=HW_CPU_X86_AVX2',
            f'/ui/providers/?aggregate={POOL}&root_only=true', f'/ui/providers/{root.uuid}/',
            '/ui/pools/', f'/ui/pools/{POOL}/', '/ui/usage/', '/ui/usage/?project=proj',
            '/ui/explorer/?resources=VCPU:1,DISK_GB:10&limit=5',
            '/ui/explorer/?resources=VCPU:1000']


def count_queries(client, path):
    with CaptureQueriesContext(connection) as captured:
        response = client.get(path)
    assert response.status_code == 200, (path, response.status_code)
    return len(captured)


def test_every_page_needs_a_staff_sign_in(db):
    for path in ['/ui/', '/ui/providers/', '/ui/pools/', '/ui/usage/', '/ui/explorer/']:
        response = Client().get(path)
        assert response.status_code == 302
        assert response['Location'] == f'/accounts/login/?next={path}'
    User.objects.create_user('someone', password='pw')
    client = Client()
    assert client.login(username='someone', password='pw')
    response = client.get('/ui/')
    assert response.status_code == 302
    assert response['Location'] == '/accounts/login/?next=/ui/'


def test_queries_per_page_do_not_grow_with_the_cloud(staff):
    grow_cloud(10)
    small = {path: count_queries(staff, path) for path in pages()}
    grow_cloud(490, start=10)
    large = {path: count_queries(staff, path) for path in pages()}
    assert large == small


def numbers(html, row_attr, value):
    """The data-field cells of the table row marked row_attr="value"."""
    row = re.search(rf'<tr[^>]*{row_attr}="{re.escape(value)}"[^>]*>(.*?)</tr>', html, re.S)
    assert row, (row_attr, value)
    return {m[0]: m[1] for m in re.findall(r'data-field="(\w+)">([^<]*)<', row.group(1))}


def test_overview_shows_capacity_as_the_api_computes_it(staff, api):
    grow_cloud(3)
    html = staff.get('/ui/').content.decode()
    vcpu = numbers(html, 'data-class', 'VCPU')
    # 3 NUMA nodes: total 16, ratio 4 -> capacity 64 each; 8 used each.
    assert vcpu == {'total': '48', 'reserved': '0', 'capacity': '192', 'used': '24'}
    disk = numbers(html, 'data-class', 'DISK_GB')
    assert disk == {'total': '1,500', 'reserved': '30', 'capacity': '1,470', 'used': '300'}
    with_disk = api.get('/resource_providers?resources=DISK_GB:1').body['resource_providers']
    assert sorted(p['name'] for p in with_disk) == ['cn0', 'cn1', 'cn2']
    for provider in with_disk:
        usages = api.get(f"/resource_providers/{provider['uuid']}/usages").body['usages']
        assert usages == {'DISK_GB': 100}


def test_usage_page_matches_get_usages(staff, api):
    grow_cloud(4)
    html = staff.get('/ui/usage/').content.decode()
    row = re.search(r'<tr data-project="proj">(.*?)</tr>', html, re.S).group(1)
    shown = dict(re.findall(r'data-class="(\w+)">(\d+)<', row))
    expected = api.get('/usages?project_id=proj', version='1.9').body['usages']
    assert expected == {'VCPU': 32, 'DISK_GB': 400}
    assert {k: int(v) for k, v in shown.items()} == expected
    by_type = api.get('/usages?project_id=proj').body['usages']
    assert by_type == {'INSTANCE': {'VCPU': 32, 'DISK_GB': 400, 'consumer_count': 4}}
    # The consumer count is the one numeric cell without a class.
    assert re.findall(r'<td class="num">([^<]*)</td>', row) == ['4']


def test_provider_page_spells_out_the_capacity_formula(staff):
    root = grow_cloud(1)[0]
    numa = ResourceProvider.objects.get(parent_provider=root)
    html = staff.get(f'/ui/providers/{numa.uuid}/').content.decode()
    assert re.findall(r'<tr data-class="(\w+)" data-used="(\d+)" data-capacity="(\d+)">',
                      html) == [('VCPU', '8', '64')]
    assert re.findall(r'<span class="formula">([^<]*)</span>', html) == ['= (16 − 0) × 4.0']
    assert f'href="/ui/providers/{root.uuid}/"' in html  # the tree links up to the root
    # Its one consumer: an INSTANCE holding 8 VCPU.
    assert re.findall(r'<td>(\w+)</td>\s*<td><span class="tag">([^<]*)</span></td>', html) == [
        ('INSTANCE', 'VCPU 8')]


def test_a_provider_lowered_below_its_usage_shows_as_over_capacity(staff, api):
    # Placement accepts the change (nova-compute reports what it has).
    root = grow_cloud(1)[0]
    numa = ResourceProvider.objects.get(parent_provider=root)
    assert 'over capacity' not in staff.get(f'/ui/providers/{numa.uuid}/').content.decode()
    lowered = api.put(f'/resource_providers/{numa.uuid}/inventories/VCPU', {
        'resource_provider_generation': numa.generation, 'total': 4})
    assert lowered.status_code == 200, lowered.content
    for page in (f'/ui/providers/{numa.uuid}/', '/ui/providers/'):
        html = staff.get(page).content.decode()
        assert re.findall(r'used \(200%\), over capacity by 4<', html), page
        assert html.count('<strong class="over-capacity">over capacity</strong>') == 1, page


def test_explorer_finds_candidates_and_explains_an_empty_answer(staff):
    grow_cloud(3)
    html = staff.get('/ui/explorer/?resources=VCPU:1,DISK_GB:10').content.decode()
    assert re.findall(r'id="candidate-count">([^<]*)<', html) == ['3 candidates']
    html = staff.get('/ui/explorer/?resources=VCPU:1000').content.decode()
    assert '<div class="notice warning" id="no-candidates"><strong>Nothing fits.</strong>' in html
    assert re.findall(r'<div class="explanation">([^<]*)</div>', html) == [
        'unsuffixed group: 3 trees lack 1000 VCPU']
    html = staff.get('/ui/explorer/?resources=VCPU:x').content.decode()
    assert re.findall(r'<div class="notice error" id="error">([^<]*)</div>', html) == [
        'Requested resource VCPU expected positive integer amount. Got: x.']
