"""Placement's viewsets as the generator sees them: the token the middleware
checks becomes a security scheme, and the microversion a documented header
rather than DRF versioning. The drf-spectacular extensions here register
themselves when the module is imported (the package imports it).
"""
import functools

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.extensions import OpenApiViewExtension

from placement_site.api import PlacementViewSet


class AuthToken:
    """Stands for the middleware's token check in the document; never runs."""

    def authenticate(self, request):
        return None


class AuthTokenScheme(OpenApiAuthenticationExtension):
    target_class = AuthToken
    name = 'AuthToken'

    def get_security_definition(self, auto_schema):
        return {
            'type': 'apiKey',
            'in': 'header',
            'name': 'X-Auth-Token',
            'description': (
                'The `X-Auth-Token` header. With the `keystone` strategy a Keystone '
                'token; with `noauth2` (the default) `user[:project]`, where the user '
                '`admin` has the admin role. Missing or invalid: 401. Every path but `/` '
                'needs it.'),
        }


@functools.cache
def schema_view(view_class):
    """The view as documented: the microversion is a documented header rather
    than DRF versioning, and every operation needs the token."""
    return type(view_class.__name__, (view_class,), {
        '__module__': view_class.__module__,
        '__doc__': view_class.__doc__,
        'versioning_class': None,
        'authentication_classes': [AuthToken],
    })


class PlacementViewExtension(OpenApiViewExtension):
    target_class = PlacementViewSet
    match_subclasses = True

    def view_replacement(self):
        return schema_view(self.target)
