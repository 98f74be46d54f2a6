"""The providers table's filters and sorts (django-filter), shared by the
dashboard pages and exports that list providers. The filter set is GET
/resource_providers' own (providers.filters: member_of, required,
resources and in_tree in Placement's grammar, at the latest microversion)
with the table's searches added, each one of the provider queryset's own
methods, so a filter means the same on the page and in the API."""
import functools

import django_filters
from django.db.models import Exists
from django.db.models import F
from django.db.models import FilteredRelation
from django.db.models import FloatField
from django.db.models import Max
from django.db.models import OuterRef
from django.db.models import Q
from django.db.models import Subquery
from django.db.models import Sum
from django.db.models.functions import Cast

from placement_site import microversion
from providers import books
from providers import filters as api_filters
from providers import ledger
from providers import rules
from providers.models import Inventory
from providers.models import ResourceClass
from providers.models import ResourceProvider
from providers.rules import capacity_sql

LATEST = microversion.parse(microversion.MAX_VERSION)


class ProviderFilterSet(api_filters.ProviderFilterSet):
    # The API's exact name becomes a search: name contains, or UUID prefix.
    name = django_filters.CharFilter(method='name_or_uuid', label='Name or UUID')
    # A form's field left empty filters nothing (the API refuses them empty).
    member_of = api_filters.QueryParameter('in_aggregates')
    required = api_filters.QueryParameter('with_traits')
    resources = api_filters.QueryParameter('with_room')
    aggregate = django_filters.CharFilter(method='in_aggregate', label='Aggregate uuid')
    trait = django_filters.CharFilter(method='with_trait', label='Trait')
    resource_class = django_filters.CharFilter(method='with_class', label='Resource class')
    root_only = django_filters.BooleanFilter(method='roots', label='Roots only')
    # The fullest inventory's utilization, in percent (with_max_utilization).
    min_utilization = django_filters.NumberFilter(method='fuller_than', label='Utilization ≥ %')
    max_utilization = django_filters.NumberFilter(method='emptier_than', label='Utilization ≤ %')

    class Meta:
        model = ResourceProvider
        fields = []

    def __init__(self, data=None, queryset=None, **kwargs):
        super().__init__(data, queryset, version=LATEST, **kwargs)

    def name_or_uuid(self, queryset, name, value):
        """Name contains the text, or the UUID starts with it (in any case).

        Providers' uuids are written in one case (lower, as the services
        normalize them; upper, as a client may have sent them to an
        OpenStack Placement imported since): a prefix in each, which the
        uuid's index could serve, instead of upper-casing every provider's
        uuid to compare. The name's search reads every name all the same."""
        value = value.strip()
        return queryset.filter(Q(name__icontains=value) | Q(uuid__startswith=value.lower())
                               | Q(uuid__startswith=value.upper()))

    def in_aggregate(self, queryset, name, value):
        return queryset.member_of_any([value.strip()])

    def with_trait(self, queryset, name, value):
        return queryset.with_trait_named(value.strip().upper())

    def with_class(self, queryset, name, value):
        return queryset.filter(inventories__resource_class__name=value.strip().upper())

    def roots(self, queryset, name, value):
        return queryset.roots() if value else queryset

    def fuller_than(self, queryset, name, value):
        """The fullest inventory at least `value` % used: some inventory is
        (an EXISTS on the provider's inventories, not a MAX of every
        provider's grouped and filtered after)."""
        return queryset.filter(Exists(_utilized(utilization__gte=float(value) / 100)))

    def emptier_than(self, queryset, name, value):
        """The fullest inventory at most `value` % used: none is fuller, and
        one has a utilization at all (a provider without capacity has no
        fullest inventory; fuller_than's EXISTS says so when it is given)."""
        queryset = queryset.exclude(Exists(_utilized(utilization__gt=float(value) / 100)))
        if self.form.cleaned_data.get('min_utilization') is None:
            queryset = queryset.filter(Exists(_utilized()))
        return queryset


