"""The providers table's filters (django-filter), shared by the dashboard
pages that list providers."""
import django_filters
from django.db.models import F

from providers.models import ResourceProvider


class ProviderFilterSet(django_filters.FilterSet):
    name = django_filters.CharFilter(lookup_expr='icontains', label='Name contains')
    aggregate = django_filters.CharFilter(method='in_aggregate', label='Aggregate uuid')
    trait = django_filters.CharFilter(method='with_trait', label='Trait')
    resource_class = django_filters.CharFilter(method='with_class', label='Resource class')
    root_only = django_filters.BooleanFilter(method='roots', label='Roots only')

    class Meta:
        model = ResourceProvider
        fields = []

    def in_aggregate(self, queryset, name, value):
        return queryset.member_of_any([value.strip()])

    def with_trait(self, queryset, name, value):
        return queryset.with_trait_named(value.strip().upper())

    def with_class(self, queryset, name, value):
        return queryset.filter(inventories__resource_class__name=value.strip().upper())

    def roots(self, queryset, name, value):
        return queryset.roots() if value else queryset


SORTS = {
    'name': 'name', 'generation': 'generation', 'created': 'created_at',
    'utilization': 'max_utilization',
}


def ordering(sort):
    """A validated ORDER BY for the providers table ('-name' is descending)."""
    field = SORTS.get(sort.lstrip('-'), 'name')
    descending = sort.startswith('-')
    expression = F(field).desc(nulls_last=True) if descending else F(field).asc(nulls_last=True)
    return [expression, 'id']

