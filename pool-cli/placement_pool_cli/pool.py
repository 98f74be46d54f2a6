"""openstack resource pool create / list / show / set / delete, and
aggregate add / remove."""
import logging

from cliff import columns
from osc_lib import exceptions
from osc_lib.cli import format_columns
from osc_lib.command import command

from placement_pool_cli.client import POOL_TRAIT
from placement_pool_cli.client import PlacementError

LOG = logging.getLogger(__name__)

POOL_COLUMNS = ('uuid', 'name', 'generation', 'aggregates', 'traits', 'inventories')
LIST_COLUMNS = ('uuid', 'name', 'generation', 'resource_class', 'capacity', 'used', 'free')


class InventoryColumn(columns.FormattableColumn):
    """A pool's inventories: {class: record with capacity, used, free} for
    -f json/yaml, two lines per class in a table."""

    def human_readable(self):
        return '\n'.join(
            f"{rc}: capacity {r['capacity']}, used {r['used']}, free {r['free']}\n"
            f"  total {r['total']}, reserved {r['reserved']}, min_unit {r['min_unit']}, "
            f"max_unit {r['max_unit']}, step_size {r['step_size']}, "
            f"allocation_ratio {r['allocation_ratio']}"
            for rc, r in sorted(self._value.items()))

    def machine_readable(self):
        return dict(self._value)


def pool_data(provider, aggregates, inventory_rows, generation=None):
    """(columns, values) for ShowOne."""
    inventories = {row['resource_class']: {k: v for k, v in row.items() if k != 'resource_class'}
                   for row in inventory_rows}
    return POOL_COLUMNS, (
        provider['uuid'], provider['name'],
        provider['generation'] if generation is None else generation,
        format_columns.ListColumn(sorted(aggregates)),
        format_columns.ListColumn(provider['traits']),
        InventoryColumn(inventories))


def show_pool(client, provider):
    aggregates = client.get(f'/resource_providers/{provider["uuid"]}/aggregates')
    rows = client.inventory_rows(provider['uuid'])
    return pool_data(provider, aggregates['aggregates'], rows,
                     aggregates['resource_provider_generation'])


class OnePool:
    """A command about one pool, named first (UUID or name)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('pool', metavar='<pool>', help='Pool (resource provider) UUID or name')
        return parser


class CreatePool(command.ShowOne):
    """Create a pool: a resource provider with the MISC_SHARES_VIA_AGGREGATE
    trait, in the given aggregate(s). All or nothing: if the trait or the
    aggregates cannot be set, the new provider is deleted again."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('name', metavar='<name>', help='Name of the new pool')
        parser.add_argument('--aggregate-uuid', metavar='<uuid>', required=True,
                            action='append', dest='aggregates',
                            help='Aggregate whose providers share the pool (repeat for more)')
        parser.add_argument('--uuid', metavar='<uuid>',
                            help='UUID of the new pool (Placement picks one if omitted)')
        return parser

    def take_action(self, parsed_args):
        client = self.app.client_manager.resource_pool
        body = {'name': parsed_args.name}
        if parsed_args.uuid:
            body['uuid'] = parsed_args.uuid
        provider = client.post('/resource_providers', body)
        path = f'/resource_providers/{provider["uuid"]}'
        try:
            traits = client.put(f'{path}/traits', {
                'traits': [POOL_TRAIT],
                'resource_provider_generation': provider['generation']})
            aggregates = client.put(f'{path}/aggregates', {
                'aggregates': list(dict.fromkeys(parsed_args.aggregates)),
                'resource_provider_generation': traits['resource_provider_generation']})
        except PlacementError as exc:
            try:
                client.delete(path)
            except PlacementError as undo:
                raise exceptions.CommandError(
                    f'{exc}; the provider {provider["uuid"]} was created but could not be '
                    f'deleted again: {undo}')
            raise exceptions.CommandError(f'{exc}; no pool was created') from exc
        provider['traits'] = traits['traits']
        return pool_data(provider, aggregates['aggregates'], [],
                         aggregates['resource_provider_generation'])


class ListPool(command.Lister):
    """List pools with their capacity, used and free amount: one row per
    pool and resource class (a pool with no inventory has one empty row)."""

    def take_action(self, parsed_args):
        client = self.app.client_manager.resource_pool
        rows = []
        for pool in sorted(client.pools(), key=lambda p: (p['name'], p['uuid'])):
            head = (pool['uuid'], pool['name'], pool['generation'])
            inventory = client.inventory_rows(pool['uuid'])
            rows += [head + (r['resource_class'], r['capacity'], r['used'], r['free'])
                     for r in inventory] or [head + (None, None, None, None)]
        return LIST_COLUMNS, rows


class ShowPool(OnePool, command.ShowOne):
    """Show a pool: its aggregates, traits and inventories with capacity,
    used and free."""

    def take_action(self, parsed_args):
        client = self.app.client_manager.resource_pool
        return show_pool(client, client.find_pool(parsed_args.pool))


class SetPool(OnePool, command.ShowOne):
    """Rename a pool."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--name', metavar='<name>', required=True, help='New name')
        return parser

    def take_action(self, parsed_args):
        client = self.app.client_manager.resource_pool
        pool = client.find_pool(parsed_args.pool)
        updated = client.put(f'/resource_providers/{pool["uuid"]}', {
            'name': parsed_args.name, 'parent_provider_uuid': pool['parent_provider_uuid']})
        return show_pool(client, {**updated, 'traits': pool['traits']})


class DeletePool(command.Command):
    """Delete pools. Placement refuses (409) to delete a pool that still has
    allocations against it."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('pools', metavar='<pool>', nargs='+',
                            help='Pool(s) to delete, by UUID or name')
        return parser

    def take_action(self, parsed_args):
        client = self.app.client_manager.resource_pool
        failures = []
        for ident in parsed_args.pools:
            try:
                pool = client.find_pool(ident)
                client.delete(f'/resource_providers/{pool["uuid"]}')
            except exceptions.CommandError as exc:
                failures.append(f'{ident}: {exc}')
        if failures:
            raise exceptions.CommandError(
                f'{len(failures)} of {len(parsed_args.pools)} pools not deleted:\n'
                + '\n'.join(failures))


class _AggregateCommand(OnePool, command.ShowOne):
    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('aggregates', metavar='<aggregate-uuid>', nargs='+')
        return parser

    def change(self, current, aggregates):
        raise NotImplementedError

    def take_action(self, parsed_args):
        client = self.app.client_manager.resource_pool
        pool = client.find_pool(parsed_args.pool)
        result = client.aggregates_change(
            pool['uuid'], lambda current: self.change(current, parsed_args.aggregates))
        return ('uuid', 'generation', 'aggregates'), (
            pool['uuid'], result['resource_provider_generation'],
            format_columns.ListColumn(sorted(result['aggregates'])))


class AddAggregate(_AggregateCommand):
    """Add a pool to aggregates: their providers can then use it."""

    def change(self, current, aggregates):
        return current + [a for a in aggregates if a not in current]


class RemoveAggregate(_AggregateCommand):
    """Remove a pool from aggregates."""

    def change(self, current, aggregates):
        missing = [a for a in aggregates if a not in current]
        if missing:
            raise exceptions.CommandError(f'The pool is not in aggregate(s) {", ".join(missing)}')
        return [a for a in current if a not in aggregates]
