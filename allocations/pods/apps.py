from django.apps import AppConfig

from allocations.pods import checks  # noqa: F401  (registers the system checks)


class PodsConfig(AppConfig):
    name = 'allocations.pods'
    label = 'pods'
    verbose_name = 'Pods'
