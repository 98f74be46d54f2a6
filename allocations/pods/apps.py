from django.apps import AppConfig


class PodsConfig(AppConfig):
    name = 'allocations.pods'
    label = 'pods'
    verbose_name = 'Pods'
