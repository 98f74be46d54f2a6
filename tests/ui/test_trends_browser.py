"""The usage-trend charts in a real browser, against a live server with the
demo cloud (and its four weeks of snapshots) loaded: the overview and a
pool page draw one chart per resource class, whose used line has a vertex
per snapshot placed as GET /capacity/trends gives its time and use, with
the forecast dashed and in words as the API forecasts it. Screenshots of
the pages and of the charts go to test-artifacts/screenshots/ (the fixtures
and helpers are tests/ui/conftest.py's)."""
import re
import uuid
from datetime import datetime

import pytest
import requests

from tests.support.browser import HEADERS
from tests.support.browser import SCREENSHOTS
from tests.support.browser import exact_amounts
from tests.support.browser import shoot
from tests.support.browser import sign_in

pytestmark = [pytest.mark.slow, pytest.mark.any_database]

CHARTS_JS = """figures => figures.map(f => {
    const svg = f.querySelector('svg');
    const pairs = s => s.trim().split(/\\s+/).map(p => p.split(',').map(Number));
    return {
        name: f.dataset.resourceClass, points: Number(f.dataset.points),
        status: f.dataset.status, caption: f.querySelector('figcaption').innerText.trim(),
        drawn: svg && Number(f.querySelector('.trend-chart').dataset.drawn),
        used: svg ? pairs(svg.querySelector('polyline.used').getAttribute('points')) : [],
        area: svg ? pairs(svg.querySelector('polygon').getAttribute('points')) : [],
        forecast: svg ? svg.querySelectorAll('line.forecast').length : 0,
        fullAt: svg ? svg.querySelectorAll('circle.full-at').length : 0,
        dates: svg ? [...svg.querySelectorAll('text.time-tick')].map(t => t.textContent) : [],
        width: svg ? svg.getBoundingClientRect().width : 0,
    };
})"""


def wording(forecast):
    """The forecast in words, as the dashboards should print the API's."""
    if forecast['status'] == 'full':
        return 'full now'
    if forecast['status'] == 'filling':
        days = round(forecast['days_to_full'])
        return 'full within a day' if forecast['days_to_full'] < 1 else \
            f'full in about {days:,} day{"s" if days != 1 else ""}'
    if forecast['status'] == 'not_filling':
        return 'not filling up'
    return 'not enough history for a forecast'


def check_charts(page, demo_api, query, shot, days=30):
    """The page's charts against GET /capacity/trends?days= (with `query`)."""
    page.wait_for_selector('#usage-trends .trend-chart svg')
    expected = demo_api.get('/capacity/trends', days=days, **query)['resources']
    with exact_amounts(page):
        charts = page.locator('#usage-trends figure.trend').evaluate_all(CHARTS_JS)
    assert [c['name'] for c in charts] == list(expected) != []
    for chart in charts:
        trend = expected[chart['name']]
        points, forecast = trend['points'], trend['forecast']
        assert chart['points'] == chart['drawn'] == len(chart['used']) == len(points) > 1, \
            chart['name']
        assert chart['status'] == forecast['status']
        caption = ' '.join(chart['caption'].split())
        assert caption.startswith(f"{chart['name']} {wording(forecast)}"), caption
        now = points[-1]
        assert caption.endswith(f"now {now['used']:,} of {round(now['capacity']):,} used "
                                f"({now['utilization']:.0f}%)"), caption
        # A vertex per snapshot: x in proportion to its time, height above the
        # axis (the area's first vertex) in proportion to its use.
        times = [_seconds(p['taken_at']) for p in points]
        xs = [x for x, _ in chart['used']]
        baseline = chart['area'][0][1]
        heights = [baseline - y for _, y in chart['used']]
        top = max(range(len(points)), key=lambda i: points[i]['used'])
        for i, point in enumerate(points):
            assert (xs[i] - xs[0]) / (xs[-1] - xs[0]) == pytest.approx(
                (times[i] - times[0]) / (times[-1] - times[0]), abs=0.002), (chart['name'], i)
            assert heights[i] == pytest.approx(
                heights[top] * point['used'] / points[top]['used'], abs=0.2), (chart['name'], i)
        # The forecast dashed while filling, nowhere else; dates on the time axis.
        assert chart['forecast'] == (forecast['status'] == 'filling'), chart['name']
        assert len(chart['dates']) >= 3 and all(d[:3].isalpha() for d in chart['dates'])
        assert chart['width'] >= 300
    shoot(page, shot)
    page.locator('#usage-trends').screenshot(path=str(SCREENSHOTS / f'{shot}-charts.png'))
    return charts


