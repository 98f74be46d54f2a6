from django.db import migrations

# The expression with_utilization() writes (providers.querysets), as each
# database's query compiles it, so that the planner can use the index for
# "fullest first": the overview's fullest inventories and the provider
# list's sort read the top of it instead of sorting every inventory.
INDEXES = {
    'postgresql': ('CREATE INDEX IF NOT EXISTS inventories_utilization_idx ON inventories '
                   '((("used")::double precision / NULLIF((("total" - "reserved") * '
                   '"allocation_ratio"), 0.0)) DESC NULLS LAST, resource_provider_id) '
                   'WHERE "total" > "reserved"'),
    'sqlite': ('CREATE INDEX IF NOT EXISTS inventories_utilization_idx ON inventories '
               '((CAST("used" AS real) / NULLIF((("total" - "reserved") * "allocation_ratio"), '
               '0.0)) DESC, resource_provider_id) WHERE "total" > "reserved"'),
    # MariaDB indexes no expression (a generated column would have to be
    # written by every writer): it sorts, as before.
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
    first, on PostgreSQL and SQLite."""

    dependencies = [
        ('providers', '0010_tree_stamps'),
    ]

    operations = [
        migrations.RunPython(create, drop),
    ]
