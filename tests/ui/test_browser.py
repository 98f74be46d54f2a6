"""The dashboards in a real browser: headless Chromium (Debian's, never a
downloaded one) against a server of the module's own with the demo cloud loaded. Every page's
numbers are checked against what the Placement API answers over HTTP for the
same providers and projects, and every page visited is saved as a full-page
screenshot in test-artifacts/screenshots/."""
import collections
import re
from urllib.parse import urlparse

import pytest

from allocations.ui.paging import PAGE_SIZE
from tests.support.browser import FITS
from tests.support.browser import IMPOSSIBLE
from tests.support.browser import NFS
from tests.support.browser import STAFF
from tests.support.browser import amounts
from tests.support.browser import check_candidates
from tests.support.browser import check_inventory_parts
from tests.support.browser import filled
from tests.support.browser import number
from tests.support.browser import pages
from tests.support.browser import pool_providers
from tests.support.browser import query_of
from tests.support.browser import rows
from tests.support.browser import shoot
from tests.support.browser import sign_in
from tests.support.browser import submit
from tests.support.browser import uuid_in

pytestmark = [pytest.mark.slow, pytest.mark.any_database]


# ---- the tests -------------------------------------------------------------

def test_sign_in_then_the_overview_adds_up_every_provider(page, demo_api):
    """Signed out, /ui/ sends the browser to the login form; a wrong password
    is refused; signed in, the overview's cards and per-class totals are the
    sums of the API's inventories and usages over every provider."""
    page.goto('/ui/')
    assert urlparse(page.url).path == '/accounts/login/', page.url
    assert query_of(page) == {'next': '/ui/'}
    shoot(page, 'login')
    sign_in(page, password='wrong', shot='login-refused')
    assert urlparse(page.url).path == '/accounts/login/'
    assert 'did not match' in page.inner_text('.notice.error')
    sign_in(page)
    assert urlparse(page.url).path == '/ui/', page.url
    assert STAFF in page.inner_text('header .user')
    shoot(page, 'overview')

    providers = demo_api.providers()
    roots = [u for u, p in providers.items() if p['root_provider_uuid'] == u]
    consumers = set()
    for uuid in providers:
        consumers |= set(demo_api.get(f'/resource_providers/{uuid}/allocations')['allocations'])
    projects = {demo_api.get(f'/allocations/{c}')['project_id'] for c in consumers}
    cards = {m: number(page.inner_text(f'[data-metric="{m}"]'))
             for m in ('providers', 'roots', 'consumers', 'projects')}
    assert cards == {'providers': len(providers), 'roots': len(roots),
                     'consumers': len(consumers), 'projects': len(projects)}

    expected = demo_api.summed_books(providers)
    shown = {}
    for row in rows(page, '#classes tbody tr[data-class]'):
        fields = dict(zip(['name', 'providers', 'total', 'reserved', 'capacity', 'used', 'free'],
                          row['cells']))
        shown[row['data']['class']] = fields
    assert set(shown) == set(expected)
    for rc, sums in expected.items():
        fields = shown[rc]
        assert number(fields['providers']) == sums['providers'], rc
        assert number(fields['total']) == sums['total'], rc
        assert number(fields['reserved']) == sums['reserved'], rc
        assert number(fields['capacity']) == round(sums['capacity']), rc
        assert number(fields['used']) == sums['used'], (rc, fields, sums)
        assert number(fields['free']) == round(max(sums['capacity'] - sums['used'], 0)), rc

    # The fullest hosts: each tree's books summed, ranked by its fullest class.
    def tree_books(root):
        return demo_api.summed_books([u for u, p in providers.items()
                                 if p['root_provider_uuid'] == root])

    fullest = rows(page, '#fullest tbody tr')
    assert len(fullest) == 10
    for row in fullest:
        books = tree_books(uuid_in(row['links'][0]))[row['cells'][1]]
        assert number(row['cells'][2]) == books['used'], row
        assert number(row['cells'][3]) == round(books['capacity']), row
    # Nothing fuller than the fullest ten is left out.
    fractions = sorted((max(b['used'] / b['capacity'] for b in tree_books(root).values()
                            if b['capacity'])
                        for root in roots if any(b['capacity']
                                                 for b in tree_books(root).values())),
                       reverse=True)
    shown_fractions = [number(r['cells'][2]) / number(r['cells'][3]) for r in fullest]
    assert shown_fractions == pytest.approx(fractions[:10], abs=1e-3)