def _utilized(**condition):
    """The inventories of the outer provider that count for its fullest
    inventory (ResourceProviderQuerySet.with_max_utilization: capacity
    left after the reserved, a known utilization), meeting `condition`."""
    return _with_utilization().filter(resource_provider_id=OuterRef('pk'), **condition)


def _with_utilization(inventories=None):
    """The inventories with_max_utilization takes the maximum of."""
    inventories = Inventory.objects.all() if inventories is None else inventories
    return inventories.filter(total__gt=F('reserved')).with_utilization().filter(
        utilization__isnull=False)


SORTS = {
    'name': 'name', 'generation': 'generation', 'created': 'created_at',
    'utilization': 'max_utilization',
}
# Per resource class: 'used:VCPU', 'free:MEMORY_MB', 'utilization:DISK_GB'.
CLASS_SORTS = ('used', 'free', 'utilization')


def sort_choices(classes):
    """[(sort key, label)] for the sort menu: the columns, then each of
    the classes (names), by used, free and utilization."""
    choices = [('name', 'name'), ('-utilization', 'fullest first'),
               ('utilization', 'emptiest first'), ('-generation', 'generation')]
    for name in classes:
        choices += [(f'-used:{name}', f'{name} used, most first'),
                    (f'-free:{name}', f'{name} free, most first'),
                    (f'-utilization:{name}', f'{name} utilization, fullest first')]
    return choices


def _class_id(name):
    """The class's id (-1 for none: its join finds nothing)."""
    class_id = ResourceClass.objects.filter(name=name.upper()).values_list('id', flat=True).first()
    return -1 if class_id is None else class_id


def _class_value(kind, capacity, used):
    """A class's used, free or utilization (CLASS_SORTS), as the rule book
    has them, over an inventory's capacity and used or their sums."""
    if kind == 'used':
        return Cast(used, FloatField())
    if kind == 'free':
        return rules.free_sql(capacity, used)
    return rules.utilization_sql(used, capacity)


def sorted_providers(queryset, sort, trees=False):
    """The queryset in the validated order `sort` ('-' descending; unknown:
    name). trees: the rows are roots, and a class's sort is by the sums
    over each root's whole tree."""
    descending = sort.startswith('-')
    kind, _, class_name = sort.lstrip('-').partition(':')
    if class_name and kind in CLASS_SORTS and trees:
        tree = Inventory.objects.filter(
            resource_provider__root_provider_id=OuterRef('pk'),
            resource_class_id=_class_id(class_name)).values(
            'resource_provider__root_provider_id').order_by()
        value = _class_value(kind, Sum(capacity_sql()), Sum('used'))
        queryset = queryset.annotate(sort_value=Subquery(
            tree.annotate(value=value).values('value')[:1], output_field=FloatField()))
        field = 'sort_value'
    elif class_name and kind in CLASS_SORTS:
        # A join to the class's inventory (a provider has at most one), not
        # a subquery per provider: the whole cloud sorts in one pass.
        queryset = queryset.annotate(sorted_by=FilteredRelation('inventories', condition=Q(
            inventories__resource_class_id=_class_id(class_name))))
        queryset = queryset.annotate(sort_value=_class_value(
            kind, capacity_sql('sorted_by__'), F('sorted_by__used')))
        field = 'sort_value'
    else:
        field = SORTS.get(kind, 'name')
        if field == 'max_utilization':
            # Parents and roots read for the page only: joined before the
            # grouping, every provider's would be sorted with it (to disk).
            queryset = queryset.select_related(None).prefetch_related(
                'parent_provider', 'root_provider').with_max_utilization()
    expression = F(field).desc(nulls_last=True) if descending else F(field).asc(nulls_last=True)
    return queryset.order_by(expression, 'id')


# ---- a page of the sorted table --------------------------------------------------------

# The fullest-first order is walked from the fullest inventory for pages up
# to this deep; past it (and for emptiest first) each provider's fullest
# inventory is grouped from every inventory.
WALKED_ROWS = 5000


