from django.db import migrations


def install_triggers(apps, schema_editor):
    from allocations import usage_totals
    usage_totals.install(schema_editor.connection)


class Migration(migrations.Migration):
    """Inventory.used is kept by triggers on allocations and inventories
    (allocations/usage_totals.py); existing rows are counted here."""

    dependencies = [
        ('allocations', '0001_initial'),
        ('providers', '0005_inventory_used'),
    ]

    operations = [
        migrations.RunPython(install_triggers, migrations.RunPython.noop),
    ]
