"""GET /capacity (not part of OpenStack Placement): capacity, reserved,
used, free and utilization per resource class for each group of providers,
and how many more of a request shape fit in each (providers.capacity);
with view=stranded, the free capacity no configured flavor can use
(providers.stranded). JSON, or CSV with format=csv or an Accept header
preferring text/csv."""
import io
from dataclasses import dataclass

from django.http import StreamingHttpResponse
from drf_spectacular.utils import OpenApiResponse

from placement_site import downloads
from placement_site import errors
from placement_site import exceptions
from placement_site import snapshots
from placement_site.api import CSV
from placement_site.api import PlacementViewSet
from placement_site.api import answer_format
from placement_site.api import query_params
from placement_site.errors import worded
from placement_site.openapi import RESOURCES_GRAMMAR
from placement_site.openapi import Component
from placement_site.openapi import closed
from placement_site.openapi import operation
from placement_site.openapi import query
from placement_site.openapi import resources_map
from providers import capacity
from providers import querysets
from providers import querystring
from providers import stranded
from providers.flavors import configured_flavors

POLICY = 'placement:capacity:show'

CAPACITY_QUERY = {
    'type': 'object',
    'properties': {
        'group_by': {'type': 'string', 'enum': list(capacity.GROUPINGS)},
        # resources=VCPU:4,MEMORY_MB:8192: Placement's grammar, parsed by the view.
        'resources': {'type': 'string'},
        # One class or several, comma-separated.
        'resource_class': {'type': 'string', 'minLength': 1},
        'format': {'type': 'string', 'enum': ['json', 'csv']},
        'view': {'type': 'string', 'enum': ['books', 'stranded']},
    },
    'additionalProperties': False,
}

CSV_COLUMNS = ['group_by', 'group', 'name', 'resource_class', 'total', 'reserved', 'capacity',
               'used', 'free', 'utilization', 'providers', 'fits', 'fits_exact']
STRANDED_COLUMNS = ['group_by', 'group', 'name', 'resource_class', 'free', 'stranded', 'usable']


def _number(value):
    """A sum of capacities: a whole number as an integer."""
    return int(value) if value == int(value) else value


def class_body(usage):
    return {
        'total': usage.total, 'reserved': usage.reserved, 'capacity': _number(usage.capacity),
        'used': usage.used, 'free': _number(usage.free),
        'utilization': usage.percent,
        'providers': usage.providers,
    }


def group_body(found):
    return {
        'group': found.group.key,
        'name': found.group.name,
        'resources': {name: class_body(usage) for name, usage in found.classes.items()},
        'fits': None if found.fit is None else found.fit.count,
        'fits_exact': None if found.fit is None else found.fit.exact,
    }


# A streamed CSV answer is sent in pieces of about this many characters.
CSV_CHUNK = 64 * 1024


def stranded_body(found):
    return {
        'group': found.group.key,
        'name': found.group.name,
        'resources': {name: {'free': c.free, 'stranded': c.stranded,
                             'usable': _number(c.usable)} for name, c in found.classes.items()},
    }


def stranded_rows(group_by, found):
    """A group's rows in STRANDED_COLUMNS: one per class."""
    head = [group_by, found.group.key, found.group.name or '']
    for name, body in stranded_body(found)['resources'].items():
        yield head + [name, body['free'], body['stranded'], body['usable']]


def csv_chunks(group_by, found_groups, columns=CSV_COLUMNS, rows=None):
    """The answer as CSV, streamed: one row per group and class (a group
    without inventory: one row without a class), the same numbers as the
    JSON (class_body), written a group at a time rather than built whole
    (group_by=root has a row per tree and class: 130,000 at 40,000 compute
    nodes)."""
    out = io.StringIO()
    writer = downloads.csv_writer(out, lineterminator='\r\n')
    writer.writerow(columns)
    for found in found_groups:
        for row in (rows or group_rows)(group_by, found):
            writer.writerow(row)
        if out.tell() >= CSV_CHUNK:
            yield out.getvalue()
            out.seek(0)
            out.truncate()
    yield out.getvalue()


