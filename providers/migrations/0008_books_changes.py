from django.db import migrations
from django.db import models

from providers import change_log


def install_triggers(apps, schema_editor):
    change_log.install(schema_editor.connection)


class Migration(migrations.Migration):
    """The books' change log and the triggers that write it
    (providers/change_log.py)."""

    dependencies = [
        ('providers', '0007_mysql_binary_collation'),
    ]

    operations = [
        migrations.CreateModel(
            name='BooksChange',
            fields=[('id', models.BigAutoField(primary_key=True, serialize=False))],
            options={'db_table': 'books_changes'},
        ),
        migrations.RunPython(install_triggers, migrations.RunPython.noop),
    ]
