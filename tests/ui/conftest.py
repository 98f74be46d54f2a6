"""The browser tests' fixtures: Debian's chromium, once per module, and a
demo server of the module's own (tests/support/browser.py has the helpers)."""
import os

import pytest

from scripts.harness.placement import Server
from tests.support.browser import CHROMIUM
from tests.support.browser import CHROMIUM_ARGS
from tests.support.browser import PASSWORD
from tests.support.browser import SCREENSHOTS
from tests.support.browser import STAFF
from tests.support.browser import Api


@pytest.fixture(scope='module')
def chromium():
    """Debian's chromium; a missing one fails the tests (no browser is ever
    downloaded)."""
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: the browser tests need Debian's chromium "
                    '(apt-get install chromium); they never download a browser.')
    return CHROMIUM


@pytest.fixture(scope='module')
def demo_server(tmp_path_factory):
    """Placement as scripts/run.sh serves it (gunicorn, our config file) on
    an SQLite file of the module's own, migrated, with the demo cloud and the
    staff user loaded, once for the module. Its tests read the cloud over
    HTTP; the few that change it put it back. A server process of its own,
    not pytest-django's live_server: that one makes every test
    transactional, emptying the tables after each."""
    base = tmp_path_factory.mktemp('demo-server')
    # Keystone's sign-in beside local accounts: the form shows its fields.
    server = Server(base, database_url=f'sqlite:///{base / "placement.sqlite3"}',
                    env={'PLACEMENT_UI_AUTH': 'django,keystone'})
    server.manage('migrate', '--noinput')
    server.manage('load_demo', '--size', 'small', '--staff-user', STAFF, '--password', PASSWORD)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def demo_api(demo_server):
    """The Placement API of the demo cloud, over HTTP."""
    return Api(demo_server.url)


@pytest.fixture(scope='module')
def browser(chromium):
    """Headless chromium, once for the module."""
    from playwright.sync_api import sync_playwright
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser, demo_server):
    """A page of its own (no cookies: signed out) on the demo server."""
    context = browser.new_context(base_url=demo_server.url,
                                  viewport={'width': 1366, 'height': 900})
    context.set_default_timeout(90_000)
    page = context.new_page()
    page.server_errors = []
    page.on('response', lambda r: r.status >= 500 and page.server_errors.append(
        f'{r.request.method} {r.url} answered {r.status}'))
    yield page
    context.close()
