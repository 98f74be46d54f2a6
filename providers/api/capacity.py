"""GET /capacity (not part of OpenStack Placement): capacity, reserved,
used, free and utilization per resource class for each group of providers,
and how many more of a request shape fit in each (providers.capacity);
with view=stranded, the free capacity no configured flavor can use
(providers.stranded). JSON, or CSV with format=csv or an Accept header
preferring text/csv."""
import io
from dataclasses import dataclass

from django.http import StreamingHttpResponse

from placement_site import downloads, errors, exceptions, snapshots
from placement_site.api import CSV, PlacementViewSet, answer_format, query_params
from placement_site.errors import worded
from providers import capacity, querysets, querystring, stranded
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


class CapacityViewSet(PlacementViewSet):
    """GET /capacity: books and "how many more fit" per group; admin or
    service."""

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
