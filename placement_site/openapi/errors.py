"""Placement's error answers in the document: the error bodies (Placement's,
and noauth2's 401), what each status means, and the HTTP server's 414.
"""
from drf_spectacular.utils import OpenApiResponse

from placement_site import errors
from placement_site import microversion
from placement_site.openapi.schemas import Component

ERROR = Component('Error', {
    'type': 'object',
    'properties': {
        'errors': {
            'type': 'array',
            'minItems': 1,
            'items': {
                'type': 'object',
                'properties': {
                    'status': {'type': 'integer', 'description': 'The HTTP status code.'},
                    'title': {'type': 'string', 'example': 'Not Found'},
                    'detail': {'type': 'string', 'description': 'What went wrong.'},
                    'code': microversion.since(errors.ERROR_CODE_MICROVERSION, {
                        'type': 'string', 'enum': list(errors.CODES),
                        'description': 'What went wrong, for programs (placement.pod.*: the '
                                       'pod endpoints, ours).',
                        'example': errors.CONCURRENT_UPDATE,
                    }),
                    'request_id': {
                        'type': 'string', 'example': 'req-7c1b9a46-0f5e-4d0e-9d3c-2f1f3e1c0a11'},
                    'min_version': {
                        'type': 'string',
                        'description': 'Only in the 406 for an unsupported microversion.'},
                    'max_version': {
                        'type': 'string',
                        'description': 'Only in the 406 for an unsupported microversion.'},
                },
                'required': ['status', 'title', 'detail'],
            },
        },
    },
    'required': ['errors'],
}, description=(
    "Placement's error body. A client whose Accept header prefers text/html or "
    'text/plain gets the same error as HTML or plain text.'))

UNAUTHORIZED = Component('Unauthorized', {
    'type': 'object',
    'properties': {
        'message': {'type': 'string'},
        'code': {'type': 'string', 'example': '401 Unauthorized'},
        'title': {'type': 'string', 'example': 'Unauthorized'},
    },
    'required': ['message', 'code', 'title'],
}, description="The 401 body of the noauth2 strategy; with `keystone` it is keystonemiddleware's.")

ERROR_DESCRIPTIONS = {
    400: 'Bad request: a malformed OpenStack-API-Version header, or a Content-Length '
         'without a Content-Type.',
    401: 'No token, or an invalid one.',
    403: 'The policy forbids the request to this token.',
    404: 'Not found.',
    405: 'Method not allowed.',
    406: 'The requested microversion is outside the supported range.',
    409: 'Conflict.',
    412: 'If-Match or If-None-Match does not hold for the current state of the resource '
         '(placement.concurrent_update): nothing was changed. Read it again for its new ETag.',
    415: 'The request body is not declared as application/json.',
}


# Not the service's answer but its HTTP server's (gunicorn's limit on the
# request line; Apache's in front of OpenStack Placement), so not JSON.
URI_TOO_LONG = OpenApiResponse(
    {'type': 'string'}, 'The request line (method, path and query string) is longer than the '
    'HTTP server in front of the service takes: an HTML page from that server.')


def error(status, description=None):
    """A reusable error response: Placement's error body with a description."""
    body = UNAUTHORIZED if status == 401 else ERROR
    return OpenApiResponse(body, description or ERROR_DESCRIPTIONS[status])


ERRORS = {status: error(status) for status in ERROR_DESCRIPTIONS}
