"""Small query helpers shared by every app: batches, a storable string,
a counting subquery and the lookups every field gets (in_ids, in_strings,
case folding on MySQL). Retried writes are placement_site.retries',
compiled reads placement_site.prepared's."""
import itertools
import json

from django.core.exceptions import EmptyResultSet
from django.db import models
from django.db.models import Count
from django.db.models import Lookup
from django.db.models import OuterRef
from django.db.models import Subquery
from django.db.models import lookups
from django.db.models.functions import Coalesce


def batched(rows, size):
    """The rows in lists of `size`, read as they are needed (a streamed
    answer or export holds one list at a time)."""
    rows = iter(rows)
    while batch := list(itertools.islice(rows, size)):
        yield batch


def storable(value):
    """Can this string be stored and looked up? (PostgreSQL refuses NUL.)"""
    return '\x00' not in value


def count_of(model, field):
    """How many `model` rows point at the outer row through `field`, as a
    subquery: several counts on one row never multiply each other."""
    rows = (model.objects.filter(**{field: OuterRef('pk')}).order_by()
            .values(field).annotate(n=Count('*')).values('n'))
    return Coalesce(Subquery(rows), 0)


class InIds(Lookup):
    """`field__in_ids=ids`: membership in a long list of integer ids.

    Django's `__in` runs every value through the field's preparation, which
    at a few thousand ids (a candidate search's provider scope) cost more
    than the query itself. Here the ids are checked once as integers and
    bound as one parameter: an array on PostgreSQL, a JSON list on SQLite
    (no limit on the number of SQL variables)."""
    lookup_name = 'in_ids'
    prepare_rhs = False

    def get_prep_lookup(self):
        return list(map(int, self.rhs))

    def as_sql(self, compiler, connection):
        if not self.rhs:
            raise EmptyResultSet
        lhs, params = self.process_lhs(compiler, connection)
        if connection.vendor == 'postgresql':
            return f'{lhs} = ANY(%s)', [*params, self.rhs]
        if connection.vendor == 'sqlite':
            return f'{lhs} IN (SELECT value FROM json_each(%s))', [*params, json.dumps(self.rhs)]
        return f'{lhs} IN ({", ".join(["%s"] * len(self.rhs))})', [*params, *self.rhs]


class InStrings(InIds):
    """`field__in_strings=values`: InIds for strings, such as the consumer
    uuids of a cloud's whole list of servers (tens of thousands)."""
    lookup_name = 'in_strings'

    def get_prep_lookup(self):
        return list(map(str, self.rhs))


models.Field.register_lookup(InIds)
models.ForeignObject.register_lookup(InIds)  # related fields keep their own lookups
models.Field.register_lookup(InStrings)


class FoldsCaseOnMySQL:
    """`name__icontains='cn'` finds 'CN1' on every database. MySQL's
    case-insensitive lookups count on the column's collation, and ours is
    binary (placement_site.mysql): they compare upper case, as PostgreSQL's
    do (a case-insensitive collation would also fold accents)."""

    def process_lhs(self, compiler, connection, lhs=None):
        sql, params = super().process_lhs(compiler, connection, lhs)
        return (f'UPPER({sql})' if connection.vendor == 'mysql' else sql), params

    def get_rhs_op(self, connection, rhs):
        op = super().get_rhs_op(connection, rhs)
        if connection.vendor != 'mysql':
            return op
        operator, _, operand = op.partition(' ')  # LIKE %s, LIKE CONCAT(...)
        return f'{operator} UPPER({operand})'


for _builtin in (lookups.IExact, lookups.IContains, lookups.IStartsWith, lookups.IEndsWith):
    _folding = type(_builtin.__name__, (FoldsCaseOnMySQL, _builtin), {})
    models.CharField.register_lookup(_folding)
    models.TextField.register_lookup(_folding)
