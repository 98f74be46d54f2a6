"""The dashboards' audit page (/ui/audit/): the findings of
allocations.audit for the cloud's admins, one finding's rows a page at a
time, the live list posted in a form; it deletes nothing, and its queries
do not grow with the cloud or the findings. A consumer the audit deleted
keeps its page, with its history."""
import csv
import io
import json
import re
import uuid

import pytest
from django.contrib.auth.models import Group
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from allocations import services as allocation_services
from allocations.models import Consumer
from allocations.ui.views import LIVE_ROWS
from providers.models import Event
from tests.support.orphans import allocate
from tests.support.orphans import build_cloud
from tests.support.orphans import build_orphans
from tests.support.orphans import live_file
from tests.support.orphans import remove_inventory_behind_placements_back
from tests.support.orphans import run
from tests.support.orphans import written_long_ago
from tests.support.pages import exact
from tests.support.state import unchanged


@pytest.fixture
def cloud(db):
    return build_cloud()


@pytest.fixture
def orphans(cloud):
    return build_orphans(cloud)


def counts(html):
    """{finding key: count shown} of the findings table."""
    return dict(re.findall(r'<tr data-finding="(\w+)"[^>]*>\s*<td>.*?</td>\s*'
                           r'<td class="num">([^<]*)</td>', html, re.S))


def shown_rows(html):
    """(finding shown, [{column: text}]) of the rows table."""
    table = re.search(r'<table id="rows" data-finding="(\w+)">(.*?)</table>', exact(html), re.S)
    rows = [dict(re.findall(r'<td data-column="(\w+)">(?:<a[^>]*>)?([^<]*)', row))
            for row in re.findall(r'<tr>(.*?)</tr>', table.group(2), re.S)]
    return table.group(1), [row for row in rows if row]


def test_the_page_is_for_the_clouds_admins(db):
    response = Client().get('/ui/audit/')
    assert (response.status_code, response['Location']) == (302, '/accounts/login/?next=/ui/audit/')
    member = User.objects.create_user('member', password='pw')
    member.groups.add(Group.objects.create(name='project:p'))   # a project's page only
    client = Client()
    assert client.login(username='member', password='pw')
    assert client.get('/ui/audit/').status_code == 403
    assert client.post('/ui/audit/', {'servers': str(uuid.uuid4())}).status_code == 403


def test_a_clean_cloud_shows_nothing_found(staff, cloud):
    html = staff.get('/ui/audit/').content.decode()
    assert counts(html) == {'several_trees': '0', 'without_inventory': '0',
                            'without_owner': '0', 'over_capacity': '0', 'not_live': '–'}
    assert 'Nothing found.' in html
    assert 'href="/ui/audit/"' in html   # in the navigation


def test_each_finding_lists_its_rows(staff, orphans):
    html = staff.get('/ui/audit/').content.decode()
    assert counts(html) == {'several_trees': '1', 'without_inventory': '1',
                            'without_owner': '1', 'over_capacity': '1', 'not_live': '–'}
    # The first finding with rows is shown without asking.
    finding, rows = shown_rows(html)
    assert finding == 'several_trees'
    assert [row['consumer_uuid'] for row in rows] == [orphans['doubled']]
    html = staff.get('/ui/audit/?finding=without_inventory').content.decode()
    finding, rows = shown_rows(html)
    assert finding == 'without_inventory'
    assert [(row['consumer_uuid'], row['resource_class'], row['used']) for row in rows] == [
        (orphans['instances'][1], 'DISK_GB', '10')]
    assert f'href="/ui/consumers/{orphans["instances"][1]}/"' in html
    _finding, rows = shown_rows(staff.get('/ui/audit/?finding=over_capacity').content.decode())
    assert [(row['provider_name'], row['resource_class']) for row in rows] == [
        ('cn1', 'MEMORY_MB')]


