"""An orphaned cloud for the audit's tests: consumers left behind by failed
moves and evacuations, written as the API or a bug would leave them."""
import datetime
import io
import uuid

from django.utils import timezone

from allocations import services as allocation_services
from allocations.models import Consumer
from providers import services
from providers.models import Inventory
from providers.models import ResourceProvider
from tests.support.factories import add_provider
from tests.support.state import command_result

POOL_AGGREGATE = str(uuid.uuid4())


AN_HOUR_AGO = datetime.timedelta(hours=1)


def allocate(allocations, *, consumer_type='INSTANCE', project='p', user='u', consumer=None,
             generation=None):
    """A consumer holding `allocations` ({provider: {class: amount}}), written
    through the service as the API writes it; its uuid."""
    consumer = consumer or str(uuid.uuid4())
    allocation_services.allocations_replace([allocation_services.ConsumerAllocations(
        consumer_uuid=consumer,
        allocations={rp.uuid: amounts for rp, amounts in allocations.items()},
        project_id=project, user_id=user, generation=generation, consumer_type=consumer_type)])
    return consumer


def written_long_ago():
    """Every consumer so far was written an hour ago (the live list judges
    only consumers older than its margin)."""
    then = timezone.now() - AN_HOUR_AGO
    Consumer.objects.update(created_at=then, updated_at=then)


def build_cloud():
    """Two compute trees (cn1 with a NUMA node), an NFS pool sharing with
    both; instances on each (disk on the pool), and a migration holding
    cn2 while its instance holds cn1, and another on both trees at once."""
    cn1 = add_provider('cn1', inventories={'MEMORY_MB': {'total': 4096}},
                       aggregates=[POOL_AGGREGATE])
    numa = add_provider('cn1-numa0', parent=cn1, inventories={'VCPU': {'total': 8}})
    cn2 = add_provider('cn2', inventories={'VCPU': {'total': 8}, 'MEMORY_MB': {'total': 4096},
                                           'DISK_GB': {'total': 100}},
                       aggregates=[POOL_AGGREGATE])
    nfs = add_provider('nfs', inventories={'DISK_GB': {'total': 1000}},
                       traits=['MISC_SHARES_VIA_AGGREGATE'], aggregates=[POOL_AGGREGATE])
    rps = {'cn1': cn1, 'numa': numa, 'cn2': cn2, 'nfs': nfs}
    instances = [
        allocate({numa: {'VCPU': 2}, cn1: {'MEMORY_MB': 512}, nfs: {'DISK_GB': 20}}),
        allocate({cn2: {'VCPU': 1, 'MEMORY_MB': 256, 'DISK_GB': 10}}),
    ]
    moving = allocate({numa: {'VCPU': 1}, cn1: {'MEMORY_MB': 256}})   # the destination
    migrations = [
        allocate({cn2: {'VCPU': 1, 'MEMORY_MB': 256}}, consumer_type='MIGRATION'),  # the source
        allocate({cn1: {'MEMORY_MB': 128}, cn2: {'VCPU': 1}}, consumer_type='MIGRATION'),
    ]
    written_long_ago()
    return rps, instances + [moving], migrations


def run(*args, stdin=None, monkeypatch=None):
    """(exit code, output) of `manage.py placement_audit ARGS` in-process."""
    if stdin is not None:
        monkeypatch.setattr('sys.stdin', io.StringIO(stdin))
    return command_result('placement_audit', *args)


def live_file(tmp_path, uuids, name='live.txt'):
    path = tmp_path / name
    path.write_text(''.join(f'{u}\n' for u in uuids))
    return str(path)


def fresh(rp):
    """The provider at its current generation."""
    return ResourceProvider.objects.get(pk=rp.pk)


def remove_inventory_behind_placements_back(rp, resource_class):
    """What only a database edit does: inventory in use deleted."""
    Inventory.objects.filter(resource_provider=rp, resource_class__name=resource_class).delete()


def build_orphans(cloud):
    """Every kind on the cloud: `gone` is an instance nova no longer has;
    `trimmed` lost cn2's DISK_GB inventory (and keeps its VCPU there);
    `pool_user` lost the pool's inventory it alone held there."""
    rps, instances, migrations = cloud
    gone = allocate({rps['numa']: {'VCPU': 1}, rps['nfs']: {'DISK_GB': 5}})
    doubled = allocate({rps['numa']: {'VCPU': 1}, rps['cn2']: {'VCPU': 1}})
    no_owner = allocate({rps['cn2']: {'VCPU': 1}}, project='')
    written_long_ago()
    remove_inventory_behind_placements_back(rps['cn2'], 'DISK_GB')   # instances[1]'s disk
    services.inventories_replace(provider=fresh(rps['cn1']),
                                 inventories={'MEMORY_MB': {'total': 512}})
    return {'rps': rps, 'instances': instances, 'gone': gone, 'doubled': doubled,
            'no_owner': no_owner, 'live': [*instances, doubled, no_owner]}
