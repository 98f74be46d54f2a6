from django.core.management.base import BaseCommand

from providers.models import ResourceClass
from providers.models import Trait
from providers.standards import sync_standard_names


class Command(BaseCommand):
    help = ('Add the standard resource classes and traits that os-resource-classes and '
            'os-traits define but the database lacks (safe to run any time).')

    def handle(self, *args, **options):
        classes, traits = sync_standard_names(ResourceClass, Trait)
        self.stdout.write(f'Added {classes} resource classes and {traits} traits.')