def test_the_consumers_without_owner_it_lists_have_their_pages(staff, orphans):
    """A consumer with an empty project id (the without_owner finding) has
    a page too, there and once deleted (it answered 500: no project page
    to link to)."""
    html = staff.get('/ui/audit/?finding=without_owner').content.decode()
    assert f'href="/ui/consumers/{orphans["no_owner"]}/"' in html
    for deleted in (False, True):
        if deleted:
            allocation_services.allocations_remove_orphaned(
                consumer_uuid=orphans['no_owner'],
                generation=Consumer.objects.get(uuid=orphans['no_owner']).generation)
        response = staff.get(f'/ui/consumers/{orphans["no_owner"]}/')
        assert response.status_code == 200, deleted
        facts = dict(re.findall(r'<dd data-field="(\w+)">(.*?)</dd>', response.content.decode(),
                                re.S))
        assert 'none (empty project id)' in facts['project'], deleted


def test_a_posted_live_list_finds_the_instances_gone_and_deletes_nothing(staff, orphans):
    with unchanged():
        response = staff.post('/ui/audit/', {'servers': '\n'.join(orphans['live'])})
    html = response.content.decode()
    assert counts(html)['not_live'] == '1'
    finding, rows = shown_rows(html)
    assert (finding, [row['consumer_uuid'] for row in rows]) == ('not_live', [orphans['gone']])
    assert f'Judged against {len(orphans["live"])} live servers' in html


def test_a_live_list_that_is_not_uuids_is_refused_with_the_reason(staff, orphans):
    html = staff.post('/ui/audit/', {'servers': 'web-1\nweb-2'}).content.decode()
    assert "line 1 is not a uuid: &#x27;web-1&#x27;" in html
    assert counts(html)['not_live'] == '–'


def test_rows_come_a_page_at_a_time(staff, cloud):
    rps, _instances, _migrations = cloud
    made = [allocate({rps['cn2']: {'MEMORY_MB': 1}}, project='') for _ in range(25)]
    html = staff.get('/ui/audit/?finding=without_owner&per_page=20').content.decode()
    assert len(shown_rows(html)[1]) == 20 and 'page 1 of 2' in html
    html = staff.get('/ui/audit/?finding=without_owner&per_page=20&page=2').content.decode()
    assert [row['consumer_uuid'] for row in shown_rows(html)[1]] == made[20:]


def queries(client, *request):
    with CaptureQueriesContext(connection) as captured:
        response = client.post(*request) if len(request) > 1 else client.get(*request)
    assert response.status_code == 200
    return len(captured)


def test_queries_do_not_grow_with_the_cloud_or_the_findings(staff, cloud):
    rps, instances, _migrations = cloud
    live = {'servers': '\n'.join(instances)}

    def costs():
        return [queries(staff, path) for path in
                ['/ui/audit/', '/ui/audit/?finding=without_inventory',
                 '/ui/audit/?finding=over_capacity']] + [queries(staff, '/ui/audit/', live)]
    allocate({rps['cn1']: {'MEMORY_MB': 1}, rps['cn2']: {'MEMORY_MB': 1}})
    allocate({rps['cn2']: {'MEMORY_MB': 1}})
    written_long_ago()
    remove_inventory_behind_placements_back(rps['cn2'], 'DISK_GB')   # an instance's disk
    before = costs()
    for _ in range(30):
        allocate({rps['cn1']: {'MEMORY_MB': 1}, rps['cn2']: {'MEMORY_MB': 1}})
        allocate({rps['cn2']: {'MEMORY_MB': 1}})
    written_long_ago()
    remove_inventory_behind_placements_back(rps['cn2'], 'MEMORY_MB')
    assert costs() == before


def test_the_live_answer_lists_at_most_its_limit(staff, cloud, monkeypatch):
    monkeypatch.setattr('allocations.ui.views.LIVE_ROWS', 3)
    rps, instances, _migrations = cloud
    for _ in range(5):
        allocate({rps['cn2']: {'MEMORY_MB': 1}})
    written_long_ago()
    html = staff.post('/ui/audit/', {'servers': instances[0]}).content.decode()
    assert counts(html)['not_live'] == '7' and len(shown_rows(html)[1]) == 3
    assert 'The first 3 are listed' in html
    assert LIVE_ROWS == 500


