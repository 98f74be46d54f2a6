"""The research's reads: one query per constraint of a request, each
returning the providers (ids, with their roots where the search needs them)
that pass it, and the few the research reads once per request. The
research (research.py) decides which to ask and in what order; these only
read. Those run on every search are compiled once per shape
(placement_site.prepared.Prepared).
"""

from django.db import connections
from django.db.models import Count
from django.db.models import F
from django.db.models import Q
from django.db.models import Subquery
from django.db.models import Value
from django.db.models.expressions import RawSQL

from placement_site.prepared import Ids
from placement_site.prepared import Prepared
from providers.models import Inventory
from providers.models import ProviderAggregate
from providers.models import ProviderTrait
from providers.models import ResourceClass
from providers.models import ResourceProvider
from providers.models import Trait
from providers.querysets import SHARING_TRAIT
from providers.querysets import ids_in_aggregates
from providers.querysets import ids_with_any_trait
from providers.querysets import trees_served_by

# The search counts the cloud's trees up to this many (plus one): enough
# for summaries.Summaries to choose how to read up to 1,000 trees' rows.
TREES_COUNTED = 2000


def trees_served(provider_ids):
    """{sharing provider id: roots of the trees it serves} (one query, none
    for no providers)."""
    served = {}
    if provider_ids:
        for sharing_id, root_id in trees_served_by(provider_ids):
            served.setdefault(sharing_id, set()).add(root_id)
    return served


def provider_names(provider_ids):
    """{provider id: (name, uuid)} of some providers (one query): the
    explanation's near misses, named once it has chosen them."""
    return {pk: (name, uuid) for pk, name, uuid in ResourceProvider.objects.filter(
        pk__in=provider_ids).values_list('pk', 'name', 'uuid')}


# ---- one query per constraint ------------------------------------------------------

def providers_with_capacity(wanted, tree_root=None, within=None, sharing=frozenset(),
                            trees=None, roots=None):
    """({class id: {(provider id, root id)}}, {class id: {sharing provider id}}):
    the providers whose inventory of each class of `wanted` ({class id:
    amount}) can take its amount more (capacity, min/max unit, step size),
    optionally in one tree or among some providers, and which of them are
    in `sharing`. One query for every class; with `trees`, only in the
    first `trees` trees that have room for every class (the database
    groups the rows by tree and stops there: on MariaDB, which takes no
    LIMIT in an IN subquery, in a query of its own). `roots` gives the
    roots of the providers (those not in it are roots), as a dict or a
    function returning one, called only if some inventory fits; without
    it, each row's root is looked up in the query."""
    if trees is not None:  # (for a lone group: no member_of, no in_tree)
        fitting = _in_first_trees(wanted, trees)
        fitting = fitting.values_list(
            'resource_class_id', 'resource_provider_id', 'root').order_by()
    elif tree_root is None and roots is not None:
        # The roots from a map, not looked up per row: PostgreSQL's lookup
        # for each of 3,000 rows cost twice the rest of the query.
        fitting = _FITTING.rows(tuple(wanted), tuple(wanted.values()),
                                None if within is None else Ids(within), None, False)
        if fitting and callable(roots):
            roots = roots()
        fitting = [(class_id, provider_id, roots.get(provider_id, provider_id))
                   for class_id, provider_id in fitting]
    else:
        fitting = _FITTING.rows(tuple(wanted), tuple(wanted.values()),
                                None if within is None else Ids(within), tree_root, True)
    by_class = {class_id: set() for class_id in wanted}
    sharing_by_class = {class_id: set() for class_id in wanted}
    for class_id, provider_id, root_id in fitting:
        by_class[class_id].add((provider_id, root_id))
        if provider_id in sharing:
            sharing_by_class[class_id].add(provider_id)
    return by_class, sharing_by_class


def _in_first_trees(wanted, trees):
    """The inventories able to fit `wanted` in the first `trees` trees with
    room for every class, annotated with their `root`."""
    # Grouped by the root joined in, not with_root's per-row lookup: when
    # aggregating, PostgreSQL hashes the join (82 against 131 ms at 100,000
    # providers).
    with_root = F('resource_provider__root_provider_id')
    roots = Inventory.objects.able_to_fit_any(wanted).annotate(root=with_root).values(
        'root').annotate(classes=Count('resource_class_id', distinct=True)).filter(
        classes=len(wanted)).order_by('root').values_list('root', flat=True)[:trees]
    if connections[roots.db].vendor == 'mysql':
        roots = list(roots)
    # The trees' rows again, found from their roots by index.
    return Inventory.objects.filter(resource_provider__root_provider_id__in=roots).able_to_fit_any(
        wanted).annotate(root=with_root)


def providers_in_aggregates(aggregate_uuids):
    """Providers in at least one of the aggregates."""
    return {pk for pk, in _IN_AGGREGATES.rows(tuple(sorted(aggregate_uuids)))}


def providers_with_any_trait(trait_ids):
    """Providers having at least one of the traits."""
    return {pk for pk, in _WITH_ANY_TRAIT.rows(tuple(sorted(trait_ids)))}


def provider_roots(provider_ids):
    """(provider id, root id) of the providers: the candidates of a group
    that asks for no resources."""
    return set(_ROOTS_OF.rows(Ids(provider_ids)))


# ---- the research's reads, compiled once per shape (placement_site.prepared.Prepared) --

