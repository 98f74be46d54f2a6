"""Path and query parameters used by both apps' descriptions.

A query parameter is documented at the microversions whose query schema
(the one the view validates the query string with, given to operation()
as `query_schema`) takes its name, and required where that schema requires
it: the view's table says when a parameter arrives, not the description.
"""
import re

from drf_spectacular.utils import OpenApiParameter

from placement_site.microversion import ByVersion
from placement_site.openapi.grammars import MEMBER_OF_GRAMMAR
from placement_site.openapi.grammars import REQUIRED_GRAMMAR
from placement_site.openapi.schemas import UUID
from placement_site.openapi.versions import at_version
from placement_site.openapi.versions import document_version
from placement_site.openapi.versions import value_at
from placement_site.openapi.versions import values
from placement_site.validation import PAGE_LIMIT
from placement_site.validation import PAGE_MARKER


def path(name, description, schema=None):
    return OpenApiParameter(name, schema or str, OpenApiParameter.PATH, required=True,
                            description=description)


class QueryParameter(OpenApiParameter):
    """A query parameter whose schema may be a ByVersion table, present
    where the view's query schema takes `stands_for` (its name, or for a
    parameter documenting a family of names, one of them)."""

    def __init__(self, name, description, schema, *, stands_for=None, **kwargs):
        # drf-spectacular takes a dict; described() puts in the schema of
        # the microversion the document describes.
        super().__init__(name, {}, OpenApiParameter.QUERY, description=description, **kwargs)
        self.schema = schema
        self.stands_for = stands_for or name

    def taken_by(self, query_schema):
        """Does `query_schema` (one microversion's) take this parameter?"""
        name = self.stands_for
        return name in query_schema.get('properties', {}) or any(
            re.search(pattern, name) for pattern in query_schema.get('patternProperties', {}))

    def required_by(self, query_schema):
        return self.name in query_schema.get('required', ())

    def described(self, written, query_schema, first):
        """The parameter as drf-spectacular `written` it, at the document's
        microversion: None where the view's `query_schema` (a ByVersion of
        them where it changes) does not take it; else with its schema there,
        required where the query schema requires it (and said not to be
        where it did once), and, arriving after `first` (the operation's
        first microversion), the one it arrived with."""
        version = document_version()
        here = value_at(query_schema, version)
        if not self.taken_by(here):
            return None
        written['schema'] = at_version(self.schema, version)
        written.pop('required', None)
        if self.required_by(here):
            written['required'] = True
        elif any(self.required_by(schema) for schema in values(query_schema)):
            written['required'] = False
        spans = query_schema.spans() if isinstance(query_schema, ByVersion) else [
            (first, query_schema)]
        arrived = next(since for since, schema in spans if self.taken_by(schema))
        if tuple(arrived) > tuple(first):
            written['description'] = f'From {arrived[0]}.{arrived[1]}. {written["description"]}'
        return written


def query(name, description, schema=None, *, repeatable=False, stands_for=None, **kwargs):
    """A query parameter; a repeatable one is an array sent as name=a&name=b.
    `schema` may be a ByVersion table."""
    schema = schema or {'type': 'string'}
    if repeatable:
        schema = {'type': 'array', 'items': schema}
        kwargs.update(style='form', explode=True)
    return QueryParameter(name, description, schema, stands_for=stands_for, **kwargs)


def paging_parameters(things, default, maximum):
    """`marker` and `limit` of a list read a page at a time in id order
    (placement_site.api.page_after_marker)."""
    return [
        query('marker', f'Only {things} after this one (the `next` link sets it).', PAGE_MARKER),
        query('limit', f'At most this many {things} (default {default}, at most {maximum}).',
              PAGE_LIMIT),
    ]


PROVIDER_UUID = path('uuid', 'The uuid of the resource provider.', UUID)

MEMBER_OF = (
    'Aggregate uuid(s) the provider must be in: `AGG` or `in:AGG1,AGG2` (any of). From '
    '1.24 the parameter may repeat (each must match); from 1.32 `!AGG` and `!in:AGG1,AGG2` '
    'forbid aggregates.')
REQUIRED = (
    'Traits the provider must have, comma-separated. From 1.22 `!TRAIT` forbids a trait; '
    'from 1.39 `in:T1,T2` requires any of them and the parameter may repeat. Unknown '
    'traits are a 400.')
RESOURCES = (
    'Amounts the provider must have capacity for, as `CLASS:amount,...`, e.g. '
    '`VCPU:2,MEMORY_MB:1024`. Unknown classes are a 400.')


def member_of_parameter():
    """`member_of`: one value before 1.24, repeatable from 1.24."""
    return query('member_of', MEMBER_OF, ByVersion(
        [((1, 24), {'type': 'array', 'items': MEMBER_OF_GRAMMAR})], MEMBER_OF_GRAMMAR),
        style='form', explode=True)


def required_parameter():
    """`required`: one value before 1.39, repeatable from 1.39."""
    return query('required', REQUIRED, ByVersion(
        [((1, 39), {'type': 'array', 'items': REQUIRED_GRAMMAR})], REQUIRED_GRAMMAR),
        style='form', explode=True)