# ---- a consumer the audit deleted: its page and exports, from the event log ----------------

def history(html):
    """[(change, generations)] of a consumer page's history, newest first."""
    return re.findall(r'<tr data-event="\d+" data-type="([^"]*)">.*?<td class="num">([^<]*)</td>',
                      html, re.S)


def exported(response):
    assert response.status_code == 200 and response.streaming
    text = b''.join(response.streaming_content).decode()
    if response['Content-Type'].startswith('text/csv'):
        return list(csv.DictReader(io.StringIO(text)))
    return json.loads(text)


def test_a_consumer_the_audit_deleted_keeps_its_page_and_history(staff, orphans, tmp_path):
    """docs/audit.md sends the admins to the consumer's page to see what
    the audit did: once the consumer is gone, the page still answers, from
    the event log, with its owner, its last generation and its history
    ending in the audit's allocation.delete."""
    gone = orphans['gone']
    generation = Consumer.objects.get(uuid=gone).generation
    assert run('--live', live_file(tmp_path, orphans['live']), '--delete', '--yes')[0] == 1
    assert not Consumer.objects.filter(uuid=gone).exists()

    response = staff.get(f'/ui/consumers/{gone}/')
    assert response.status_code == 200
    html = response.content.decode()
    assert history(html) == [('allocation.delete', f'{generation} → –'),
                             ('allocation.update', f'– → {generation}')]
    assert 'id="deleted"' in html and 'command:placement_audit' in html
    facts = dict(re.findall(r'<dd data-field="(\w+)">(.*?)</dd>', html, re.S))
    assert '>p</a>' in facts['project'] and facts['user'] == 'u'
    assert facts['type'] == 'INSTANCE' and facts['generation'] == str(generation)
    assert 'nothing' in facts['totals'] and 'edit in admin' not in html
    assert 'No allocations' in html

    for export in ('csv', 'json'):
        rows = exported(staff.get(f'/ui/consumers/{gone}/?export={export}'))
        assert [(r['event_type'], r['user_id']) for r in rows] == [
            ('allocation.delete', 'command:placement_audit'), ('allocation.update', '')
            if export == 'csv' else ('allocation.update', None)]
    # A uuid no consumer ever had is not there.
    for path in (f'/ui/consumers/{uuid.uuid4()}/', f'/ui/consumers/{uuid.uuid4()}/?export=csv',
                 '/ui/consumers/not-a-uuid/'):
        assert staff.get(path).status_code == 404, path


def signed_in_to_project(name, project):
    user = User.objects.create_user(name, password='pw')
    user.groups.add(Group.objects.get_or_create(name=f'project:{project}')[0])
    client = Client()
    assert client.login(username=name, password='pw')
    return client


def test_a_deleted_consumers_page_is_its_projects_as_it_was(staff, cloud):
    """Its project's members see the page of a consumer deleted by the API
    (whose event does not name the owner: an earlier one does); other
    projects' do not; and with no event naming its owner left (pruned),
    only the cloud's admins see it."""
    rps, _instances, _migrations = cloud
    consumer = allocate({rps['cn2']: {'VCPU': 1}}, project='p')
    allocation_services.allocations_delete(consumer_uuid=consumer)
    member, stranger = signed_in_to_project('member', 'p'), signed_in_to_project('other', 'q')
    html = member.get(f'/ui/consumers/{consumer}/').content.decode()
    assert [change for change, _ in history(html)] == ['allocation.delete', 'allocation.update']
    assert stranger.get(f'/ui/consumers/{consumer}/').status_code == 404
    assert stranger.get(f'/ui/consumers/{consumer}/?export=csv').status_code == 404
    Event.objects.filter(consumer_uuid=consumer, event_type='allocation.update').delete()
    assert member.get(f'/ui/consumers/{consumer}/').status_code == 404
    html = staff.get(f'/ui/consumers/{consumer}/').content.decode()
    assert history(html) == [('allocation.delete', '1 → –')]
    facts = dict(re.findall(r'<dd data-field="(\w+)">(.*?)</dd>', html, re.S))
    assert 'unknown' in facts['project']
