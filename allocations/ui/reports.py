"""Reads for the dashboards: capacity, usage and utilization across the
cloud, per provider, per tree, per pool, per pod and per owner. Built on
the query vocabulary of providers.querysets (and the pods' selection);
each function issues a fixed number of queries, whatever the number of
providers, consumers or pods."""
import collections
from dataclasses import dataclass, field

from django.db.models import (
    Count,
    Exists,
    F,
    OuterRef,
    Q,
    Sum,
    Window,
)

from allocations import ledger as allocation_ledger
from allocations.models import Allocation, Consumer, ConsumerType, Project
from allocations.models import User as PlacementUser
from allocations.ui import exports
from placement_site.api import timestamp
from placement_site.queries import count_of
from providers import books, capacity, ledger, rules, scopes, stranded
from providers.flavors import Flavor, configured_flavors
from providers.models import (
    Aggregate,
    Event,
    Inventory,
    ProviderAggregate,
    ResourceClass,
    ResourceProvider,
)
from providers.pods import pipeline, selection
from providers.pods.models import GENERAL_PURPOSE, Pod, PodBinding


def class_summary():
    """ClassUsage per resource class over the whole cloud. One query."""
    return list(books.scope_books(scopes.cloud()).get(scopes.CLOUD, {}).values())


def pools(aggregates):
    """For each aggregate: member count and the pool's combined ClassUsage
    per class (its members and the trees of member roots, see
    providers.books). Three queries for any number of pools."""
    aggregate_ids = [a.pk for a in aggregates]
    members = collections.Counter(dict(ProviderAggregate.objects.filter(
        aggregate_id__in=aggregate_ids).values('aggregate_id').annotate(
        n=Count('resource_provider')).values_list('aggregate_id', 'n')))
    pool_books = books.pool_books(aggregate_ids)
    return {agg: {'members': members.get(agg, 0), 'classes': list(pool_books[agg].values())}
            for agg in aggregate_ids}


@dataclass
class FlavorFit:
    """How many more of a configured flavor (PLACEMENT_CAPACITY_FLAVORS)
    fit: capacity.Fit's count, a lower bound when not exact."""
    flavor: Flavor
    fit: capacity.Fit
    why: str = ''   # when none fits: the limit that stops it (capacity.why_none_fit)


def flavor_fits(scope, groups):
    """{group key: [FlavorFit]} for the configured flavors in the groups
    (providers.capacity, as GET /capacity counts them), and why none fits
    where none does. Four queries (one more per part of the scope when a flavor fits none),
    whatever the number of groups."""
    flavors = configured_flavors()
    found = capacity.flavor_fits(flavors, scope, groups)
    why = capacity.why_none_fit(flavors, scope, groups, found)
    return {key: [FlavorFit(f, fits[f.name], why.get(key, {}).get(f.name, ''))
                  for f in flavors] for key, fits in found.items()}


def cloud_flavor_fits():
    """[FlavorFit] over the whole cloud."""
    return flavor_fits(*capacity.grouping(capacity.CLOUD))[capacity.CLOUD]


def pool_flavor_fits(aggregates):
    """{aggregate id: [FlavorFit]} in each pool (members and the trees of
    member roots, as member_of reads it)."""
    aggregates = list(aggregates)
    by_uuid = flavor_fits(*capacity.pools(aggregates))
    return {a.pk: by_uuid[a.uuid] for a in aggregates}


def cloud_stranded():
    """[stranded.ClassStranded] of the whole cloud, for the configured flavors."""
    return list(stranded.stranded(capacity.CLOUD)[0].classes.values())


def pool_stranded(aggregate):
    """[stranded.ClassStranded] of one pool (an Aggregate)."""
    return list(stranded.stranded_in(*capacity.pools([aggregate]))[0].classes.values())


# The pools list's sorts: its columns (the names with_names annotates).
POOL_SORTS = {'name': 'name', 'zone': 'zone', 'members': 'member_count', 'uuid': 'uuid'}