def _request_wide(class_names, trait_names, aggregates=(), required=()):
    """(kind, name, id, root) rows: every sharing provider ('sharing', with
    its root), the first provider with a parent ('tree', if any), the
    classes and traits named ('class', 'trait'), how many trees there
    are, counted up to TREES_COUNTED + 1 ('trees', the count as its id);
    the providers in each of the aggregates ('member', named by its uuid)
    and those whose root is in any ('under'), with their roots; the
    providers with each of the `required` traits ('has', named by it)."""
    def rows(queryset, kind, name=Value('')):  # noqa: B008 (an expression, never changed)
        return queryset.annotate(kind=Value(kind), key=name).values_list(
            'kind', 'key', 'id', 'root').order_by()

    root = {'root': F('root_provider_id')}
    parts = [
        rows(ResourceProvider.objects.filter(id__in=ids_with_any_trait(
            Trait.objects.filter(name=SHARING_TRAIT).values('id'))).annotate(**root), 'sharing'),
        # A scalar subquery: SQLite takes no LIMIT in a UNION's parts.
        rows(ResourceProvider.objects.filter(id=Subquery(ResourceProvider.objects.filter(
            parent_provider__isnull=False).values('id')[:1])).annotate(**root), 'tree'),
    ]
    parts += [rows(model.objects.filter(name__in=names).annotate(root=Value(0)), kind, F('name'))
              for model, kind, names in ((ResourceClass, 'class', class_names),
                                         (Trait, 'trait', trait_names)) if names]
    if aggregates:
        # The links by aggregate, each with its provider's root; and the
        # providers whose root is linked to any (by their roots).
        members = ProviderAggregate.objects.filter(aggregate__uuid__in=aggregates)
        parts.append(members.annotate(kind=Value('member'), key=F('aggregate__uuid'),
                                      provider=F('resource_provider_id'),
                                      root=F('resource_provider__root_provider_id')).values_list(
            'kind', 'key', 'provider', 'root').order_by())
        parts.append(rows(ResourceProvider.objects.filter(
            root_provider_id__in=ids_in_aggregates(aggregates)).annotate(**root), 'under'))
    if required:
        parts.append(ProviderTrait.objects.filter(trait__name__in=required).annotate(
            kind=Value('has'), key=F('trait__name'), provider=F('resource_provider_id'),
            root=Value(0)).values_list('kind', 'key', 'provider', 'root').order_by())
    # Up to TREES_COUNTED + 1 roots, counted from the index on parents alone
    # (a quarter of the time of counting the roots up to the last one's id),
    # on the row of the first provider: none, no trees.
    first = ResourceProvider.objects.filter(id=Subquery(
        ResourceProvider.objects.order_by('id').values('id')[:1]))
    parts.append(first.annotate(kind=Value('trees'), key=Value(''), n=_BOUNDED_TREE_COUNT,
                                root=Value(0)).values_list('kind', 'key', 'n', 'root').order_by())
    return parts[0].union(*parts[1:], all=True)


_BOUNDED_TREE_COUNT = RawSQL(
    f'SELECT COUNT(*) FROM (SELECT 1 FROM {ResourceProvider._meta.db_table} '
    f'WHERE parent_provider_id IS NULL LIMIT {TREES_COUNTED + 1}) roots', ())


REQUEST_WIDE = Prepared(ResourceProvider, _request_wide)
MEMBERS_AND_UNDER = Prepared(ResourceProvider, lambda members: (
    ResourceProvider.objects.filter(Q(id__in_ids=members) | Q(root_provider_id__in_ids=members))
    .values_list('id', 'root_provider_id').order_by()))
# Providers whose root is another (a root's is its own id).
NOT_OWN_ROOTS = Prepared(ResourceProvider, lambda: ResourceProvider.objects.exclude(
    root_provider_id=F('id')).values_list('id', 'root_provider_id').order_by())
EVERY_ROOT = Prepared(ResourceProvider, lambda: ResourceProvider.objects.values_list(
    'id', 'root_provider_id'))
INVENTORIES_OF_CLASSES = Prepared(Inventory, lambda class_ids: Inventory.objects.filter(
    resource_class_id__in=class_ids).values_list(
    'resource_provider_id', 'resource_class_id', 'total', 'reserved', 'allocation_ratio', 'used',
    'min_unit', 'max_unit', 'step_size').order_by())
ROOT_OF_UUID = Prepared(ResourceProvider, lambda uuid: ResourceProvider.objects.filter(
    uuid=uuid).values_list('root_provider_id').order_by()[:1])
_IN_AGGREGATES = Prepared(ProviderAggregate, lambda uuids: ids_in_aggregates(uuids).values_list(
    'resource_provider_id'))
_WITH_ANY_TRAIT = Prepared(ProviderTrait, lambda trait_ids: ids_with_any_trait(
    trait_ids).values_list('resource_provider_id'))
_ROOTS_OF = Prepared(ResourceProvider, lambda ids: ResourceProvider.objects.filter(
    id__in_ids=ids).values_list('id', 'root_provider_id').order_by())


def _fitting(class_ids, amounts, within, tree_root, rooted):
    """(class id, provider id[, root id]) of the inventories able to fit the
    amounts, among `within` or in the tree of `tree_root` if given; with
    each row's root (looked up per row) if `rooted`."""
    fitting = Inventory.objects.all()
    if within is not None:
        fitting = fitting.filter(resource_provider_id__in_ids=within)
    fitting = fitting.able_to_fit_any(dict(zip(class_ids, amounts)))
    if not rooted:
        return fitting.values_list('resource_class_id', 'resource_provider_id').order_by()
    fitting = fitting.with_root()
    if tree_root is not None:
        fitting = fitting.filter(root=tree_root)
    return fitting.values_list('resource_class_id', 'resource_provider_id', 'root').order_by()


_FITTING = Prepared(Inventory, _fitting)
