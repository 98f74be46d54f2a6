"""Read-side building blocks for providers. They build queries; they change
nothing. The API, the admin and the dashboards share them."""
from django.apps import apps
from django.db import models
from django.db.models import Exists, F, OuterRef, Subquery, Sum, Value
from django.db.models.functions import Coalesce, Mod


def _model(name):
    return apps.get_model(*name.split('.'))


def usage_subquery(resource_class_id=None, provider_ref='resource_provider'):
    """SUM(used) of one provider's allocations (of one class, if given),
    correlated to the outer row's `provider_ref`."""
    allocations = _model('allocations.Allocation').objects.filter(
        resource_provider=OuterRef(provider_ref))
    if resource_class_id is None:
        allocations = allocations.filter(resource_class=OuterRef('resource_class'))
    else:
        allocations = allocations.filter(resource_class_id=resource_class_id)
    return Coalesce(
        Subquery(allocations.values('resource_provider').annotate(total=Sum('used')).values('total')),
        Value(0))


def capacity_expression(prefix=''):
    """(total - reserved) * allocation_ratio, as SQL."""
    return models.ExpressionWrapper(
        (F(f'{prefix}total') - F(f'{prefix}reserved')) * F(f'{prefix}allocation_ratio'),
        output_field=models.FloatField())


class InventoryQuerySet(models.QuerySet):

    def with_usage(self):
        """Annotate `used`: what the provider's consumers hold of the class."""
        return self.annotate(used=usage_subquery())

    def able_to_fit(self, amount):
        """Inventories where `amount` more units fit: within min_unit,
        max_unit and step_size, and used + amount <= capacity."""
        return self.filter(min_unit__lte=amount, max_unit__gte=amount).annotate(
            used=usage_subquery(),
            usable=capacity_expression(),
            step_remainder=Mod(Value(amount), F('step_size')),
        ).filter(step_remainder=0, usable__gte=F('used') + amount)


class ResourceProviderQuerySet(models.QuerySet):

    def with_tree_uuids(self):
        """Annotate parent_provider_uuid and root_provider_uuid (one query)."""
        return self.annotate(parent_provider_uuid=F('parent_provider__uuid'),
                             root_provider_uuid=F('root_provider__uuid'))

    def in_tree(self, provider_uuid):
        """Providers in the same tree as `provider_uuid` (none if unknown)."""
        root = self.model.objects.filter(uuid=provider_uuid).values('root_provider_id')[:1]
        return self.filter(root_provider_id=Subquery(root))

    def member_of_any(self, aggregate_uuids):
        """Providers in at least one of the aggregates."""
        members = _model('providers.ProviderAggregate').objects.filter(
            aggregate__uuid__in=list(aggregate_uuids)).values('resource_provider_id')
        return self.filter(id__in=members)

    def member_of_none(self, aggregate_uuids):
        members = _model('providers.ProviderAggregate').objects.filter(
            aggregate__uuid__in=list(aggregate_uuids)).values('resource_provider_id')
        return self.exclude(id__in=members)

    def with_any_trait(self, trait_ids):
        """Providers having at least one of the traits."""
        having = _model('providers.ProviderTrait').objects.filter(
            trait_id__in=list(trait_ids)).values('resource_provider_id')
        return self.filter(id__in=having)

    def without_traits(self, trait_ids):
        having = _model('providers.ProviderTrait').objects.filter(
            trait_id__in=list(trait_ids)).values('resource_provider_id')
        return self.exclude(id__in=having)

    def having_capacity(self, resource_class_id, amount):
        """Providers whose own inventory of the class can take `amount` more."""
        fitting = _model('providers.Inventory').objects.filter(
            resource_provider=OuterRef('pk'), resource_class_id=resource_class_id,
        ).able_to_fit(amount)
        return self.filter(Exists(fitting))

    def filtered(self, *, name=None, uuid=None, in_tree=None, member_of=(),
                 forbidden_aggregates=(), required_traits=(), forbidden_traits=(),
                 resources=None):
        """GET /resource_providers' filters, all ANDed.

        member_of: list of sets of aggregate uuids (any of each set);
        required_traits: list of sets of trait ids (any of each set);
        resources: {resource class id: amount}.
        """
        qs = self
        if name is not None:
            # No stored name contains NUL (PostgreSQL could not even compare it).
            qs = qs.filter(name=name) if '\x00' not in name else qs.none()
        if uuid is not None:
            qs = qs.filter(uuid=uuid)
        if in_tree is not None:
            qs = qs.in_tree(in_tree)
        for any_of in member_of:
            qs = qs.member_of_any(any_of)
        if forbidden_aggregates:
            qs = qs.member_of_none(forbidden_aggregates)
        for any_of in required_traits:
            qs = qs.with_any_trait(any_of)
        if forbidden_traits:
            qs = qs.without_traits(forbidden_traits)
        for class_id, amount in (resources or {}).items():
            qs = qs.having_capacity(class_id, amount)
        return qs
