from django.apps import AppConfig

from providers.pods import checks  # noqa: F401  (registers the system checks)


class PodsConfig(AppConfig):
    name = 'providers.pods'
    label = 'pods'
    verbose_name = 'Pods'
