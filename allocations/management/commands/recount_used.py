"""manage.py recount_used: reinstall the triggers that keep every
inventory's `used` (the sum of its allocations) and recount them all; what
placement_status's "Inventory Used Counts" check asks for when they
disagree."""
from django.core.management.base import BaseCommand
from django.db import connection
from django.db import transaction

from allocations import usage_totals


class Command(BaseCommand):
    help = ("Reinstall the triggers that keep Inventory.used and recount every "
            "inventory from its allocations.")

    def handle(self, *args, **options):
        with transaction.atomic():
            wrong = usage_totals.miscounted(connection)
            usage_totals.install(connection)
        self.stdout.write(f'Triggers installed; {len(wrong)} '
                          f'{"inventory" if len(wrong) == 1 else "inventories"} recounted.')
