"""GET /metrics: the catalogue's series, after the request series.

First the series openstack-exporter publishes for Placement, with its
names, labels (`hostname`: the provider's name, `resourcetype`: the
resource class) and HELP texts, so dashboards and alerts built on it keep
working; then ours: capacity and free per provider and class (with the same
labels, so PromQL can divide one by the other), and total, reserved,
capacity, used and free per pool (aggregate, read as the pool pages read it:
providers.books.pool_books) and for the whole cloud, and what of the free
no configured flavor can use (providers.stranded); then os-capacity's
series (providers.os_capacity); last those other apps read, named by
settings.PLACEMENT_METRICS_SERIES (allocations' per-project usage, which
this app may not read).

A cloud of 100,000 providers has over a million samples: 136 MB of text,
7 MB compressed. The samples of every provider and tree (Rendering) come
from the ledger's image (providers.ledger), rendered a bucket of trees at
a time and kept gzip-compressed: a scrape after a claim renders again the
bucket of the tree the claim changed, and sends the others as they are
(the answer is a gzip stream of several members, which gzip readers,
Prometheus' among them, read as one). Inside a transaction that may write
(and with the ledger off) every bucket is rendered from the rows read
then. Pools, the cloud and the rest are a few hundred lines, written anew.
"""
import collections
import logging
import zlib

from django.conf import settings
from django.db import DatabaseError
from django.db import connections
from django.http import StreamingHttpResponse
from django.utils.cache import patch_vary_headers
from django.utils.module_loading import import_string

from placement_site import budgets
from placement_site import metrics as site_metrics
from placement_site.compression import GZIP_LEVEL
from placement_site.compression import accepts_gzip
from placement_site.metrics import family
from placement_site.metrics import labels
from placement_site.metrics import number
from providers import books
from providers import capacity
from providers import ledger
from providers import os_capacity
from providers import rules
from providers import scopes
from providers import stranded
from providers.ledger.image import Image
from providers.ledger.image import streamed
from providers.models import Aggregate
from providers.models import Inventory

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

# The families with a sample per provider and class (an inventory): name,
# HELP text, the sample's value, and whether os-capacity's (relabelled).
INVENTORY_FAMILIES = (
    (f'{COMPAT}resource_total', 'resource_total', lambda i: str(i.total), False),
    (f'{COMPAT}resource_allocation_ratio', 'resource_allocation_ratio',
     lambda i: number(i.allocation_ratio), False),
    (f'{COMPAT}resource_reserved', 'resource_reserved', lambda i: str(i.reserved), False),
    (f'{COMPAT}resource_usage', 'resource_usage', lambda i: str(i.used), False),
    ('placement_provider_capacity',
     'What may be allocated of a resource class on a provider: '
     '(total - reserved) * allocation_ratio.', lambda i: number(i.capacity), False),
    ('placement_provider_free',
     'Capacity not allocated of a resource class on a provider (at least 0).',
     lambda i: number(rules.free(i.capacity, i.used)), False),
    ('openstack_hypervisor_placement_allocated',
     'Currently allocated resource for each provider in placement.',
     lambda i: str(i.used), True),
    ('openstack_hypervisor_placement_allocatable_capacity',
     'The total allocatable resource in the placement inventory.',
     lambda i: number(i.capacity), True),
)
HYPERVISOR_FLAVORS = 'openstack_free_capacity_hypervisor_by_flavor'
# Trees per bucket, roughly: a claim renders one bucket again.
BUCKETS = 256


def scrape(request):
    """Prometheus' text format, to allowed networks or the bearer token."""
    if request.method != 'GET':
        return site_metrics.method_not_allowed(request)
    if not site_metrics.scrape_allowed(request):
        return site_metrics.forbidden(request)
    gzip = accepts_gzip(request)
    try:
        catalogue = read_catalogue(gzip)
    except budgets.OverBudget:
        raise   # a 503 saying so (placement_site.budgets), not a database down
    except DatabaseError as exc:
        LOG.error('GET /metrics: the database did not answer: %s', exc)
        catalogue = None
    # Read here, inside the request; only the writing is streamed.
    chunks = answer(site_metrics.request_series(), catalogue, gzip)
    response = StreamingHttpResponse(chunks, content_type=site_metrics.CONTENT_TYPE)
    if gzip:
        response['Content-Encoding'] = 'gzip'
    patch_vary_headers(response, ('Accept-Encoding',))
    return response


