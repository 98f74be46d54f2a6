"""The providers table's filters and sorts (django-filter), shared by the
dashboard pages and exports that list providers. The filter set is GET
/resource_providers' own (providers.filters: member_of, required,
resources and in_tree in Placement's grammar, at the latest microversion)
with the table's searches added, each one of the provider queryset's own
methods, so a filter means the same on the page and in the API."""
import django_filters
from django.db.models import F, FilteredRelation, FloatField, OuterRef, Q, Subquery, Sum
from django.db.models.functions import Cast, NullIf

from placement_site import microversion
from providers import filters as api_filters
from providers.models import Inventory, ResourceClass, ResourceProvider
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
        """Name contains the text, or the UUID starts with it."""
        value = value.strip()
        return queryset.filter(Q(name__icontains=value) | Q(uuid__istartswith=value))

    def in_aggregate(self, queryset, name, value):
        return queryset.member_of_any([value.strip()])

    def with_trait(self, queryset, name, value):
        return queryset.with_trait_named(value.strip().upper())

    def with_class(self, queryset, name, value):
        return queryset.filter(inventories__resource_class__name=value.strip().upper())

    def roots(self, queryset, name, value):
        return queryset.roots() if value else queryset

    def fuller_than(self, queryset, name, value):
        return queryset.with_max_utilization().filter(max_utilization__gte=float(value) / 100)

    def emptier_than(self, queryset, name, value):
        return queryset.with_max_utilization().filter(max_utilization__lte=float(value) / 100)


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
    found = ResourceClass.objects.filter(name=name.upper()).values_list('id', flat=True).first()
    return -1 if found is None else found


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
        capacity = Sum(capacity_sql())
        value = {'used': Cast(Sum('used'), FloatField()),
                 'free': capacity - Sum('used'),
                 'utilization': Cast(Sum('used'), FloatField()) / NullIf(capacity, 0.0)}[kind]
        queryset = queryset.annotate(sort_value=Subquery(
            tree.annotate(value=value).values('value')[:1], output_field=FloatField()))
        field = 'sort_value'
    elif class_name and kind in CLASS_SORTS:
        # A join to the class's inventory (a provider has at most one), not
        # a subquery per provider: the whole cloud sorts in one pass.
        queryset = queryset.annotate(sorted_by=FilteredRelation('inventories', condition=Q(
            inventories__resource_class_id=_class_id(class_name))))
        capacity = capacity_sql('sorted_by__')
        queryset = queryset.annotate(sort_value={
            'used': Cast(F('sorted_by__used'), FloatField()),
            'free': capacity - F('sorted_by__used'),
            'utilization': Cast(F('sorted_by__used'), FloatField()) / NullIf(capacity, 0.0),
        }[kind])
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
