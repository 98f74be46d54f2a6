"""gzip for answers whose client accepts it (Accept-Encoding: gzip): the
API's large answers (a wide candidate list is tens of megabytes of JSON
that compresses ten to one) and /metrics. Small answers go as they are:
compressing them costs more than it saves. Streamed answers are compressed
as they are written, so memory stays bounded either way."""
import re
import zlib

from django.utils.cache import patch_vary_headers

from placement_site.middleware import is_api_path

ACCEPTS_GZIP = re.compile(r'\bgzip\b')
# zlib's level 3: as fast as level 1 on this text and 15% smaller; the
# default 6 (and GzipFile's 9) take three times as long for 15% less.
GZIP_LEVEL = 3
# Below this many bytes an answer is sent as it is.
MIN_SIZE = 16 * 1024


def accepts_gzip(request):
    return bool(ACCEPTS_GZIP.search(request.META.get('HTTP_ACCEPT_ENCODING', '')))


def gzipped(chunks):
    """The chunks (bytes or text) as one gzip stream, compressed as they come."""
    compressor = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, 16 + zlib.MAX_WBITS)  # gzip framing
    for chunk in chunks:
        data = compressor.compress(chunk if isinstance(chunk, bytes) else chunk.encode())
        if data:
            yield data
    yield compressor.flush()


class GzipMiddleware:
    """Compresses the API's answers of MIN_SIZE bytes or more, and every
    streamed one, for a client that accepts gzip. Only then is the answer
    marked `Vary: Accept-Encoding`: the others are what Placement sends."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if (not is_api_path(request.path_info) or not accepts_gzip(request)
                or response.has_header('Content-Encoding')):
            return response
        if response.streaming:
            response.streaming_content = gzipped(response.streaming_content)
        elif len(response.content) >= MIN_SIZE:
            response.content = b''.join(gzipped([response.content]))
            response['Content-Length'] = str(len(response.content))
        else:
            return response
        response['Content-Encoding'] = 'gzip'
        patch_vary_headers(response, ('Accept-Encoding',))
        return response
