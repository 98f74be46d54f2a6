"""The pods dashboards in a real browser, against a live server with the demo
cloud (and its pods and bindings) loaded: the Pods page's groups, books,
thresholds and tenants equal what GET /pods answers over HTTP; a pod's page
its bindings as GET /pod_bindings lists them; and the candidate explorer,
run as a project, searches only within the project's pod as a scheduler
passing the binding's member_of would. Screenshots of every page visited
go to test-artifacts/screenshots/ (the fixtures and helpers are
tests/ui/conftest.py's)."""
import re
from contextlib import contextmanager
from urllib.parse import urlparse

import pytest
import requests

from tests.support.browser import HEADERS
from tests.support.browser import check_candidates
from tests.support.browser import number
from tests.support.browser import pool_providers
from tests.support.browser import rows
from tests.support.browser import shoot
from tests.support.browser import sign_in
from tests.support.browser import submit

CAD = 'resource=CAD'
MODELING = 'workload=CAD Modeling'   # pod-row3-cad's other tag
RESOURCES = 'VCPU:1,MEMORY_MB:512,DISK_GB:20'

pytestmark = [pytest.mark.slow, pytest.mark.any_database]


@contextmanager
def changed_thresholds(demo_api, pod, thresholds):
    """The pod's thresholds changed through the API, and put back after: the
    module's tests share the demo cloud."""
    def put(thresholds):
        answer = requests.put(f'{demo_api.url}/pods/{pod["uuid"]}', headers=HEADERS, timeout=90,
                              json={'thresholds': thresholds})
        assert answer.status_code == 200, answer.text
    put(thresholds)
    try:
        yield
    finally:
        put(pod['thresholds'])


def pods_by_uuid(demo_api, **params):
    return {p['uuid']: p for p in demo_api.get('/pods', **params)['pods']}


def check_pod_parts(pod, parts):
    """A pod's per-class parts (data-* and text) against GET /pods' resources."""
    resources = pod['resources']
    assert [p['class'] for p in parts] == list(resources), pod['name']
    for part in parts:
        books = resources[part['class']]
        assert int(part['used']) == books['used'], (pod['name'], part)
        assert float(part['capacity']) == books['capacity'], (pod['name'], part)
        threshold = float(part['threshold']) if part['threshold'] else None
        assert threshold == books['threshold'], (pod['name'], part)
        assert (part['reached'] == 'true') == books['threshold_reached'], (pod['name'], part)
        used, capacity = re.search(r'([\d,]+) / ([\d,.]+)', part['text']).groups()
        assert (number(used), number(capacity)) == (books['used'], round(books['capacity']))
        if books['threshold'] is None:
            assert 'no threshold' in part['text'], part
        else:
            assert f"threshold {books['threshold']:g}%" in part['text'], part
        assert ('threshold reached' in part['text']) == books['threshold_reached'], part
        percent = int(re.search(r'(\d+)%', part['text']).group(1))
        assert abs(percent - (books['utilization'] or 0)) <= 0.5 + 1e-9, (part, books)


def test_pods_dashboard_equals_get_pods(page, demo_api):
    """Every pod row's tenants, state and per-class used / capacity /
    threshold equal GET /pods; the groups equal GET /pods?affinity=."""
    sign_in(page)
    page.click('nav >> text=Pods')
    page.wait_for_url('**/ui/pods/')
    shoot(page, 'pods')
    assert page.inner_text('nav a.active') == 'Pods'
    pods = pods_by_uuid(demo_api)
    assert [p['name'] for p in pods.values()] == ['pod-row1', 'pod-row2', 'pod-row3-cad']

    shown = rows(page, 'tr[data-pod]')
    assert {r['data']['pod'] for r in shown} == set(pods)
    for row in shown:
        pod = pods[row['data']['pod']]
        name, zone, state, created, tenants = row['cells'][:5]
        # Under its name, a pod's tags other than its group's.
        name, *other_tags = name.split('\n')
        assert (name, zone, state) == (pod['name'], pod['availability_zone'], pod['state'])
        assert set(other_tags) <= {f'{k}={v}' for k, v in pod['affinity_tags'].items()}
        assert (int(row['data']['tenants']), number(tenants)) == (pod['tenants'],) * 2
        assert created.split() == [pod['created_at'][:10], pod['created_at'][11:16], 'UTC']
        assert row['links'][0] == f'/ui/pods/{pod["uuid"]}/'
        check_pod_parts(pod, row['parts'])
    # The one in maintenance is marked so.
    assert page.locator('tr.maintenance').evaluate_all(
        'rows => rows.map(r => r.dataset.pod)') == [
        u for u, p in pods.items() if p['state'] == 'maintenance'] != []

    groups = page.locator('section.pod-group').evaluate_all(
        """sections => sections.map(s => [s.dataset.affinity,
            [...s.querySelectorAll('tr[data-pod]')].map(r => r.dataset.pod)])""")
    tags = sorted({f'{k}={v}' for p in pods.values() for k, v in p['affinity_tags'].items()})
    assert [affinity for affinity, _ in groups] == [''] + tags == ['', CAD, MODELING]
    for affinity, uuids in groups:
        assert uuids == list(pods_by_uuid(demo_api, affinity=affinity)), affinity
    titles = page.locator('section.pod-group h2').all_inner_texts()
    assert titles == ['General purpose 2 pods', f'{CAD} 1 pod', f'{MODELING} 1 pod']

    # A threshold lowered below the pod's use: reached, marked, as GET /pods says.
    (cad,) = pods_by_uuid(demo_api, affinity=CAD).values()
    vcpu = cad['resources']['VCPU']['utilization']
    with changed_thresholds(demo_api, cad, {'VCPU': int(vcpu), 'MEMORY_MB': 85}):
        page.reload()
        check_threshold_reached(page, demo_api, cad)