def pools_sorted(sort):
    """The pools (aggregates) with their names, pods and zones
    (AggregateQuerySet.with_names) and `member_count`, in the order of
    `sort` ('-' descending; unknown: by name); pools without a zone last.
    One query, sorted in the database."""
    field = POOL_SORTS.get(sort.lstrip('-'), 'name')
    order = (F(field).desc(nulls_last=True) if sort.startswith('-')
             else F(field).asc(nulls_last=True))
    return Aggregate.objects.with_names().annotate(
        member_count=count_of(ProviderAggregate, 'aggregate')).order_by(order, 'uuid')


def pool_rows(listed):
    """(columns, rows) of the pools list's export: each pool's name, zone,
    pod and members, every class's used and capacity (books.pool_books, as
    the page shows them) and how many more of each configured flavor fit;
    a chunk of pools and a few queries at a time."""
    classes = classes_with_inventory()
    flavor_names = [f.name for f in configured_flavors()]
    columns = (['uuid', 'name', 'zone', 'pod', 'members']
               + [f'{c}_{what}' for c in classes for what in ('used', 'capacity')]
               + [f'{name}_fit' for name in flavor_names])

    def rows():
        for chunk in exports.chunks(listed):
            booked, fits = pools(chunk), pool_flavor_fits(chunk)
            for pool in chunk:
                held = {c.name: (c.used, c.capacity) for c in booked[pool.pk]['classes']}
                yield ([pool.uuid, pool.name, pool.zone, pool.pod_name, pool.member_count]
                       + [value for c in classes for value in held.get(c, (None, None))]
                       + [f.fit.count for f in fits[pool.pk]])
    return columns, rows()


@dataclass
class Host:
    """A host (a provider tree) as the overview lists it: its root, and the
    books of its fullest class summed over the tree."""
    root: ResourceProvider
    fullest: books.ClassUsage


def fullest_hosts(limit=10):
    """[Host] of the `limit` fullest hosts (books.fullest_hosts; trees
    without capacity are never among them): their roots read, one query
    more."""
    found = books.fullest_hosts(limit)
    roots = ResourceProvider.objects.in_bulk([root for root, _ in found])
    # A tree the ledger holds may be gone from this page's snapshot.
    return [Host(roots[root], fullest) for root, fullest in found if root in roots]


def cloud_counts():
    """The cloud's providers, roots (from the ledger's image outside a
    writing transaction), consumers and projects holding consumers (a
    project counted by an EXISTS per project on the consumers' index, not a
    DISTINCT over a join with every consumer). Two or three queries."""
    if _ledger_serves():
        every, roots = ledger.provider_counts(ResourceProvider.objects.db)
    else:
        providers = ResourceProvider.objects.aggregate(
            all=Count('id'), roots=Count('id', filter=Q(parent_provider__isnull=True)))
        every, roots = providers['all'], providers['roots']
    return {
        'providers': every,
        'roots': roots,
        'consumers': Consumer.objects.count(),
        'projects': Project.objects.filter(
            Exists(Consumer.objects.filter(project=OuterRef('pk')))).count(),
    }


def utilization_of(provider_ids):
    """{provider id: [inventory with used/capacity/utilization]} (one query)."""
    by_provider = collections.defaultdict(list)
    for inventory in Inventory.objects.filter(
            resource_provider_id__in=list(provider_ids)).with_utilization().select_related(
            'resource_class').order_by('resource_class_id'):
        by_provider[inventory.resource_provider_id].append(inventory)
    return by_provider


def classes_with_inventory():
    """The names of the classes some provider has inventory of, in class
    order (one query: an EXISTS per class)."""
    return list(ResourceClass.objects.filter(Exists(Inventory.objects.filter(
        resource_class=OuterRef('pk')))).order_by('id').values_list('name', flat=True))


