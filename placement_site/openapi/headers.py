"""Headers in the document: the OpenStack-API-Version request header, as
each microversion's document gives it, and the headers of the answers.
"""
from drf_spectacular.utils import OpenApiParameter

from placement_site import microversion

MICROVERSION_HEADER = OpenApiParameter(
    'OpenStack-API-Version', str, OpenApiParameter.HEADER,
    description=(
        f'The microversion to serve the request at: `placement X.Y` with X.Y from '
        f'{microversion.MIN_VERSION} to {microversion.MAX_VERSION}, or `placement latest` '
        f'({microversion.MAX_VERSION}). Without the header the request is served at '
        f'{microversion.MIN_VERSION}. A malformed value is a 400, a version outside the '
        'range a 406. The answer names the version used in the same header.'),
)


def describe_microversion_header(parameter, version):
    """The header as the document of `version` has it: the one value its
    requests send, also the default of clients generated from it. Not
    `required`: a request without it is valid, only another microversion's
    (1.0), described by that version's document."""
    value = f'placement {version.major}.{version.minor}'
    parameter['schema'] = {'type': 'string', 'enum': [value], 'default': value}
    parameter['required'] = False
    parameter['description'] += f' This document describes requests sent with `{value}`.'


def response_header(name, description, codes=True):
    return OpenApiParameter(name, str, OpenApiParameter.HEADER, description=description,
                            response=codes if codes is True else [str(c) for c in codes])


# Ours, not OpenStack Placement's (placement_site.conditional).
IF_NONE_MATCH = OpenApiParameter(
    'If-None-Match', str, OpenApiParameter.HEADER, required=False,
    description='Ours: ETags of earlier answers (or `*`). While the resource is in the state '
                'one of them names, the answer is a 304 without a body. On a write, a 412 '
                'instead (`*`: create only if it does not exist yet).')
IF_MATCH = OpenApiParameter(
    'If-Match', str, OpenApiParameter.HEADER, required=False,
    description='Ours: the ETag of the answer the client read (or `*`: any, as long as the '
                'resource exists). The write happens only while the resource is still in that '
                'state, else a 412 that changes nothing. With it (or with If-None-Match) the '
                "body may leave out its generation: the header's state is checked instead. "
                'Without either header the write is exactly OpenStack Placement\'s.')
ETAG_DESCRIPTION = ('Ours: names the state of the resource (its generation, and for a provider '
                    'its name and place in a tree), the same at every microversion. Send it '
                    'back in If-Match to write over exactly this state, or in If-None-Match to '
                    'read only a change.')