def check_threshold_reached(page, demo_api, cad):
    shoot(page, 'pods-threshold-reached')
    cad = demo_api.get(f'/pods/{cad["uuid"]}')
    assert cad['resources']['VCPU']['threshold_reached'] is True
    # Its row in each of its tags' groups.
    in_group = f'section.pod-group[data-affinity="{CAD}"] tr[data-pod="{cad["uuid"]}"]'
    assert len(rows(page, f'tr[data-pod="{cad["uuid"]}"]')) == len(cad['affinity_tags'])
    (row,) = rows(page, in_group)
    check_pod_parts(cad, row['parts'])
    assert [p['class'] for p in row['parts'] if p['reached'] == 'true'] == ['VCPU']
    assert page.locator(f'{in_group} .threshold-reached').all_inner_texts() \
        == ['threshold reached']


def test_pod_page_lists_its_tenants_and_history(page, demo_api):
    """pod-row1 (in maintenance: a tenant moved away) and pod-row3-cad (a
    binding an admin ended): the header, books, bound tenants and history
    equal GET /pods/{uuid} and GET /pod_bindings?pod=."""
    sign_in(page)
    page.goto('/ui/pods/')
    for name in ('pod-row1', 'pod-row3-cad'):
        (pod,) = [p for p in demo_api.get('/pods')['pods'] if p['name'] == name]
        page.click(f'tr[data-pod="{pod["uuid"]}"] >> text="{name}"')
        page.wait_for_url(f'**/ui/pods/{pod["uuid"]}/')
        shoot(page, f'pod-{name}')
        check_pod_page(page, demo_api, pod)
        page.goto('/ui/pods/')

    # The aggregate links to its pool page.
    (pod,) = [p for p in demo_api.get('/pods')['pods'] if p['name'] == 'pod-row3-cad']
    page.goto(f'/ui/pods/{pod["uuid"]}/')
    page.click('[data-field="aggregate"]')
    page.wait_for_url(f'**/ui/pools/{pod["aggregate"]}/')
    assert page.inner_text('h1') == 'Pool pod-row3-cad'
    assert page.inner_text('[data-field="uuid"]') == pod['aggregate']
    assert page.get_attribute('[data-field="pod"]', 'href') == f'/ui/pods/{pod["uuid"]}/'


def check_pod_page(page, demo_api, pod):
    uuid = pod['uuid']
    heading = page.inner_text('h1')
    assert heading == f'Pod {pod["name"]}' + (' maintenance' if pod['state'] == 'maintenance'
                                               else '')
    facts = dict(page.locator('#pod-facts [data-field]').evaluate_all(
        'fields => fields.map(f => [f.dataset.field, f.innerText.trim()])'))
    assert facts['aggregate'] == pod['aggregate']
    assert (facts['availability_zone'], facts['state']) == (pod['availability_zone'],
                                                           pod['state'])
    assert facts['affinity'] == (' '.join(f'{k}={v}' for k, v in pod['affinity_tags'].items())
                                 or 'general purpose')
    assert int(facts['tenants']) == pod['tenants']
    assert demo_api.get(f'/pods/{uuid}') == pod
    books = rows(page, '#books tbody tr[data-class]')
    assert [b['data']['class'] for b in books] == list(pod['resources'])
    for row in books:
        expected = pod['resources'][row['data']['class']]
        capacity, used, free = (number(c) for c in row['cells'][2:5])
        assert (capacity, used, free) == (round(expected['capacity']), expected['used'],
                                          round(expected['free'])), row
        assert row['cells'][6] == (f"{expected['threshold']:g}%" if expected['threshold']
                                   is not None else '—')
        assert (row['data']['reached'] == 'true') == expected['threshold_reached']

    bound = rows(page, '#bound tbody tr[data-binding]')
    current = demo_api.get('/pod_bindings', pod=uuid, open='true')['pod_bindings']
    # Tenants are projects: one bound for two of the pod's tags counts once.
    assert len({b['project_id'] for b in current}) == pod['tenants']
    assert [(r['data']['binding'], r['data']['project'], r['data']['affinity'] or None,
             r['data']['started']) for r in bound] == [
        (b['uuid'], b['project_id'], b['affinity'], b['started_at']) for b in current]
    history = rows(page, '#history tbody tr[data-binding]')
    everything = demo_api.get('/pod_bindings', pod=uuid)['pod_bindings']
    assert [(r['data']['binding'], r['data']['project'], r['data']['affinity'] or None,
             r['data']['started'], r['data']['ended'] or None, r['data']['reason'] or None)
            for r in history] == [
        (b['uuid'], b['project_id'], b['affinity'], b['started_at'], b['ended_at'],
         b['end_reason']) for b in reversed(everything)]
    ended = [b for b in everything if b['ended_at']]
    assert ended, pod['name']  # the demo ends one binding of each of these pods
    for row in history:
        if row['data']['reason']:
            assert row['cells'][4] == row['data']['reason']
        else:
            assert row['cells'][3] == 'bound now'
    assert page.inner_text('h2:has(+ #history) .pct') == \
        f'({len(everything)} bindings, newest first)'
    assert page.locator('.pagination').count() == 0  # one page