def provider_rows(providers):
    """(columns, rows) of a providers export: each provider (annotated
    with max_utilization) with every class's used and capacity, a chunk of
    providers and one query at a time. Read as tuples, not models: building
    100,000 providers and their inventories as objects took most of a
    whole cloud's export."""
    classes = classes_with_inventory()
    columns = ['uuid', 'name', 'parent_provider_uuid', 'root_provider_uuid', 'generation',
               'max_utilization'] + [f'{c}_{what}' for c in classes for what in ('used',
                                                                                 'capacity')]
    listed = providers.values_list('pk', 'uuid', 'name', 'parent_provider__uuid',
                                   'root_provider__uuid', 'generation', 'max_utilization')

    def rows():
        for chunk in exports.chunks(listed):
            held = collections.defaultdict(dict)
            for provider_id, name, used, total, reserved, ratio in Inventory.objects.filter(
                    resource_provider_id__in=[row[0] for row in chunk]).values_list(
                    'resource_provider_id', 'resource_class__name', 'used', 'total',
                    'reserved', 'allocation_ratio'):
                held[provider_id][name] = (used, rules.capacity(total, reserved, ratio))
            for row in chunk:
                books = held[row[0]]
                yield [*row[1:]] + [value for c in classes
                                    for value in books.get(c, (None, None))]
    return columns, rows()


def host_rows(roots):
    """(columns, rows) of a hosts export: each tree (`roots`: a query of
    its roots' ids, or the ids in order) with its fullest class
    (books.fullest_class) and every class's used and capacity summed over
    the tree, a chunk of trees and two queries at a time."""
    classes = classes_with_inventory()
    columns = ['uuid', 'name', 'fullest_class', 'fullest_utilization'] + [
        f'{c}_{what}' for c in classes for what in ('used', 'capacity')]

    def rows():
        for chunk in exports.chunks(roots):
            named = {pk: (uuid, name) for pk, uuid, name in ResourceProvider.objects.filter(
                pk__in_ids=chunk).values_list('pk', 'uuid', 'name')}
            usage = tree_usage_of(chunk)
            for root in chunk:
                held = {u.name: u for u in usage.get(root, ())}
                fullest = books.fullest_class(held)
                yield [*named.get(root, (None, None)),
                       fullest and fullest.name, fullest and fullest.utilization] + [
                    value for c in classes
                    for value in ((held[c].used, held[c].capacity) if c in held else (None, None))]
    return columns, rows()


def consumer_rows(consumers, **within):
    """(columns, rows) of a consumers export: one row per allocation
    (narrowed by `within`), with its consumer's owner, a chunk of consumers
    and one query at a time, read as tuples (as provider_rows)."""
    columns = ['consumer_uuid', 'project_id', 'user_id', 'consumer_type', 'generation',
               'resource_provider_uuid', 'resource_provider_name', 'resource_class', 'used']
    listed = consumers.values_list('pk', 'uuid', 'project__external_id', 'user__external_id',
                                   'consumer_type__name', 'generation')

    def rows():
        for chunk in exports.chunks(listed):
            held = collections.defaultdict(list)
            for consumer_id, *allocation in Allocation.objects.filter(
                    consumer_id__in=[row[0] for row in chunk], **within).order_by(
                    'resource_provider__name', 'resource_class_id').values_list(
                    'consumer_id', 'resource_provider__uuid', 'resource_provider__name',
                    'resource_class__name', 'used'):
                held[consumer_id].append(allocation)
            for pk, uuid, project, user, kind, generation in chunk:
                owner = [uuid, project, user, kind or ConsumerType.UNKNOWN, generation]
                for allocation in held[pk]:
                    yield owner + allocation
    return columns, rows()


def usage_rows(rows, keys, classes):
    """(columns, rows) of a usage table's export (Usage.rows: one per owner)."""
    columns = [*keys, 'consumers', *classes]
    return columns, ([*row['key'], row['consumers'], *(row['usages'].get(c, 0) for c in classes)]
                     for row in rows)


def event_rows(events):
    """(columns, rows) of an event-log export, a chunk at a time."""
    columns = ['id', 'created_at', 'event_type', 'consumer_generation_before',
               'consumer_generation_after', 'request_id', 'user_id', 'project_id']
    return columns, ([e.pk, timestamp(e.created_at), e.event_type, e.consumer_generation_before,
                      e.consumer_generation_after, e.request_id, e.user_id, e.project_id]
                     for chunk in exports.chunks(events) for e in chunk)


def binding_rows(bindings):
    """(columns, rows) of a pod's binding history export."""
    columns = ['uuid', 'project_id', 'affinity', 'started_at', 'ended_at', 'end_reason']
    return columns, ([b.uuid, b.project_id, b.affinity, timestamp(b.started_at),
                      timestamp(b.ended_at), b.end_reason]
                     for chunk in exports.chunks(bindings) for b in chunk)