def group_rows(group_by, found):
    """A group's rows in the columns of CSV_COLUMNS: one per class (a group
    without inventory: one without a class), empty cells for nulls."""
    fit = found.fit
    fits = ['', ''] if fit is None else [fit.count, str(fit.exact).lower()]
    head = [group_by, found.group.key, found.group.name or '']
    if not found.classes:
        yield head + [''] * 8 + fits
    for name, usage in found.classes.items():
        books = class_body(usage)
        yield head + [name] + ['' if books[k] is None else books[k] for k in (
            'total', 'reserved', 'capacity', 'used', 'free', 'utilization', 'providers')] + fits


# ---- the answers and parameters the operation describes ------------------------------

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
    Component('CapacityCsv', {'type': 'string'}, 'A header row (' + ','.join(CSV_COLUMNS)
              + '), then one row per group and resource class (a group without inventory: '
              'one row without a class); the numbers of the JSON answer. With view=stranded: '
              + ','.join(STRANDED_COLUMNS) + ', a row per group and class.'),
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


class CapacityViewSet(PlacementViewSet):
    """GET /capacity: books and "how many more fit" per group; admin or
    service."""

    @with_csv(operation(
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
        query_schema=CAPACITY_QUERY,
        responses={200: (CAPACITY_ANSWER, 'The groups.')}, cached=[], accept_json=False,
        errors={400: 'An unknown grouping, format or view, a malformed `resources` (or one '
                     'with view=stranded), or a resource class that does not exist.',
                406: 'Or the Accept header takes neither application/json nor text/csv.'},
    ))
    @snapshots.snapshot_reads
    def list(self, request):
        self.authorize(POLICY)
        params = query_params(request, CAPACITY_QUERY)
        as_csv = answer_format(request, params) == 'csv'
        asked = requested(params)
        if params.get('view') == 'stranded':
            return self.stranded(asked, as_csv)
        found_groups = capacity.capacity(asked.group_by, wanted=asked.wanted,
                                         class_ids=asked.class_ids)
        if as_csv:
            return StreamingHttpResponse(csv_chunks(asked.group_by, found_groups),
                                         content_type=f'{CSV}; charset=utf-8')
        return self.respond({
            'group_by': asked.group_by,
            'resources': asked.shape,
            'groups': [group_body(found) for found in found_groups],
        }, cache_headers=False)

    def stranded(self, asked, as_csv):
        """view=stranded: per group and class, free, stranded and usable
        for the configured flavors."""
        if asked.shape is not None:
            raise errors.bad_request('The resources parameter does not apply with view=stranded '
                                     '(it counts the configured flavors).')
        found_groups = stranded.stranded(asked.group_by, class_ids=asked.class_ids)
        if as_csv:
            return StreamingHttpResponse(
                csv_chunks(asked.group_by, found_groups, STRANDED_COLUMNS, stranded_rows),
                content_type=f'{CSV}; charset=utf-8')
        return self.respond({
            'group_by': asked.group_by,
            'view': 'stranded',
            'flavors': {flavor.name: dict(flavor.resources) for flavor in configured_flavors()},
            'groups': [stranded_body(found) for found in found_groups],
        }, cache_headers=False)


@dataclass(frozen=True)
class Asked:
    """What GET /capacity's parameters ask: the grouping, the request shape
    ({class name: amount}) and it by class id (`wanted`), the classes
    whose books are shown (ids; None: all)."""
    group_by: str = capacity.CLOUD
    shape: dict = None
    wanted: dict = None
    class_ids: set = None


def requested(params):
    """Asked of GET /capacity's parameters (the dashboards' capacity page
    asks through them too); Placement's 400 for a malformed shape or an
    unknown class."""
    shape = wanted = class_ids = None
    if params.get('resources') is not None:
        shape = querystring.parse_resources(params['resources'])
    if shape is not None:
        with worded(exceptions.unknown_class_in('resources parameter')):
            ids = querysets.resource_class_ids(list(shape))
        wanted = {ids[name]: amount for name, amount in shape.items()}
    if params.get('resource_class') is not None:
        names = [n.strip() for n in params['resource_class'].split(',')]
        with worded(exceptions.unknown_class_in('resource_class parameter')):
            class_ids = set(querysets.resource_class_ids(names).values())
    return Asked(params.get('group_by') or capacity.CLOUD, shape, wanted, class_ids)
