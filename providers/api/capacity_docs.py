"""OpenAPI description of GET /capacity (not part of OpenStack Placement):
books and "how many more fit" per group, as JSON or CSV."""
from drf_spectacular.utils import OpenApiResponse, extend_schema_view

from placement_site.openapi import (
    RESOURCES_GRAMMAR,
    Component,
    closed,
    operation,
    query,
    resources_map,
)
from providers import capacity
from providers.api import capacity as views

_CLASS_LIST = {'type': 'string', 'pattern': '^[A-Z0-9_]+(?:,[A-Z0-9_]+)*$',
               'example': 'VCPU,MEMORY_MB'}

CLASS_BOOKS = {
    'type': 'object',
    'properties': {
        'total': {'type': 'integer'},
        'reserved': {'type': 'integer'},
        'capacity': {'type': 'number',
                     'description': '(total - reserved) * allocation_ratio, summed.'},
        'used': {'type': 'integer'},
        'free': {'type': 'number', 'description': 'capacity - used, at least 0.'},
        'utilization': {'type': ['number', 'null'],
                        'description': 'Percent of the capacity in use; null without capacity.'},
        'providers': {'type': 'integer',
                      'description': 'Providers of the group with inventory of the class.'},
    },
    'required': ['total', 'reserved', 'capacity', 'used', 'free', 'utilization', 'providers'],
}

CAPACITY_GROUP = Component('CapacityGroup', closed({
    'type': 'object',
    'properties': {
        'group': {'type': 'string',
                  'description': '`cloud`; the aggregate uuid; the trait name; the root '
                                 "provider's uuid; the availability zone."},
        'name': {'type': ['string', 'null'], 'description': (
            "The root provider's name (group_by=root); the pool's name (group_by=aggregate: "
            'its label, else its pod\'s name, else its sole sharing provider\'s, else its '
            'uuid; GET /pool_labels/{uuid}); else null.')},
        'resources': resources_map("The group's books per resource class.", CLASS_BOOKS),
        'fits': {'type': ['integer', 'null'], 'minimum': 0,
                 'description': 'With `resources`: how many more claims of that shape GET '
                                '/allocation_candidates would grant one after another from '
                                "the group's providers (allocation ratios, min/max units, "
                                'step sizes, nested trees and sharing providers honoured; a '
                                'sharing provider counted once for all the trees it serves). '
                                'Null without `resources`.'},
        'fits_exact': {'type': ['boolean', 'null'],
                       'description': 'False when `fits` is a lower bound: several classes '
                                      'of the shape come from sharing providers serving '
                                      'different trees and the count could not be proven '
                                      'maximal. Null without `resources`.'},
    },
    'required': ['group', 'name', 'resources', 'fits', 'fits_exact'],
}))

CAPACITY = Component('Capacity', closed({
    'type': 'object',
    'properties': {
        'group_by': {'type': 'string', 'enum': list(capacity.GROUPINGS)},
        'resources': {'anyOf': [resources_map('The request shape asked for.',
                                              {'type': 'integer', 'minimum': 1}),
                                {'type': 'null'}]},
        'groups': {'type': 'array', 'items': CAPACITY_GROUP},
    },
    'required': ['group_by', 'resources', 'groups'],
}))

STRANDED_CLASS = {
    'type': 'object',
    'properties': {
        'free': {'type': 'number', 'minimum': 0,
                 'description': "Free capacity (capacity - used, at least 0) of the group's "
                                'trees and sharing providers, summed.'},
        'stranded': {'type': 'number', 'minimum': 0, 'description': (
            'Of it, what no configured flavor can use: per tree, its free beyond the most any '
            'one flavor asking for the class could still take of it (how many more fit the '
            'tree, with the sharing providers serving it, times the amount); per sharing '
            'provider, counted once, its free beyond the most any one flavor could take of it '
            'across the trees it serves.')},
        'usable': {'type': 'number', 'minimum': 0, 'description': 'free - stranded.'},
    },
    'required': ['free', 'stranded', 'usable'],
}

