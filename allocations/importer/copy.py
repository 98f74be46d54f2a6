"""The copy: the source's rows written into ours, one transaction per batch.

Rows are carried as they are: ids, names, uuids, generations and
timestamps, so lists come out in the old service's order, Last-Modified
stays the same and clients holding a provider's or consumer's generation
can keep writing. Two tables are reconciled by name rather than emptied:
resource classes (standard ones keep their os-resource-classes index as id
on both sides, so a source row updates ours) and standard traits (ours are
dropped for the source's, whose ids decide GET /traits' order; names our
os-traits knows and the source lacks are added after). Inventory.used is
left to the database's triggers (usage_totals): inventories are written
last, each counting its allocations once.
"""
import datetime as dt
import time
from dataclasses import dataclass
from dataclasses import field

from django.core.management.color import no_style
from django.db import connection
from django.db import transaction

from allocations.importer.source import TABLES
from allocations.importer.source import ImportRefused
from allocations.importer.verify import verify
from allocations.models import Allocation
from allocations.models import Consumer
from providers.models import ResourceClass
from providers.models import ResourceProvider
from providers.models import Trait
from providers.standards import sync_standard_names

DEFAULT_BATCH_SIZE = 1000
PROGRESS_EVERY_SECONDS = 2.0


@dataclass
class Report:
    """What an import wrote and how long it took."""
    rows: dict = field(default_factory=dict)
    standard_classes_added: int = 0
    standard_traits_added: int = 0
    seconds: float = 0.0

    @property
    def total(self):
        return sum(self.rows.values())


class Progress:
    """'table done/total' lines on stderr, at most every few seconds and at
    each table's end."""

    def __init__(self, write):
        self.write = write
        self.last = 0.0

    def __call__(self, table, done, total):
        now = time.monotonic()
        if done >= total or now - self.last >= PROGRESS_EVERY_SECONDS:
            self.last = now
            self.write(f'{table} {done}/{total}')


def import_books(source, survey_, *, batch_size=DEFAULT_BATCH_SIZE, progress=None):
    """Copy every table, one transaction per batch, then reset sequences,
    check the copy against the source and add the standard names the
    source lacked. The caller has checked the survey and the target."""
    progress = progress or (lambda *args: None)
    started = time.monotonic()
    report = Report()
    copy = _Copy()
    for table in TABLES:
        total, done = survey_.counts[table.name], 0
        for rows in source.pages(table, batch_size):
            with transaction.atomic():
                copy.write(table, rows)
            done += len(rows)
            progress(table.name, done, total)
        if not total:
            progress(table.name, 0, 0)
        report.rows[table.name] = done
    with transaction.atomic():
        copy.link_forward()
    _reset_sequences()
    problems = verify(source, survey_)
    if problems:
        raise ImportRefused('the imported books do not match the source (re-run with --replace '
                           'once the cause is fixed):\n  ' + '\n  '.join(problems))
    with transaction.atomic():
        report.standard_classes_added, report.standard_traits_added = sync_standard_names(
            ResourceClass, Trait)
    report.seconds = time.monotonic() - started
    return report