# ---- trees and sharing --------------------------------------------------------------

def tree_usage_of(root_ids):
    """{root id: [books.ClassUsage]}: each tree's books summed over every
    provider of it (one query)."""
    root_ids = list(root_ids)
    if not root_ids:
        return {}
    scope = scopes.trees().narrowed(resource_provider__root_provider_id__in=root_ids)
    return {root: list(classes.values()) for root, classes in books.scope_books(scope).items()}


@dataclass
class TreeNode:
    provider: ResourceProvider
    children: list = field(default_factory=list)
    inventories: list = field(default_factory=list)


def provider_tree(provider, with_inventories=False):
    """The provider's whole tree as nested TreeNodes, root first (one
    query; with each provider's inventories and their use, two)."""
    nodes = {p.pk: TreeNode(p) for p in ResourceProvider.objects.filter(
        root_provider_id=provider.root_provider_id).order_by('name')}
    if with_inventories:
        for provider_id, inventories in utilization_of(nodes).items():
            nodes[provider_id].inventories = inventories
    root = None
    for node in nodes.values():
        parent = nodes.get(node.provider.parent_provider_id)
        if parent is None:
            root = node
        else:
            parent.children.append(node)
    return root


def consumers_holding(**within):
    """The consumers holding allocations narrowed by `within` (Allocation
    lookups: a provider, a tree's providers), by uuid, with their owners
    (paginate it: Counted). A semi-join from those allocations: the
    database starts from them, not from every consumer of the cloud; and
    counted as the distinct consumers of those allocations alone."""
    return Counted(
        Consumer.objects.filter(pk__in=Allocation.objects.filter(**within).values(
            'consumer_id')).select_related('project', 'user', 'consumer_type').order_by('uuid'),
        lambda: Allocation.objects.filter(**within).values('consumer_id').distinct().count())


class Counted:
    """A queryset as a Paginator and an export read it (counted, sliced,
    iterated), counted by `count()`: the same number as COUNT(*) over the
    queryset, from a cheaper query."""
    ordered = True

    def __init__(self, queryset, count):
        self.queryset, self._count, self._counted = queryset, count, None

    def count(self):
        if self._counted is None:
            self._counted = self._count()
        return self._counted

    def __len__(self):
        return self.count()

    def __getitem__(self, key):
        return self.queryset[key]

    def __iter__(self):
        return iter(self.queryset)

    def iterator(self, chunk_size=None):
        return self.queryset.iterator(chunk_size=chunk_size)

    def values_list(self, *fields):
        return self.queryset.values_list(*fields)


def holdings(consumers, **within):
    """[(consumer, [allocation with its provider and class])] for the
    consumers (a page), their allocations narrowed by `within` (Allocation
    lookups), in the consumers' order. One query."""
    consumers = list(consumers)
    held = collections.defaultdict(list)
    for allocation in Allocation.objects.filter(
            consumer_id__in=[c.pk for c in consumers], **within).select_related(
            'resource_provider', 'resource_class').order_by(
            'resource_provider__name', 'resource_class_id'):
        held[allocation.consumer_id].append(allocation)
    return [(consumer, held[consumer.pk]) for consumer in consumers]


def is_sharing(provider):
    return ResourceProvider.objects.filter(pk=provider.pk).sharing().exists()


# A share may serve every tree of the cloud: its page names this many.
RELATED_SHOWN = 100


def sharing_relations(provider, sharing):
    """(the first RELATED_SHOWN by name, how many): for a sharing provider, the
    roots of the trees it serves through its aggregates, as the candidate
    search finds them (a share may serve every tree of the cloud); for any
    other provider, the sharing providers serving its tree. One query: the
    rows shown, each with how many there are in all (a window count)."""
    if sharing:
        related = ResourceProvider.objects.filter(pk=provider.pk).roots_served().exclude(
            pk=provider.root_provider_id)
    else:
        related = ResourceProvider.objects.sharing().serving_tree(provider.root_provider_id)
    shown = list(related.annotate(related_count=Window(Count('*'))).order_by(
        'name')[:RELATED_SHOWN])
    return shown, shown[0].related_count if shown else 0


