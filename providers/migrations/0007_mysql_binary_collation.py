from django.db import migrations

from placement_site.mysql import binary_collation_for


def unsent_events_index(apps, schema_editor):
    """MySQL has no partial index (events_unsent_idx is a plain one there):
    the dispatcher's queue, sent_at IS NULL in id order, from an index that
    leads with sent_at instead of a walk over the whole history."""
    if schema_editor.connection.vendor != 'mysql':
        return
    schema_editor.execute('CREATE INDEX events_unsent_mysql_idx ON events (sent_at, id)')


class Migration(migrations.Migration):
    """MySQL/MariaDB only: names and uuids compare byte for byte, as on
    PostgreSQL (placement_site/mysql.py), and the event log's queue has its
    index."""

    dependencies = [
        ('providers', '0006_usage_snapshots'),
    ]

    operations = [
        binary_collation_for('providers'),
        migrations.RunPython(unsent_events_index, migrations.RunPython.noop, atomic=False,
                             elidable=False),
    ]
