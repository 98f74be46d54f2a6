"""Standard resource classes and traits come from os-resource-classes and
os-traits, and re-syncing them is idempotent."""
import os_resource_classes
import os_traits
from django.core.management import call_command

from providers.models import ResourceClass
from providers.models import Trait


def test_migration_seeds_every_standard_name(db):
    classes = dict(ResourceClass.objects.values_list('name', 'id'))
    for index, name in enumerate(os_resource_classes.STANDARDS):
        assert classes[name] == index  # numbered as OpenStack Placement does
    assert set(os_traits.get_traits()) <= set(Trait.objects.values_list('name', flat=True))


def test_sync_adds_what_is_missing_and_nothing_else(db, capsys):
    Trait.objects.filter(name='HW_CPU_X86_AVX2').delete()
    ResourceClass.objects.filter(name='PCPU').delete()
    Trait.objects.create(name='CUSTOM_KEEP_ME')
    call_command('sync_standards')
    assert 'Added 1 resource classes and 1 traits.' in capsys.readouterr().out
    assert Trait.objects.filter(name='HW_CPU_X86_AVX2').exists()
    assert ResourceClass.objects.get(name='PCPU').id == os_resource_classes.STANDARDS.index('PCPU')
    assert Trait.objects.filter(name='CUSTOM_KEEP_ME').exists()
    call_command('sync_standards')
    assert 'Added 0 resource classes and 0 traits.' in capsys.readouterr().out
