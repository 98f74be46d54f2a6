"""The catalogue's query vocabulary (providers.querysets), read directly:
capacity able to fit, usage and utilization, sharing providers and the trees
they serve, aggregates, traits, trees. Each method on a small cloud whose
answers are known exactly."""
import uuid

import pytest

from providers.models import Inventory
from providers.models import ResourceProvider
from providers.models import Trait
from tests.support.factories import ROW
from tests.support.factories import STORAGE


@pytest.fixture
def cloud(small_cloud):
    return small_cloud


def names(queryset):
    return sorted(queryset.values_list('name', flat=True))


def trait_ids(*names_):
    return [Trait.objects.get(name=n).pk for n in names_]


def fitting(class_name, amount):
    return sorted(Inventory.objects.filter(resource_class__name=class_name).able_to_fit(amount)
                  .values_list('resource_provider__name', flat=True))


def test_able_to_fit_applies_capacity_usage_and_units(cloud):
    # cn1: (8 - 0) * 2 = 16, 3 used: 13 more fit; numa: max_unit 2, step 2.
    assert fitting('VCPU', 1) == ['cn1', 'cn3']
    assert fitting('VCPU', 2) == ['cn1', 'cn2-numa0']
    assert fitting('VCPU', 13) == ['cn1']
    assert fitting('VCPU', 14) == []
    # nfs: 1000 - 50 reserved = 950.
    assert fitting('DISK_GB', 950) == ['nfs']
    assert fitting('DISK_GB', 951) == []


def test_having_capacity_is_the_same_rule_for_providers(cloud):
    vcpu = Inventory.objects.filter(resource_class__name='VCPU').first().resource_class_id
    assert names(ResourceProvider.objects.having_capacity(vcpu, 2)) == ['cn1', 'cn2-numa0']


def test_with_usage_and_utilization(cloud):
    rows = {(i.resource_provider.name, i.resource_class.name): (i.used, i.utilization)
            for i in Inventory.objects.with_utilization().select_related(
                'resource_provider', 'resource_class')}
    assert rows[('cn1', 'VCPU')] == (3, 3 / 16)
    assert rows[('cn1', 'DISK_GB')] == (40, 0.4)
    assert rows[('nfs', 'DISK_GB')] == (0, 0.0)


def test_with_max_utilization_is_the_fullest_inventory(cloud):
    fullest = dict(ResourceProvider.objects.with_max_utilization().values_list(
        'name', 'max_utilization'))
    assert fullest == {'cn1': 0.4, 'cn2': 0.0, 'cn2-numa0': 0.0, 'cn3': 0.0, 'nfs': 0.0}


def test_in_use(cloud):
    assert names(ResourceProvider.objects.in_use()) == ['cn1']


def test_sharing_providers_and_the_trees_they_serve(cloud):
    sharing = ResourceProvider.objects.sharing()
    assert names(sharing) == ['nfs']
    nfs, cn2 = cloud['nfs'], cloud['cn2']
    # The child's membership makes the whole tree of cn2 a served tree.
    assert set(sharing.trees_served()) == {(nfs.pk, nfs.pk), (nfs.pk, cn2.pk)}
    assert names(sharing.roots_served()) == ['cn2', 'nfs']
    assert names(ResourceProvider.objects.sharing().serving_tree(cn2.pk)) == ['nfs']
    assert names(ResourceProvider.objects.sharing().serving_tree(cloud['cn1'].pk)) == []


def test_aggregates(cloud):
    assert names(ResourceProvider.objects.member_of_any([ROW, STORAGE])) == [
        'cn1', 'cn2-numa0', 'cn3', 'nfs']
    assert names(ResourceProvider.objects.member_of([{ROW, STORAGE}, {ROW}])) == ['cn1', 'cn3']
    assert names(ResourceProvider.objects.not_member_of([ROW])) == ['cn2', 'cn2-numa0', 'nfs']


def test_traits(cloud):
    avx2, node, numa = trait_ids('HW_CPU_X86_AVX2', 'COMPUTE_NODE', 'HW_NUMA_ROOT')
    assert names(ResourceProvider.objects.with_any_trait([avx2, numa])) == ['cn1', 'cn2-numa0']
    assert names(ResourceProvider.objects.with_traits([{node}, {avx2, numa}])) == ['cn1']
    assert names(ResourceProvider.objects.without_traits([node])) == ['cn2-numa0', 'cn3', 'nfs']
    assert names(ResourceProvider.objects.with_trait_named('HW_NUMA_ROOT')) == ['cn2-numa0']


def test_trees(cloud):
    assert names(ResourceProvider.objects.roots()) == ['cn1', 'cn2', 'cn3', 'nfs']
    assert names(ResourceProvider.objects.in_tree(cloud['cn2-numa0'].uuid)) == ['cn2', 'cn2-numa0']
    assert names(ResourceProvider.objects.in_tree(str(uuid.uuid4()))) == []


def test_in_ids_matches_in_for_ids_lists_and_relations(cloud):
    ids = list(ResourceProvider.objects.filter(name__in=['cn1', 'nfs'])
               .values_list('pk', flat=True))
    assert names(ResourceProvider.objects.filter(id__in_ids=ids)) == ['cn1', 'nfs']
    in_ids = {str(i) for i in ids}
    assert names(ResourceProvider.objects.filter(id__in_ids=in_ids)) == ['cn1', 'nfs']
    by_relation = Inventory.objects.filter(resource_provider__in_ids=ids)
    assert set(by_relation) == set(Inventory.objects.filter(resource_provider__in=ids))
    cn1 = ResourceProvider.objects.get(name='cn1')
    in_tree = ResourceProvider.objects.filter(root_provider_id__in_ids=[cn1.root_provider_id])
    assert names(in_tree) == names(ResourceProvider.objects.filter(root_provider=cn1.root_provider))


def test_in_ids_of_nothing_and_of_many(cloud):
    assert not ResourceProvider.objects.filter(id__in_ids=[]).exists()
    everything = ResourceProvider.objects.count()
    assert ResourceProvider.objects.exclude(id__in_ids=[]).count() == everything
    # More ids than SQLite allows variables in one statement.
    assert ResourceProvider.objects.filter(id__in_ids=range(1, 300_000)).count() == everything
