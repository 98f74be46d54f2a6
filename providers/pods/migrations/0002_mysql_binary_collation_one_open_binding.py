from django.db import migrations

from placement_site.mysql import binary_collation_for


def one_open_binding(apps, schema_editor):
    """MySQL has no partial unique index (pod_bindings_one_open is skipped
    there): the same rule as a unique index over a generated column that
    holds the project only while the binding is open (NULLs never clash)."""
    if schema_editor.connection.vendor != 'mysql':
        return
    schema_editor.execute(
        'ALTER TABLE pod_bindings '
        'ADD COLUMN open_project_id VARCHAR(255) '
        'AS (IF(ended_at IS NULL, project_id, NULL)) STORED, '
        'ADD UNIQUE INDEX pod_bindings_one_open (open_project_id, affinity)')


class Migration(migrations.Migration):

    dependencies = [
        ('pods', '0001_initial'),
    ]

    operations = [
        binary_collation_for('pods'),
        migrations.RunPython(one_open_binding, migrations.RunPython.noop, atomic=False,
                             elidable=False),
    ]