class ProviderPages:
    """The providers of `matching` in the order of `sort`, as sorted_providers
    orders them, for a Paginator: counted on the filtered providers alone
    (a sort adds no row), a page read as that sort allows.

    A class's used, free or utilization (a provider's own, or summed over
    each root's tree) and the fullest-first order are values of the
    providers' inventories: the page's providers are found among the
    inventories in that order (the database sorts the inventories of one
    class, or their sums per tree, or ranks every inventory by
    utilization, and stops at the page: no join to every provider, no
    grouping of every provider), then the providers without such a value
    (last, by id). Other sorts read a slice of sorted_providers' queryset.

    With trees (a row per host), fullest and emptiest first rank the
    trees by their fullest class summed over the tree
    (books.hosts_by_fullness: every tree's rank from the ledger, or the
    books of the matching trees); trees without capacity come last, by id.

    A filter that leaves few providers (FEW) has their ids read once, and
    the list counted and paged by those ids."""
    ordered = True
    # A compute node has three or four inventories, its NUMA nodes two.
    WALK = (4, 100)
    # A filter leaving at most this many providers: their ids are read
    # once (the one scan a search by name needs), then counted and paged
    # by id; past it, counted and paged by the filter again.
    FEW = 1000

    def __init__(self, matching, sort, trees=False, every_tree=False):
        self._count = self.few = None
        if matching.query.where:
            ids = list(matching.order_by().values_list('pk', flat=True)[:self.FEW + 1])
            if len(ids) <= self.FEW:
                self._count, self.few = len(ids), ids
                matching = ResourceProvider.objects.select_related(
                    'parent_provider', 'root_provider').filter(pk__in_ids=ids)
        self.matching, self.sort, self.trees = matching, sort, trees
        descending = sort.startswith('-')
        kind, _, class_name = sort.lstrip('-').partition(':')
        self.valued, self.fullest, self.ranked, self.hosts = None, False, False, None
        self.key = 'resource_provider_id'   # the inventories' field naming a row
        if trees and not class_name and SORTS.get(kind) == 'max_utilization':
            # every_tree: `matching` is every root, the ledger's whole rank serves.
            self.ranked = True
            self.hosts = None if every_tree else matching.order_by().values('pk')
        elif class_name and kind in CLASS_SORTS:
            class_id = _class_id(class_name)
            if trees:   # a row per tree: its root's id, the tree's sums
                self.key = 'resource_provider__root_provider_id'
                self.valued = lambda inventories: _tree_values(inventories, kind, class_id)
            else:
                self.valued = lambda inventories: _class_values(inventories, kind, class_id)
        elif not class_name and SORTS.get(kind) == 'max_utilization':
            # Each provider's fullest inventory, grouped from the inventories
            # alone (emptiest first; fullest first past WALKED_ROWS). Fullest
            # first up to there, not even grouped: walking the inventories
            # fullest first, a provider comes where its fullest one does.
            self.valued = lambda inventories: _with_utilization(inventories).values(
                'resource_provider_id').annotate(sort_value=Max('utilization')).values_list(
                'resource_provider_id', flat=True)
            self.fullest = descending
        self.descending = descending

    @functools.cached_property
    def listed(self):
        """sorted_providers' queryset, for the pages it reads itself."""
        return sorted_providers(self.matching, self.sort, trees=self.trees)

    def count(self):
        if self._count is None:
            self._count = self.matching.order_by().count()
        return self._count

    def __len__(self):
        return self.count()

    def __getitem__(self, key):
        if not isinstance(key, slice):
            return self[key:key + 1][0]
        low, high = key.start or 0, key.stop
        if (self.valued is None and not self.ranked) or high is None or key.step is not None \
                or high <= low:
            return list(self.listed[key])
        return self._providers(self._ids(low, high))

    def _inventories(self):
        """The inventories of the matching providers (or trees)."""
        inventories = Inventory.objects.all()
        if self.few is not None:
            return inventories.filter(**{f'{self.key}__in_ids': self.few})
        if self.matching.query.where:   # a semi-join on the filtered providers
            return inventories.filter(**{f'{self.key}__in': self.matching.order_by().values(
                'pk')})
        return inventories

    def _ranked_hosts(self, low, high):
        """The roots at positions low..high-1 ranked as hosts."""
        ranked_hosts, complete = books.hosts_by_fullness(high, fullest=self.descending,
                                                         roots=self.hosts)
        page = [root for root, _ in ranked_hosts[low:high]]
        if not complete or len(page) == high - low:
            return page
        ranked = [root for root, _ in ranked_hosts]
        start, stop = max(low - len(ranked), 0), high - len(ranked)
        return page + list(self.matching.exclude(pk__in_ids=ranked).order_by('id').values_list(
            'id', flat=True)[start:stop])

    def ids(self, low, high):
        """The ids at positions low..high-1 of a sort found among the
        inventories (ranked or valued): an export's order, read at once."""
        return self._ids(low, high)

    def _ids(self, low, high):
        """The ids of the providers at positions low..high-1."""
        if self.ranked:
            return self._ranked_hosts(low, high)
        if self.fullest and high <= WALKED_ROWS:
            if not self.matching.query.where and ledger.serves(Inventory.objects.db):
                # Every provider: the walk is the ledger's, no sort of the cloud's inventories.
                fullest_ids, complete = ledger.fullest_providers(Inventory.objects.db, high)
            else:
                walked = _with_utilization(self._inventories()).order_by(
                    F('utilization').desc(nulls_last=True), 'resource_provider_id')
                fullest_ids, complete = self._fullest(
                    walked.values_list('resource_provider_id', flat=True), high)
            page = fullest_ids[low:high]
            return page + self._unvalued(len(fullest_ids), low, high) if complete else page
        # One value per provider (or tree): a row is a provider.
        valued = self.valued(self._inventories())
        order = F('sort_value').desc() if self.descending else F('sort_value').asc()
        valued = valued.order_by(order, *valued.query.values_select)
        page = list(valued[low:high])
        if len(page) == high - low:
            return page
        if page:   # the providers with a value end on this page
            return page + self._unvalued(low + len(page), low, high)
        return self._unvalued(valued.count(), low, high)

    def _fullest(self, walked, high):
        """([provider id] fullest first, whether they are all the providers
        with a utilization): the distinct providers of the inventories in
        utilization order, read until `high` of them are found (WALK: the
        inventories read first, per provider wanted and more)."""
        per_provider, more = self.WALK
        rows = per_provider * high + more
        while True:
            read = list(walked[:rows])
            fullest_ids = list(dict.fromkeys(read))
            if len(read) < rows:
                return fullest_ids, True
            if len(fullest_ids) >= high:
                return fullest_ids, False
            rows *= 4

    def _unvalued(self, valued_count, low, high):
        """The ids of the providers without a value, which come after the
        `valued_count` providers with one, by id: those at positions
        low..high-1."""
        start, stop = max(low - valued_count, 0), high - valued_count
        if stop <= 0:
            return []
        with_value = self.valued(Inventory.objects.all()).order_by()
        return list(self.matching.exclude(pk__in=with_value).order_by('id').values_list(
            'id', flat=True)[start:stop])

    @staticmethod
    def _providers(ids):
        providers_by_id = ResourceProvider.objects.select_related(
            'parent_provider', 'root_provider').in_bulk(ids)
        return [providers_by_id[pk] for pk in ids if pk in providers_by_id]


def _tree_values(inventories, kind, class_id):
    """The trees' roots (ids) with `sort_value`: what sorted_providers
    sorts roots by for a class's used, free or utilization summed over
    each tree (those without a value left out)."""
    value = _class_value(kind, Sum(capacity_sql()), Sum('used'))
    return inventories.filter(resource_class_id=class_id,
                              resource_provider__root_provider_id__isnull=False).values(
        'resource_provider__root_provider_id').annotate(sort_value=value).filter(
        sort_value__isnull=False).values_list('resource_provider__root_provider_id', flat=True)


def _class_values(inventories, kind, class_id):
    """The providers (ids) with `sort_value`: what sorted_providers sorts
    a class's used, free or utilization by (those without a value, a
    utilization without capacity, left out)."""
    value = _class_value(kind, capacity_sql(), F('used'))
    return inventories.filter(resource_class_id=class_id).annotate(
        sort_value=value).filter(sort_value__isnull=False).values_list(
        'resource_provider_id', flat=True)
