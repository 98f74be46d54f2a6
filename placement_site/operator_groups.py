"""The groups that give local Django accounts what Keystone roles give
Keystone users (placement_site.viewers): "operator read-only" may view
every model of the house's apps and change none; "project:<project id>"
gives that project's own page."""
READ_ONLY_GROUP = 'operator read-only'
PROJECT_GROUP_PREFIX = 'project:'
READ_ONLY_APPS = ('providers', 'allocations', 'pods')


def ensure_read_only_group(apps, using='default', **kwargs):
    """post_migrate: the "operator read-only" group, with the view
    permission of every model of READ_ONLY_APPS and no other."""
    group_model, permission_model = apps.get_model('auth', 'Group'), apps.get_model(
        'auth', 'Permission')
    group, _ = group_model.objects.using(using).get_or_create(name=READ_ONLY_GROUP)
    group.permissions.add(*permission_model.objects.using(using).filter(
        content_type__app_label__in=READ_ONLY_APPS, codename__startswith='view_'))