# ---- a consumer, a project ------------------------------------------------------------

def consumer_history(uuid):
    """The event log's changes of the allocations of the consumer `uuid`
    (there or deleted), newest first (paginate it; the log is indexed by
    consumer)."""
    return Event.objects.filter(consumer_uuid=uuid).order_by('-id')


@dataclass(frozen=True)
class FormerConsumer:
    """A consumer that is no longer there, as the event log last knew it:
    its owner and type from its newest event naming them (None when the
    log has none left, pruned or never written: an API DELETE's event
    names no owner), its last generation, and the newest event (`last`: a
    dict of event_type, created_at and user_id; its allocation.delete, or
    an allocation.update when the rows went behind Placement's back)."""
    uuid: str
    project_id: str
    user_id: str
    consumer_type: str
    generation: int
    last: dict


def former_consumer(uuid):
    """A FormerConsumer for `uuid` when the event log names a consumer of
    that uuid, else None (a uuid no consumer ever had). Two queries."""
    events = consumer_history(uuid)
    last = events.values('event_type', 'created_at', 'user_id', 'consumer_generation_before',
                         'consumer_generation_after').first()
    if last is None:
        return None
    owner = events.filter(payload__has_key='project_id').values_list('payload', flat=True).first()
    project_id = user_id = consumer_type = None
    if owner is not None:
        project_id, user_id = owner.get('project_id'), owner.get('user_id')
        consumer_type = owner.get('consumer_type') or ConsumerType.UNKNOWN
    generation = last['consumer_generation_after']
    if generation is None:   # deleted: the generation it had until then
        generation = last['consumer_generation_before']
    return FormerConsumer(uuid=uuid, project_id=project_id, user_id=user_id,
                          consumer_type=consumer_type, generation=generation, last=last)


def _ledger_serves():
    """Whether the owners' sums come from the ledger (allocations.ledger):
    outside a writing transaction, they follow the writes tree by tree."""
    return allocation_ledger.serves(Allocation.objects.db)


def project_usage(project):
    """{class name: used} of the project's consumers, in class order: from
    the ledger, or one query."""
    if _ledger_serves():
        sums, _ = allocation_ledger.owner_usage(Allocation.objects.db,
                                                lambda owner: owner[0] == project.pk)
        totals = collections.Counter()
        for by_class in sums.values():
            totals.update(by_class)
        names = dict(ResourceClass.objects.filter(pk__in=list(totals)).values_list('pk', 'name'))
        # (A class the page's snapshot does not know yet: the image is a moment ahead.)
        return {names[class_id]: totals[class_id] for class_id in sorted(totals)
                if class_id in names}
    held = Allocation.objects.filter(consumer__project=project)
    return dict(held.values_list('resource_class__name').annotate(used=Sum('used')).order_by(
        'resource_class_id'))


def project_hosts(project, limit=20):
    """(hosts, count): the provider trees the project's consumers sit on,
    most consumers first (then by name), at most `limit`, each a dict with
    `consumers`, `name` and `uuid`; and how many trees there are. From the
    ledger, or two queries."""
    if _ledger_serves():
        (hosts, count), _ = allocation_ledger.project_trees(Allocation.objects.db, project.pk,
                                                             limit)
        return [{'resource_provider__root_provider_id': root, 'name': name, 'uuid': uuid,
                 'consumers': consumers} for root, name, uuid, consumers in hosts], count
    per_root = Allocation.objects.filter(consumer__project=project).values(
        'resource_provider__root_provider_id')
    return (list(per_root.annotate(
        consumers=Count('consumer_id', distinct=True),
        name=F('resource_provider__root_provider__name'),
        uuid=F('resource_provider__root_provider__uuid'),
    ).order_by('-consumers', 'name')[:limit]), per_root.order_by().distinct().count())


def project_consumers(project):
    """The project's consumers holding allocations, by uuid, with their
    owners (paginate it). From the consumers' side, by the project's index:
    a large project's allocations are many, its consumers' rows few.
    Counted by the ledger's owners' usage where it serves (counting 36,000
    consumers' EXISTS took a large project's page 50 ms of every read)."""
    listed = owned_consumers(project=project.external_id).select_related(
        'project', 'user', 'consumer_type').order_by('uuid')
    if not _ledger_serves():
        return listed
    return Counted(listed, lambda: sum(allocation_ledger.owner_usage(
        Allocation.objects.db, lambda owner: owner[0] == project.pk)[1].values()))


