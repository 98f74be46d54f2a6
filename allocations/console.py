"""The commands deployment tools run, under Placement's names:

  placement-manage db sync                      the schema migrated (db_sync)
  placement-manage db online_data_migrations    none are pending: says so
  placement-manage db version                   the latest migration applied
  placement-status upgrade check [--json]       allocations.status's checks

Exit codes as Placement's: placement-manage 0 on success, 1 when it fails;
placement-status the worst result (0 success, 1 warning, 2 failure), 255
when the checks themselves break. The settings are the service's own:
placement.conf (/etc/placement, or --config-file and --config-dir) and the
environment variables, which win.
"""
import argparse
import os
import sys

from placement_site import db_sync
from placement_site import placement_conf


def _options(parser):
    """--config-file and --config-dir, as oslo.config's commands take them."""
    parser.add_argument('--config-file', action='append', default=[], metavar='PATH',
                        help='a placement.conf to read (may repeat; later ones win)')
    parser.add_argument('--config-dir', metavar='DIR', help='read every *.conf in DIR too')


def _setup(args):
    files = placement_conf.command_files(args.config_file, args.config_dir)
    if files:
        os.environ[placement_conf.FILES_VARIABLE] = os.pathsep.join(files)
    os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'placement_site.settings')
    import django
    django.setup()


def manage(argv=None):
    """placement-manage."""
    parser = argparse.ArgumentParser(prog='placement-manage')
    _options(parser)
    db = parser.add_subparsers(dest='category', required=True).add_parser(
        'db', help='the database').add_subparsers(dest='action', required=True)
    db.add_parser('sync', help='migrate the schema (safe from several nodes at once)')
    data = db.add_parser('online_data_migrations',
                         help='run the online data migrations (none are pending here)')
    data.add_argument('--max-count', type=int, help='accepted, as Placement does')
    db.add_parser('version', help='print the latest migration applied, per app')
    args = parser.parse_args(argv)
    _setup(args)
    if args.action == 'sync':
        try:
            db_sync.sync(verbosity=0)
        except db_sync.LockTimeout as exc:
            print(f'db sync failed: {exc}', file=sys.stderr)
            return 1
        return 0
    if args.action == 'online_data_migrations':
        # Placement's table of what it migrated, with nothing in it.
        print('Running batches of 50 until complete\n'
              'No online data migrations are pending: the schema migrations '
              '(db sync) carry every change.')
        return 0
    from django.db import connection
    from django.db.migrations.recorder import MigrationRecorder
    applied = {}
    for app, name in MigrationRecorder(connection).applied_migrations():
        applied[app] = max(applied.get(app, name), name)
    for app in sorted(applied):
        print(f'{app}: {applied[app]}')
    return 0


def status(argv=None):
    """placement-status."""
    parser = argparse.ArgumentParser(prog='placement-status')
    _options(parser)
    upgrade = parser.add_subparsers(dest='category', required=True).add_parser(
        'upgrade', help='checks before and after an upgrade').add_subparsers(
        dest='action', required=True)
    check = upgrade.add_parser('check', help='run the status checks')
    check.add_argument('--json', action='store_true', help='the results as JSON')
    args = parser.parse_args(argv)
    _setup(args)
    from django.core.management import call_command
    try:
        call_command('placement_status', format='json' if args.json else 'table')
    except SystemExit as exit_:
        return exit_.code
    return 0


def manage_main():
    sys.exit(manage())


def status_main():
    sys.exit(status())
