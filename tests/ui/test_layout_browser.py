"""Every page's layout in a real browser, on the demo cloud: at 1440 px (a
laptop) and 390 px (a phone) no console error (the favicon included, and no
Content-Security-Policy violation) and no horizontal overflow of the page (at
1440 px a wide table scrolls inside itself; at 390 px its rows stack, every
cell on screen); the admin's lists keep names and UUIDs on
one line and its inputs show every digit; every admin list and change page
fits its tables in their boxes at 1440 px (no column cut off) and its forms
at 390 px. Screenshots of every page at both
widths go to test-artifacts/screenshots/layout-*.png (the fixtures are
tests/ui/conftest.py's)."""
import pytest
import requests

from tests.support.browser import NFS
from tests.support.browser import no_server_errors
from tests.support.browser import shoot
from tests.support.browser import sign_in

pytestmark = [pytest.mark.slow, pytest.mark.any_database]

WIDTHS = {'laptop': (1440, 900), 'phone': (390, 844)}
# The page's own width beyond the window's: what a phone would scroll sideways.
OVERFLOW_JS = 'document.documentElement.scrollWidth - document.documentElement.clientWidth'
# The dashboards' table cells not wholly within the window's width.
CELLS_OFF_SCREEN_JS = """() => {
  const width = document.documentElement.clientWidth;
  return Array.from(document.querySelectorAll('main table td')).filter((td) => {
    const box = td.getBoundingClientRect();
    return box.width > 0 && (box.left < -1 || box.right > width + 1);
  }).map((td) => `${td.dataset.label || '?'}: ${td.textContent.trim().slice(0, 40)}`);
}"""


@pytest.fixture(params=list(WIDTHS))
def sized_page(request, browser, demo_server):
    """A signed-out page at one of the widths, collecting console errors."""
    width, height = WIDTHS[request.param]
    context = browser.new_context(base_url=demo_server.url,
                                  viewport={'width': width, 'height': height})
    context.set_default_timeout(90_000)
    page = context.new_page()
    page.width_name = request.param
    page.server_errors, page.console_errors = [], []
    page.on('response', lambda r: r.status >= 500 and page.server_errors.append(
        f'{r.request.method} {r.url} answered {r.status}'))
    page.on('console', lambda m: m.type == 'error' and page.console_errors.append(
        f'{page.url}: {m.text}'))
    page.on('pageerror', lambda e: page.console_errors.append(f'{page.url}: {e}'))
    yield page
    context.close()


def every_page(demo_api):
    """{name: path} of every dashboard page type and the admin's lists."""
    nfs = demo_api.provider_named(NFS)
    (pool, *_) = demo_api.get(f'/resource_providers/{nfs["uuid"]}/aggregates',
                         version='1.19')['aggregates']
    pod = next(iter(demo_api.get('/pods')['pods']))
    numa = next(p for p in demo_api.providers().values() if p['parent_provider_uuid'])
    consumer = next(iter(demo_api.get(f'/resource_providers/{nfs["uuid"]}/allocations')[
        'allocations']))
    return {
        'overview': '/ui/', 'hosts': '/ui/hosts/', 'providers': '/ui/providers/',
        'provider': f'/ui/providers/{nfs["uuid"]}/', 'pools': '/ui/pools/',
        'pool': f'/ui/pools/{pool}/', 'pods': '/ui/pods/', 'pod': f'/ui/pods/{pod["uuid"]}/',
        'tree': f'/ui/trees/{numa["uuid"]}/', 'consumer': f'/ui/consumers/{consumer}/',
        'project': '/ui/projects/demo-db/',
        'usage': '/ui/usage/', 'usage-project': '/ui/usage/?project=demo-db',
        'explorer': '/ui/explorer/?resources=VCPU:1,MEMORY_MB:512,DISK_GB:20&limit=5',
        'audit': '/ui/audit/',
        'capacity': '/ui/capacity/?group_by=aggregate&flavor=medium',
        'what-if': f'/ui/what-if/?add_count=20&add_inventories=VCPU:64,MEMORY_MB:262144,'
                   f'DISK_GB:2000&add_aggregates={pool}&remove_names=r1-*',
        'not-found': '/ui/providers/00000000-0000-4000-8000-000000000000/',
        'admin-providers': '/admin/providers/resourceprovider/',
        'admin-allocations': '/admin/allocations/allocation/',
        'admin-provider': None,  # the NFS share's change page, found from the list
    }


