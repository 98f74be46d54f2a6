from django.apps import AppConfig


class ProvidersConfig(AppConfig):
    name = 'providers'
    verbose_name = 'Resource providers'
