"""The research stages of the candidate search, run directly: what each
constraint's query finds, the stage records (by Stage, with their counts),
where the research stops, the names it refuses, and what it reads for the
explanation."""
import dataclasses

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from placement_site import exceptions
from providers.candidates import research as research_module
from providers.candidates.findings import Stage
from providers.candidates.query import CandidateQuery
from providers.candidates.query import RequestGroup
from providers.candidates.query import RequestWideParams
from providers.candidates.research import research
from tests.support.factories import ROW
from tests.support.factories import STORAGE


def researched_for(*groups, exhaustive=False, **params):
    query = CandidateQuery({g.suffix: g for g in groups}, RequestWideParams(**params))
    return research(query, exhaustive=exhaustive)


def records(researched):
    return [(r.stage, r.group, r.remaining, r.detail) for r in researched.records]


@pytest.fixture
def cloud(small_cloud):
    return small_cloud


def test_request_wide_research(cloud):
    researched = researched_for(RequestGroup(resources={'VCPU': 1}),
                                root_required={'COMPUTE_NODE'}, root_forbidden={'HW_CPU_X86_AVX2'})
    assert researched.wide.has_trees is True
    assert researched.wide.sharing_roots == {cloud['nfs'].pk: cloud['nfs'].pk}
    assert researched.wide.anchors == {cloud['cn2'].pk}
    assert records(researched)[:1] == [
        (Stage.ROOT_TRAITS, '', 1, 'COMPUTE_NODE, !HW_CPU_X86_AVX2')]
    assert researched.wide_records == researched.records[:1]


def test_the_result_is_frozen(cloud):
    researched = researched_for(RequestGroup(resources={'VCPU': 1}))
    with pytest.raises(dataclasses.FrozenInstanceError):
        researched.alive = False
    with pytest.raises(dataclasses.FrozenInstanceError):
        researched.groups[''].capacity = {}


def test_each_constraint_of_a_suffixed_group(cloud):
    group = RequestGroup(suffix='1', resources={'VCPU': 2}, required_traits=[{'COMPUTE_NODE'}],
                         forbidden_traits={'HW_NUMA_ROOT'}, member_of=[{ROW, STORAGE}],
                         forbidden_aggs={STORAGE})
    findings = researched_for(group, group_policy='none').groups['1']
    ids = {name: rp.pk for name, rp in cloud.items()}
    assert findings.tree_mode is False
    assert findings.members == {ids['cn1'], ids['cn3'], ids['cn2-numa0'], ids['nfs']}
    assert findings.capacity == {'VCPU': {(ids['cn1'], ids['cn1']),
                                          (ids['cn2-numa0'], ids['cn2'])}}
    assert findings.required_sets == ({ids['cn1'], ids['cn2']},)
    assert findings.forbidden == {ids['cn2-numa0']}
    assert findings.in_forbidden_aggs == {ids['cn2-numa0'], ids['nfs']}
    # nfs has no VCPU, so serves no tree of the group
    assert findings.served == {}


def test_stage_records_name_the_stage_and_count_what_it_found(cloud):
    group = RequestGroup(resources={'VCPU': 2, 'DISK_GB': 10}, member_of=[{ROW, STORAGE}])
    researched = researched_for(group)
    assert records(researched) == [
        (Stage.MEMBER_OF, '', 4, f'({" or ".join(sorted([ROW, STORAGE]))})'),
        (Stage.CAPACITY, '', 2, '2 VCPU'),
        (Stage.CAPACITY, '', 2, '10 DISK_GB'),
        (Stage.SHARING, '', 1, 'DISK_GB'),
    ]
    unsuffixed = researched.groups['']
    assert unsuffixed.records == researched.records
    assert unsuffixed.tree_mode is True
    assert unsuffixed.sharing == {cloud['nfs'].pk}
    assert unsuffixed.served == {cloud['nfs'].pk: {cloud['nfs'].pk, cloud['cn2'].pk}}


def test_the_first_stage_that_leaves_nothing_ends_the_research(cloud):
    """As in Placement, an empty member_of answers before the unknown trait
    that comes after it could be refused."""
    empty = '00000000-0000-4000-8000-000000000000'
    researched = researched_for(
        RequestGroup(resources={'VCPU': 1}, member_of=[{empty}], required_traits=[{'CUSTOM_NOPE'}]),
        RequestGroup(suffix='1', resources={'VCPU': 1}), group_policy='none')
    assert records(researched) == [(Stage.MEMBER_OF, '', 0, f'({empty})')]
    assert researched.alive is False and researched.refused is None
    assert researched.groups == {}


def test_an_unknown_name_is_refused_while_the_answer_may_be_non_empty(cloud):
    """Refused, not raised: the selector raises it unless an earlier group
    fits nothing. Research stops there."""
    researched = researched_for(
        RequestGroup(resources={'VCPU': 1}),
        RequestGroup(suffix='1', resources={'VCPU': 1}, required_traits=[{'CUSTOM_NOPE'}]),
        RequestGroup(suffix='2', resources={'DISK_GB': 1}), group_policy='none')
    assert isinstance(researched.refused, exceptions.TraitNotFound)
    assert (researched.refused_by, researched.alive) == ('1', False)
    assert list(researched.groups) == ['']
    researched = researched_for(RequestGroup(resources={'CUSTOM_NOPE': 1}))
    assert isinstance(researched.refused, exceptions.ResourceClassNotFound)
    with pytest.raises(exceptions.TraitNotFound):   # request-wide: nothing precedes it
        researched_for(RequestGroup(resources={'VCPU': 1}), root_required={'CUSTOM_NOPE'})