def test_every_page_fits_the_window_without_console_errors(sized_page, demo_api):
    page = sized_page
    sign_in(page)
    paths = every_page(demo_api)
    paths['admin-provider'] = admin_change_page(page, NFS)
    for name, path in paths.items():
        answer = page.goto(path)
        # A Content-Security-Policy on every page, and (below) no violation
        # of it: Chromium reports each as a console error.
        assert "default-src 'self'" in answer.headers['content-security-policy'], path
        page.wait_for_load_state('networkidle')
        shoot(page, f'layout-{page.width_name}-{name}')
        assert page.evaluate(OVERFLOW_JS) <= 0, (page.width_name, path)
        if page.width_name == 'phone' and not name.startswith('admin'):
            # Every cell on screen, the answers ("more fit", utilization,
            # free) among them: no table to scroll sideways.
            assert page.evaluate(CELLS_OFF_SCREEN_JS) == [], path
        if name == 'not-found':  # a styled page with the navigation; its own 404 is logged
            assert page.locator('#not-found').is_visible()
            assert page.locator('header nav a[href="/ui/providers/"]').count() == 1
            page.console_errors.remove(f'{page.url}: Failed to load resource: the server '
                                       'responded with a status of 404 (Not Found)')
        assert not page.console_errors, page.console_errors
    # Signed out: the sign-in form too.
    page.context.clear_cookies()
    page.goto('/accounts/login/')
    shoot(page, f'layout-{page.width_name}-sign-in')
    assert page.evaluate(OVERFLOW_JS) <= 0
    assert not page.console_errors, page.console_errors


# A project's own viewer (a local account in its "project:" group) and a
# signed-in account allowed nothing.
VIEWERS = """
from django.contrib.auth.models import Group, User
tenant, _ = User.objects.get_or_create(username='tenant')
tenant.set_password('pw'); tenant.save()
tenant.groups.add(Group.objects.get_or_create(name='project:demo-db')[0])
nobody, _ = User.objects.get_or_create(username='nobody')
nobody.set_password('pw'); nobody.save()
"""


def test_a_projects_own_page_and_the_not_allowed_page_fit(sized_page, demo_server):
    page = sized_page
    demo_server.manage('shell', '-c', VIEWERS)
    for user, path, name, status in [('tenant', '/ui/', 'my-project', 200),
                                     ('nobody', '/ui/', 'not-allowed', 403)]:
        page.context.clear_cookies()
        sign_in(page, user=user, password='pw')
        answer = page.goto(path)
        assert answer.status == status
        assert "default-src 'self'" in answer.headers['content-security-policy']
        page.wait_for_load_state('networkidle')
        shoot(page, f'layout-{page.width_name}-{name}')
        assert page.evaluate(OVERFLOW_JS) <= 0, (page.width_name, name)
        if status == 403:  # the page's own status is logged
            assert page.locator('#not-allowed').is_visible()
            page.console_errors = [e for e in page.console_errors if '403' not in e]
        else:
            assert page.url.endswith('/ui/projects/demo-db/')
            assert page.locator('#project-usage').is_visible()
            assert page.locator('header nav a').all_inner_texts() == ['My project']
        assert not page.console_errors, page.console_errors


def test_the_api_docs_run_under_the_content_security_policy(sized_page):
    """Swagger UI's start-up script is a file of its own (drf-spectacular's
    split view), so the page renders with no inline script."""
    page = sized_page
    answer = page.goto('/api/docs/')
    assert "default-src 'self'" in answer.headers['content-security-policy']
    page.wait_for_selector('.swagger-ui .info .title')
    page.wait_for_load_state('networkidle')
    assert 'Placement' in page.inner_text('.swagger-ui .info .title')
    assert not page.console_errors, page.console_errors


def admin_change_page(page, name):
    page.goto(f'/admin/providers/resourceprovider/?q={name}')
    return page.locator('#result_list tbody th a').first.get_attribute('href')


def test_the_favicon_is_an_icon(demo_server):
    answer = requests.get(demo_server.url + '/favicon.ico', timeout=30)
    assert answer.status_code == 200
    assert answer.history[0].status_code == 301
    assert answer.headers['Content-Type'] == 'image/svg+xml'
    assert answer.content.startswith(b'<svg')


