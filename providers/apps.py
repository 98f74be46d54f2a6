from django.apps import AppConfig
from django.db.models.signals import post_migrate

from placement_site import operator_groups


class ProvidersConfig(AppConfig):
    name = 'providers'
    verbose_name = 'Resource providers'

    def ready(self):
        post_migrate.connect(operator_groups.ensure_read_only_group,
                             dispatch_uid='placement-read-only-group')
