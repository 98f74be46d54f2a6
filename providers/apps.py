from importlib import import_module

from django.apps import AppConfig
from django.db.models.signals import post_migrate

from placement_site import operator_groups

# The modules describing this app's API views for the OpenAPI document
# (drf-spectacular's extend_schema_view, applied to the views they name).
CONTRACTS = ('api.docs', 'api.trends_docs', 'api.capacity_docs')


class ProvidersConfig(AppConfig):
    name = 'providers'
    verbose_name = 'Resource providers'

    def ready(self):
        post_migrate.connect(operator_groups.ensure_read_only_group,
                             dispatch_uid='placement-read-only-group')
        for module in CONTRACTS:   # once every model is ready, as the views need
            import_module(f'{self.name}.{module}')