CELL_LINES_JS = """cells => cells.map(c => {
    const line = parseFloat(getComputedStyle(c).lineHeight) || 18;
    const padding = parseFloat(getComputedStyle(c).paddingTop) +
                    parseFloat(getComputedStyle(c).paddingBottom);
    return Math.round((c.clientHeight - padding) / line); })"""


def test_admin_lists_keep_each_row_on_one_line_and_inputs_show_every_digit(browser, demo_server):
    context = browser.new_context(base_url=demo_server.url,
                                  viewport={'width': 1440, 'height': 900})
    page = context.new_page()
    page.server_errors = []
    try:
        sign_in(page)
        for path in ('/admin/providers/resourceprovider/', '/admin/allocations/allocation/',
                     '/admin/providers/inventory/'):
            page.goto(path)
            lines = page.locator('#result_list tbody td, #result_list tbody th').evaluate_all(
                CELL_LINES_JS)
            assert lines and max(lines) == 1, (path, max(lines))
            # The list's last column is within the window (or the list scrolls).
            assert page.evaluate(OVERFLOW_JS) <= 0, path
        page.goto(admin_change_page(page, NFS))
        amounts = page.locator('.inline-group input.vIntegerField')
        assert amounts.count(), 'no inventory inputs'
        values = amounts.evaluate_all(
            'inputs => inputs.map(i => [i.value, i.scrollWidth <= i.clientWidth])')
        assert all(fits for _, fits in values), values
        page.locator('.inline-group input[name$="-max_unit"]').first.fill('2147483647')
        assert page.locator('.inline-group input[name$="-max_unit"]').first.evaluate(
            'i => i.scrollWidth <= i.clientWidth')
        shoot(page, 'layout-laptop-admin-provider-max-unit')
        # "View site" leads to the dashboards.
        assert page.locator('#user-tools a', has_text='View site').get_attribute('href') == '/ui/'
        no_server_errors(page)
    finally:
        context.close()


# The admin's boxes whose content is wider than they are: a list's or an
# inline's table (which scroll inside themselves), a fieldset, a form row.
# ("table ...": a table's box, or one inside it.)
CUT_OFF_JS = """() => [...document.querySelectorAll(
        '#changelist .results, .inline-group .tabular, #content-main fieldset, .form-row')]
    .filter(box => box.scrollWidth > box.clientWidth + 1)
    .map(box => `${box.closest('.results, .tabular') ? 'table ' : ''}${
        box.id || box.className}: ${box.scrollWidth} px in ${box.clientWidth}`)"""


def admin_pages(page):
    """{name: path} of every model's admin list and the change page of its
    first row (the read-only ones' too)."""
    page.goto('/admin/')
    lists = page.locator('#content-main th[scope=row] a').evaluate_all(
        'links => links.map(a => a.getAttribute("href"))')
    paths = {}
    for path in lists:
        name = path.strip('/').split('/')[-1]
        paths[f'{name} list'] = path
        page.goto(path)
        first = page.locator('#result_list tbody th a, #result_list tbody td a').first
        if first.count():
            paths[name] = first.get_attribute('href')
    return paths


def test_every_admin_page_fits_its_boxes(sized_page):
    """No column cut off at 1440 px (an aggregate's page, a provider's
    inventories, the events list: every list and change page); on a phone
    the page never scrolls sideways and its forms fit, a table scrolling
    inside its own box."""
    page = sized_page
    sign_in(page)
    paths = admin_pages(page)
    assert {'resourceprovider', 'aggregate', 'consumer', 'event list'} <= set(paths)
    cut_off = {}
    for name, path in paths.items():
        # Laid out once loaded (the admin's scripts fetch nothing); no
        # screenshot of forty pages, which cost more than the checks.
        page.goto(path)
        no_server_errors(page)
        assert page.evaluate(OVERFLOW_JS) <= 0, (page.width_name, path)
        boxes = page.evaluate(CUT_OFF_JS)
        if page.width_name == 'phone':
            boxes = [box for box in boxes if not box.startswith('table ')]
        if boxes:
            cut_off[name] = boxes
    assert cut_off == {}, page.width_name
    assert not page.console_errors, page.console_errors
