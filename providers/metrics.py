"""GET /metrics: the catalogue's series, after the request series.

First the series openstack-exporter publishes for Placement, with its
names, labels (`hostname`: the provider's name, `resourcetype`: the
resource class) and HELP texts, so dashboards and alerts built on it keep
working; then ours: capacity and free per provider and class (with the same
labels, so PromQL can divide one by the other), and total, reserved,
capacity, used and free per pool (aggregate, read as the pool pages read it:
providers.books.pool_books) and for the whole cloud; then os-capacity's
series (providers.os_capacity); last those other apps read, named by
settings.PLACEMENT_METRICS_SERIES (allocations' per-project usage, which
this app may not read).

A scrape costs a fixed number of queries whatever the size of the cloud:
the inventories with their providers' and classes' names, the aggregates,
the pools and the cloud (four), os-capacity's reads and the other apps'.
Rows are read into compact tuples and the text is
streamed out family by family, gzip-compressed as it goes when the scraper
accepts it (Prometheus does): a cloud of 100,000 providers has over a
million samples, 90 MB of text and 5 MB compressed.
"""
import logging

from django.conf import settings
from django.db import DatabaseError
from django.http import StreamingHttpResponse
from django.utils.cache import patch_vary_headers
from django.utils.module_loading import import_string

from placement_site import metrics as site_metrics
from placement_site.compression import accepts_gzip, gzipped
from placement_site.metrics import family, labels, number
from providers import books, os_capacity, rules, scopes
from providers.models import Aggregate, Inventory

LOG = logging.getLogger(__name__)

# openstack-exporter's prefix; its HELP text is the name without it.
COMPAT = 'openstack_placement_'
BOOK_FIELDS = (  # (series suffix, what it is, its value in a books.ClassUsage)
    ('total', 'Total inventory', lambda usage: usage.total),
    ('reserved', 'Reserved inventory', lambda usage: usage.reserved),
    ('capacity', 'Capacity, (total - reserved) * allocation_ratio summed,',
     lambda usage: usage.capacity),
    ('used', 'Allocated amount', lambda usage: usage.used),
    ('free', 'Free capacity, capacity - used (at least 0),', lambda usage: usage.free),
)


def scrape(request):
    """Prometheus' text format, to allowed networks or the bearer token."""
    if request.method != 'GET':
        return site_metrics.method_not_allowed(request)
    if not site_metrics.scrape_allowed(request):
        return site_metrics.forbidden(request)
    try:
        catalogue = read_catalogue()
    except DatabaseError as exc:
        LOG.error('GET /metrics: the database did not answer: %s', exc)
        catalogue = None
    # Read here, inside the request; only the writing is streamed.
    text = series(site_metrics.request_series(), catalogue)
    if not accepts_gzip(request):
        response = StreamingHttpResponse(text, content_type=site_metrics.CONTENT_TYPE)
    else:
        response = StreamingHttpResponse(gzipped(text), content_type=site_metrics.CONTENT_TYPE)
        response['Content-Encoding'] = 'gzip'
    patch_vary_headers(response, ('Accept-Encoding',))
    return response


def read_catalogue():
    """What the series show: inventory rows as (rendered labels, total,
    reserved, allocation ratio, used), the books of every pool and of the
    cloud (four queries), os-capacity's flavor counts, and the other apps'
    series, read now and written as the answer streams."""
    inventories = Inventory.objects.order_by('resource_provider_id', 'resource_class_id')
    rows = [
        (labels(hostname=provider, resourcetype=resource_class), total, reserved, ratio, used)
        for provider, resource_class, total, reserved, ratio, used in inventories.values_list(
            'resource_provider__name', 'resource_class__name', 'total', 'reserved',
            'allocation_ratio', 'used').iterator(chunk_size=10000)
    ]
    pools = dict(Aggregate.objects.values_list('id', 'uuid'))
    pool_books = books.pool_books(pools)
    pool_rows = [(labels(aggregate=pools[aggregate_id], resourcetype=name), usage)
                 for aggregate_id, classes in pool_books.items()
                 for name, usage in classes.items()]
    cloud_rows = [(labels(resourcetype=name), usage)
                  for name, usage in books.scope_books(scopes.cloud()).get(
                      scopes.CLOUD, {}).items()]
    others = [import_string(path)() for path in settings.PLACEMENT_METRICS_SERIES]
    flavor_capacity = os_capacity.read() if settings.PLACEMENT_METRICS_OS_CAPACITY else None
    return rows, pool_rows, cloud_rows, flavor_capacity, others


def series(request_text, catalogue):
    """The whole answer, in chunks; without a catalogue (the database did
    not answer) the request series and openstack_placement_up 0."""
    yield request_text
    yield from family(f'{COMPAT}up', 'up', [('', 0 if catalogue is None else 1)])
    if catalogue is None:
        return
    rows, pool_rows, cloud_rows, flavor_capacity, others = catalogue
    yield from family(f'{COMPAT}resource_total', 'resource_total',
                      ((label, str(total)) for label, total, _, _, _ in rows))
    yield from family(f'{COMPAT}resource_allocation_ratio', 'resource_allocation_ratio',
                      ((label, number(ratio)) for label, _, _, ratio, _ in rows))
    yield from family(f'{COMPAT}resource_reserved', 'resource_reserved',
                      ((label, str(reserved)) for label, _, reserved, _, _ in rows))
    yield from family(f'{COMPAT}resource_usage', 'resource_usage',
                      ((label, str(used)) for label, _, _, _, used in rows))
    yield from family(
        'placement_provider_capacity',
        "What may be allocated of a resource class on a provider: "
        "(total - reserved) * allocation_ratio.",
        ((label, number(rules.capacity(total, reserved, ratio)))
         for label, total, reserved, ratio, _ in rows))
    yield from family(
        'placement_provider_free',
        'Capacity not allocated of a resource class on a provider (at least 0).',
        ((label, number(max(rules.capacity(total, reserved, ratio) - used, 0)))
         for label, total, reserved, ratio, used in rows))
    for suffix, help_text, value in BOOK_FIELDS:
        yield from family(
            f'placement_pool_{suffix}',
            f'{help_text} per resource class of a pool (aggregate): its members and the '
            'trees of member roots, as the pool pages count them.',
            ((label, number(value(usage))) for label, usage in pool_rows))
    for suffix, help_text, value in BOOK_FIELDS:
        yield from family(
            f'placement_cloud_{suffix}', f'{help_text} per resource class over the whole cloud.',
            ((label, number(value(usage))) for label, usage in cloud_rows))
    if flavor_capacity is not None:
        yield from os_capacity.series(flavor_capacity, rows)
    for chunks in others:
        yield from chunks
