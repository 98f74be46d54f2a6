"""Static files (API docs assets, admin, dashboards) served by the app itself,
so a single process is a complete service and nothing comes from a CDN."""
import mimetypes
from pathlib import Path

from django.conf import settings
from django.contrib.staticfiles import finders
from django.http import FileResponse
from django.http import Http404
from django.utils._os import safe_join
from django.views.decorators.http import require_safe


@require_safe
def serve_static(request, path):
    full_path = None
    collected = Path(settings.STATIC_ROOT)
    if collected.is_dir():
        try:
            candidate = Path(safe_join(collected, path))
        except Exception:  # a path escaping the directory
            raise Http404(path)
        if candidate.is_file():
            full_path = candidate
    if full_path is None:
        found = finders.find(path)
        if not found:
            raise Http404(path)
        full_path = Path(found)
    content_type, encoding = mimetypes.guess_type(str(full_path))
    response = FileResponse(full_path.open('rb'),
                            content_type=content_type or 'application/octet-stream')
    if encoding:
        response['Content-Encoding'] = encoding
    response['Cache-Control'] = 'public, max-age=3600'
    return response
