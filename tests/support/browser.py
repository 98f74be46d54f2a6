"""The dashboards' browser tests' helpers: the Placement API of the demo
server over HTTP, and reading pages (rows, amounts, screenshots, sign-in).
The fixtures that start the server and the browser are tests/ui/conftest.py's."""
import collections
import contextlib
import math
import os
import re
from pathlib import Path
from urllib.parse import parse_qs
from urllib.parse import urlparse

import requests

from allocations.ui.paging import PAGE_SIZE
from allocations.ui.templatetags import amount
from scripts.harness.api import HEADERS

CHROMIUM = '/usr/bin/chromium'
CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking',
                 '--disable-component-update', '--disable-sync', '--no-first-run']
SCREENSHOTS = Path(__file__).resolve().parents[2] / 'test-artifacts' / 'screenshots'
STAFF, PASSWORD = 'operator', 'browser-test-pw-7Q'
NFS = 'nfs-share-1'
FITS = 'VCPU:1,MEMORY_MB:512,DISK_GB:100'
IMPOSSIBLE = 'VCPU:100000'


# ---- the Placement API over HTTP -------------------------------------------

class Api:
    """GETs against the demo server with an admin token; per-provider books cached.
    A connection per request: on a kept-alive one the live server's replies
    wait out a 40 ms delayed ACK."""

    def __init__(self, url):
        self.url = url
        self._books = {}

    def get(self, path, version=None, **params):
        headers = dict(HEADERS)
        if version:
            headers['OpenStack-API-Version'] = f'placement {version}'
        response = requests.get(self.url + path, params=params, headers=headers, timeout=90)
        assert response.status_code == 200, (path, params, response.status_code, response.text)
        return response.json()

    def providers(self, **params):
        """{uuid: provider} of GET /resource_providers with the query."""
        body = self.get('/resource_providers', **params)
        return {p['uuid']: p for p in body['resource_providers']}

    def provider_named(self, name):
        (provider,) = self.providers(name=name).values()
        return provider

    def books(self, uuid):
        """{class: inventory + used + capacity} from /inventories and /usages."""
        if uuid not in self._books:
            inventories = self.get(f'/resource_providers/{uuid}/inventories')['inventories']
            usages = self.get(f'/resource_providers/{uuid}/usages')['usages']
            assert set(usages) <= set(inventories), (uuid, usages, inventories)
            self._books[uuid] = {
                rc: dict(inv, used=usages.get(rc, 0),
                         capacity=(inv['total'] - inv['reserved']) * inv['allocation_ratio'])
                for rc, inv in inventories.items()}
        return self._books[uuid]

    def summed_books(self, uuids):
        """{class: {total, reserved, capacity, used, providers}} over the providers."""
        sums = collections.defaultdict(collections.Counter)
        for uuid in uuids:
            for rc, inv in self.books(uuid).items():
                sums[rc].update(total=inv['total'], reserved=inv['reserved'],
                                capacity=inv['capacity'], used=inv['used'], providers=1)
        return sums

    def max_utilization(self, uuid):
        """The fullest inventory's used / capacity, None without capacity."""
        fractions = [inv['used'] / inv['capacity'] for inv in self.books(uuid).values()
                     if inv['capacity']]
        return max(fractions) if fractions else None

    def candidates(self, resources, **params):
        return self.get('/allocation_candidates', resources=resources, **params)


def number(text):
    """A number as the pages print it ('1,470', '76', '101376.0')."""
    return float(text.replace(',', '').strip())


def held(allocations):
    """{provider uuid: {class: amount}} of an allocations body, comparable."""
    return {uuid: dict(entry['resources']) for uuid, entry in allocations.items()}


def shoot(page, name):
    """A screenshot of the page as it stands (no server error so far): the
    window's, or the full page's with PLACEMENT_FULL_SCREENSHOTS=1 (to look
    at every page whole; a full page costs a second or more each, which CI
    does not spend)."""
    page.screenshot(path=str(SCREENSHOTS / f'{name}.png'),
                    full_page=bool(os.environ.get('PLACEMENT_FULL_SCREENSHOTS')))
    no_server_errors(page)


def no_server_errors(page):
    assert not page.server_errors, f'server errors: {page.server_errors}'


def sign_in(page, password=PASSWORD, shot=None, user=STAFF):
    """Sign in through the login form; `shot`: a screenshot of the answer."""
    page.goto('/accounts/login/?next=/ui/')
    page.fill('#id_username', user)
    page.fill('#id_password', password)
    with page.expect_navigation():
        page.click('main button[type=submit]')
    no_server_errors(page)
    if shot:
        shoot(page, shot)


def submit(page, form, fields):
    """Fill the form's fields ({name: value}) and submit it."""
    for name, value in fields.items():
        field = page.locator(f'{form} [name="{name}"]')
        if field.evaluate('e => e.tagName') == 'SELECT':
            field.select_option(value)
        else:
            field.fill(value)
    with page.expect_navigation():
        page.click(f'{form} button[type=submit]')
    no_server_errors(page)