def test_providers_filter_sort_and_pages(page, demo_api):
    """The providers table: every row's inventories equal the API's books; a
    trait filter matches GET /resource_providers?required=; sorting by the
    fullest inventory orders the rows; the pages cover the filtered set once."""
    sign_in(page)
    page.click('nav >> text=Providers')
    page.wait_for_url('**/ui/providers/')
    shoot(page, 'providers')
    providers = demo_api.providers()
    assert page.inner_text('.subtitle') == (f'{len(providers)} providers match. '
                                            'Hosts, each tree summed')
    first = rows(page, '#providers tbody tr[data-uuid]')
    assert len(first) == PAGE_SIZE
    assert f'page 1 of {pages(len(providers))}' in page.inner_text('.pagination')
    for row in first:
        check_inventory_parts(demo_api, row['data']['uuid'], row['parts'])

    submit(page, 'form.filters', {'trait': 'HW_NUMA_ROOT'})
    shoot(page, 'providers-filtered')
    numa = demo_api.providers(required='HW_NUMA_ROOT')
    assert page.inner_text('.subtitle').startswith(f'{len(numa)} providers match.')

    # 'fullest' sorts ascending, a second click descending.
    page.click('#providers thead >> text=fullest')
    page.wait_for_url(re.compile(r'sort=utilization'))
    page.click('#providers thead >> text=fullest')
    page.wait_for_url(re.compile(r'sort=-utilization'))
    assert filled(query_of(page)) == {'trait': 'HW_NUMA_ROOT', 'sort': '-utilization'}
    shoot(page, 'providers-sorted')

    seen, order, number_of_page = [], [], 1
    while True:
        page_rows = rows(page, '#providers tbody tr[data-uuid]')
        for row in page_rows:
            uuid = row['data']['uuid']
            check_inventory_parts(demo_api, uuid, row['parts'])
            seen.append(uuid)
            order.append(demo_api.max_utilization(uuid))
        if not page.locator('.pagination >> text=next →').count():
            break
        page.click('.pagination >> text=next →')
        number_of_page += 1
        page.wait_for_url(re.compile(rf'page={number_of_page}'))
        assert filled(query_of(page)) == {
            'trait': 'HW_NUMA_ROOT', 'sort': '-utilization', 'page': str(number_of_page)}
        assert f'page {number_of_page} of {pages(len(numa))}' in page.inner_text('.pagination')
        shoot(page, f'providers-sorted-page{number_of_page}')
    assert number_of_page == pages(len(numa)) == 3
    assert len(seen) == len(set(seen)) and set(seen) == set(numa)
    assert all(a >= b - 1e-9 for a, b in zip(order, order[1:])), order


