"""The pools list and a pool's page by name: names by the rule
(AggregateQuerySet.with_names), zones of their pods, sorts, the export, and
the pod a pool is the pool of."""
import csv
import io
import json
import re
import uuid

import pytest

from providers import services
from providers.models import Aggregate
from providers.pods import services as pod_services


def new_pool(name=None, zone=None, label=None, members=1):
    """An aggregate of `members` new providers; with a pod `name` in `zone`,
    or a label."""
    aggregate = str(uuid.uuid4())
    for i in range(members):
        rp = services.provider_create(name=f'{aggregate[:8]}-cn{i}')
        services.inventories_replace(provider=rp, inventories={'VCPU': {'total': 8}})
        services.aggregates_replace(provider=rp, aggregate_uuids=[aggregate])
    if name:
        pod_services.pod_create(name=name, aggregate_uuid=aggregate, availability_zone=zone)
    if label:
        services.pool_label_set(aggregate=Aggregate.objects.get(uuid=aggregate), name=label)
    return aggregate


@pytest.fixture
def pools(db):
    return {'gold': new_pool(label='gold', members=3), 'alpha': new_pool('alpha', 'az2'),
            'beta': new_pool('beta', 'az1', members=2), 'plain': new_pool()}


def listed(client, query=''):
    """(name, zone) of the pools list's rows, in order."""
    html = client.get('/ui/pools/' + query).content.decode()
    rows = re.findall(r'<td data-field="name">(.*?)</td>\s*<td data-field="zone">(.*?)</td>', html)
    return [(re.sub(r'<div.*', '', re.sub(r'<a[^>]*>([^<]*)</a>', r'\1', name)), zone)
            for name, zone in rows]


def test_the_list_sorts_by_name_zone_and_members(staff, pools):
    plain = (pools['plain'], '-')
    by_name = sorted([('alpha', 'az2'), ('beta', 'az1'), ('gold', '-'), plain])
    assert listed(staff) == by_name
    assert listed(staff, '?sort=name') == by_name
    assert listed(staff, '?sort=-name') == by_name[::-1]
    # Pools without a pod (no zone) last either way, by uuid.
    without = sorted([('gold', '-'), plain], key=lambda row: pools.get(row[0], row[0]))
    assert listed(staff, '?sort=zone') == [('beta', 'az1'), ('alpha', 'az2'), *without]
    assert listed(staff, '?sort=-zone') == [('alpha', 'az2'), ('beta', 'az1'), *without]
    assert [name for name, _ in listed(staff, '?sort=-members')][:2] == ['gold', 'beta']
    assert listed(staff, '?sort=bogus') == by_name


def test_the_list_names_a_pool_by_its_uuid_when_nothing_names_it(staff, pools):
    html = staff.get('/ui/pools/').content.decode()
    row = re.search(rf'<tr data-aggregate="{pools["gold"]}">.*?</tr>', html, re.S).group()
    assert f'<div class="mono pct">{pools["gold"]}</div>' in row   # the uuid beneath
    row = re.search(rf'<tr data-aggregate="{pools["plain"]}">.*?</tr>', html, re.S).group()
    assert f'<a class="mono" href="/ui/pools/{pools["plain"]}/">{pools["plain"]}</a>' in row


def test_the_export_has_every_pool_sorted_with_names_zones_and_books(staff, pools):
    response = staff.get('/ui/pools/?export=csv&sort=zone&per_page=1')
    assert response['Content-Disposition'].startswith('attachment; filename="pools.csv"')
    rows = list(csv.DictReader(io.StringIO(b''.join(response.streaming_content).decode())))
    assert [(r['name'], r['zone'], r['pod'], r['members'], r['VCPU_capacity'])
            for r in rows[:2]] == [('beta', 'az1', 'beta', '2', '16.0'),
                                   ('alpha', 'az2', 'alpha', '1', '8.0')]
    assert len(rows) == 4 and rows[2]['zone'] == rows[3]['zone'] == ''
    exported = json.loads(b''.join(staff.get('/ui/pools/?export=json').streaming_content))
    assert [row['name'] for row in exported] == [name for name, _ in listed(staff)]


def test_a_label_a_spreadsheet_would_evaluate_is_exported_as_text(staff, db):
    new_pool(label='=HYPERLINK("http://x")')
    response = staff.get('/ui/pools/?export=csv')
    (row,) = csv.DictReader(io.StringIO(b''.join(response.streaming_content).decode()))
    assert row['name'] == '\'=HYPERLINK("http://x")'


def test_a_pools_page_names_it_and_links_its_pod(staff, pools):
    pod = pod_services.pod_create(name='gamma', aggregate_uuid=new_pool(), availability_zone='az9')
    html = staff.get(f'/ui/pools/{pod.aggregate.uuid}/').content.decode()
    assert re.search(r'<title>Pool gamma\b', html)
    assert '<h1>Pool gamma</h1>' in html
    assert f'<p class="mono pct" data-field="uuid">{pod.aggregate.uuid}</p>' in html
    assert f'<a data-field="pod" href="/ui/pods/{pod.uuid}/">gamma</a> (zone az9)' in html
    # Its trends come before its members.
    assert html.index('id="usage-trends"') < html.index('id="members"')
    html = staff.get(f'/ui/pools/{pools["plain"]}/').content.decode()
    assert f'<h1>Pool <span class="mono">{pools["plain"]}</span></h1>' in html
    assert 'data-field="pod"' not in html
