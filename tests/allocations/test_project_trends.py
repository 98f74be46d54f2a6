"""Usage trends per project (allocations.project_trends): taken with every
usage snapshot, equal to what the project held at that moment, read back
per class in time order with their growth, pruned with the snapshots, and
charted on the project's page."""
import functools
import uuid as uuid_lib
from datetime import UTC
from datetime import datetime
from datetime import timedelta

import pytest

from allocations import project_trends
from allocations import services as allocation_services
from allocations.models import Project
from allocations.models import ProjectUsageSnapshot
from allocations.ui import reports
from providers import trends
from tests.support.admin import assert_admin_read_only
from tests.support.admin import changelist
from tests.support.factories import add_allocation
from tests.support.factories import add_provider
from tests.support.pages import exact
from tests.support.state import count_queries

pytestmark = pytest.mark.django_db
T0 = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
DAY = timedelta(days=1)


@pytest.fixture
def node(db):
    return add_provider('node', inventories={'VCPU': {'total': 64},
                                             'MEMORY_MB': {'total': 65536}})


def project(external_id='p'):
    return Project.objects.get(external_id=external_id)


def test_each_snapshot_holds_what_each_project_held_then(node):
    add_allocation(node, VCPU=2, MEMORY_MB=1024)
    trends.snapshot_take(at=T0)
    add_allocation(node, VCPU=4)
    trends.snapshot_take(at=T0 + DAY)
    found = {(row.taken_at, row.resource_class.name): (row.used, row.consumers)
             for row in ProjectUsageSnapshot.objects.filter(project=project())}
    assert found == {(T0, 'VCPU'): (2, 1), (T0, 'MEMORY_MB'): (1024, 1),
                     (T0 + DAY, 'VCPU'): (6, 2), (T0 + DAY, 'MEMORY_MB'): (1024, 1)}
    assert reports.project_usage(project()) == {'VCPU': 6, 'MEMORY_MB': 1024}


def test_a_project_trend_in_time_order_from_since_with_its_growth(node):
    for day in range(4):
        add_allocation(node, VCPU=3)
        trends.snapshot_take(at=T0 + day * DAY)
    found = {t.name: t for t in project_trends.project_trends(project(), since=T0 + DAY)}
    vcpu = found['VCPU']
    assert [(p.taken_at, p.used, p.providers, p.capacity) for p in vcpu.points] == [
        (T0 + DAY, 6, 2, None), (T0 + 2 * DAY, 9, 3, None), (T0 + 3 * DAY, 12, 4, None)]
    assert vcpu.forecast.slope_per_day == pytest.approx(3.0)
    assert trends.describe_growth(vcpu.forecast) == 'growing by about 3 a day'
    assert trends.describe_growth(trends.growth(vcpu.points[:1])) == \
        'not enough history for a trend'


def test_project_rows_past_the_retention_go_with_the_snapshots(node, settings):
    settings.PLACEMENT_TREND_RETENTION_DAYS = 2
    add_allocation(node, VCPU=1)
    trends.snapshot_take(at=T0)
    trends.snapshot_take(at=T0 + 3 * DAY)
    assert set(ProjectUsageSnapshot.objects.values_list('taken_at', flat=True)) == {T0 + 3 * DAY}


def test_the_project_page_charts_its_classes(node, staff):
    add_allocation(node, VCPU=1)
    now = datetime.now(UTC)
    trends.snapshot_take(at=now - DAY)
    add_allocation(node, VCPU=2)
    trends.snapshot_take(at=now)
    page = staff.get('/ui/projects/p/')
    assert page.status_code == 200
    (chart,) = [c for c in page.context['trend_charts']['chart_data'] if c['name'] == 'VCPU']
    assert [(capacity, used) for _, capacity, used in chart['points']] == [(None, 1), (None, 3)]
    text = exact(page.content.decode())
    assert 'last 30 days, this project' in text
    assert 'now 3 held by 2 consumers' in text
    assert 'growing by about 2 a day' in text


def test_the_admin_lists_project_snapshots_read_only(node, admin_client):
    add_allocation(node, VCPU=2, MEMORY_MB=1024)
    trends.snapshot_take(at=T0)
    trends.snapshot_take(at=T0 + DAY)
    url = '/admin/allocations/projectusagesnapshot/'
    listed = functools.partial(changelist, admin_client, url)
    assert [(s.taken_at, s.resource_class.name, s.used) for s in listed()] == [
        (T0 + DAY, 'VCPU', 2), (T0 + DAY, 'MEMORY_MB', 1024),
        (T0, 'VCPU', 2), (T0, 'MEMORY_MB', 1024)]                 # newest first
    assert len(listed('?q=p')) == 4 and not listed('?q=nobody')
    assert_admin_read_only(admin_client, url, ProjectUsageSnapshot.objects.first())
    assert ProjectUsageSnapshot.objects.count() == 4
    few = count_queries(listed)
    for n in range(5):
        allocation_services.allocations_replace([allocation_services.ConsumerAllocations(
            consumer_uuid=str(uuid_lib.uuid4()), allocations={node.uuid: {'VCPU': 1}},
            project_id=f'other{n}', user_id='u', generation=None)])
    trends.snapshot_take(at=T0 + 2 * DAY)
    assert count_queries(listed) == few
