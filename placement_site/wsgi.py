"""WSGI entry point. With PLACEMENT_AUTH_STRATEGY=keystone, keystonemiddleware's
auth_token validates tokens on the Placement API paths (not on the version
document at '/', nor on the admin, dashboards and docs)."""
import gc
import os

from django.conf import settings
from django.core.wsgi import get_wsgi_application

from placement_site import db_sync
from placement_site.middleware import is_api_path

os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'placement_site.settings')

application = get_wsgi_application()
if settings.PLACEMENT_SYNC_ON_STARTUP:
    # placement.conf's sync_on_startup: safe from every worker at once.
    db_sync.sync(verbosity=0)
# Django, DRF and the policy rules are loaded now and live as long as the
# process: keep them out of every future garbage collection.
gc.freeze()


def _with_keystone(app):
    # Imported only when asked for: keystonemiddleware is heavy.
    from keystonemiddleware import auth_token

    protected = auth_token.AuthProtocol(app, dict(settings.KEYSTONE_AUTHTOKEN))

    def keystone_in_front(environ, start_response):
        path = environ.get('PATH_INFO', '')
        if path in ('/', '') or not is_api_path(path):
            return app(environ, start_response)
        return protected(environ, start_response)
    return keystone_in_front


if settings.PLACEMENT_AUTH_STRATEGY == 'keystone':
    application = _with_keystone(application)