def test_provider_pages_nfs_share_its_tree_and_numa_node(page, demo_api):
    """The NFS share's page, then a compute node it serves and that node's
    NUMA node, reached through the page links: inventories, usages,
    allocations, traits, aggregates and relations equal the API's."""
    sign_in(page)
    page.goto('/ui/providers/')
    submit(page, 'form.filters', {'name': 'nfs-share'})
    page.click(f'#providers >> text="{NFS}"')
    nfs = demo_api.provider_named(NFS)
    page.wait_for_url(f'**/ui/providers/{nfs["uuid"]}/')
    (aggregate,) = check_provider_page(page, demo_api, nfs, 'provider-nfs-share-1')
    assert urlparse(page.url).query == 'page=2'  # its consumers take two pages
    assert 'shares its inventory through aggregates' in page.inner_text('.subtitle')
    members = demo_api.providers(member_of=aggregate)
    served = sorted(p['name'] for u, p in members.items()
                    if u != nfs['uuid'] and p['parent_provider_uuid'] is None)
    related = page.locator('h2:has-text("Trees this provider shares with") + p a.tag')
    assert related.all_inner_texts() == served
    assert len(served) == 10  # row 1, racks 6-10, two nodes each

    related.first.click()
    node = demo_api.provider_named(served[0])
    page.wait_for_url(f'**/ui/providers/{node["uuid"]}/')
    check_provider_page(page, demo_api, node, f'provider-{served[0]}')
    sharing = page.locator('h2:has-text("Sharing providers serving this tree") + p a.tag')
    assert sharing.all_inner_texts() == [NFS]

    numa_name = f'{served[0]}-numa0'
    page.click(f'.tree >> text="{numa_name}"')
    numa = demo_api.provider_named(numa_name)
    page.wait_for_url(f'**/ui/providers/{numa["uuid"]}/')
    check_provider_page(page, demo_api, numa, 'provider-numa-node')
    tree = demo_api.providers(in_tree=numa['uuid'])
    assert sorted(page.locator('.tree a').all_inner_texts()) == sorted(
        p['name'] for p in tree.values())
    assert page.inner_text('.tree li.current > a') == numa_name
    assert page.locator('#inventories tr[data-class]').count() == 2  # VCPU and MEMORY_MB


def check_provider_page(page, demo_api, provider, shot):
    """A provider page against the API, its consumers page after page (a
    screenshot of each); answers the provider's aggregates."""
    shoot(page, shot)
    uuid = provider['uuid']
    assert page.inner_text('h1') == provider['name']
    subtitle = page.inner_text('.subtitle')
    assert uuid in subtitle and f'generation {provider["generation"]}' in subtitle
    books = demo_api.books(uuid)
    inventory_rows = rows(page, '#inventories tbody tr[data-class]')
    assert {r['data']['class'] for r in inventory_rows} == set(books)
    for row in inventory_rows:
        inv = books[row['data']['class']]
        assert int(row['data']['used']) == inv['used'], row
        assert int(row['data']['capacity']) == round(inv['capacity']), row
        capacity_text, min_max_step, used_text = row['cells'][1:4]
        assert number(capacity_text.split(' = ')[0]) == inv['capacity'], row
        assert capacity_text.replace(',', '').endswith(
            f"= ({inv['total']} − {inv['reserved']}) × {inv['allocation_ratio']}"), row
        assert min_max_step.replace(',', '') == \
            f"{inv['min_unit']} / {inv['max_unit']} / {inv['step_size']}"
        assert number(used_text) == inv['used'], row
    if not books:
        assert page.inner_text('#inventories tbody') == 'No inventory.'

    traits = demo_api.get(f'/resource_providers/{uuid}/traits')['traits']
    panel = page.locator('.panel', has=page.locator('h2', has_text='Traits'))
    assert sorted(panel.locator('span.tag').all_inner_texts()) == sorted(traits)
    aggregates = demo_api.get(f'/resource_providers/{uuid}/aggregates')['aggregates']
    assert sorted(panel.locator('a.tag').all_inner_texts()) == sorted(aggregates)

    allocations = demo_api.get(f'/resource_providers/{uuid}/allocations')['allocations']
    count = len(allocations)
    assert page.inner_text('h2:has(+ #allocations) .pct') == \
        f'({count} consumer{"s" if count != 1 else ""})'
    shown, number_of_page = {}, 1
    while True:
        page_rows = rows(page, '#allocations tbody tr[data-consumer]')
        assert len(page_rows) <= PAGE_SIZE
        for row in page_rows:
            assert row['data']['consumer'] not in shown, row
            shown[row['data']['consumer']] = amounts(row['tags'][-1])
        next_page = page.locator('.pagination >> text=next →')
        if not next_page.count():
            break
        next_page.click()
        number_of_page += 1
        page.wait_for_url(re.compile(rf'\?page={number_of_page}$'))
        assert f'page {number_of_page} of {pages(count)}' in page.inner_text('.pagination')
        shoot(page, f'{shot}-page{number_of_page}')
    assert number_of_page == max(pages(count), 1)
    assert shown == {c: dict(a['resources']) for c, a in allocations.items()}
    return aggregates


