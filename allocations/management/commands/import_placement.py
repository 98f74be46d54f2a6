"""`python manage.py import_placement --source-url URL [--dry-run] [--batch-size N]
[--replace]`: take over the books of a running OpenStack Placement
(allocations.importer; the runbook is docs/import.md)."""
import sys

from django.core.management.base import BaseCommand
from django.core.management.base import CommandError

from allocations import importer

# Exit codes of a dry run, as placement_status uses them.
CLEAN, WARNINGS, ERRORS = 0, 1, 2


class Command(BaseCommand):
    help = ("Import an OpenStack Placement database (openstack-placement 16.0.0's schema, "
            "alembic revision a082b8bb98d0 or 422ece571366) into this one: ids, generations "
            "and timestamps carried, one transaction per batch, then a consistency check. "
            "Refuses a target that already holds providers, consumers, aggregates, custom "
            "classes or traits unless --replace. Exit status: 0 done (or, with --dry-run, "
            "nothing found); 1 a dry run found only warnings (providers over capacity, "
            "allocations without inventory: the import carries them); 2 problems that stop "
            "the import (dangling allocations, missing roots or parents, ...), with or "
            "without --dry-run; 1 also for any other refusal (wrong revision, bad URL, "
            "non-empty target).")

    def add_arguments(self, parser):
        parser.add_argument('--source-url', required=True,
                            help='the Placement database: postgresql://user:pw@host/placement, '
                                 'mysql://user:pw@host/placement (mysql+pymysql:// too; needs '
                                 'requirements-mysql.txt) or sqlite:////path/placement.sqlite')
        parser.add_argument('--dry-run', action='store_true',
                            help='read the source, report rows per table and every problem, '
                                 'write nothing')
        parser.add_argument('--batch-size', type=int, default=importer.DEFAULT_BATCH_SIZE,
                            help='rows per transaction (default %(default)s)')
        parser.add_argument('--replace', action='store_true',
                            help="empty this database's providers, consumers, aggregates, "
                                 'custom classes and traits, pods and event log first')

    def handle(self, *args, source_url, dry_run, batch_size, replace, **options):
        if batch_size < 1:
            raise CommandError('--batch-size must be at least 1')
        try:
            source = importer.Source.open(source_url)
            try:
                return self._run(source, dry_run=dry_run, batch_size=batch_size,
                                 replace=replace)
            finally:
                source.close()
        except importer.ImportRefused as e:
            raise CommandError(str(e)) from e

    def _run(self, source, *, dry_run, batch_size, replace):
        survey = importer.survey(source)
        self.stdout.write(f'source {importer.redacted(source.url)} at alembic revision '
                          f'{survey.revision}')
        for table, count in survey.counts.items():
            self.stdout.write(f'  {table:<30} {count:>10}')
        for problem in survey.problems:
            self.stdout.write(str(problem))
        self.stdout.write(f'{len(survey.errors)} errors, {len(survey.warnings)} warnings')
        if dry_run:
            self.stdout.write('dry run: nothing written')
            code = ERRORS if survey.errors else WARNINGS if survey.warnings else CLEAN
            if code:
                sys.exit(code)
            return
        if survey.errors:
            self.stderr.write(f'refusing to import: the source has {len(survey.errors)} '
                              'problems that cannot be carried (listed above); fix them in '
                              'the source and run again')
            sys.exit(ERRORS)
        contents = importer.target_contents()
        if contents and not replace:
            raise CommandError(f'this database is not empty ({", ".join(contents)}): import '
                               'into an empty one, or use --replace to empty it first')
        if contents:
            importer.empty_target()
        report = importer.import_books(
            source, survey, batch_size=batch_size,
            progress=lambda table, done, total: self.stderr.write(
                f'import_placement: {table} {done}/{total}'))
        for table, count in report.rows.items():
            self.stdout.write(f'imported {table:<30} {count:>10}')
        if report.standard_classes_added or report.standard_traits_added:
            self.stdout.write(f'added {report.standard_classes_added} standard resource '
                              f'classes and {report.standard_traits_added} standard traits '
                              'the source did not have')
        rate = report.total / report.seconds if report.seconds else 0
        self.stdout.write(f'imported {report.total} rows in {report.seconds:.2f} s '
                          f'({rate:.0f} rows/s); checked: row counts, provider trees and '
                          'usage per provider and class match the source')
