from django.db import migrations


def seed(apps, schema_editor):
    from providers.standards import sync_standard_names
    sync_standard_names(apps.get_model('providers', 'ResourceClass'),
                        apps.get_model('providers', 'Trait'))


class Migration(migrations.Migration):
    """Seed the standard resource classes and traits."""

    dependencies = [('providers', '0001_initial')]

    operations = [migrations.RunPython(seed, migrations.RunPython.noop)]
