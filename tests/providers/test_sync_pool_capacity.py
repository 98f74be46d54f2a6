"""manage.py sync_pool_capacity: a shared filesystem's size becomes the pool's
inventory, through the API's service, at the provider's generation."""
import io
import math
import os

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from providers import services
from providers.management.commands import sync_pool_capacity
from providers.models import ResourceProvider

GIB = 1024 ** 3


def sizes(path, unit=GIB):
    stats = os.statvfs(path)
    total = stats.f_blocks * stats.f_frsize // unit
    used = math.ceil((stats.f_blocks - stats.f_bfree) * stats.f_frsize / unit)
    return total, used


def sync(*args):
    out = io.StringIO()
    call_command('sync_pool_capacity', *args, stdout=out)
    return out.getvalue()


@pytest.fixture(params=['tmp_path', 'tmpfs'])
def share(request, tmp_path):
    """A directory on a real filesystem: the test's own, and /dev/shm (a
    tmpfs) where the machine has one."""
    if request.param == 'tmpfs':
        if not os.path.isdir('/dev/shm'):
            pytest.skip('no /dev/shm on this machine')
        return '/dev/shm'
    return str(tmp_path)


@pytest.fixture
def pool(api):
    uuid = api.create_provider('nfs-share')['uuid']
    return uuid


def inventory(api, uuid, resource_class='DISK_GB'):
    answer = api.get(f'/resource_providers/{uuid}/inventories')
    return answer.body['resource_provider_generation'], answer.body['inventories'].get(
        resource_class)


def test_a_pool_without_inventory_gets_the_filesystems_size(api, pool, share):
    total, _ = sizes(share, unit=1024 ** 2)
    out = sync('--provider', pool, '--path', share, '--unit', 'MB')
    generation, record = inventory(api, pool)
    assert record['total'] == total and record['reserved'] == 0
    assert generation == 1
    assert f'DISK_GB of {pool}: total {total}, reserved 0 MB (attempt 1).' in out


def test_an_existing_inventory_keeps_its_limits_and_ratio(api, pool, tmp_path):
    api.set_inventory(pool, {'DISK_GB': {'total': 1, 'min_unit': 1, 'max_unit': 1,
                                         'step_size': 1, 'allocation_ratio': 1.5}})
    total, used_before = sizes(tmp_path)
    sync('--provider', pool, '--path', str(tmp_path), '--reserved-from-used')
    used_after = sizes(tmp_path)[1]  # other processes write to the same filesystem
    generation, record = inventory(api, pool)
    assert min(used_before, used_after) <= record.pop('reserved') <= max(used_before, used_after)
    assert record == {'total': total, 'min_unit': 1, 'max_unit': 1, 'step_size': 1,
                      'allocation_ratio': 1.5}
    assert generation == 2


def test_a_shrunken_filesystem_below_its_allocations_is_accepted(api, pool, tmp_path):
    # Placement accepts an inventory below its usage; so does the sync.
    total, _ = sizes(tmp_path, unit=1024 ** 2)
    api.set_inventory(pool, {'DISK_GB': {'total': total * 2}})
    assert api.allocate('11111111-2222-4333-8444-555555555555',
                        {pool: {'DISK_GB': total + 1}}).status_code == 204
    sync('--provider', pool, '--path', str(tmp_path), '--unit', 'MB')
    assert inventory(api, pool)[1]['total'] == total
    usages = api.get(f'/resource_providers/{pool}/usages').body['usages']
    assert usages['DISK_GB'] == total + 1


def test_a_generation_conflict_is_retried(api, pool, tmp_path, monkeypatch):
    """Another writer changes the pool between the command's read and its
    write (a real write, through the API's service): the first attempt is
    refused by the generation check, the second succeeds."""
    api.set_inventory(pool, {'DISK_GB': {'total': 1}})
    real_update = services.inventory_update
    calls = []

    def another_writer_first(*, provider, **kwargs):
        calls.append(provider.generation)
        if len(calls) == 1:
            services.traits_replace(provider=ResourceProvider.objects.get(pk=provider.pk),
                                    trait_names=['STORAGE_DISK_HDD'])
        return real_update(provider=provider, **kwargs)

    monkeypatch.setattr(services, 'inventory_update', another_writer_first)
    out = sync('--provider', pool, '--path', str(tmp_path))
    assert calls == [1, 2]
    assert '(attempt 2).' in out
    generation, record = inventory(api, pool)
    assert record['total'] == sizes(tmp_path)[0]
    assert generation == 3
    assert api.get(f'/resource_providers/{pool}/traits').body['traits'] == ['STORAGE_DISK_HDD']


def test_refusals_say_why_and_write_nothing(api, pool, tmp_path, db_snapshot):
    before = db_snapshot()
    with pytest.raises(CommandError, match='No resource provider with uuid nope found'):
        sync('--provider', 'nope', '--path', str(tmp_path))
    with pytest.raises(CommandError, match='Cannot read the filesystem at /no/such/path'):
        sync('--provider', pool, '--path', '/no/such/path')
    with pytest.raises(CommandError, match='No such resource class CUSTOM_NOPE'):
        sync('--provider', pool, '--path', str(tmp_path), '--resource-class', 'CUSTOM_NOPE')
    assert db_snapshot() == before


def test_sizes_round_down_the_total_and_up_the_used_space(tmp_path):
    total, used = sync_pool_capacity.filesystem_size(str(tmp_path), 'B')
    stats = os.statvfs(tmp_path)
    assert total == stats.f_blocks * stats.f_frsize
    in_gib = sync_pool_capacity.filesystem_size(str(tmp_path), 'GB')
    assert in_gib[0] == total // GIB  # down
    assert in_gib[1] >= used / GIB and in_gib[1] - used / GIB < 1  # up
