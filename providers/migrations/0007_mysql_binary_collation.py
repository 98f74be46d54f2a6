from django.db import migrations

from placement_site.mysql import binary_collation_for


class Migration(migrations.Migration):
    """MySQL/MariaDB only: names and uuids compare byte for byte, as on
    PostgreSQL (placement_site/mysql.py)."""

    dependencies = [
        ('providers', '0006_usage_snapshots'),
    ]

    operations = [binary_collation_for('providers')]
