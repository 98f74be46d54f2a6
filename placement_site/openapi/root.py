"""GET /: the version document, and its operation attached to RootViewSet
(on import: the package imports this module).
"""
from drf_spectacular.utils import extend_schema_view

from placement_site import microversion
from placement_site.openapi.operations import operation
from placement_site.openapi.schemas import LINKS, Component, closed
from placement_site.views import RootViewSet

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

extend_schema_view(retrieve=operation(
    'listVersions', tag='Version', public=True, accept_json=False,
    summary='List API versions',
    description='The API version and its range of microversions. Needs no token.',
    responses={200: (VERSION_DOCUMENT, 'The version document.')},
))(RootViewSet)
