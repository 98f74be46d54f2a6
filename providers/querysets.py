"""The query vocabulary of the catalogue: chainable reads of providers and
inventories that build queries and change nothing.

The candidate search (providers.candidates), the explain endpoint, the
dashboards and their reports, the admin and GET /resource_providers all say
"able to fit", "sharing", "member of", "with traits" with these methods, so
each rule is written once.

Usage is what consumers hold; the catalogue reads it through the reverse
relation `ResourceProvider.allocations` and never imports the app that
writes it.
"""
import os_traits
from django.apps import apps
from django.db import models
from django.db.models import Case
from django.db.models import CharField
from django.db.models import Count
from django.db.models import Exists
from django.db.models import F
from django.db.models import FilteredRelation
from django.db.models import Max
from django.db.models import OuterRef
from django.db.models import Q
from django.db.models import Subquery
from django.db.models import When
from django.db.models.functions import Coalesce

from placement_site import exceptions
from placement_site.queries import storable
from providers import rules

# The trait that makes a provider's inventory available to every tree
# sharing an aggregate with it.
SHARING_TRAIT = os_traits.MISC_SHARES_VIA_AGGREGATE


def _model(name):
    """A model of this app, looked up when a query is built (the models
    module imports this one)."""
    return apps.get_model('providers', name)


def _allocations():
    """The model behind the reverse relation ResourceProvider.allocations."""
    return _model('ResourceProvider')._meta.get_field('allocations').related_model


def _linked(link, field, values):
    """The ids of providers that a `link` row (ProviderAggregate,
    ProviderTrait) ties to any of `values` of `field` (a list, or a subquery
    left as it is): the link table alone, no join."""
    values = values if isinstance(values, models.QuerySet) else list(values)
    return _model(link).objects.filter(**{f'{field}__in': values}).values_list(
        'resource_provider_id', flat=True).order_by()


def resource_class_ids(names):
    """{name: id} for the names; ResourceClassNotFound for the first unknown."""
    ids_by_name = dict(_model('ResourceClass').objects.filter(
        name__in=[n for n in names if storable(n)]).values_list('name', 'id'))
    for name in names:
        if name not in ids_by_name:
            raise exceptions.ResourceClassNotFound(name=name)
    return ids_by_name


def trait_ids(names):
    """{name: id}; TraitNotFound naming every unknown trait."""
    names = list(names)
    ids_by_name = dict(_model('Trait').objects.filter(
        name__in=[n for n in names if storable(n)]).values_list('name', 'id'))
    missing = [name for name in names if name not in ids_by_name]
    if missing:
        raise exceptions.TraitNotFound(names=', '.join(missing))
    return ids_by_name


def ids_in_aggregates(aggregate_uuids):
    """Ids of the providers in at least one of the aggregates."""
    return _linked('ProviderAggregate', 'aggregate__uuid', aggregate_uuids)


def ids_with_any_trait(trait_ids):
    """Ids of the providers having at least one of the traits (ids)."""
    return _linked('ProviderTrait', 'trait_id', trait_ids)


def trees_served_by(provider_ids):
    """(provider id, root id) for every tree with a provider sharing an
    aggregate with one of the providers (ids, or a subquery of ids): the
    trees a sharing provider serves, its own included."""
    provider_ids = provider_ids if isinstance(provider_ids, models.QuerySet) else list(provider_ids)
    return _model('ProviderAggregate').objects.filter(
        aggregate__provideraggregate__resource_provider_id__in=provider_ids,
    ).values_list('aggregate__provideraggregate__resource_provider_id',
                  'resource_provider__root_provider_id').order_by()


def in_pools(inventories, aggregate_ids):
    """`inventories` narrowed to the providers of the pools (aggregates, by
    id: a list or a subquery; rules.in_pool_sql, per pool), as two querysets whose rows
    are annotated `pool` (the aggregate id).

    The first queryset has the trees under member roots, the second the
    other members (a child in the aggregate without its root); they never
    hold the same (pool, inventory), so sums over both add up."""
    if not isinstance(aggregate_ids, models.QuerySet):
        aggregate_ids = list(aggregate_ids)
    by_root = 'resource_provider__root_provider__provideraggregate__aggregate_id'
    by_self = 'resource_provider__provideraggregate__aggregate_id'
    root_is_member = _model('ProviderAggregate').objects.filter(
        aggregate_id=OuterRef('pool'),
        resource_provider_id=OuterRef('resource_provider__root_provider_id'))
    under_member_roots = inventories.filter(**{f'{by_root}__in': aggregate_ids}).annotate(
        pool=F(by_root))
    other_members = inventories.filter(**{f'{by_self}__in': aggregate_ids}).annotate(
        pool=F(by_self)).exclude(Exists(root_is_member))
    return under_member_roots, other_members