def query_of(page):
    return {k: v[0] for k, v in parse_qs(urlparse(page.url).query).items()}


ROWS_JS = """rows => rows.map(r => ({data: {...r.dataset},
    cells: [...r.cells].map(c => c.innerText.trim()),
    links: [...r.querySelectorAll('a')].map(a => a.getAttribute('href')),
    tags: [...r.cells].map(c => [...c.querySelectorAll('.tag')].map(t => t.innerText.trim())),
    parts: [...r.querySelectorAll('[data-class]')].map(d => ({...d.dataset,
        text: d.innerText.trim()}))}))"""

# An amount (templatetags.in_unit, '5.88 TiB') shows its exact figure (its
# title's, '6,160,384'), and back.
EXACT_JS = """() => document.querySelectorAll('.amount[title]').forEach(a => {
    a.dataset.shown = a.textContent; a.textContent = a.title.split(' ')[0]; })"""
SHOWN_JS = """() => document.querySelectorAll('.amount[data-shown]').forEach(a => {
    a.textContent = a.dataset.shown; delete a.dataset.shown; })"""


@contextlib.contextmanager
def exact_amounts(page):
    """The page's amounts read as the API gives them, while inside."""
    page.evaluate(EXACT_JS)
    try:
        yield
    finally:
        page.evaluate(SHOWN_JS)


def rows(page, selector):
    """Each matching table row: data-* attributes, cell texts, links, tags
    per cell, and its data-class parts (with their data-* and text), every
    amount as its exact figure."""
    with exact_amounts(page):
        return page.locator(selector).evaluate_all(ROWS_JS)


def amounts(tags):
    """{class: amount} of tags such as 'VCPU 4' or 'DISK_GB 4,000'."""
    return {name: int(number(amount)) for name, amount in (tag.split(' ') for tag in tags)}


def filled(query):
    return {k: v for k, v in query.items() if v}


def pages(count):
    return math.ceil(count / PAGE_SIZE)


def uuid_in(href):
    return re.search(r'/([0-9a-f-]{36})/', href).group(1)


def check_inventory_parts(api, uuid, parts):
    """A providers-table cell's inventories (data-used, data-capacity and the
    'used / capacity' text) against the API's books for the provider."""
    books = api.books(uuid)
    assert {p['class'] for p in parts} == set(books), uuid
    for part in parts:
        inv = books[part['class']]
        assert int(part['used']) == inv['used'], (uuid, part)
        assert int(part['capacity']) == round(inv['capacity']), (uuid, part)
        used, capacity = re.search(r'([\d,]+) / ([\d,.]+)$', part['text']).groups()
        assert (number(used), number(capacity)) == (inv['used'], round(inv['capacity'])), part


def pool_providers(api, members):
    """A pool's providers as member_of reads them: its members, and every
    provider in the tree of a member root."""
    providers = set(members)
    for uuid, member in members.items():
        if member['root_provider_uuid'] == uuid:
            providers |= set(api.providers(in_tree=uuid))
    return providers


def check_candidates(page, body):
    """The explorer's candidates and provider summaries equal the body's."""
    count = len(body['allocation_requests'])
    assert page.inner_text('#candidate-count') == f'{count} candidate{"s" if count != 1 else ""}'
    with exact_amounts(page):
        shown = page.locator('#candidates tbody tr').evaluate_all("""rows => rows.map(r =>
            [...r.cells[1].querySelectorAll(':scope > div')].map(line => [
                line.querySelector('a').getAttribute('href'),
                [...line.querySelectorAll('.tag')].map(t => t.innerText.trim())]))""")
    assert [{uuid_in(href): amounts(tags) for href, tags in lines} for lines in shown] == \
        [held(r['allocations']) for r in body['allocation_requests']]

    summaries = {
        uuid_in(href): dict(zip(classes, labels))
        for href, classes, labels in page.locator('#summaries tbody tr').evaluate_all(
            """rows => rows.map(r => [r.cells[0].querySelector('a').getAttribute('href'),
                [...r.cells[1].querySelectorAll('.mono')].map(m => m.innerText.trim()),
                [...r.cells[1].querySelectorAll('svg.bar')].map(b => [b.dataset.used,
                    b.dataset.capacity, b.getAttribute('aria-label')])])""")}
    expected = {uuid: s['resources'] for uuid, s in body['provider_summaries'].items()}
    assert set(summaries) == set(expected)
    for uuid, bars in summaries.items():
        assert set(bars) == set(expected[uuid]), uuid
        for rc, (used, capacity, label) in bars.items():
            books = expected[uuid][rc]
            assert (float(used), float(capacity)) == (books['used'], books['capacity']), uuid
            # The title in the class's units (GiB, TiB for DISK_GB).
            assert label.startswith(f"{amount(books['used'], rc)} of "
                                    f"{amount(books['capacity'], rc)} used ("), (uuid, label)
