from importlib import import_module

from django.apps import AppConfig
from django.conf import settings
from django.db.models.signals import post_migrate

from placement_site import operator_groups


class ProvidersConfig(AppConfig):
    name = 'providers'
    verbose_name = 'Resource providers'

    def ready(self):
        post_migrate.connect(operator_groups.ensure_read_only_group,
                             dispatch_uid='placement-read-only-group')
        if settings.PLACEMENT_SERVING_POOL == 'operator' and settings.PLACEMENT_LEDGER:
            # The operator pool's process reads the dashboards' image of the
            # cloud as it starts, in the background: the first page need
            # not wait for it (named: the models are barely ready here).
            ledger = import_module(f'{self.name}.ledger')
            ledger.in_background(import_module(f'{self.name}.capacity').prewarm)