class Catalogue(collections.namedtuple(
        'Catalogue', 'members pool_rows cloud_rows stranded_rows flavor_capacity others')):
    """What a scrape writes after the request series: the per-tree families'
    gzip members ({family name: [member per bucket]}), the pools' and the
    cloud's books as rows, their stranded capacity ({'pool' or 'cloud':
    [(labels, amount)]}), os-capacity's counts, the other apps' series."""


def read_catalogue(gzip=True):
    """Everything the series show, read now (within the page's snapshot)
    and written as the answer streams."""
    using = Inventory.objects.db
    pools = dict(Aggregate.objects.values_list('id', 'uuid'))
    pool_rows = [(labels(aggregate=pools[aggregate_id], resourcetype=name), usage)
                 for aggregate_id, classes in books.pool_books(pools).items()
                 for name, usage in classes.items()]
    cloud_rows = [(labels(resourcetype=name), usage)
                  for name, usage in books.scope_books(scopes.cloud()).get(
                      scopes.CLOUD, {}).items()]
    stranded_rows = {
        'cloud': [(labels(resourcetype=name), class_stranded.stranded) for name, class_stranded in
                  stranded.stranded(capacity.CLOUD)[0].classes.items()],
        'pool': [(labels(aggregate=group.group.key, resourcetype=name), class_stranded.stranded)
                 for group in stranded.stranded_in(scopes.pools(), [
                     capacity.Group(uuid, grp=pk) for pk, uuid in sorted(pools.items())])
                 for name, class_stranded in group.classes.items()]}
    flavor_capacity = os_capacity.read() if settings.PLACEMENT_METRICS_OS_CAPACITY else None
    hypervisors = flavor_capacity.hypervisors if flavor_capacity else {}
    if ledger.serves(using):
        members = ledger.ledger(using).read(
            ('metrics', settings.PLACEMENT_METRICS_OS_CAPACITY), Rendering,
            lambda rendering, image: rendering.members(image, hypervisors))
    else:
        image = Image.read(streamed(connections[using]), None, {}, with_facets=False)
        rendering = Rendering()
        rendering.build(image)
        members = rendering.members(image, hypervisors)
    others = [import_string(path)() for path in settings.PLACEMENT_METRICS_SERIES]
    return Catalogue(members, pool_rows, cloud_rows, stranded_rows, flavor_capacity, others)


# ---- the per-tree families, rendered a bucket of trees at a time ------------------------

def compressed(text):
    """The text as one gzip member."""
    compressor = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return compressor.compress(text.encode()) + compressor.flush()


