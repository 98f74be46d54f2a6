"""Matching in Python alone: a group's findings written out by hand, no
database (pytest-django refuses any query here). Matching returns the
group's requests and its stage records, and leaves the findings as they
were."""
import copy

import pytest

from providers.candidates.findings import GroupFindings
from providers.candidates.findings import RequestFindings
from providers.candidates.findings import Stage
from providers.candidates.matching import group_requests
from providers.candidates.query import RequestGroup

pytestmark = pytest.mark.any_database  # and no database at all

# Tree 1: VCPU on child 2, MEMORY_MB on child 3. Tree 10: VCPU on child 11,
# MEMORY_MB on the root. Provider 20 shares DISK_GB with both trees.
WIDE = RequestFindings(has_trees=True, sharing_roots={20: 20})
CLASS_IDS = {'VCPU': 0, 'MEMORY_MB': 1, 'DISK_GB': 2}
CAPACITY = {'VCPU': {(2, 1), (11, 10)}, 'MEMORY_MB': {(3, 1), (10, 10)}, 'DISK_GB': {(20, 20)}}
SERVED = {20: {1, 10, 20}}


def tree_group(**findings):
    group = RequestGroup(resources={'VCPU': 1, 'MEMORY_MB': 1, 'DISK_GB': 1})
    return GroupFindings(group, tree_mode=True, class_ids=CLASS_IDS, capacity=CAPACITY,
                         sharing=frozenset({20}),
                         sharing_by_class={'VCPU': set(), 'MEMORY_MB': set(), 'DISK_GB': {20}},
                         served=SERVED, **findings)


def one_provider_group():
    group = RequestGroup(suffix='1', resources={'DISK_GB': 5})
    return GroupFindings(group, tree_mode=False, class_ids=CLASS_IDS,
                         capacity={'DISK_GB': {(20, 20)}}, served=SERVED)


def amounts(requests):
    return sorted((r.anchor, tuple(sorted(r.resources))) for r in requests)


@pytest.mark.parametrize('one_group', [True, False])
def test_a_tree_gathers_the_classes_with_a_sharing_provider(one_group):
    findings = tree_group()
    before = copy.deepcopy(findings)
    requests, records = group_requests(WIDE, findings, one_group=one_group)
    assert amounts(requests) == [
        (1, ((2, 'VCPU', 1), (3, 'MEMORY_MB', 1), (20, 'DISK_GB', 1))),
        (10, ((10, 'MEMORY_MB', 1), (11, 'VCPU', 1), (20, 'DISK_GB', 1))),
    ]
    assert [r.mappings for r in requests if r.anchor == 1] == [{'': {2, 3, 20}}]
    # The sharing provider's own tree has DISK_GB alone: dropped at VCPU.
    assert [(r.stage, r.remaining) for r in records] == [
        (Stage.TREES_WITH_CLASSES, 2), (Stage.TREES_WITH_CLASSES, 2),
        (Stage.TREES_WITH_CLASSES, 2)]
    assert findings == before


def test_a_required_trait_keeps_the_trees_that_have_it_where_the_resources_are():
    findings = tree_group(required_ids=({7},), required_sets=({11},))
    requests, _ = group_requests(WIDE, findings, one_group=True)
    # With a sharing provider in the group the trait is checked per combination.
    assert [r.anchor for r in requests] == [10]


def test_root_required_leaves_the_trees_under_its_roots():
    wide = RequestFindings(has_trees=True, sharing_roots={20: 20}, anchors=frozenset({10}))
    requests, _ = group_requests(wide, tree_group(), one_group=False)
    assert [r.anchor for r in requests] == [10]


def test_a_lazy_match_builds_requests_as_they_are_taken():
    requests, _ = group_requests(WIDE, tree_group(), one_group=True, lazy=True)
    assert next(requests).anchor in (1, 10)
    assert len(list(requests)) == 1


def test_a_sharing_provider_alone_is_anchored_in_every_tree_it_serves():
    findings = one_provider_group()
    before = copy.deepcopy(findings)
    requests, records = group_requests(WIDE, findings, one_group=True)
    assert sorted(r.anchor for r in requests) == [1, 10, 20]
    assert {tuple(r.resources) for r in requests} == {((20, 'DISK_GB', 5),)}
    assert all(r.use_same_provider for r in requests)
    assert [(r.stage, r.group, r.remaining) for r in records] == [
        (Stage.PROVIDERS_MATCHING, '1', 1)]
    assert findings == before
    wide = RequestFindings(has_trees=True, sharing_roots={20: 20}, anchors=frozenset({1}))
    assert [r.anchor for r in group_requests(wide, findings, one_group=True)[0]] == [1]


def test_forbidden_aggregates_exclude_a_provider():
    findings = GroupFindings(one_provider_group().group, tree_mode=False, class_ids=CLASS_IDS,
                          capacity={'DISK_GB': {(20, 20)}}, in_forbidden_aggs=frozenset({20}))
    requests, records = group_requests(WIDE, findings, one_group=True)
    assert requests == []
    assert [(r.stage, r.remaining) for r in records] == [(Stage.PROVIDERS_MATCHING, 0)]