class InventoryQuerySet(models.QuerySet):

    def with_utilization(self):
        """Annotate `utilization` (used / capacity; unknown when
        there is no capacity: reserved == total, or a zero ratio)."""
        return self.annotate(utilization=rules.utilization_sql(F('used'), rules.capacity_sql()))

    def over_capacity(self):
        """Inventories holding more than their capacity: Placement accepts an
        inventory change that leaves allocations above the new capacity."""
        return self.filter(used__gt=rules.capacity_sql())

    def able_to_fit(self, amount):
        """Inventories where `amount` more units fit: within min_unit,
        max_unit and step_size, and used + amount <= capacity."""
        return self.filter(rules.fits_sql(amount))

    def able_to_fit_any(self, wanted):
        """Inventories of the classes of `wanted` ({class id: amount}) where
        the class's amount fits: able_to_fit for several classes at once."""
        fitting = Q()
        for class_id, amount in wanted.items():
            fitting |= Q(resource_class_id=class_id) & rules.fits_sql(amount)
        return self.filter(fitting)

    def with_root(self):
        """Annotate `root`: the root provider id of each inventory's provider.

        A per-row primary-key lookup, not a join: behind the capacity filter
        PostgreSQL misjudges the row count, and with a join it picked a
        nested loop over every provider for every inventory."""
        root = Subquery(_model('ResourceProvider').objects.filter(
            pk=OuterRef('resource_provider_id')).values('root_provider_id')[:1])
        return self.annotate(root=root)


