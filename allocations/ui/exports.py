"""Every dashboard list as CSV or JSON (?export=csv|json): the list's whole
filtered, sorted queryset, streamed. Rows are read a chunk at a time and
written as they are read, so a 100,000-row export holds one chunk in
memory, never the list; every chunk from one snapshot of the database,
held from the first row to the last (placement_site.snapshots, around
every dashboards view)."""
import json
import time

from django.conf import settings
from django.http import StreamingHttpResponse

from placement_site import downloads
from placement_site.queries import batched

CONTENT_TYPES = {'csv': 'text/csv; charset=utf-8', 'json': 'application/json'}
CHUNK = 1000


def wanted(request):
    """The export format the request asks for, or None for the page."""
    return request.GET.get('export') if request.GET.get('export') in CONTENT_TYPES else None


def chunks(queryset, size=CHUNK):
    """The queryset's rows (or a list's items) in lists of `size`, read as they are needed,
    paced: an export works PLACEMENT_EXPORT_DUTY of its time at most (the
    rest it waits between chunks). An export is seconds of the database's
    work at normal priority, on the cores nova's claims need; it has no
    deadline, the claims have."""
    duty = settings.PLACEMENT_EXPORT_DUTY
    started = time.monotonic()
    rows = queryset.iterator(chunk_size=size) if hasattr(queryset, 'iterator') else queryset
    for chunk in batched(rows, size):
        yield chunk   # back here once the chunk is written
        if duty < 1:
            time.sleep((time.monotonic() - started) * (1 - duty) / duty)
            started = time.monotonic()


def streamed(request, filename, columns, rows):
    """A streamed attachment of `rows` (an iterable of sequences in the
    order of `columns`) in the requested format, saved as `filename` made
    safe (placement_site.downloads)."""
    form = wanted(request)
    body = _csv(columns, rows) if form == 'csv' else _json(columns, rows)
    response = StreamingHttpResponse(body, content_type=CONTENT_TYPES[form])
    response['Content-Disposition'] = downloads.attachment(filename, form)
    return response


class _Line:
    """A file for csv.writer whose write() hands the line back."""

    def write(self, text):
        return text


def _csv(columns, rows):
    writer = downloads.csv_writer(_Line())
    yield writer.writerow(columns)
    for row in rows:
        yield writer.writerow(row)


def _json(columns, rows):
    yield '['
    for index, row in enumerate(rows):
        yield (',\n' if index else '\n') + json.dumps(dict(zip(columns, row)))
    yield '\n]\n'
