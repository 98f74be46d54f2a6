"""The version document at the root, and Placement's 404 for unknown paths."""
from django.http import Http404
from django.views.decorators.csrf import csrf_exempt

from placement_site import errors, microversion
from placement_site.api import PlacementViewSet
from placement_site.middleware import is_api_path, render_error


class RootViewSet(PlacementViewSet):
    """GET /: the API's versions; needs no credentials."""

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
    """Any path no route knows: Placement's 404 on API paths."""
    if is_api_path(request.path_info):
        return render_error(request, errors.not_found(vary=False))
    raise Http404(request.path_info)