class ResourceProviderQuerySet(models.QuerySet):

    def with_tree_uuids(self):
        """Annotate parent_provider_uuid and root_provider_uuid (one query)."""
        return self.annotate(parent_provider_uuid=F('parent_provider__uuid'),
                             root_provider_uuid=F('root_provider__uuid'))

    def roots(self):
        return self.filter(parent_provider__isnull=True)

    def in_tree(self, provider_uuid):
        """Providers in the same tree as `provider_uuid` (none if unknown)."""
        root = self.model.objects.filter(uuid=provider_uuid).values('root_provider_id')[:1]
        return self.filter(root_provider_id=Subquery(root))

    # -- aggregates

    def member_of_any(self, aggregate_uuids):
        """Providers in at least one of the aggregates."""
        return self.filter(id__in=ids_in_aggregates(aggregate_uuids))

    def in_pool_of(self, aggregate):
        """The pool's providers (rules.in_pool_sql), each annotated `member`: whether
        it is itself in the aggregate."""
        members = _model('ProviderAggregate').objects.filter(aggregate_id=aggregate.pk)
        return self.filter(rules.in_pool_sql(members.values('resource_provider_id'))).annotate(
            member=Exists(members.filter(resource_provider_id=OuterRef('pk'))))

    def member_of(self, any_of_sets):
        """member_of: for every set of aggregate uuids, in at least one."""
        return self._linked_to_each('ProviderAggregate', 'aggregate__uuid', any_of_sets)

    def not_member_of(self, aggregate_uuids):
        """Providers in none of the aggregates (forbidden aggregates)."""
        return self.exclude(id__in=ids_in_aggregates(aggregate_uuids))

    # -- traits

    def with_any_trait(self, trait_ids):
        """Providers having at least one of the traits (ids, or a subquery
        of ids)."""
        return self.filter(id__in=ids_with_any_trait(trait_ids))

    def with_traits(self, any_of_sets):
        """required: for every set of trait ids, at least one of them."""
        return self._linked_to_each('ProviderTrait', 'trait_id', any_of_sets)

    def without_traits(self, trait_ids):
        """Providers having none of the traits (forbidden traits)."""
        return self.exclude(id__in=ids_with_any_trait(trait_ids))

    def _linked_to_each(self, link, field, any_of_sets):
        qs = self
        for any_of in any_of_sets:
            qs = qs.filter(id__in=_linked(link, field, any_of))
        return qs

    def with_trait_named(self, name):
        return self.with_any_trait(_model('Trait').objects.filter(name=name).values('id'))

    # -- sharing providers and the trees they serve

    def sharing(self):
        """Providers whose inventory every tree in their aggregates may use."""
        return self.with_trait_named(SHARING_TRAIT)

    def trees_served(self):
        """(provider id, root id) of the trees this queryset's providers
        serve (see trees_served_by)."""
        return trees_served_by(self.values('id'))

    def roots_served(self):
        """The root providers of the trees served by this queryset's providers."""
        return self.model.objects.filter(
            id__in=self.trees_served().values('resource_provider__root_provider_id'))

    def serving_tree(self, root_id):
        """Providers outside the tree that share an aggregate with one of its
        providers (chain after sharing(): the pools a tree can draw on)."""
        links = _model('ProviderAggregate').objects
        tree_aggregates = links.filter(
            resource_provider__root_provider_id=root_id).values('aggregate_id')
        return self.filter(id__in=links.filter(aggregate_id__in=tree_aggregates).values(
            'resource_provider_id')).exclude(root_provider_id=root_id)

    # -- capacity and use

    def having_capacity(self, resource_class_id, amount):
        """Providers whose own inventory of the class can take `amount` more."""
        fitting = _model('Inventory').objects.filter(
            resource_provider=OuterRef('pk'), resource_class_id=resource_class_id,
        ).able_to_fit(amount)
        return self.filter(Exists(fitting))

    def in_use(self):
        """Providers some consumer holds allocations against."""
        return self.filter(Exists(_allocations().objects.filter(resource_provider=OuterRef('pk'))))

    def with_max_utilization(self):
        """Annotate `max_utilization`: the fullest inventory's utilization
        (None without inventory). A MAX over a join of its own, not a
        subquery per provider: sorting 100,000 providers by it is one hash
        aggregate (about 90 ms on PostgreSQL, where the subquery took 550).
        Idempotent: a filter and a sort may both ask for it."""
        if 'max_utilization' in self.query.annotations:
            return self
        # A join of its own (a filter's join to inventories stays apart);
        # inventories without capacity count as unknown.
        return self.annotate(fullness=FilteredRelation('inventories')).annotate(
            max_utilization=Max(Case(When(
                fullness__total__gt=F('fullness__reserved'),
                then=rules.utilization_sql(F('fullness__used'),
                                           rules.capacity_sql('fullness__'))))))


class AggregateQuerySet(models.QuerySet):

    def with_names(self):
        """Annotate each pool (aggregate) with `name`, the one rule every
        page, export and answer names a pool by: the label an admin set
        (PoolLabel); else the name of the pod built on it; else, when
        exactly one of its members is a sharing provider, that provider's
        name; else its uuid. Also `label` (None unless set), and its pod's
        `pod_uuid`, `pod_name` and `zone` (None without one). In the query:
        two joins and a subquery per pool over its sharing members, whatever
        its size."""
        # From the sharing providers (a few) to their pools, not from a
        # pool's members (thousands) to their traits.
        sharing = ids_with_any_trait(
            _model('Trait').objects.filter(name=SHARING_TRAIT).values('id'))
        sole_sharing = _model('ProviderAggregate').objects.filter(
            aggregate_id=OuterRef('pk'), resource_provider_id__in=sharing,
        ).order_by().values('aggregate_id').annotate(
            members=Count('resource_provider_id'), sole=Max('resource_provider__name'),
        ).filter(members=1).values('sole')
        return self.annotate(
            label=F('pool_label__name'), pod_uuid=F('pod__uuid'), pod_name=F('pod__name'),
            zone=F('pod__availability_zone'),
            name=Coalesce('pool_label__name', 'pod__name', Subquery(sole_sharing), 'uuid',
                          output_field=CharField()))


class EventQuerySet(models.QuerySet):
    """The event log, filtered as GET /events and the admin read it."""

    def about_provider(self, provider_uuid):
        return self.filter(Exists(_model('EventProvider').objects.filter(
            event_id=OuterRef('pk'), provider_uuid=provider_uuid)))

    def of_types(self, event_types):
        return self.filter(event_type__in=list(event_types))

    def unsent(self):
        return self.filter(sent_at__isnull=True)