def test_explaining_researches_every_constraint_after_an_empty_stage(cloud):
    empty = '00000000-0000-4000-8000-000000000000'
    group = RequestGroup(resources={'VCPU': 100, 'DISK_GB': 10}, member_of=[{empty}],
                         required_traits=[{'COMPUTE_NODE'}, {'CUSTOM_NOPE'}])
    researched = researched_for(group, exhaustive=True)
    assert researched.alive is False and researched.refused is None
    unsuffixed = researched.groups['']
    assert unsuffixed.alive is False
    assert records(researched) == [
        (Stage.MEMBER_OF, '', 0, f'({empty})'),
        (Stage.CAPACITY, '', 0, '100 VCPU'),
        (Stage.CAPACITY, '', 2, '10 DISK_GB'),
        (Stage.REQUIRED_TRAITS, '', 0, 'COMPUTE_NODE, CUSTOM_NOPE'),
    ]
    # Met once the answer is known to be empty, the unknown trait matches nothing.
    assert unsuffixed.required_sets == ({cloud['cn1'].pk, cloud['cn2'].pk}, set())
    # member_of narrows the sharing providers to none: no trees served.
    assert unsuffixed.sharing == frozenset() and unsuffixed.served == {}


def test_in_tree_restricts_capacity_and_turns_sharing_off(cloud):
    group = RequestGroup(resources={'VCPU': 1, 'DISK_GB': 10}, in_tree=cloud['cn1'].uuid)
    researched = researched_for(group)
    unsuffixed = researched.groups['']
    assert unsuffixed.tree_root == cloud['cn1'].pk
    assert unsuffixed.capacity['DISK_GB'] == {(cloud['cn1'].pk, cloud['cn1'].pk)}
    assert unsuffixed.served == {}
    assert [r.stage for r in researched.records] == [
        Stage.IN_TREE, Stage.CAPACITY, Stage.CAPACITY]


def test_aggregates_and_required_traits_read_with_the_request_are_what_their_own_reads_find(
        cloud, monkeypatch):
    # Read with the request-wide findings: the members of the aggregates of
    # lone member_of sets and the trees under them, and the providers of
    # each required trait. A group of several sets intersects them, read
    # with the request where the others' lone sets named its aggregates.
    groups = [RequestGroup(resources={'VCPU': 1, 'DISK_GB': 10}, member_of=[{ROW, STORAGE}],
                           required_traits=[{'COMPUTE_NODE', 'HW_NUMA_ROOT'}]),
              RequestGroup(suffix='A', resources={'VCPU': 2}, member_of=[{STORAGE}],
                           required_traits=[{'HW_NUMA_ROOT'}]),
              RequestGroup(suffix='B', resources={'DISK_GB': 1},
                           member_of=[{ROW, STORAGE}, {STORAGE}])]

    def read():
        with CaptureQueriesContext(connection) as captured:
            by_suffix = researched_for(*groups, group_policy='none').groups
        return {suffix: (f.members, f.member_sets, f.capacity, f.required_sets, f.served)
                for suffix, f in by_suffix.items()}, len(captured)

    together, fewer = read()
    monkeypatch.setattr(research_module._Research, '_read_with', lambda self, read, names: None)
    apart, more = read()
    assert together == apart
    assert together['']
    # member_of: 1 + 1 + 2 (B's sets); the unsuffixed group's scope; the
    # required traits of two groups.
    assert more == fewer + 7


def test_explaining_reads_the_inventories_when_a_resource_step_eliminates(cloud):
    """The explanation names the limit that stopped each tree or provider a
    resource step eliminated: research reads the inventories of the
    groups' classes then, and only then."""
    fits_all = researched_for(RequestGroup(resources={'VCPU': 1}, in_tree=cloud['cn1'].uuid),
                              exhaustive=True)
    assert fits_all.inventories is None and fits_all.served is None
    assert set(fits_all.provider_roots) == {rp.pk for rp in cloud.values()}
    lacking = researched_for(RequestGroup(resources={'VCPU': 20}), exhaustive=True)
    vcpu = lacking.groups[''].class_ids['VCPU']
    assert set(lacking.inventories) == {vcpu}
    assert set(lacking.inventories[vcpu]) == {cloud[n].pk for n in ('cn1', 'cn2-numa0', 'cn3')}
    # nfs, a sharing provider of the group, has no VCPU: no tree it serves to read.
    assert lacking.served == {}
    # nfs lacks room for 2000 DISK_GB: the trees it serves are read for it.
    nfs = cloud['nfs'].pk
    no_room = researched_for(RequestGroup(resources={'DISK_GB': 2000}), exhaustive=True)
    assert no_room.groups[''].served == {}
    assert no_room.served == {nfs: {nfs, cloud['cn2'].pk}}