def project_pools(project, limit=50):
    """The pools (aggregates) the project's consumers sit in, as member_of
    reads a pool: a provider holding their allocations, or its tree's root,
    is a member. At most `limit`, by uuid (one query, the ledger saying which)."""
    if _ledger_serves():
        _, pools = allocation_ledger.project_trees(Allocation.objects.db, project.pk, 0)
        return list(Aggregate.objects.filter(pk__in=pools).order_by('uuid')[:limit])
    return _pools_holding(Allocation.objects.filter(consumer__project=project), limit)


def _pools_holding(held, limit):
    def pools_of(providers):
        return ProviderAggregate.objects.filter(resource_provider_id__in=providers).values(
            'aggregate_id')
    # Two semi-joins over the (few) aggregates, not an OR over every membership.
    return list(Aggregate.objects.filter(
        Q(pk__in=pools_of(held.values('resource_provider_id')))
        | Q(pk__in=pools_of(held.values('resource_provider__root_provider_id'))),
    ).order_by('uuid')[:limit])


def project_bindings(project):
    """The project's open pod bindings, by affinity (one query)."""
    return PodBinding.objects.open().filter(project_id=project.external_id).select_related(
        'pod', 'pod__aggregate').order_by('affinity')


# ---- usage by owner -----------------------------------------------------------------

def owners_wanted(filters):
    """A test of owners ((project id, user id, consumer type id or -1), as
    allocations.ledger keys them) for the owner filters ({owner: external id
    or None}): one query per filter given."""
    tests = []
    if filters.get('project'):
        pk = Project.objects.filter(external_id=filters['project']).values_list('pk', flat=True)
        tests.append((0, pk.first()))
    if filters.get('user'):
        pk = PlacementUser.objects.filter(external_id=filters['user']).values_list('pk',
                                                                                  flat=True)
        tests.append((1, pk.first()))
    if filters.get('consumer_type') == ConsumerType.UNKNOWN:
        tests.append((2, -1))
    elif filters.get('consumer_type'):
        pk = ConsumerType.objects.filter(name=filters['consumer_type']).values_list('pk',
                                                                                  flat=True)
        tests.append((2, pk.first()))
    return lambda owner: all(owner[index] == wanted for index, wanted in tests)


def owned_allocations(project=None, user=None, consumer_type=None):
    """Allocations of the consumers matching the owner filters."""
    return Allocation.objects.filter(_owned('consumer__', project, user, consumer_type))


def owned_consumers(project=None, user=None, consumer_type=None):
    """Consumers holding allocations, matching the owner filters."""
    return Consumer.objects.filter(
        _owned('', project, user, consumer_type),
        Exists(Allocation.objects.filter(consumer=OuterRef('pk'))))


def _owned(prefix, project, user, consumer_type):
    owned = Q()
    if project:
        owned &= Q(**{f'{prefix}project__external_id': project})
    if user:
        owned &= Q(**{f'{prefix}user__external_id': user})
    if consumer_type == ConsumerType.UNKNOWN:
        owned &= Q(**{f'{prefix}consumer_type__isnull': True})
    elif consumer_type:
        owned &= Q(**{f'{prefix}consumer_type__name': consumer_type})
    return owned


OWNERS = ('project', 'user', 'consumer_type')


