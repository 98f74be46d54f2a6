from django.db import migrations

from allocations import ledger
from providers import change_log
from providers.ledger import stamps


def install_triggers(apps, schema_editor):
    stamps.install(schema_editor.connection, ledger.STAMPED)
    change_log.install(schema_editor.connection, ledger.CHANGES_WATCHED)


class Migration(migrations.Migration):
    """Allocations and consumers' owners step the tree stamps of the trees
    they are on (allocations/ledger.py), and every allocation write is in
    the books' change log."""

    dependencies = [
        ('allocations', '0005_project_usage_snapshots'),
        ('providers', '0010_tree_stamps'),
    ]

    operations = [
        migrations.RunPython(install_triggers, migrations.RunPython.noop),
    ]
