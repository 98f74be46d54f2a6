from django.db import migrations

from allocations import usage_totals
from providers import change_log


def install_triggers(apps, schema_editor):
    change_log.install(schema_editor.connection, usage_totals.OWNERS_WATCHED)


class Migration(migrations.Migration):
    """A change of a consumer's owners writes the books' change log
    (providers/change_log.py), as its allocations do."""

    dependencies = [
        ('allocations', '0003_mysql_binary_collation'),
        ('providers', '0008_books_changes'),
    ]

    operations = [
        migrations.RunPython(install_triggers, migrations.RunPython.noop),
    ]