def test_explorer_as_a_project_searches_within_its_pod(page, demo_api):
    """Explorer 'as project': a project bound for CAD work gets its pod's
    candidates (those of GET /allocation_candidates with the binding's
    member_of, every provider within the pod); a project bound to a pod in
    maintenance still gets its pod, with where it would move; a new project
    gets a preview of a binding request, and nothing is written."""
    sign_in(page)
    page.click('nav >> text=Candidate explorer')
    page.wait_for_url('**/ui/explorer/')

    (binding,) = demo_api.get('/pod_bindings', project_id='demo-analytics', affinity=CAD,
                         open='true')['pod_bindings']
    submit(page, 'form.explorer', {'resources': RESOURCES, 'limit': '',
                                   'as_project': 'demo-analytics', 'affinity': CAD})
    shoot(page, 'explorer-as-project-bound')
    notice = page.locator('#as-project')
    assert notice.get_attribute('data-binding') == binding['uuid']
    assert notice.get_attribute('data-pod') == binding['pod']['uuid']
    assert notice.get_attribute('data-member-of') == binding['member_of']
    text = notice.inner_text()
    assert text.startswith(f'As project demo-analytics ({CAD} work): bound to pod '
                           f'{binding["pod"]["name"]} since '), text
    assert '(its current binding)' in text and 'move' not in text
    check_within_pod(page, demo_api, binding['member_of'])

    # demo-web's pod is in maintenance: still its pod until it asks again.
    (web,) = demo_api.get('/pod_bindings', project_id='demo-web', open='true')['pod_bindings']
    submit(page, 'form.explorer', {'as_project': 'demo-web', 'affinity': ''})
    shoot(page, 'explorer-as-project-moving')
    notice = page.locator('#as-project')
    assert notice.get_attribute('data-binding') == web['uuid']
    assert notice.get_attribute('data-member-of') == web['member_of']
    assert (f"{web['pod']['name']} is in maintenance: the project's next binding request "
            'would move it to pod-row2.') in notice.inner_text()
    check_within_pod(page, demo_api, web['member_of'])

    # A project without a binding: a preview of where a binding request goes.
    before = demo_api.get('/pod_bindings')['pod_bindings']
    submit(page, 'form.explorer', {'as_project': 'demo-newcomer'})
    shoot(page, 'explorer-as-project-preview')
    notice = page.locator('#as-project')
    (pod2,) = [p for p in demo_api.get('/pods')['pods'] if p['name'] == 'pod-row2']
    assert notice.get_attribute('data-binding') == ''
    assert notice.get_attribute('data-member-of') == pod2['aggregate']
    assert ('As project demo-newcomer (general-purpose work): no binding yet; a binding request '
            'would bind it to pod-row2 (a preview: nothing is written).') in notice.inner_text()
    check_within_pod(page, demo_api, pod2['aggregate'])
    assert demo_api.get('/pod_bindings')['pod_bindings'] == before

    # No pod of the tag can take 100000 VCPU: the refusal is the explorer's error.
    submit(page, 'form.explorer', {'resources': 'VCPU:100000', 'affinity': CAD})
    shoot(page, 'explorer-as-project-refused')
    assert page.inner_text('#error') == (
        f'No pod can take the {CAD} work of project demo-newcomer: pod-row1 is not tagged '
        f'{CAD}; pod-row2 is not tagged {CAD}; pod-row3-cad cannot fit 100000 VCPU.')
    assert page.locator('#as-project').count() == 0
    assert page.locator('#candidate-count').count() == 0
    assert urlparse(page.url).path == '/ui/explorer/'


def check_within_pod(page, demo_api, member_of):
    """The candidates shown are GET /allocation_candidates' with the pod's
    member_of, and each of their providers is one of the pod's."""
    assert f'member_of={member_of}' in page.inner_text('main p.subtitle >> nth=1')
    body = demo_api.candidates(RESOURCES, member_of=member_of)
    assert body['allocation_requests'], member_of
    check_candidates(page, body)
    within = pool_providers(demo_api, demo_api.providers(member_of=member_of))
    used = {u for r in body['allocation_requests'] for u in r['allocations']}
    assert used <= within, used - within
