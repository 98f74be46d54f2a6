from importlib import import_module

from django.apps import AppConfig

# The modules describing this app's API views for the OpenAPI document
# (drf-spectacular's extend_schema_view, applied to the views they name).
CONTRACTS = ('api.docs',)


class AllocationsConfig(AppConfig):
    name = 'allocations'
    verbose_name = 'Consumers and allocations'

    def ready(self):
        for module in CONTRACTS:   # once every model is ready, as the views need
            import_module(f'{self.name}.{module}')
