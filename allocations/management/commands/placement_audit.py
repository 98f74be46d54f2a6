"""`python manage.py placement_audit [--live FILE] [--format table|json]
[--delete [--yes]]`: the orphan audit of allocations.audit, printed as a
table or JSON (docs/audit.md).

--delete says what it would delete and changes nothing; --delete --yes
deletes it: the allocations of INSTANCE consumers missing from the live
list (all of them, and the consumer) and allocations whose inventory is
gone (those alone), each consumer in its own transaction at the
generation the audit read. The other findings are only reported.

Exit code: 0 nothing found (or, after --delete --yes, all of it deleted);
1 findings remain (reported ones, the dry run's, or orphans that changed
while being deleted); 2 a bad live list or options; 255 the audit itself
broke (as placement_status).
"""
import json
import os
import sys
import traceback
import uuid
from datetime import UTC
from datetime import datetime

from django.core.management.base import BaseCommand
from django.core.management.base import CommandError
from django.core.serializers.json import DjangoJSONEncoder

from allocations import audit
from allocations import services as allocation_services
from placement_site import actor
from placement_site import exceptions

# Who the event log says deleted.
ACTOR_USER = 'command:placement_audit'

WOULD_DELETE, DELETED, LEFT, RESOLVED = 'would delete', 'deleted', 'left', 'already resolved'


class Command(BaseCommand):
    help = ('Find orphaned allocations and consumers: consumers on more than one provider '
            'tree that are not migrations, allocations without inventory, consumers without '
            'project or user, usage over capacity and, given the live servers (--live), '
            'instances that are gone. --delete shows what it would remove, --delete --yes '
            'removes it. Exit code: 0 nothing found, 1 findings, 2 bad arguments.')
    # It reports what is wrong; Django's system checks must not stop it first.
    requires_system_checks = ()

    def add_arguments(self, parser):
        parser.add_argument('--live', metavar='FILE',
                            help="the live servers' uuids, one per line ('-': standard "
                                 'input), e.g. from `openstack server list --all-projects '
                                 '-f value -c ID`')
        parser.add_argument('--format', choices=['table', 'json'], default='table',
                            help='a table (default), or JSON')
        parser.add_argument('--delete', action='store_true',
                            help='say what would be deleted (instances not in --live, '
                                 'allocations without inventory); with --yes, delete it')
        parser.add_argument('--yes', action='store_true', help='with --delete: really delete')

    def handle(self, *args, **options):
        if options['yes'] and not options['delete']:
            raise CommandError('--yes confirms --delete: give both, or neither', returncode=2)
        live, listed_at = live_list(options['live'])
        try:
            report = {'findings': [(finding, finding.listed(finding.rows))
                                   for finding in audit.findings(live, listed_at)],
                      'live': None if live is None else (len(live), listed_at),
                      'delete': None}
            if options['delete']:
                report['delete'] = planned(report['findings'])
                if options['yes']:
                    with actor.acting(actor.Actor(f'req-{uuid.uuid4()}', ACTOR_USER)):
                        delete(report['delete'])
        except Exception:  # noqa: BLE001 - a bug, not a finding: never exit 1 for it
            self.stderr.write(f'Error:\n{traceback.format_exc()}')
            sys.exit(255)
        code = exit_code(report)
        render = as_json if options['format'] == 'json' else as_table
        self.stdout.write(render(report, code))
        if code:
            sys.exit(code)


def live_list(path):
    """(uuids, when the list was taken) of --live: the file's modification
    time, or now for standard input; (None, None) without --live."""
    if path is None:
        return None, None
    try:
        if path == '-':
            listed_at, lines = datetime.now(UTC), sys.stdin.read().splitlines()
        else:
            with open(path, encoding='utf-8') as file:
                listed_at = datetime.fromtimestamp(os.fstat(file.fileno()).st_mtime,
                                                   UTC)
                lines = file.read().splitlines()
        return audit.read_live_list(lines), listed_at
    except (OSError, UnicodeDecodeError, audit.BadLiveList) as error:
        raise CommandError(f'--live {path}: {error}', returncode=2) from error


# ---- deleting ------------------------------------------------------------------------------

