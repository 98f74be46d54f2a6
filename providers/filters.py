"""GET /resource_providers' filters as one django-filter FilterSet: the
API's provider list filters with it, and the dashboards' providers table
(allocations.ui.filters) extends it with its own searches, so a filter
means the same on the page and in the API.

Each parameter is read as Placement reads it, from the query string itself
rather than a form field's cleaning: the last of repeated name, uuid and
in_tree values, and those given empty filter nothing; every member_of and
required value (repeating them is for the microversions that allow it),
and given empty they are refused (400) as Placement refuses them. Which
parameters a microversion accepts at all is the API view's query schema.

A list filtered by in_tree alone (each of nova's compute nodes reads its
tree so on every periodic update) is one prepared read instead
(providers_in_tree): building and compiling the filter set took four times
as long as the database's answer."""
from datetime import datetime
from typing import NamedTuple

import django_filters
from django import forms

from placement_site import errors
from placement_site import exceptions
from placement_site.prepared import Prepared
from placement_site.queries import storable
from providers import querysets
from providers import querystring
from providers.models import ResourceProvider


class QueryParameter(django_filters.Filter):
    """One parameter of Placement's query grammar: the filter set's method
    `apply` is given all of the parameter's values (a list, never empty).
    `when_empty`: applied even when its last value is empty."""
    field_class = forms.Field   # no cleaning: the values are read as given

    def __init__(self, apply, *, when_empty=False, **kwargs):
        super().__init__(**kwargs)
        self.apply, self.when_empty = apply, when_empty

    def filter(self, qs, value):
        data = self.parent.data
        values = data.getlist(self.field_name) if hasattr(data, 'getlist') else (
            [data[self.field_name]] if self.field_name in data else [])
        if not values or not (values[-1] or self.when_empty):
            return qs
        return getattr(self.parent, self.apply)(qs, values)


class ProviderFilterSet(django_filters.FilterSet):
    """GET /resource_providers' filters at microversion `version`, all
    ANDed; unknown traits and resource classes are refused with
    Placement's 400s."""
    name = QueryParameter('named')
    uuid = QueryParameter('with_uuid')
    in_tree = QueryParameter('within_tree')
    member_of = QueryParameter('in_aggregates', when_empty=True)
    required = QueryParameter('with_traits', when_empty=True)
    resources = QueryParameter('with_room', when_empty=True)

    def __init__(self, data=None, queryset=None, *, version, **kwargs):
        self.version = version
        super().__init__(data, queryset, **kwargs)

    def named(self, queryset, values):
        return queryset.filter(name=values[-1]) if storable(values[-1]) else queryset.none()

    def with_uuid(self, queryset, values):
        return queryset.filter(uuid=values[-1])

    def within_tree(self, queryset, values):
        return queryset.in_tree(values[-1])

    def in_aggregates(self, queryset, values):
        member_of, forbidden = querystring.member_of(self.data, self.version)
        queryset = queryset.member_of(member_of)
        return queryset.not_member_of(forbidden) if forbidden else queryset

    def with_traits(self, queryset, values):
        required, forbidden = querystring.required_traits(self.data, self.version)
        with errors.worded({exceptions.TraitNotFound: errors.Worded(
                'Invalid trait(s) in "required" parameter: {error}', status=400)}):
            required_ids = [set(querysets.trait_ids(any_of).values()) for any_of in required]
            forbidden_ids = set(querysets.trait_ids(forbidden).values())
        queryset = queryset.with_traits(required_ids)
        return queryset.without_traits(forbidden_ids) if forbidden_ids else queryset

    def with_room(self, queryset, values):
        """Providers whose own inventory can take each amount more."""
        wanted = querystring.parse_resources(values[-1])
        with errors.worded(exceptions.unknown_class_in('resources parameter')):
            ids = querysets.resource_class_ids(list(wanted))
        for name, amount in wanted.items():
            queryset = queryset.having_capacity(ids[name], amount)
        return queryset


class Listed(NamedTuple):
    """A provider as the list shows it."""
    uuid: str
    name: str
    generation: int
    parent_provider_uuid: str
    root_provider_uuid: str
    created_at: datetime
    updated_at: datetime


_IN_TREE = Prepared(ResourceProvider, lambda uuid: ResourceProvider.objects.with_tree_uuids()
                    .in_tree(uuid).values_list(*Listed._fields), on_server=True)


def only_in_tree(data):
    """The tree's provider uuid when in_tree (non-empty) is the query's only
    parameter, else None."""
    values = data.getlist('in_tree') if list(data) == ['in_tree'] else ()
    return values[-1] if values and values[-1] else None


def providers_in_tree(provider_uuid):
    """[Listed] of the tree, as ProviderFilterSet lists it for in_tree."""
    return [Listed(*row) for row in _IN_TREE.rows(provider_uuid)]