CAPACITY_STRANDED = Component('CapacityStranded', closed({
    'type': 'object',
    'properties': {
        'group_by': {'type': 'string', 'enum': list(capacity.GROUPINGS)},
        'view': {'type': 'string', 'enum': ['stranded']},
        'flavors': {'type': 'object', 'description': (
            'The configured flavors (PLACEMENT_CAPACITY_FLAVORS) counted: name -> {resource '
            'class: amount}.'),
            'additionalProperties': resources_map('A flavor.', {'type': 'integer',
                                                                'minimum': 1})},
        'groups': {'type': 'array', 'items': {
            'type': 'object',
            'properties': {
                'group': CAPACITY_GROUP.schema['properties']['group'],
                'name': CAPACITY_GROUP.schema['properties']['name'],
                'resources': resources_map(
                    'Per resource class some configured flavor asks for.', STRANDED_CLASS),
            },
            'required': ['group', 'name', 'resources'],
        }},
    },
    'required': ['group_by', 'view', 'flavors', 'groups'],
}))

CAPACITY_ANSWER = Component('CapacityAnswer', {'oneOf': [CAPACITY, CAPACITY_STRANDED]},
                            'The books (the default view) or, with view=stranded, the '
                            'stranded capacity.')

CSV_ANSWER = OpenApiResponse(
    Component('CapacityCsv', {'type': 'string'}, 'A header row (' + ','.join(views.CSV_COLUMNS)
              + '), then one row per group and resource class (a group without inventory: '
              'one row without a class); the numbers of the JSON answer. With view=stranded: '
              + ','.join(views.STRANDED_COLUMNS) + ', a row per group and class.'),
    'The same answer as CSV (`format=csv`, or an Accept header preferring text/csv).')


def with_csv(decorator):
    """The operation's 200 also answered as text/csv."""
    def apply(handler):
        handler = decorator(handler)
        schema_class = handler.kwargs['schema']

        class CsvSchema(schema_class):
            def get_response_serializers(self):
                return {**super().get_response_serializers(), (200, 'text/csv'): CSV_ANSWER}

        handler.kwargs['schema'] = CsvSchema
        return handler
    return apply


extend_schema_view(
    list=with_csv(operation(
        'showCapacity', tag='Capacity', summary='Show capacity and how many more fit',
        description='Not part of OpenStack Placement. Capacity, reserved, used, free and '
                    'utilization per resource class for each group of providers: the whole '
                    'cloud, each aggregate (a pool: its members and the trees of member '
                    'roots, as `member_of` reads it), each trait (the providers having it), '
                    'each tree, or each availability zone (the pools of its pods, a provider '
                    'counted once). With `resources`, how many more of that request shape '
                    'fit in each group. JSON, or CSV. Admin or service '
                    '(`placement:capacity:show`).',
        parameters=[
            query('group_by', 'How providers are grouped (default `cloud`).',
                  {'type': 'string', 'enum': list(capacity.GROUPINGS)}),
            query('resources', 'A request shape (the unsuffixed group of GET '
                               '/allocation_candidates): count how many more fit.',
                  RESOURCES_GRAMMAR),
            query('resource_class', 'Only the books of these classes (comma-separated).',
                  _CLASS_LIST),
            query('format', '`csv` for CSV; `json` (the default) for JSON. Without it the '
                            'Accept header decides.', {'type': 'string', 'enum': ['json', 'csv']}),
            query('view', '`books` (the default): the books and `fits`. `stranded`: per '
                          'group and class, the free capacity no configured flavor can use '
                          '(`free`, `stranded`, `usable`); not with `resources`.',
                  {'type': 'string', 'enum': ['books', 'stranded']}),
        ],
        query_schema=views.CAPACITY_QUERY,
        responses={200: (CAPACITY_ANSWER, 'The groups.')}, cached=[], accept_json=False,
        errors={400: 'An unknown grouping, format or view, a malformed `resources` (or one '
                     'with view=stranded), or a resource class that does not exist.',
                406: 'Or the Accept header takes neither application/json nor text/csv.'},
    )),
)(views.CapacityViewSet)