def test_pools_add_up_their_members(page, demo_api):
    """The pools list and the NFS share's pool: members and combined
    capacity / used equal the sums of the API's books over the pool's
    providers (the members and the trees of member roots)."""
    sign_in(page)
    page.click('nav >> text=Pools')
    page.wait_for_url('**/ui/pools/')
    shoot(page, 'pools')
    nfs = demo_api.provider_named(NFS)
    (nfs_aggregate,) = demo_api.get(f'/resource_providers/{nfs["uuid"]}/aggregates')['aggregates']
    pool_rows = rows(page, '#aggregates tbody tr[data-aggregate]')
    assert len(pool_rows) == 5  # row1-3, the NFS share's, the IPv4 segment's
    for row in pool_rows:
        members = demo_api.providers(member_of=row['data']['aggregate'])
        assert number(row['cells'][2]) == len(members), row
        sums = demo_api.summed_books(pool_providers(demo_api, members))
        assert {p['class'] for p in row['parts']} == set(sums), row
        for part in row['parts']:
            used, capacity = re.search(r'([\d,]+) / ([\d,.]+)$', part['text']).groups()
            assert number(used) == sums[part['class']]['used'], part
            assert number(capacity) == round(sums[part['class']]['capacity']), part

    # Named by its one sharing provider, the share.
    page.click(f'#aggregates tr[data-aggregate="{nfs_aggregate}"] td[data-field="name"] a')
    page.wait_for_url(f'**/ui/pools/{nfs_aggregate}/')
    shoot(page, 'pool-nfs-share-1')
    assert page.inner_text('h1') == f'Pool {NFS}'
    members = demo_api.providers(member_of=nfs_aggregate)
    assert page.inner_text('.subtitle') == f'{len(members)} members.'
    sums = demo_api.summed_books(pool_providers(demo_api, members))
    combined = rows(page, '#pool tbody tr[data-class]')
    # The share's DISK_GB, and what the trees of the diskless nodes in it hold.
    assert {r['data']['class'] for r in combined} == set(sums) >= {'DISK_GB', 'VCPU'}
    for row in combined:
        expected = sums[row['data']['class']]
        assert number(row['cells'][1]) == expected['providers'], row
        assert number(row['cells'][2]) == round(expected['capacity']), row
        assert number(row['cells'][3]) == expected['used'], row
    # Listed: every provider the books count, those not members by the member root.
    member_rows = rows(page, '#members tbody tr[data-uuid]')
    assert {r['data']['uuid'] for r in member_rows} == pool_providers(demo_api, members)
    every = demo_api.providers()
    for row in member_rows:
        uuid = row['data']['uuid']
        root = every[every[uuid]['root_provider_uuid']]['name']
        role = ('shares its inventory' if uuid == nfs['uuid'] else
                'tree root' if uuid in members else f'in the tree of member {root}')
        assert row['cells'][1] == role, row
        lines = [re.sub(r'\s+', ' ', line).strip().replace(',', '')
                 for line in row['cells'][2].split('\n')]
        expected = [f"{rc} {inv['used'] / inv['capacity']:.0%} "
                    f"{inv['used']} / {round(inv['capacity'])}"
                    for rc, inv in demo_api.books(uuid).items()]
        assert [line for line in lines if line] == (expected or ['no inventory']), row


