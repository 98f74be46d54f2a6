"""How the OpenAPI machinery reads the views' version facts: a ByVersion
table anywhere in a schema, @versions on a handler, and the query schema a
view validates with."""
import pytest

from placement_site import microversion
from placement_site.api import versions
from placement_site.microversion import ByVersion
from placement_site.openapi import at_version
from placement_site.openapi import operation
from placement_site.openapi import query

pytestmark = pytest.mark.any_database


def test_a_table_in_a_schema_resolves_and_absent_parts_leave_required():
    schema = {
        'type': 'object',
        'properties': {
            'name': {'type': 'string'},
            'parent': microversion.since((1, 14), {'type': 'string'}),
            'old': microversion.before((1, 7), {'type': 'integer'}),
            'size': ByVersion([((1, 20), {'type': 'integer'})], {'type': 'string'}),
        },
        'required': ['name', 'parent', 'old'],
    }
    assert at_version(schema, (1, 6)) == {
        'type': 'object',
        'properties': {'name': {'type': 'string'}, 'old': {'type': 'integer'},
                       'size': {'type': 'string'}},
        'required': ['name', 'old'],
    }
    assert at_version(schema, (1, 20)) == {
        'type': 'object',
        'properties': {'name': {'type': 'string'}, 'parent': {'type': 'string'},
                       'size': {'type': 'integer'}},
        'required': ['name', 'parent'],
    }
    assert at_version(microversion.since((1, 14), {}), (1, 13)) is None
    # Nulls that are values stay.
    assert at_version({'enum': ['a', None]}, (1, 0)) == {'enum': ['a', None]}


def test_versions_records_the_span_the_document_reads():
    @versions('1.5', status=405)
    def handler(self, request):
        return 'served'

    served = microversion.span(handler)
    assert (served.first, served.last) == ((1, 5), microversion.EVERY.last)
    assert microversion.parse('1.4') not in served
    assert microversion.parse('1.5') in served
    assert microversion.span(lambda self, request: None) == microversion.EVERY


def test_a_query_parameter_the_view_never_takes_is_refused():
    table = ByVersion([((1, 3), {'properties': {'name': {}, 'member_of': {}}})],
                      {'properties': {'name': {}}})
    operation('listThings', tag='Things', summary='List things', description='Things.',
              responses={200: (None, 'The things.')}, parameters=[query('member_of', 'In.')],
              query_schema=table)
    with pytest.raises(ValueError, match='never takes in_tree'):
        operation('listThings', tag='Things', summary='List things', description='Things.',
                  responses={200: (None, 'The things.')}, parameters=[query('in_tree', 'In.')],
                  query_schema=table)
