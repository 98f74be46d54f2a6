from django.db import migrations
from django.db import models

from providers.ledger import stamps


def install_triggers(apps, schema_editor):
    stamps.install(schema_editor.connection)


class Migration(migrations.Migration):
    """Tree stamps (providers/ledger/stamps.py): a counter per provider
    tree that every write to it steps, so the dashboards' image of the
    cloud reads again only the trees that changed."""

    dependencies = [
        ('providers', '0009_books_changes_per_transaction'),
    ]

    operations = [
        migrations.CreateModel(
            name='TreeStamp',
            fields=[
                ('root_id', models.BigIntegerField(primary_key=True, serialize=False)),
                ('stamp', models.BigIntegerField()),
            ],
            options={'db_table': 'tree_stamps'},
        ),
        migrations.RunPython(install_triggers, migrations.RunPython.noop),
    ]