@dataclass
class Usage:
    """The owners' usage, per (project, user, consumer type): sums per
    class and consumers; rows() rolls them up by any of the three."""
    sums: dict        # (project, user, type) -> {class name: used}
    consumers: dict   # (project, user, type) -> consumers holding allocations

    @classmethod
    def read(cls, filters):
        """The owners' usage (filters: {owner: external id or None}), as
        read_now() sums it: from the ledger's sums, kept tree by tree
        (allocations.ledger), outside a writing transaction."""
        if not _ledger_serves():
            return cls.read_now(filters)
        wanted = owners_wanted(filters)
        sums, counted = allocation_ledger.owner_usage(Allocation.objects.db, wanted)
        ids = {owner: (project, user, None if type_id < 0 else type_id)
               for owner in sums.keys() | counted.keys() for project, user, type_id in [owner]}
        return cls.named({ids[owner]: by_class for owner, by_class in sums.items()},
                         {ids[owner]: n for owner, n in counted.items()}, filters)

    @classmethod
    def read_now(cls, filters):
        """The sums over the filtered owners' allocations and their
        consumers' count, grouped by all three owners (each consumer has one
        of each, so coarser groups add up). Grouped by ids, the names read
        after for the few owners found: five queries, the two over every
        allocation and consumer joining nothing they need not."""
        grouped = collections.defaultdict(dict)
        for owner_ids in owned_allocations(**filters).values_list(
                'consumer__project_id', 'consumer__user_id', 'consumer__consumer_type_id',
                'resource_class_id').annotate(used=Sum('used')).order_by('resource_class_id'):
            *owner, class_id, used = owner_ids
            grouped[tuple(owner)][class_id] = used
        counted = {tuple(owner): n for *owner, n in owned_consumers(**filters).values_list(
            'project_id', 'user_id', 'consumer_type_id').annotate(n=Count('id')).order_by()}
        return cls.named(grouped, counted, filters)

    @classmethod
    def named(cls, grouped, counted, filters):
        """The Usage of sums ({(project, user, type) ids: {class id: used}})
        and consumers counted ({owner ids: n}), by the owners' and classes'
        names: four queries (the projects and users of the filtered owners
        only, when a filter is given)."""
        projects, users = Project.objects.all(), PlacementUser.objects.all()
        if any(filters.values()):  # a few owners: not every project's and user's name
            owners = grouped.keys() | counted.keys()
            projects = projects.filter(pk__in={project for project, _, _ in owners})
            users = users.filter(pk__in={user for _, user, _ in owners})
        projects = dict(projects.values_list('pk', 'external_id'))
        users = dict(users.values_list('pk', 'external_id'))
        types = dict(ConsumerType.objects.values_list('pk', 'name'))
        classes = dict(ResourceClass.objects.values_list('pk', 'name'))

        def name(names, pk):
            # Read after the sums: outside one snapshot the owner (or
            # class) may have gone in between, and is shown by its id.
            return names.get(pk, f'#{pk}')

        def named(owner):
            project, user, type_id = owner
            return (name(projects, project), name(users, user),
                    types.get(type_id, ConsumerType.UNKNOWN))
        sums = {named(owner): {name(classes, c): used for c, used in by_class.items()}
                for owner, by_class in grouped.items()}
        return cls(sums, {named(owner): n for owner, n in counted.items()})

    def rows(self, keys):
        """{'key': (...), 'usages': {class: used}, 'consumers': n} per owner
        keys ('project', 'user', 'consumer_type'), largest first."""
        positions = [OWNERS.index(key) for key in keys]
        rows = {}
        # Every owner of the cloud on each read (thousands of projects'
        # users): a row made only for a new key, the sums added in place.
        for owner, usages in self.sums.items():
            key = tuple(owner[p] for p in positions)
            row = rows.get(key)
            if row is None:
                row = rows[key] = {'key': key, 'usages': {}, 'consumers': 0}
            summed = row['usages']
            for name, used in usages.items():
                summed[name] = summed.get(name, 0) + used
            row['consumers'] += self.consumers.get(owner, 0)
        return sorted(rows.values(), key=lambda r: (-r['consumers'], r['key']))


def top_consumers(owners, resource_class, limit=20):
    """The consumers of the owners (filters: {owner: external id or None})
    holding the most of a class (ties by the consumer's age: sorting by uuid
    would join every consumer), with all they hold: the ledger says which
    (allocations.ledger), two queries read them; or three queries."""
    if not _ledger_serves():
        class_id = ResourceClass.objects.filter(name=resource_class).values_list('id', flat=True)
        top = [(t['consumer_id'], t['amount']) for t in owned_allocations(**owners).filter(
            resource_class_id__in=class_id).values('consumer_id').annotate(
            amount=Sum('used')).order_by('-amount', 'consumer_id')[:limit]]
        return _holding(top)
    class_id = (ResourceClass.objects.filter(name=resource_class)
                .values_list('id', flat=True).first())
    if class_id is None:
        return []
    return _holding([(consumer, -used) for used, consumer in allocation_ledger.top_holders(
        Allocation.objects.db, class_id, owners_wanted(owners), limit)])


