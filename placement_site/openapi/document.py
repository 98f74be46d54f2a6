"""Serving one microversion's document: GET /api/schema/ (DocumentView) and
the postprocessing hook that names the microversion in the document's info
(SPECTACULAR_SETTINGS names it as placement_site.openapi.describe_version).
"""
from django.http import JsonResponse
from drf_spectacular.views import SpectacularAPIView

from placement_site import microversion
from placement_site.openapi.schemas import sentences
from placement_site.openapi.versions import describing
from placement_site.openapi.versions import document_version


class DocumentView(SpectacularAPIView):
    """GET /api/schema/[?version=X.Y|latest]: the document of one microversion
    (the latest by default); a version outside 1.0-1.39 is a 400."""
    schema = None  # not an operation of the API

    def get(self, request, *args, **kwargs):
        asked = request.GET.get('version', 'latest')
        try:
            version = microversion.parse(
                microversion.MAX_VERSION if asked == 'latest' else asked)
            if not version.matches(microversion.parse(microversion.MIN_VERSION)):
                raise ValueError(asked)
        except (TypeError, ValueError):
            return JsonResponse({'detail': f'Unknown microversion {asked!r}: use latest or '
                                 f'{microversion.MIN_VERSION} to {microversion.MAX_VERSION}.'},
                                status=400)
        with describing(version):
            return super().get(request, *args, **kwargs)


def describe_version(result, generator, request, public):
    """Postprocessing hook: the document names the microversion it describes."""
    version = document_version()
    result['info']['version'] = f'{version.major}.{version.minor}'
    result['info']['description'] = sentences(
        result['info'].get('description'),
        f'This document describes microversion {version.major}.{version.minor}; '
        '`/api/schema/?version=X.Y` gives the document of another.')
    return result
