"""The candidate explorer's budget (docs/serving.md): at most 8 request
groups and 100 candidates, refused with a form error before any search
runs; a search stopped when its time is spent, and a page larger than
4 MiB not sent, each with a clear message, never a 500."""
import logging
import re
import sys
import time

import pytest

from allocations.ui import explorer
from allocations.ui import forms
from placement_site import budgets
from providers import candidates
from tests.support.factories import add_provider


@pytest.fixture
def hosts(db):
    """Two compute nodes with two NUMA nodes each, 8 VCPU per NUMA node."""
    for name in ('cn01', 'cn02'):
        root = add_provider(name)
        for i in range(2):
            add_provider(f'{name}-numa{i}', parent=root, inventories={'VCPU': {'total': 8}})


@pytest.fixture
def searches(monkeypatch):
    """The explorer's searches, counted as they start."""
    started = []
    for name in ('explain_candidates', 'select_candidates'):
        search = getattr(candidates, name)

        def counted(*args, _search=search, **kwargs):
            started.append(_search)
            return _search(*args, **kwargs)
        monkeypatch.setattr(candidates, name, counted)
    return started


def explore(client, **params):
    return client.get('/ui/explorer/', params)


def groups(count):
    return '\n'.join(f'_G{n} resources=VCPU:1' for n in range(count))


def error_of(page):
    found = re.search(r'<ul class="errorlist[^"]*"[^>]*>(.*?)</ul>', page, re.DOTALL)
    return re.sub(r'<[^>]+>', '', found.group(1)).strip() if found else None


def notice(page):
    found = re.search(r'<div class="notice error" id="error">(.*?)</div>', page, re.DOTALL)
    return found.group(1).strip() if found else None


def test_more_than_eight_groups_are_refused_before_any_search(staff, hosts, searches):
    answer = explore(staff, resources='VCPU:1', groups=groups(8), group_policy='none')
    assert answer.status_code == 200
    assert error_of(answer.content.decode()).startswith(
        'At most 8 request groups, the unsuffixed one and the suffixed ones together: this '
        'asks for 9.')
    assert searches == []
    assert 'id="candidates"' not in answer.content.decode()


def test_eight_groups_are_searched(staff, hosts, searches):
    answer = explore(staff, resources='VCPU:1', groups=groups(7), group_policy='none', limit=5)
    page = answer.content.decode()
    assert answer.status_code == 200 and error_of(page) is None
    assert searches
    assert re.findall(r'id="candidate-count">([^<]*)<', page) == ['5 candidates']


def test_a_limit_over_a_hundred_is_refused_before_any_search(staff, hosts, searches):
    answer = explore(staff, resources='VCPU:1', limit=101)
    assert error_of(answer.content.decode()) == (
        'The explorer shows at most 100 candidates (its budget): ask for fewer, or ask '
        'GET /allocation_candidates itself for more.')
    assert searches == []


def test_an_empty_limit_shows_at_most_a_hundred(staff, hosts):
    page = explore(staff, resources='VCPU:1', limit='').content.decode()
    assert 'GET /allocation_candidates?resources=VCPU:1&amp;limit=100</code>' in page
    # The form's default is the one it had.
    assert forms.ExplorerForm().fields['limit'].initial == 20


def test_the_form_counts_groups_by_suffix():
    form = forms.ExplorerForm({'resources': 'VCPU:1', 'groups': '_A resources=VCPU:1\n'
                               '_A required=CUSTOM_X\n\n_B resources=MEMORY_MB:1'})
    assert form.is_valid(), form.errors
    assert form.request_groups() == ['', '_A', '_B']
    assert forms.ExplorerForm({'groups': groups(8)}).is_valid()
    assert not forms.ExplorerForm({'groups': groups(9)}).is_valid()


def slow_combining(*args, **kwargs):
    """Stands for combining that would take minutes: pure Python steps."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        sum(range(1000))
    raise AssertionError('not stopped by the search budget')


def test_a_search_past_its_time_is_stopped_with_a_clear_message(staff, hosts, settings,
                                                                 monkeypatch, caplog):
    settings.PLACEMENT_OPERATOR_STATEMENT_TIMEOUT_SECONDS = 0.5
    monkeypatch.setattr(explorer, 'SEARCH_MODULES',
                        (*explorer.SEARCH_MODULES, sys.modules[__name__]))
    monkeypatch.setattr(candidates.combine.Combination, 'candidates', slow_combining)
    started = time.monotonic()
    with caplog.at_level(logging.WARNING):
        answer = explore(staff, resources='VCPU:1', groups=groups(3), group_policy='isolate')
    assert time.monotonic() - started < 5
    assert answer.status_code == 503 and answer['Retry-After'] == '30'
    assert notice(answer.content.decode()) == (
        'The candidate search took longer than the explorer&#x27;s budget of 0.5 s and was '
        'stopped. Narrow it: fewer request groups, group_policy=none rather than isolate, '
        'member_of, in_tree or required traits.')
    (record,) = [r for r in caplog.records if r.name == 'placement.budgets']
    assert record.levelname == 'WARNING' and record.exc_info is None
    assert 'Over budget, stopped GET /ui/explorer/' in record.getMessage()
    # The thread goes on serving as usual.
    monkeypatch.undo()
    assert explore(staff, resources='VCPU:1', limit=1).status_code == 200


def test_a_page_over_its_size_is_not_sent(staff, hosts, monkeypatch):
    monkeypatch.setattr(explorer, 'EXPLORER_MAX_ANSWER_BYTES', 4096)
    answer = explore(staff, resources='VCPU:1', limit=100)
    page = answer.content.decode()
    assert answer.status_code == 200
    assert re.fullmatch(r'The answer would be \d+ KiB, over the explorer&#x27;s budget of 4 '
                        r'KiB: ask for fewer candidates or narrow the request\.', notice(page))
    assert 'id="candidates"' not in page


def test_search_time_stops_only_the_listed_code():
    def busy(seconds):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            sum(range(100))

    started = time.monotonic()
    with pytest.raises(budgets.SearchOverBudget):
        with budgets.search_time(0.2, [sys.modules[__name__]]):
            busy(10)
    assert time.monotonic() - started < 2
    # Code elsewhere (the database's, Django's) runs on past the budget.
    with budgets.search_time(0.1, [budgets]):
        busy(0.4)
    # Nothing is raised later, once the block is left.
    busy(0.3)
