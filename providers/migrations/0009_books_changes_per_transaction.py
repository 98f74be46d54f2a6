from django.db import migrations

from providers import change_log


def install_triggers(apps, schema_editor):
    change_log.install(schema_editor.connection)


class Migration(migrations.Migration):
    """PostgreSQL: the books' change log gets one row per writing
    transaction instead of one per statement (providers/change_log.py); the
    triggers of the other databases are written again, unchanged."""

    dependencies = [
        ('providers', '0008_books_changes'),
    ]

    operations = [
        migrations.RunPython(install_triggers, migrations.RunPython.noop),
    ]
