from django.db import migrations

from placement_site.mysql import binary_collation_for


class Migration(migrations.Migration):
    """MySQL/MariaDB only: consumer uuids, project and user ids compare byte
    for byte, as on PostgreSQL (placement_site/mysql.py)."""

    dependencies = [
        ('allocations', '0002_inventory_used_triggers'),
    ]

    operations = [binary_collation_for('allocations')]