def _seconds(stamp):
    return datetime.strptime(stamp, '%Y-%m-%dT%H:%M:%S.%fZ').timestamp()


def test_overview_charts_every_class_of_the_cloud(page, demo_api):
    sign_in(page)
    charts = check_charts(page, demo_api, {}, 'trends-overview')
    # The demo's story: compute classes fill up, the NICs and addresses do not.
    status = {c['name']: c['status'] for c in charts}
    assert status == {'VCPU': 'filling', 'MEMORY_MB': 'filling', 'DISK_GB': 'filling',
                      'SRIOV_NET_VF': 'not_filling', 'IPV4_ADDRESS': 'not_filling'}
    assert page.locator('#usage-trends h2').inner_text().startswith(
        'Usage trends last 30 days, the whole cloud')


def test_a_pool_page_charts_its_own_classes(page, demo_api):
    sign_in(page)
    (pod,) = [p for p in demo_api.get('/pods')['pods'] if p['name'] == 'pod-row2']
    page.goto(f"/ui/pools/{pod['aggregate']}/")
    charts = check_charts(page, demo_api, {'aggregate': pod['aggregate']}, 'trends-pool')
    assert 'this pool' in page.locator('#usage-trends h2').inner_text()
    # The pool's own numbers, not the cloud's.
    cloud = demo_api.get('/capacity/trends', days=30)['resources']
    pool = demo_api.get('/capacity/trends', days=30, aggregate=pod['aggregate'])['resources']
    assert pool['VCPU']['points'][-1]['capacity'] < cloud['VCPU']['points'][-1]['capacity']
    assert {c['name'] for c in charts} == set(pool)


def test_a_pool_without_snapshots_says_how_to_take_them(page, demo_api):
    provider = demo_api.provider_named('r1-rack01-cn01')
    url = f"{demo_api.url}/resource_providers/{provider['uuid']}/aggregates"
    aggregates = demo_api.get(f"/resource_providers/{provider['uuid']}/aggregates")
    fresh = str(uuid.uuid4())
    added = requests.put(url, headers=HEADERS, timeout=90, json={
        'aggregates': aggregates['aggregates'] + [fresh],
        'resource_provider_generation': aggregates['resource_provider_generation']})
    assert added.status_code == 200, added.text
    try:
        sign_in(page)
        page.goto(f'/ui/pools/{fresh}/')
        assert page.locator('#usage-trends svg').count() == 0
        assert page.locator('#usage-trends').inner_text().endswith(
            'No usage snapshots in the last 30 days: manage.py snapshot_usage takes them (from '
            'cron or a systemd timer), and the notification dispatcher after changes.')
        shoot(page, 'trends-pool-without-snapshots')
    finally:  # the module's tests share the demo cloud
        back = requests.put(url, headers=HEADERS, timeout=90, json={
            'aggregates': aggregates['aggregates'],
            'resource_provider_generation': added.json()['resource_provider_generation']})
        assert back.status_code == 200, back.text