class _Copy:
    """Writes source rows into our tables, batch by batch, remembering what
    later batches need."""

    def __init__(self):
        self.consumer_ids = {}   # uuid -> id: Placement's allocations name consumers by uuid
        self.forward_links = []  # (root, parent, provider id) pointing at later batches
        self.traits_cleared = False

    def write(self, table, rows):
        writer = getattr(self, f'_write_{table.name}', None)
        if writer:
            writer(table, rows)
        else:
            _insert(table.model, table.columns, rows)

    def _write_resource_classes(self, table, rows):
        """Standard classes are ours already, at the same id: they take the
        source's timestamps. A name at another id, or an id under another
        name, is a clash we do not paper over."""
        ours = dict(ResourceClass.objects.values_list('id', 'name'))
        names = set(ours.values())
        new = []
        for row in rows:
            class_id, name, created_at, updated_at = row
            if ours.get(class_id) == name:
                ResourceClass.objects.filter(id=class_id).update(
                    created_at=_utc(created_at), updated_at=updated_at and _utc(updated_at))
            elif class_id in ours or name in names:
                raise ImportRefused(f'resource class {name} has id {class_id} in the source, but '
                                   'not here: do both use the same os-resource-classes?')
            else:
                new.append(row)
        _insert(ResourceClass, table.columns, new)

    def _write_traits(self, table, rows):
        """The source's traits replace our standard ones, ids and all: the
        ids are GET /traits' order (the target holds no custom trait and no
        provider, so nothing refers to them)."""
        if not self.traits_cleared:
            Trait.objects.all().delete()
            self.traits_cleared = True
        _insert(Trait, table.columns, rows)

    def _write_resource_providers(self, table, rows):
        """Providers with the links to earlier batches; then, once the
        batch's rows exist, the links within it (roots are mostly
        themselves); links to later batches wait for link_forward."""
        first_id = rows[0][0]
        last_id = rows[-1][0]
        written, self_roots, within = [], [], []
        for pid, uuid, name, generation, root_id, parent_id, created_at, updated_at in rows:
            earlier_root = root_id if root_id is not None and root_id < first_id else None
            earlier_parent = parent_id if parent_id is not None and parent_id < first_id else None
            written.append((pid, uuid, name, generation, earlier_root, earlier_parent,
                            created_at, updated_at))
            if (earlier_root, earlier_parent) == (root_id, parent_id):
                continue
            if root_id == pid and parent_id is None:
                self_roots.append(pid)
            elif max(root_id or 0, parent_id or 0) <= last_id:
                within.append((root_id, parent_id, pid))
            else:
                self.forward_links.append((root_id, parent_id, pid))
        _insert(ResourceProvider, table.columns, written)
        table_name = ResourceProvider._meta.db_table
        with connection.cursor() as cursor:
            for start in range(0, len(self_roots), 500):
                ids = self_roots[start:start + 500]
                cursor.execute(f'UPDATE {table_name} SET root_provider_id = id '
                               f'WHERE id IN ({", ".join(["%s"] * len(ids))})', ids)
            _link(cursor, within)

    def link_forward(self):
        with connection.cursor() as cursor:
            _link(cursor, self.forward_links)

    def _write_consumers(self, table, rows):
        self.consumer_ids.update((row[1], row[0]) for row in rows)
        _insert(Consumer, table.columns, rows)

    def _write_allocations(self, table, rows):
        _insert(Allocation, table.columns, [
            (aid, rp, self.consumer_ids[consumer_uuid], rc, used, created_at, updated_at)
            for aid, rp, consumer_uuid, rc, used, created_at, updated_at in rows])


def _link(cursor, links):
    if links:
        cursor.executemany(f'UPDATE {ResourceProvider._meta.db_table} SET root_provider_id = %s, '
                           'parent_provider_id = %s WHERE id = %s', links)


def _prepared(fields, row):
    """A source row as our database takes it: datetimes made aware (UTC),
    then every value prepared by the model's own field."""
    return [f.get_db_prep_save(_utc(v) if v is not None and f.get_internal_type()
                               == 'DateTimeField' else v, connection)
            for f, v in zip(fields, row)]


def _utc(value):
    """Placement keeps naive UTC datetimes (SQLite: as text)."""
    if isinstance(value, str):
        value = dt.datetime.fromisoformat(value)
    return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value


def _insert(model, columns, rows):
    """Multi-row INSERTs, as many rows per statement as the backend's
    parameter limit allows."""
    if not rows:
        return
    table = model._meta.db_table
    by_column = {f.column: f for f in model._meta.concrete_fields}
    fields = [by_column[c] for c in columns]
    per_statement = max(1, min(len(rows), (connection.features.max_query_params or 60000)
                               // len(columns)))
    marks = '(' + ', '.join(['%s'] * len(columns)) + ')'
    with connection.cursor() as cursor:
        for start in range(0, len(rows), per_statement):
            chunk = rows[start:start + per_statement]
            cursor.execute(f'INSERT INTO {table} ({", ".join(columns)}) VALUES '
                           + ', '.join([marks] * len(chunk)),
                           [value for row in chunk for value in _prepared(fields, row)])


def _reset_sequences():
    """PostgreSQL's id sequences past the carried ids (other databases
    follow explicit ids themselves)."""
    models = [t.model for t in TABLES if t.model is not ResourceClass]
    statements = connection.ops.sequence_reset_sql(no_style(), models)
    if statements:
        with connection.cursor() as cursor:
            for sql in statements:
                cursor.execute(sql)
