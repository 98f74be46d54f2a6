"""Keep a shared filesystem pool's inventory at the filesystem's size.

Run from cron or a systemd timer on a host that mounts the share
(docs/pool-cli.md, "On the server"):
the filesystem's size (statvfs) becomes the provider's total, and with
--reserved-from-used what is already used on it (by anything) its reserved
amount. The inventory is written through the same service as the API, at
the provider's generation, and retried when another writer got there first.
"""
import math
import os

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand
from django.core.management.base import CommandError

from placement_site import exceptions
from providers import services
from providers.models import INVENTORY_FIELDS
from providers.models import ResourceProvider

UNITS = {'B': 1, 'KB': 1024, 'MB': 1024 ** 2, 'GB': 1024 ** 3, 'TB': 1024 ** 4}
ATTEMPTS = 5


def filesystem_size(path, unit):
    """(total, used) of the filesystem holding `path`, in whole `unit`s:
    the total rounded down and the used space rounded up, so the pool never
    offers more than the filesystem has."""
    try:
        stats = os.statvfs(path)
    except OSError as exc:
        raise CommandError(f'Cannot read the filesystem at {path}: {exc.strerror}')
    size = UNITS[unit]
    total = stats.f_blocks * stats.f_frsize // size
    used = math.ceil((stats.f_blocks - stats.f_bfree) * stats.f_frsize / size)
    return total, used


class Command(BaseCommand):
    help = ("Set a pool provider's inventory of one resource class (DISK_GB by default) to the "
            'size of the filesystem at PATH.')

    def add_arguments(self, parser):
        parser.add_argument('--provider', required=True, metavar='UUID',
                            help='the pool (sharing) resource provider')
        parser.add_argument('--path', required=True, help='a path on the shared filesystem')
        parser.add_argument('--resource-class', default='DISK_GB')
        parser.add_argument('--unit', choices=list(UNITS), default='GB',
                            help='what one unit of the resource class is (binary multiples)')
        parser.add_argument('--reserved-from-used', action='store_true',
                            help="reserve what is already used on the filesystem")

    def handle(self, *args, **options):
        total, used = filesystem_size(options['path'], options['unit'])
        if total < 1:
            raise CommandError(f'The filesystem at {options["path"]} holds less than one '
                               f'{options["unit"]}: no inventory to set.')
        record = {'total': total}
        if options['reserved_from_used']:
            record['reserved'] = min(used, total)
        resource_class = options['resource_class']
        for attempt in range(1, ATTEMPTS + 1):
            provider = self._provider(options['provider'])
            try:
                inventory = self._write(provider, resource_class, record)
                break
            except exceptions.ConcurrentUpdate:
                if attempt == ATTEMPTS:
                    raise CommandError(f'The provider changed {ATTEMPTS} times while writing; '
                                       'try again.')
            except exceptions.PlacementDomainError as exc:
                raise CommandError(str(exc))
        self.stdout.write(
            f'{resource_class} of {provider.uuid}: total {inventory.total}, reserved '
            f'{inventory.reserved} {options["unit"]} (attempt {attempt}).')

    @staticmethod
    def _provider(uuid):
        try:
            return ResourceProvider.objects.get(uuid=uuid)
        except (ResourceProvider.DoesNotExist, ValueError, ValidationError):
            raise CommandError(f'No resource provider with uuid {uuid} found')

    @staticmethod
    def _write(provider, resource_class, record):
        """Update the inventory the pool has (keeping its unit limits and
        ratio), or add it."""
        current = provider.inventories.filter(resource_class__name=resource_class).first()
        if current is None:
            return services.inventory_add(provider=provider, resource_class=resource_class,
                                          record=record)
        kept = {field: getattr(current, field) for field in INVENTORY_FIELDS}
        return services.inventory_update(provider=provider, resource_class=resource_class,
                                         record={**kept, **record})
