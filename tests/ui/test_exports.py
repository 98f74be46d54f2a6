"""The dashboards' exports: paced (allocations.ui.exports.chunks: an
export works PLACEMENT_EXPORT_DUTY of its time and waits the rest between
chunks, so its database work leaves room for the claims), and safe to open
(placement_site.downloads: no cell a spreadsheet runs, no file name a
header breaks on)."""
import csv
import io
import re
import types
from urllib.parse import quote
from urllib.parse import unquote

import pytest

from allocations.ui import exports
from placement_site import downloads
from providers.models import ResourceClass
from providers.models import ResourceProvider
from providers.pods import services as pod_services
from providers.pods.selection import BindingRequest
from tests.pods import conftest as pods_conftest
from tests.support.api import new_uuid


class Clock:
    """time.monotonic and time.sleep for exports, moved by hand."""

    def __init__(self):
        self.now, self.slept = 100.0, []

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        self.slept.append(seconds)
        self.now += seconds


@pytest.fixture
def clock(monkeypatch):
    found = Clock()
    monkeypatch.setattr(exports.time, 'monotonic', found.monotonic)
    monkeypatch.setattr(exports.time, 'sleep', found.sleep)
    return found


@pytest.mark.parametrize('duty, waits', [(0.5, [2.0, 3.0]), (0.25, [6.0, 9.0]), (1.0, [])])
def test_an_export_waits_its_share_after_each_chunk(db, settings, clock, duty, waits):
    settings.PLACEMENT_EXPORT_DUTY = duty
    every = ResourceClass.objects.order_by('id')
    read = []
    for index, chunk in enumerate(exports.chunks(every, size=3)):
        read += chunk
        if index < 2:
            clock.now += (2.0, 3.0)[index]   # writing the chunk took this long
    assert read == list(every)   # every row, in order
    assert len(read) > 6
    assert clock.slept[:2] == pytest.approx(waits)


# ---- what a spreadsheet and a browser do with an export ---------------------------------

FORMULAS = ['=HYPERLINK("http://evil.example/x","open")', "=cmd|' /C calc'!A0", '+1+2',
            '-2+3', '@SUM(1,2)', '\t=1+1', '\r=1+1']


# OWASP's list, written here again so that a mistake in the module's own
# is caught, not shared.
RUN_BY_SPREADSHEETS = ('=', '+', '-', '@', '\t', '\r')
NUMBER = re.compile(r'-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?')


def evaluated(rows):
    """The cells of `rows` (read back by the csv module) that a spreadsheet
    would run as a formula."""
    return [value for row in rows for value in row
            if value.startswith(RUN_BY_SPREADSHEETS) and not NUMBER.fullmatch(value)]


def csv_rows(response):
    assert response.status_code == 200, response
    assert response['Content-Type'].startswith('text/csv')
    body = (b''.join(response.streaming_content) if response.streaming else response.content)
    return list(csv.reader(io.StringIO(body.decode(), newline='')))


@pytest.fixture
def hostile_cloud(api):
    """Every name a CSV export writes chosen to be a formula: providers (a
    pool member, a tree's root), projects, users, a pod and its tenants."""
    names = iter(FORMULAS * 3)
    cloud = pods_conftest.Cloud()
    pod = cloud.pod(next(names), {'VCPU': {'total': 64}, 'DISK_GB': {'total': 100}})
    member = cloud.members[pod.name][0]
    ResourceProvider.objects.filter(pk=member.pk).update(name=next(names))
    for project, user in zip(names, names):
        assert api.allocate(new_uuid(), {member.uuid: {'VCPU': 1}}, project=project,
                            user=user).status_code == 204
        pod_services.binding_request(BindingRequest(project))
    return types.SimpleNamespace(pod=pod, root=member, pool=pod.aggregate.uuid)


def test_no_csv_export_hands_a_spreadsheet_a_formula(staff, api, hostile_cloud):
    cloud = hostile_cloud
    exported = {path: csv_rows(staff.get(path)) for path in (
        '/ui/providers/?export=csv', f'/ui/pools/{cloud.pool}/?export=csv',
        f'/ui/trees/{cloud.root.uuid}/?export=csv',
        f'/ui/projects/{quote(FORMULAS[3], safe="")}/?export=csv',
        '/ui/usage/?export=csv&table=project', '/ui/usage/?export=csv&table=user',
        f'/ui/pods/{cloud.pod.uuid}/?export=csv')}
    for group_by in ('root', 'aggregate'):
        exported[group_by] = csv_rows(api.request(
            'GET', f'/capacity?group_by={group_by}&format=csv', version=None))
    for path, rows in exported.items():
        assert evaluated(rows) == [], path
    # Neutralised, not lost: each name is still there behind its apostrophe.
    seen = {value for rows in exported.values() for row in rows for value in row}
    assert {"'" + name for name in FORMULAS} <= seen
    numbers = [row[4:9] for row in exported['root'][1:]]
    assert all(v == '' or NUMBER.fullmatch(v) for row in numbers for v in row)


@pytest.mark.parametrize('name, saved', [
    ('pod "quote"; filename*=UTF-8\'\'evil.html; x="', 'pod-quote-filenameutf-8evilhtml-x'),
    ('pod\r\nSet-Cookie: a=b', 'pod-set-cookie-ab'),
    ('pod\u202egpj.html', 'podgpjhtml'),
    ('Zürich Süd', 'zürich-süd'),
])
def test_a_pods_export_is_saved_under_a_safe_name(staff, name, saved):
    pod = pods_conftest.Cloud().pod(name)
    response = staff.get(f'/ui/pods/{pod.uuid}/?export=csv')
    assert response.status_code == 200
    disposition = response['Content-Disposition']
    params = dict(part.strip().split('=', 1) for part in disposition.split(';')[1:])
    ascii_name = params['filename'].strip('"')
    assert re.fullmatch(r'[a-z0-9_-]+\.csv', ascii_name)
    if saved.isascii():
        assert disposition == f'attachment; filename="pod-{saved}-bindings.csv"'
    else:
        assert unquote(params['filename*'].removeprefix("utf-8''")) == f'pod-{saved}-bindings.csv'


def test_cells_a_spreadsheet_would_run_get_an_apostrophe_and_nothing_else_changes():
    assert [downloads.cell(v) for v in FORMULAS] == ["'" + v for v in FORMULAS]
    kept = ['name', 'cn0001', '-5', '-0.25', '1e-05', 12, -3, 0.5, None, '', "it's"]
    assert [downloads.cell(v) for v in kept] == kept
