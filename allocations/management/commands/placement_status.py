"""`python manage.py placement_status [--format table|json]`: the checks of
allocations.status, printed as `placement-status upgrade check` prints
them; the exit code is the worst result (0 success, 1 warning, 2 failure),
or 255 when the checks themselves break, as oslo.upgradecheck answers."""
import sys
import traceback

from django.core.management.base import BaseCommand

from allocations import status


class Command(BaseCommand):
    help = ('Check the database for states the API never writes or an operator should '
            'know of (providers over capacity, broken trees, allocations without '
            'inventory, ...), the standard names, the policy file and migrations. '
            'Exit code: 0 success, 1 warning, 2 failure.')
    # The command reports what is wrong; Django's system checks must not
    # stop it first (and exit 1, which would read as a warning).
    requires_system_checks = ()

    def add_arguments(self, parser):
        parser.add_argument('--format', choices=['table', 'json'], default='table',
                            help='a table as placement-status prints it (default), or JSON')

    def handle(self, *args, **options):
        try:
            results = status.run_checks()
        except Exception:  # noqa: BLE001 - a bug, not a finding: never exit 1 or 2 for it
            self.stderr.write(f'Error:\n{traceback.format_exc()}')
            sys.exit(255)
        render = status.as_json if options['format'] == 'json' else status.as_table
        self.stdout.write(render(results))
        code = status.worst(results)
        if code:
            sys.exit(int(code))