def test_a_chosen_range_and_values_on_hover(page, demo_api):
    """7 days charts the last week as GET /capacity/trends?days=7 gives it;
    the pointer over a chart shows the nearest snapshot's time and numbers."""
    sign_in(page)
    with page.expect_navigation():
        page.click('#usage-trends a[data-days="7"]')
    assert page.locator('#usage-trends strong[data-days="7"]').count() == 1
    week = check_charts(page, demo_api, {}, 'trends-overview-7-days', days=7)
    month = demo_api.get('/capacity/trends', days=30)['resources']
    assert week[0]['points'] < len(month[week[0]['name']]['points'])
    points = demo_api.get('/capacity/trends', days=7)['resources']['VCPU']['points']
    chart = page.locator('.trend-chart[data-resource-class="VCPU"]')
    area = chart.locator('rect.hover-area')
    box = area.bounding_box()
    page.mouse.move(box['x'] + box['width'] - 1, box['y'] + box['height'] / 2)
    newest = points[-1]
    shown = chart.get_attribute('data-hover')
    assert re.match(r'\d{4}-\d\d-\d\d \d\d:\d\d UTC: ', shown), shown  # as the pages write times
    assert shown.endswith(f"used {newest['used']:,} of {newest['capacity']:,.0f} "
                          f"({round(100 * newest['used'] / newest['capacity'])}%)"), shown
    page.mouse.move(box['x'] + 1, box['y'] + box['height'] / 2)
    oldest = points[0]
    percent = round(100 * oldest['used'] / oldest['capacity'])
    assert chart.get_attribute('data-hover').endswith(
        f"used {oldest['used']:,} of {oldest['capacity']:,.0f} ({percent}%)")
    chart.screenshot(path=str(SCREENSHOTS / 'trends-hover.png'))


def test_a_tree_page_charts_its_use_replayed_from_the_event_log(page, demo_api):
    """Two claims on a compute node's tree, then its page: a chart per class
    of the tree, the used line stepping at each claim up to the tree's books
    now (the sum of its providers' usages), with values on hover."""
    root = demo_api.provider_named('r1-rack01-cn01')
    tree = [p for p in demo_api.providers(in_tree=root['uuid']).values()]
    holder = next(p for p in tree if 'VCPU' in demo_api.books(p['uuid']))
    url = f'{demo_api.url}/allocations/'
    consumers = [str(uuid.uuid4()) for _ in range(2)]
    for consumer in consumers:
        claimed = requests.put(url + consumer, headers=HEADERS, timeout=90, json={
            'allocations': {holder['uuid']: {'resources': {'VCPU': 1}}},
            'project_id': 'trend-test', 'user_id': 'trend-test', 'consumer_generation': None,
            'consumer_type': 'INSTANCE'})
        assert claimed.status_code == 204, claimed.text
    try:
        sign_in(page)
        page.goto(f"/ui/trees/{root['uuid']}/")
        page.wait_for_selector('#usage-trends .trend-chart svg')
        assert 'this tree, replayed from the event log' in page.locator(
            '#usage-trends h2').inner_text()
        charts = {c['name']: c for c in page.locator('#usage-trends figure.trend').evaluate_all(
            CHARTS_JS)}
        used_now = sum(requests.get(f"{demo_api.url}/resource_providers/{p['uuid']}/usages",
                                    headers=HEADERS, timeout=90).json()['usages'].get('VCPU', 0)
                       for p in tree)
        vcpu = charts['VCPU']
        assert vcpu['points'] == vcpu['drawn'] == len(vcpu['used']) >= 4
        caption = ' '.join(vcpu['caption'].split())
        assert f'now {used_now:,} of ' in caption, caption
        # The last three vertices: after the first claim, after the second, now.
        baseline = vcpu['area'][0][1]
        heights = [baseline - y for _, y in vcpu['used'][-3:]]
        assert heights[1] == heights[2]
        assert heights[0] == pytest.approx(heights[2] * (used_now - 1) / used_now, abs=0.2)
        chart = page.locator('.trend-chart[data-resource-class="VCPU"]')
        chart.scroll_into_view_if_needed()   # the page's last section
        box = chart.locator('rect.hover-area').bounding_box()
        page.mouse.move(box['x'] + box['width'] - 1, box['y'] + box['height'] / 2)
        assert f'used {used_now:,} of ' in chart.get_attribute('data-hover')
        shoot(page, 'trends-tree')
    finally:  # the module's tests share the demo cloud
        for consumer in consumers:
            assert requests.delete(url + consumer, headers=HEADERS,
                                   timeout=90).status_code == 204
