from importlib import import_module

from django.apps import AppConfig

from providers.pods import checks  # noqa: F401  (registers the system checks)


class PodsConfig(AppConfig):
    name = 'providers.pods'
    label = 'pods'
    verbose_name = 'Pods'

    def ready(self):
        # The OpenAPI descriptions of the pods' views, once every model is ready.
        import_module(f'{self.name}.docs')