def _holding(top):
    """[(consumer, amount, {class name: used})] of [(consumer id, amount)]."""
    consumers = {c.pk: c for c in Consumer.objects.filter(
        pk__in=[consumer for consumer, _ in top]).select_related(
        'project', 'user', 'consumer_type')}
    holdings = collections.defaultdict(dict)
    for consumer_id, class_name, used in Allocation.objects.filter(
            consumer_id__in=list(consumers)).values_list(
            'consumer_id', 'resource_class__name').annotate(total=Sum('used')).order_by(
            'consumer_id', 'resource_class_id'):
        holdings[consumer_id][class_name] = used
    # A consumer gone since the sums were read is left out.
    return [(consumers[consumer], amount, holdings[consumer]) for consumer, amount in top
            if consumer in consumers]


# ---- pods ---------------------------------------------------------------------------

@dataclass
class PodClass:
    """One class of a pod's books against the pod's threshold for it, as
    GET /pods shows it: utilization and threshold in percent (None: no
    capacity, no threshold)."""
    usage: books.ClassUsage
    utilization: float
    threshold: float
    reached: bool


@dataclass
class PodLine:
    """A pod, how many tenants are bound to it now, and its books per class."""
    pod: Pod
    tenants: int
    classes: list


def pods_in_line():
    """Every pod, oldest first, with its aggregate and `tenants` (open
    bindings). One query."""
    return Pod.objects.with_aggregate().with_open_binding_counts().in_line()


def pod_lines(pods):
    """PodLine for each pod (annotated with `tenants`, see pods_in_line):
    the books of every pod in two queries (selection.pod_books), the
    thresholds reached as the selection reads them."""
    lines = []
    for candidate in selection.pod_books(pods):
        reached = {name for name, _used, _threshold in candidate.thresholds_reached()}
        lines.append(PodLine(candidate.pod, candidate.pod.tenants, [
            PodClass(usage, candidate.percent(name), candidate.pod.thresholds.get(name),
                     name in reached)
            for name, usage in candidate.classes.items()]))
    return lines


def pod_groups(lines):
    """[(affinity, lines)]: the general-purpose pods ('') first, then one
    group per affinity tag in tag order; a pod with two tags is in both
    groups, as a request of either tag may go to it."""
    groups = {GENERAL_PURPOSE: []}
    for line in lines:
        for affinity in line.pod.tags or [GENERAL_PURPOSE]:
            groups.setdefault(affinity, []).append(line)
    return sorted(groups.items(), key=lambda group: group[0])


def open_bindings(pod):
    """The tenants bound to the pod now, longest bound first (one query)."""
    return PodBinding.objects.open().filter(pod=pod).order_by('started_at', 'id')


def binding_history(pod):
    """Every binding the pod has had, newest first."""
    return PodBinding.objects.filter(pod=pod).order_by('-started_at', '-id')


@dataclass
class ProjectPod:
    """The pod a project's work of one affinity goes to, for the explorer:
    its open binding's pod, or (no binding) the pod a binding request would
    bind it to, a preview; pod None when no pod passes."""
    project_id: str
    affinity: str
    pod: Pod
    binding: PodBinding
    selection: pipeline.Selection

    @property
    def affinity_label(self):
        return selection.describe_affinity(self.affinity)

    @property
    def leaving(self):
        """Why the bound pod no longer passes the selection (its next
        binding request would move the project), or None."""
        if self.binding is None or self.selection.passes(self.pod):
            return None
        _candidate, _filter, why = self.selection.refused[self.pod.pk]
        return why

    @property
    def refusal(self):
        """Why no pod can take the project's work, as a binding request
        would answer it."""
        return str(selection.no_pod_available(self.project_id, self.affinity, self.selection))


def project_pod(project_id, affinity=GENERAL_PURPOSE, resources=None):
    """ProjectPod for the project (read only: nothing is bound)."""
    return ProjectPod(project_id, affinity,
                      *selection.pod_for(project_id, affinity, resources=resources))
