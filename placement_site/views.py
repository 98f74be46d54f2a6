"""The version document at the root, Placement's 404 for unknown paths, and
the server-error page."""
import sys

from django.http import Http404
from django.views import defaults
from django.views.decorators.csrf import csrf_exempt

from placement_site import errors
from placement_site import microversion
from placement_site import outages
from placement_site.api import PlacementViewSet
from placement_site.middleware import database_unavailable
from placement_site.middleware import is_api_path
from placement_site.openapi import LINKS
from placement_site.openapi import Component
from placement_site.openapi import closed
from placement_site.openapi import operation

VERSION_DOCUMENT = Component('VersionDocument', closed({
    'type': 'object',
    'properties': {
        'versions': {
            'type': 'array',
            'items': {
                'type': 'object',
                'properties': {
                    'id': {'type': 'string', 'example': f'v{microversion.MIN_VERSION}'},
                    'min_version': {'type': 'string', 'example': microversion.MIN_VERSION},
                    'max_version': {'type': 'string', 'example': microversion.MAX_VERSION},
                    'status': {'type': 'string', 'example': 'CURRENT'},
                    'links': LINKS,
                },
                'required': ['id', 'min_version', 'max_version', 'status', 'links'],
            },
        },
    },
    'required': ['versions'],
}))


class RootViewSet(PlacementViewSet):
    """GET /: the API's versions; needs no credentials."""

    @operation(
        'listVersions', tag='Version', public=True, accept_json=False,
        summary='List API versions',
        description='The API version and its range of microversions. Needs no token.',
        responses={200: (VERSION_DOCUMENT, 'The version document.')},
    )
    def retrieve(self, request):
        version = {
            'id': f'v{microversion.MIN_VERSION}',
            'max_version': microversion.MAX_VERSION,
            'min_version': microversion.MIN_VERSION,
            'status': 'CURRENT',
            # Relative on purpose: the service never needs to know its own URL.
            'links': [{'rel': 'self', 'href': ''}],
        }
        return self.respond({'versions': [version]})


@csrf_exempt
def not_found(request, *args, **kwargs):
    """Any path no route knows: Placement's 404 on API paths (answered by
    the fault wrapper, as any view's error)."""
    if is_api_path(request.path_info):
        raise errors.not_found(vary=False)
    raise Http404(request.path_info)


def server_error(request):
    """handler500: an exception no view handled, such as a session read in
    Django's middleware when the database is away (a 503 then)."""
    exception = sys.exc_info()[1]
    if outages.is_unavailable(exception):
        return database_unavailable(request, exception)
    return defaults.server_error(request)