class Rendering:
    """The per-tree families' samples as gzip members, a member per family
    and bucket of trees (root id modulo BUCKETS), kept as a ledger fold: a
    bucket is rendered again when one of its trees changed (update), when
    the catalogue's names did, or when os-capacity's counts or labels of
    one of its trees (what `hypervisors` says) moved."""

    def __init__(self):
        self.buckets = {}     # bucket -> (what its hypervisor samples were, {family: member})
        self.dirty = set(range(BUCKETS))
        self.catalogue = None
        self.os_capacity = settings.PLACEMENT_METRICS_OS_CAPACITY

    def build(self, image):
        self.buckets, self.dirty = {}, set(range(BUCKETS))

    def update(self, old, new, roots):
        self.dirty.update(root % BUCKETS for root in roots)
        return True

    def estimated_size(self):
        return 10_000 + sum(300 * len(members) + sum(len(m) for m in members.values())
                            for _, members in self.buckets.values())

    def families(self):
        families = [(name, help_text) for name, help_text, _, compat in INVENTORY_FAMILIES
                    if self.os_capacity or not compat]
        return families + ([(HYPERVISOR_FLAVORS, '')] if self.os_capacity else [])

    def members(self, image, hypervisors):
        """{family name: [gzip member per bucket]}; hypervisors: os-capacity's
        per-root counts and places (os_capacity.FlavorCapacity.hypervisors)."""
        if image.catalogue is not self.catalogue:
            self.catalogue, self.dirty = image.catalogue, set(range(BUCKETS))
        by_bucket = collections.defaultdict(list)
        for root in image.trees:
            by_bucket[root % BUCKETS].append(root)
        members = collections.defaultdict(list)
        for bucket in range(BUCKETS):
            roots = sorted(by_bucket.get(bucket, ()))
            samples = tuple((root, hypervisors[root]) for root in roots if root in hypervisors)
            held = self.buckets.get(bucket)
            if bucket in self.dirty or held is None or held[0] != samples:
                held = self.buckets[bucket] = (samples, self._render(image, roots, samples))
            for name, _ in self.families():
                members[name].append(held[1][name])
        self.dirty.clear()
        return dict(members)

    def _render(self, image, roots, samples):
        lines = collections.defaultdict(list)
        families = [f for f in INVENTORY_FAMILIES if self.os_capacity or not f[3]]
        for root in roots:
            tree = image.trees[root]
            names = {provider.id: provider.name for provider in tree.providers}
            for inventory in tree.inventories:
                host = labels(hostname=names[inventory.provider],
                              resourcetype=image.class_name(inventory.resource_class))
                relabelled = os_capacity.hypervisor_labels(host) if self.os_capacity else None
                for name, _, value, compat in families:
                    lines[name].append(
                        f'{name}{relabelled if compat else host} {value(inventory)}\n')
        if self.os_capacity:
            for root, (where, fits) in samples:
                head = os_capacity.hypervisor_head(image.trees[root].name, where)
                lines[HYPERVISOR_FLAVORS] += [
                    f'{HYPERVISOR_FLAVORS}{head},{labels(flavor_name=flavor)[1:]} {count}\n'
                    for flavor, count in fits.items()]
        return {name: compressed(''.join(lines[name])) for name, _ in self.families()}


# ---- the answer ---------------------------------------------------------------------

def answer(request_text, catalogue, gzip):
    """The whole answer, in chunks: gzip members when `gzip` (the buckets'
    as they are kept), else text; without a catalogue (the database did not
    answer) the request series and openstack_placement_up 0."""
    def text(chunks):
        joined = ''.join(chunks)
        return compressed(joined) if gzip else joined

    def kept(name, help_text):
        header = family(name, help_text, ())
        yield text(header)
        for member in catalogue.members[name]:
            yield member if gzip else zlib.decompress(member, 16 + zlib.MAX_WBITS).decode()

    yield text([request_text])
    yield text(family(f'{COMPAT}up', 'up', [('', 0 if catalogue is None else 1)]))
    if catalogue is None:
        return
    for name, help_text, _, _compat in INVENTORY_FAMILIES[:6]:
        yield from kept(name, help_text)
    for suffix, help_text, value in BOOK_FIELDS:
        yield text(family(
            f'placement_pool_{suffix}',
            f'{help_text} per resource class of a pool (aggregate): its members and the '
            'trees of member roots, as the pool pages count them.',
            ((label, number(value(usage))) for label, usage in catalogue.pool_rows)))
    for suffix, help_text, value in BOOK_FIELDS:
        yield text(family(
            f'placement_cloud_{suffix}', f'{help_text} per resource class over the whole cloud.',
            ((label, number(value(usage))) for label, usage in catalogue.cloud_rows)))
    for kind, where in (('pool', 'of a pool (aggregate), as the pool pages count it'),
                        ('cloud', 'over the whole cloud')):
        yield text(family(
            f'placement_{kind}_stranded',
            'Free capacity no configured flavor (PLACEMENT_CAPACITY_FLAVORS) can use, per '
            f'resource class {where}: on each tree, its free beyond the most any one flavor '
            'could still take of it; a sharing provider counted once (GET '
            '/capacity?view=stranded).',
            ((label, number(amount)) for label, amount in catalogue.stranded_rows[kind])))
    flavor_capacity = catalogue.flavor_capacity
    if flavor_capacity is not None:
        yield text(os_capacity.flavor_totals(flavor_capacity))
        yield from kept(HYPERVISOR_FLAVORS, os_capacity.HYPERVISOR_FLAVORS_HELP)
        yield text(os_capacity.project_filters(flavor_capacity))
        for name, help_text, _, _compat in INVENTORY_FAMILIES[6:]:
            yield from kept(name, help_text)
    for chunks in catalogue.others:
        yield text(chunks)