def test_usage_by_project_type_and_user_equals_get_usages(page, demo_api):
    """The usage page, unfiltered then for one project: per project the sums
    of GET /usages at 1.9, per consumer type the counts and sums at 1.39, per
    user the sums at 1.9, and the top consumers what they hold."""
    sign_in(page)
    page.click('nav >> text=Usage')
    page.wait_for_url('**/ui/usage/')
    shoot(page, 'usage')
    providers = demo_api.providers()
    everything = demo_api.summed_books(providers)
    projects = check_usage_page(page, demo_api)
    assert len(projects) == 5
    # No project is missing: the rows add up to the cloud's usage.
    totals = collections.Counter()
    for usages in projects.values():
        totals.update(usages)
    assert dict(totals) == {rc: s['used'] for rc, s in everything.items() if s['used']}

    submit(page, 'form.filters', {'project': 'demo-db', 'top_class': 'MEMORY_MB'})
    assert query_of(page)['project'] == 'demo-db'
    shoot(page, 'usage-demo-db')
    assert list(check_usage_page(page, demo_api, top_class='MEMORY_MB')) == ['demo-db']
    for table in ('#by-type', '#by-user', '#top'):
        assert {r['data']['project'] if table != '#top' else r['cells'][1]
                for r in rows(page, f'{table} tbody tr')} == {'demo-db'}, table


def check_usage_page(page, demo_api, top_class='VCPU'):
    """The usage page's tables against the API; answers {project: usages}."""
    by_project = {}
    for row in rows(page, '#by-project tbody tr[data-project]'):
        project = row['data']['project']
        shown = {p['class']: number(p['text']) for p in row['parts'] if p['text']}
        usages = demo_api.get('/usages', version='1.9', project_id=project)['usages']
        assert shown == usages, project
        by_type = demo_api.get('/usages', project_id=project)['usages']
        assert number(row['cells'][1]) == sum(t['consumer_count'] for t in by_type.values())
        by_project[project] = shown
    assert by_project

    for row in rows(page, '#by-type tbody tr[data-project]'):
        by_type = demo_api.get('/usages', project_id=row['data']['project'])['usages']
        expected = dict(by_type[row['data']['type']])
        shown = {p['class']: number(p['text']) for p in row['parts'] if p['text']}
        assert dict(shown, consumer_count=int(number(row['cells'][2]))) == expected, row

    for row in rows(page, '#by-user tbody tr[data-project]'):
        project, user = row['data']['project'], row['data']['user']
        shown = {p['class']: number(p['text']) for p in row['parts'] if p['text']}
        assert shown == demo_api.get('/usages', version='1.9', project_id=project,
                                user_id=user)['usages'], row
        by_type = demo_api.get('/usages', project_id=project, user_id=user)['usages']
        assert number(row['cells'][2]) == sum(t['consumer_count'] for t in by_type.values())

    top = rows(page, '#top tbody tr[data-consumer]')
    assert top, top_class
    held_amounts = []
    for row in top:
        body = demo_api.get(f'/allocations/{row["data"]["consumer"]}')
        holdings = collections.Counter()
        for entry in body['allocations'].values():
            holdings.update(entry['resources'])
        project, user, kind, amount = row['cells'][1:5]
        assert (project, user, kind) == (body['project_id'], body['user_id'],
                                         body['consumer_type']), row
        assert number(amount) == holdings[top_class], row
        assert amounts(row['tags'][5]) == dict(holdings), row
        held_amounts.append(number(amount))
    assert held_amounts == sorted(held_amounts, reverse=True)
    return by_project