def planned(findings):
    """What --delete removes, a step per consumer with the generation the
    audit read: consumers not live whole, then the allocations without
    inventory of other consumers."""
    rows_by_key = {finding.key: rows for finding, rows in findings}
    whole = {row['consumer_uuid']: row['generation'] for row in rows_by_key.get(audit.NOT_LIVE, [])}
    trimmed = {}
    for row in rows_by_key[audit.WITHOUT_INVENTORY]:
        if row['consumer_uuid'] not in whole:
            trimmed.setdefault(row['consumer_uuid'], row['generation'])
    steps = ([(uuid_, generation, 'all') for uuid_, generation in whole.items()]
             + [(uuid_, generation, 'without inventory') for uuid_, generation in trimmed.items()])
    return {'dry_run': True, 'consumers': [
        {'consumer_uuid': uuid_, 'generation': generation, 'allocations': which,
         'outcome': WOULD_DELETE} for uuid_, generation, which in steps]}


def delete(plan):
    """Carry out `plan`, a consumer a transaction. A consumer written since
    the audit read it is left (its newer allocations stay), with the reason."""
    plan['dry_run'] = False
    for step in plan['consumers']:
        try:
            removed = allocation_services.allocations_remove_orphaned(
                consumer_uuid=step['consumer_uuid'], generation=step['generation'],
                lacking_inventory_only=step['allocations'] != 'all')
        except exceptions.PlacementDomainError as error:
            step.update(outcome=LEFT, reason=str(error))
        else:
            step.update(outcome=DELETED if removed else RESOLVED, removed=removed)


def exit_code(report):
    """1 while anything found is still there, else 0."""
    plan = report['delete']
    done = plan is not None and not plan['dry_run']
    if any(rows and not (done and finding.deleted) for finding, rows in report['findings']):
        return 1
    return int(done and any(step['outcome'] == LEFT for step in plan['consumers']))


# ---- output --------------------------------------------------------------------------------

def as_json(report, code):
    live, plan = report['live'], report['delete']
    return json.dumps({
        'code': code,
        'live_list': None if live is None else {'servers': live[0], 'listed_at': live[1]},
        'findings': [{'finding': finding.key, 'title': finding.title,
                      'meaning': finding.meaning, 'deleted_by_delete': finding.deleted or None,
                      'count': len(rows), 'rows': rows}
                     for finding, rows in report['findings']],
        **({} if plan is None else {'delete': plan}),
    }, indent=2, cls=DjangoJSONEncoder)


def as_table(report, code):
    findings, live, plan = report['findings'], report['live'], report['delete']
    summary = [{'finding': finding.title, 'found': len(rows),
                '--delete removes': finding.deleted or '(reported only)'}
               for finding, rows in findings]
    if live is None:
        summary.append({'finding': 'Instances not in the live list', 'found': '-',
                        '--delete removes': '(give the live servers with --live FILE)'})
    parts = [grid(['finding', 'found', '--delete removes'], summary, title='Placement Audit')]
    if live is not None:
        parts.append(f'Live list: {live[0]:,} servers, taken {live[1]:%Y-%m-%d %H:%M:%S} UTC; '
                     f'consumers written after {live[1] - audit.LIVE_LIST_MARGIN:%H:%M:%S} '
                     'are not judged by it.')
    for finding, rows in findings:
        if rows:
            parts.append(grid(finding.columns, rows, title=f'{finding.title}: {len(rows):,}'))
    if plan is not None:
        title = ('Dry run: --delete --yes would delete' if plan['dry_run'] else 'Deleted')
        columns = ['consumer_uuid', 'generation', 'allocations', 'outcome']
        if not plan['dry_run']:
            columns += ['removed', 'reason']
        parts.append(grid(columns, plan['consumers'], title=title) if plan['consumers']
                     else f'{title}: nothing.')
    if code:
        parts.append('Findings remain (exit code 1); docs/audit.md says what each means.')
    else:
        parts.append('Everything found was deleted.' if any(rows for _f, rows in findings)
                     else 'Nothing found.')
    return '\n\n'.join(parts)


def _cell(value):
    if value is None:
        return ''
    if isinstance(value, float):
        return f'{value:g}'
    if isinstance(value, datetime):
        return f'{value:%Y-%m-%d %H:%M:%S}'
    return str(value)


def grid(columns, rows, *, title):
    """A boxed table with a title line, as placement_status draws its own."""
    cells = [[_cell(row.get(column)) for column in columns] for row in rows]
    widths = [max([len(column)] + [len(line[i]) for line in cells])
              for i, column in enumerate(columns)]
    rule = '+' + '+'.join('-' * (width + 2) for width in widths) + '+'

    def line(values):
        return '| ' + ' | '.join(v.ljust(w) for v, w in zip(values, widths)) + ' |'
    return '\n'.join([title, rule, line(columns), rule, *map(line, cells), rule])
