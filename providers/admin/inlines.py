"""The provider page's inlines (inventories, traits, aggregates): each formset
written by one service call."""

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator
from django.core.validators import MinValueValidator
from django.forms.models import BaseInlineFormSet

from placement_site import exceptions
from placement_site.validation import is_uuid_like
from providers import schemas
from providers import services
from providers.models import INVENTORY_FIELDS
from providers.models import Aggregate
from providers.models import Inventory
from providers.models import ProviderAggregate
from providers.models import ProviderTrait


class ServiceFormSet(BaseInlineFormSet):
    """Inline rows that a service replaces as one set: `check` runs in
    clean() with the service's rules, `write` replaces the set on save."""

    def check(self, provider, rows):
        """Raise the domain error writing `rows` would raise."""

    def write(self, provider, rows):
        raise NotImplementedError

    def kept_forms(self):
        """The forms of the rows the provider has after the save."""
        deleted = set(map(id, self.deleted_forms)) if self.can_delete else set()
        return [form for form in self.forms if id(form) not in deleted
                and (form.instance.pk is not None or form.has_changed())]

    def clean(self):
        super().clean()
        if any(self.errors) or not self.has_changed():
            return
        try:
            self.check(self.instance, [form.cleaned_data for form in self.kept_forms()])
        except exceptions.PlacementDomainError as exc:
            raise ValidationError(str(exc))

    def save(self, commit=True):
        kept = self.kept_forms()
        self.new_objects = [form.instance for form in kept if form.instance.pk is None]
        self.changed_objects = [(form.instance, form.changed_data) for form in kept
                                if form.instance.pk is not None and form.has_changed()]
        self.deleted_objects = [form.instance for form in self.deleted_forms
                                if form.instance.pk is not None] if self.can_delete else []
        if self.new_objects or self.changed_objects or self.deleted_objects:
            self.write(self.instance, [form.cleaned_data for form in kept])
        return self.new_objects + [obj for obj, _ in self.changed_objects]


class InventoryFormSet(ServiceFormSet):

    @staticmethod
    def inventories(rows):
        fields = INVENTORY_FIELDS
        return {row['resource_class'].name: {field: row[field] for field in fields}
                for row in rows}

    def check(self, provider, rows):
        services.check_inventories(provider=provider, inventories=self.inventories(rows))

    def write(self, provider, rows):
        services.inventories_replace(provider=provider, inventories=self.inventories(rows))


class TraitFormSet(ServiceFormSet):

    def write(self, provider, rows):
        services.traits_replace(provider=provider, trait_names=[row['trait'].name for row in rows])


class AggregateFormSet(ServiceFormSet):

    def write(self, provider, rows):
        services.aggregates_replace(provider=provider,
                                    aggregate_uuids=[row['aggregate_uuid'] for row in rows])


class InventoryForm(forms.ModelForm):
    """One inventory, bounded as the API's schema bounds it."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name, rule in schemas.INVENTORY_RECORD['properties'].items():
            if name in self.fields:
                if 'minimum' in rule:
                    self.fields[name].validators.append(MinValueValidator(rule['minimum']))
                if 'maximum' in rule:
                    self.fields[name].validators.append(MaxValueValidator(rule['maximum']))


class AggregateMemberForm(forms.ModelForm):
    """Membership by aggregate uuid, as the API takes it: an unknown
    aggregate is created."""
    aggregate_uuid = forms.CharField(label='aggregate UUID', max_length=255)

    class Meta:
        model = ProviderAggregate
        fields = []

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk is not None:
            self.initial.setdefault('aggregate_uuid', self.instance.aggregate.uuid)

    def clean_aggregate_uuid(self):
        value = self.cleaned_data['aggregate_uuid']
        if not is_uuid_like(value):
            raise ValidationError('Enter a valid UUID.')
        # Never saved (aggregates_replace writes the set): the row names
        # its aggregate in the admin's history.
        self.instance.aggregate = Aggregate(uuid=value)
        return value


class InventoryInline(admin.TabularInline):
    model = Inventory
    form = InventoryForm
    formset = InventoryFormSet
    fields = ('resource_class', 'total', 'reserved', 'min_unit', 'max_unit', 'step_size',
              'allocation_ratio', 'used', 'capacity')
    readonly_fields = ('used', 'capacity')
    autocomplete_fields = ('resource_class',)
    extra = 0

    def get_queryset(self, request):
        return super().get_queryset(request).select_related('resource_class', 'resource_provider')

    @admin.display(description='used')
    def used(self, inventory):
        return getattr(inventory, 'used', None)

    @admin.display(description='capacity')
    def capacity(self, inventory):
        if inventory.pk is None:
            return None
        # Placement accepts an inventory lowered below what is allocated.
        if (getattr(inventory, 'used', None) or 0) > inventory.capacity:
            return f'{inventory.capacity:g} (over capacity)'
        return inventory.capacity


class ProviderTraitInline(admin.TabularInline):
    model = ProviderTrait
    formset = TraitFormSet
    autocomplete_fields = ('trait',)
    extra = 0
    verbose_name = 'trait'
    verbose_name_plural = 'traits'

    def get_queryset(self, request):
        return super().get_queryset(request).select_related('trait', 'resource_provider')


class ProviderAggregateInline(admin.TabularInline):
    model = ProviderAggregate
    form = AggregateMemberForm
    formset = AggregateFormSet
    fields = ('aggregate_uuid',)
    extra = 0
    verbose_name = 'aggregate'
    verbose_name_plural = 'aggregates'

    def get_queryset(self, request):
        return super().get_queryset(request).select_related('aggregate', 'resource_provider')
