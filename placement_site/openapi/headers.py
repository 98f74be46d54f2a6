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
