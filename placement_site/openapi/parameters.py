"""Path and query parameters used by both apps' descriptions."""
from drf_spectacular.utils import OpenApiParameter

from placement_site.openapi.schemas import UUID


def path(name, description, schema=None):
    return OpenApiParameter(name, schema or str, OpenApiParameter.PATH, required=True,
                            description=description)


def query(name, description, schema=None, *, required=False, repeatable=False, since=None,
          required_until=None, **kwargs):
    """A query parameter, from microversion `since` ('X.Y') on, required up to
    `required_until`; a repeatable one is an array sent as name=a&name=b.
    `schema` may be versioned()."""
    schema = schema or {'type': 'string'}
    if repeatable:
        schema = {'type': 'array', 'items': schema}
        kwargs.update(style='form', explode=True)
    extensions = {}
    if since:
        extensions['x-since'] = since
    if required_until:
        extensions['x-required-until'] = required_until
    if extensions:
        kwargs['extensions'] = extensions
    return OpenApiParameter(name, schema, OpenApiParameter.QUERY, required=required,
                            description=description, **kwargs)


PROVIDER_UUID = path('uuid', 'The uuid of the resource provider.', UUID)
