from django.db import migrations

# The expression with_utilization() writes (providers.querysets), as each
# database's query compiles it, so that the planner can use the index for
# "fullest first": the overview's fullest inventories and the provider
# list's sort read the top of it instead of sorting every inventory.
INDEXES = {
    'sqlite': ('CREATE INDEX IF NOT EXISTS inventories_utilization_idx ON inventories '
               '((CAST("used" AS real) / NULLIF((("total" - "reserved") * "allocation_ratio"), '
               '0.0)) DESC, resource_provider_id) WHERE "total" > "reserved"'),
    # Not PostgreSQL: it raises an error where a float division overflows
    # (a subnormal allocation ratio, which Placement's schema accepts), so
    # an index on the expression would fail the inventory's write with it;
    # SQLite divides to infinity. MariaDB indexes no expression (a
    # generated column would have to be written by every writer). Both
    # sort, as before.
}


def create(apps, schema_editor):
    sql = INDEXES.get(schema_editor.connection.vendor)
    if sql:
        schema_editor.execute(sql)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor in INDEXES:
        schema_editor.execute('DROP INDEX IF EXISTS inventories_utilization_idx')


class Migration(migrations.Migration):
    """An index on inventories' utilization (used / capacity), the fullest
    first, on SQLite."""

    dependencies = [
        ('providers', '0010_tree_stamps'),
    ]

    operations = [
        migrations.RunPython(create, drop),
    ]
