"""Providers and allocations written for a test: through the services
(add_provider, add_allocation), or in bulk where only the shape matters
(bulk_trees)."""
import uuid as uuid_lib

from django.db.models import F

from allocations import services as allocation_services
from providers import services
from providers.models import Aggregate
from providers.models import Inventory
from providers.models import ProviderAggregate
from providers.models import ResourceClass
from providers.models import ResourceProvider

ROW = str(uuid_lib.uuid4())       # host aggregate of cn1 and cn3


STORAGE = str(uuid_lib.uuid4())   # shared by nfs and the tree of cn2 (through its child)


def add_provider(name, parent=None, inventories=None, traits=(), aggregates=()):
    rp = services.provider_create(name=name, parent_provider_uuid=parent.uuid if parent else None)
    if inventories:
        services.inventories_replace(provider=rp, inventories=inventories)
    if traits:
        services.traits_replace(provider=rp, trait_names=list(traits))
    if aggregates:
        services.aggregates_replace(provider=rp, aggregate_uuids=list(aggregates))
    return rp


def add_allocation(rp, **amounts):
    allocation_services.allocations_replace([allocation_services.ConsumerAllocations(
        consumer_uuid=str(uuid_lib.uuid4()), allocations={rp.uuid: amounts},
        project_id='p', user_id='u', generation=None)])


def bulk_trees(count, *, start, name, pool):
    """`count` compute trees written in bulk, for when only their shape
    matters: roots f'{name}{i}' (i from `start`) with 500 DISK_GB (10
    reserved) in aggregate `pool`, each with a child f'{name}{i}-numa0' with
    16 VCPU at allocation ratio 4. Returns (roots, children)."""
    classes = dict(ResourceClass.objects.values_list('name', 'id'))
    aggregate, _ = Aggregate.objects.get_or_create(uuid=pool)
    roots = ResourceProvider.objects.bulk_create([
        ResourceProvider(uuid=str(uuid_lib.uuid4()), name=f'{name}{i}')
        for i in range(start, start + count)])
    ResourceProvider.objects.filter(root_provider__isnull=True).update(root_provider_id=F('id'))
    numas = ResourceProvider.objects.bulk_create([
        ResourceProvider(uuid=str(uuid_lib.uuid4()), name=f'{r.name}-numa0',
                         parent_provider_id=r.pk, root_provider_id=r.pk) for r in roots])
    Inventory.objects.bulk_create(
        [Inventory(resource_provider_id=r.pk, resource_class_id=classes['DISK_GB'], total=500,
                   reserved=10) for r in roots]
        + [Inventory(resource_provider_id=n.pk, resource_class_id=classes['VCPU'], total=16,
                     allocation_ratio=4.0) for n in numas])
    ProviderAggregate.objects.bulk_create([
        ProviderAggregate(resource_provider_id=r.pk, aggregate=aggregate) for r in roots])
    return roots, numas