def test_candidate_explorer_fits_and_explains(page, demo_api):
    """A fitting request shows the candidates GET /allocation_candidates
    answers (limited, then all); an impossible one shows "Nothing fits." and
    the explanation naming the constraint."""
    sign_in(page)
    page.click('nav >> text=Candidate explorer')
    page.wait_for_url('**/ui/explorer/')
    shoot(page, 'explorer')

    submit(page, 'form.explorer', {'resources': FITS, 'limit': '20'})
    shoot(page, 'explorer-fits')
    limited = demo_api.candidates(FITS, limit=20)
    everything = demo_api.candidates(FITS)
    assert len(limited['allocation_requests']) == min(len(everything['allocation_requests']), 20)
    check_candidates(page, limited)

    # No limit: as many as the explorer's budget shows (docs/serving.md).
    submit(page, 'form.explorer', {'resources': FITS, 'limit': ''})
    shoot(page, 'explorer-fits-unlimited')
    assert len(everything['allocation_requests']) > 100
    check_candidates(page, demo_api.candidates(FITS, limit=100))

    submit(page, 'form.explorer', {'resources': IMPOSSIBLE, 'limit': '20'})
    shoot(page, 'explorer-nothing-fits')
    assert demo_api.candidates(IMPOSSIBLE)['allocation_requests'] == []
    assert page.locator('#candidate-count').count() == 0
    notice = page.locator('#no-candidates')
    assert notice.inner_text().startswith('Nothing fits.')
    explanation = page.locator('#no-candidates .explanation').all_inner_texts()
    roots = [u for u, p in demo_api.providers().items() if p['root_provider_uuid'] == u]
    # Every tree stopped, each by the limit that binds it (max_unit and
    # capacity at once on the compute nodes; no VCPU at all on the shares).
    assert explanation[0].startswith(
        f'unsuffixed group: {len(roots):,} trees cannot take 100,000 VCPU: '), explanation[0]
    explained = demo_api.get('/explain/allocation_candidates', resources=IMPOSSIBLE)
    assert explanation == explained['explanation']
    # The closest trees, as the explain endpoint names them.
    assert explanation[1].startswith('unsuffixed group, closest: ')
    shown = page.locator('#near-misses tbody tr').evaluate_all(
        "rows => rows.map(r => [...r.cells].map(c => c.innerText.trim()))")
    assert shown == [['(unsuffixed)', m['tree'], m['provider'], m['text'][len(m['tree']) + 1:],
                      m['change']] for m in explained['near_misses']]
    assert len(shown) == 3


def test_candidate_explorer_suggests_root_required(page, demo_api):
    """The demo's compute nodes have HW_CPU_X86_AVX2 on the root and their
    VCPU and MEMORY_MB on NUMA nodes: asking `required` finds nothing, the
    explorer says why and links the request with root_required, which finds
    the candidates GET /allocation_candidates answers for it."""
    sign_in(page)
    page.goto('/ui/explorer/')
    wanted = {'resources': 'VCPU:2,MEMORY_MB:2048', 'required': 'HW_CPU_X86_AVX2'}
    submit(page, 'form.explorer', {**wanted, 'limit': '20'})
    shoot(page, 'explorer-root-trait')
    assert page.locator('#candidate-count').count() == 0
    explained = demo_api.get('/explain/allocation_candidates', **wanted)
    (suggestion,) = explained['suggestions']
    assert suggestion['query'] == 'resources=VCPU:2,MEMORY_MB:2048&root_required=HW_CPU_X86_AVX2'
    assert page.locator('.suggestion').inner_text().startswith(suggestion['text'])
    with page.expect_navigation():
        page.click('.suggestion a.rerun')
    shoot(page, 'explorer-root-required')
    assert query_of(page) == {'resources': wanted['resources'], 'limit': '20',
                              'root_required': 'HW_CPU_X86_AVX2'}
    assert page.input_value('form.explorer [name="required"]') == ''
    assert page.input_value('form.explorer [name="root_required"]') == 'HW_CPU_X86_AVX2'
    check_candidates(page, demo_api.candidates(wanted['resources'], limit=20,
                                          root_required='HW_CPU_X86_AVX2'))
    everything = demo_api.get('/allocation_candidates?' + suggestion['query'])
    trees = {everything['provider_summaries'][uuid]['root_provider_uuid']
             for request in everything['allocation_requests'] for uuid in request['allocations']}
    assert len(trees) == suggestion['trees'] > suggestion['trees_now'] == 0
