"""The candidate explorer's suggestions and near misses: a link that re-runs
the request with a root-only trait moved to root_required, and the trees
that came closest."""
import html as html_lib
import re

import pytest

from tests.support.factories import add_allocation
from tests.support.factories import add_provider


@pytest.fixture
def numa_nodes(db):
    """Three NUMA-modelled compute nodes with AVX2 on the root only (8 VCPU
    and 4096 MEMORY_MB per NUMA node); cn02's memory is nearly all used."""
    for name in ('cn01', 'cn02', 'cn03'):
        root = add_provider(name, traits=['HW_CPU_X86_AVX2'])
        for i in range(2):
            numa = add_provider(f'{name}-numa{i}', parent=root,
                                inventories={'VCPU': {'total': 8}, 'MEMORY_MB': {'total': 4096}})
            if name == 'cn02':
                add_allocation(numa, MEMORY_MB=3584)


def texts(pattern, page):
    """The text of every match of `pattern`'s group, without tags."""
    return [html_lib.unescape(re.sub(r'<[^>]+>', '', t)).strip()
            for t in re.findall(pattern, page, re.DOTALL)]


def near_misses(page):
    return [tuple(texts(r'<td>(.*?)</td>', row))
            for row in re.findall(r'<tr data-class=.*?</tr>', page, re.DOTALL)]


def test_the_suggestion_link_reruns_with_root_required(staff, numa_nodes):
    page = staff.get('/ui/explorer/?resources=VCPU:2,MEMORY_MB:1024'
                     '&required=HW_CPU_X86_AVX2&limit=20').content.decode()
    assert 'id="no-candidates"' in page
    assert texts(r'<div class="explanation">(.*?)</div>', page) == [
        # cn02's NUMA nodes have 512 MEMORY_MB free each.
        'unsuffixed group: 1 tree has 1,024 MEMORY_MB free only split across its providers '
        '(at most 512 on one); 2 more trees lack trait HW_CPU_X86_AVX2 on a provider of '
        'their resources']
    (suggestion,) = texts(r'<div class="notice info suggestion">(.*?)<a ', page)
    assert suggestion == (
        '2 trees have HW_CPU_X86_AVX2 only on their root provider while their VCPU and '
        'MEMORY_MB come from child providers; ask root_required=HW_CPU_X86_AVX2 instead '
        '(then 2 trees fit the unsuffixed group, not 0)')
    (link,) = re.findall(r'<a class="rerun" href="([^"]*)">', page)
    link = html_lib.unescape(link)
    assert link == '?resources=VCPU:2,MEMORY_MB:1024&limit=20&root_required=HW_CPU_X86_AVX2'

    page = staff.get('/ui/explorer/' + link).content.decode()
    assert 'id="no-candidates"' not in page
    assert 'class="notice info suggestion"' not in page
    # The form shows the request re-run: the trait among the root traits.
    assert re.search(r'name="root_required" value="HW_CPU_X86_AVX2"', page)
    assert 'value=' not in re.search(r'<input[^>]*name="required"[^>]*>', page).group(0)
    # (2 NUMA nodes for VCPU x 2 for MEMORY_MB) in cn01 and in cn03
    assert re.findall(r'id="candidate-count">([^<]*)<', page) == ['8 candidates']
    table = re.search(r'<table id="candidates">.*?</table>', page, re.DOTALL).group(0)
    listed = set(re.findall(r'<a href="/ui/providers/[^"]+/">(cn0\d)-numa\d</a>', table))
    assert listed == {'cn01', 'cn03'}
    # Two trees fit: nearly empty, so the closest other tree is named.
    assert near_misses(page) == [('(unsuffixed)', 'cn02', 'cn02-numa0',
                                  'has 1,024 MEMORY_MB free only split across 2 providers '
                                  '(at most 512 on one)',
                                  'free 512 MEMORY_MB on cn02-numa0, or ask less than 1,024 '
                                  'per provider')]


def test_near_misses_are_listed_when_nothing_fits(staff, numa_nodes):
    page = staff.get('/ui/explorer/?resources=VCPU:2,MEMORY_MB:5000').content.decode()
    assert texts(r'<div class="explanation">(.*?)</div>', page) == [
        'unsuffixed group: 3 trees cannot take 5,000 MEMORY_MB: 2 have it free only split '
        'across their providers (at most 4,096 on one), 1 lacks it free',
        'unsuffixed group, closest: cn01 has 8,192 MEMORY_MB free only split across 2 '
        'providers (at most 4,096 on one); cn03 has 8,192 MEMORY_MB free only split across 2 '
        'providers (at most 4,096 on one); cn02 lacks 4,488 MEMORY_MB']
    assert near_misses(page) == [
        ('(unsuffixed)', 'cn01', 'cn01-numa0', 'has 8,192 MEMORY_MB free only split across 2 '
         'providers (at most 4,096 on one)',
         'free 904 MEMORY_MB on cn01-numa0, or ask less than 5,000 per provider'),
        ('(unsuffixed)', 'cn03', 'cn03-numa0', 'has 8,192 MEMORY_MB free only split across 2 '
         'providers (at most 4,096 on one)',
         'free 904 MEMORY_MB on cn03-numa0, or ask less than 5,000 per provider'),
        ('(unsuffixed)', 'cn02', 'cn02-numa0', 'lacks 4,488 MEMORY_MB',
         'free 4,488 MEMORY_MB on cn02-numa0')]
    assert 'class="notice info suggestion"' not in page
    # Many trees fit: no near misses.
    page = staff.get('/ui/explorer/?resources=VCPU:2').content.decode()
    assert 'id="near-misses"' not in page
