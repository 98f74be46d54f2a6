"""openstack resource pool inventory list / set / delete, and sync (a
pool's inventory from the filesystem of a mounted share)."""
import os

from osc_lib import exceptions
from osc_lib.command import command

from placement_pool_cli.client import INVENTORY_FIELDS
from placement_pool_cli.pool import OnePool

ROW_COLUMNS = ('resource_class',) + INVENTORY_FIELDS + ('capacity', 'used', 'free')
FIELD_HELP = {
    'total': 'Total amount (needed when the class is new)',
    'reserved': 'Amount not available to allocations (default 0)',
    'min_unit': 'Smallest amount one allocation may take (default 1)',
    'max_unit': 'Largest amount one allocation may take (default: no limit)',
    'step_size': 'Allocations are multiples of this (default 1)',
    'allocation_ratio': 'Overcommit ratio (default 1.0)',
}
# Binary multiples, as the server-side `manage.py sync_pool_capacity`.
UNITS = {'B': 1, 'KB': 1024, 'MB': 1024 ** 2, 'GB': 1024 ** 3, 'TB': 1024 ** 4}


def add_resource_class_argument(parser, **kwargs):
    parser.add_argument('--resource-class', metavar='<resource-class>', **kwargs,
                        help='Resource class, e.g. DISK_GB or IPV4_ADDRESS'
                             + (f' (default {kwargs["default"]})' if 'default' in kwargs else ''))


def inventory_row(client, pool_uuid, resource_class):
    """(columns, values) of one class's inventory, with capacity/used/free."""
    row = next(r for r in client.inventory_rows(pool_uuid)
               if r['resource_class'] == resource_class)
    return ROW_COLUMNS, tuple(row[column] for column in ROW_COLUMNS)


def filesystem_size(path, unit):
    """(total, used) of the filesystem holding `path`, in whole `unit`s: the
    total rounded down and the used space rounded up, so the pool never offers
    more than the filesystem has."""
    try:
        stats = os.statvfs(path)
    except OSError as exc:
        raise exceptions.CommandError(f'Cannot read the filesystem at {path}: {exc.strerror}')
    size = UNITS[unit]
    total = stats.f_blocks * stats.f_frsize // size
    used = -(-(stats.f_blocks - stats.f_bfree) * stats.f_frsize // size)  # exact ceiling
    return total, used


class ListInventory(OnePool, command.Lister):
    """List a pool's inventories with capacity, used and free."""

    def take_action(self, parsed_args):
        client = self.app.client_manager.resource_pool
        pool = client.find_pool(parsed_args.pool)
        rows = client.inventory_rows(pool['uuid'])
        return ROW_COLUMNS, [tuple(row[column] for column in ROW_COLUMNS) for row in rows]


class SetInventory(OnePool, command.ShowOne):
    """Set one resource class of a pool's inventory; the pool's other
    classes stay as they are, and so do the options not given when the
    class already exists."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        add_resource_class_argument(parser, required=True)
        for field, help in FIELD_HELP.items():
            parser.add_argument('--' + field.replace('_', '-'), metavar='<n>', help=help,
                                type=float if field == 'allocation_ratio' else int)
        return parser

    def take_action(self, parsed_args):
        client = self.app.client_manager.resource_pool
        pool = client.find_pool(parsed_args.pool)
        changes = {field: getattr(parsed_args, field) for field in INVENTORY_FIELDS
                   if getattr(parsed_args, field) is not None}
        client.inventory_set(pool['uuid'], parsed_args.resource_class, changes)
        return inventory_row(client, pool['uuid'], parsed_args.resource_class)


class DeleteInventory(OnePool, command.Command):
    """Delete one resource class from a pool's inventory. Placement refuses
    (409) while allocations use it."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        add_resource_class_argument(parser, required=True)
        return parser

    def take_action(self, parsed_args):
        client = self.app.client_manager.resource_pool
        pool = client.find_pool(parsed_args.pool)
        client.retrying(lambda: client.delete(
            f'/resource_providers/{pool["uuid"]}/inventories/{parsed_args.resource_class}'))


class SyncPool(OnePool, command.ShowOne):
    """Set a pool's inventory of one resource class to the size of the
    filesystem at --path (a mounted share), as `manage.py sync_pool_capacity`
    does on the server. Only total (and with --reserved-from-used, reserved)
    change; min_unit, max_unit, step_size and allocation_ratio stay."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--path', metavar='<path>', required=True,
                            help='A path on the shared filesystem')
        add_resource_class_argument(parser, default='DISK_GB')
        parser.add_argument('--unit', choices=list(UNITS), default='GB',
                            help='What one unit of the resource class is, in binary '
                                 'multiples (default GB)')
        parser.add_argument('--reserved-from-used', action='store_true',
                            help='Reserve what is already used on the filesystem')
        return parser

    def take_action(self, parsed_args):
        client = self.app.client_manager.resource_pool
        total, used = filesystem_size(parsed_args.path, parsed_args.unit)
        if total < 1:
            raise exceptions.CommandError(
                f'The filesystem at {parsed_args.path} holds less than one {parsed_args.unit}: '
                'no inventory to set')
        changes = {'total': total}
        if parsed_args.reserved_from_used:
            changes['reserved'] = min(used, total)
        pool = client.find_pool(parsed_args.pool)
        client.inventory_set(pool['uuid'], parsed_args.resource_class, changes)
        columns, values = inventory_row(client, pool['uuid'], parsed_args.resource_class)
        return columns + ('unit',), values + (parsed_args.unit,)
