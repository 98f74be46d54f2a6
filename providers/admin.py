"""Django admin for resource providers, inventories, resource classes, traits
and aggregates.

Every write goes through providers.services, as the API's do, so the admin
keeps the same invariants (no inventory below usage, no deleting a provider
with allocations or children, generations bumped, standard names read-only).
Forms check with the services' rules before saving; a refusal that still
happens while saving (a concurrent change) becomes an error message, and the
admin's transaction is rolled back so nothing changes.
"""
import uuid as uuid_lib

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db.models import Exists, OuterRef, Q
from django.forms.models import BaseInlineFormSet
from django.urls import reverse
from django.utils.html import format_html

from placement_site import exceptions
from placement_site.admin import (
    ReadOnlyAdmin,
    ReadOnlyInline,
    RelatedOnly,
    ServiceAdmin,
    YesNoFilter,
    adopt,
    changelist_link,
    count_column,
    first_links,
)
from placement_site.queries import count_of
from placement_site.validation import CUSTOM_NAME_PATTERN, is_uuid_like, normalize_uuid
from providers import schemas, services
from providers.models import (
    INVENTORY_FIELDS,
    Aggregate,
    Event,
    EventProvider,
    Inventory,
    PoolLabel,
    ProviderAggregate,
    ProviderTrait,
    ResourceClass,
    ResourceProvider,
    Trait,
    UsageSnapshot,
)

# ---- inline formsets written by one service call each ---------------------------


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


# ---- resource providers ----------------------------------------------------------

class ProviderForm(forms.ModelForm):
    """Name, uuid (at creation) and parent; carries the generation the
    operator saw, so a change made meanwhile is refused, not overwritten."""
    uuid = forms.CharField(label='UUID', required=False,
                           help_text='Leave empty to generate one. It cannot change later.')
    seen_generation = forms.IntegerField(required=False, widget=forms.HiddenInput)

    class Meta:
        model = ResourceProvider
        fields = ['name', 'uuid', 'parent_provider']

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk is not None:
            self.fields['seen_generation'].initial = self.instance.generation
            if 'parent_provider' in self.fields:
                # A provider cannot move under itself or its descendants.
                parent = self.fields['parent_provider']
                parent.queryset = parent.queryset.exclude(
                    pk__in=services.subtree_provider_ids(self.instance))
                parent.error_messages['invalid_choice'] = (
                    'A provider cannot be moved under itself or one of its descendants.')

    def clean_uuid(self):
        value = self.cleaned_data['uuid'].strip()
        if not value:
            return str(uuid_lib.uuid4())
        if not is_uuid_like(value):
            raise ValidationError('Enter a valid UUID.')
        return normalize_uuid(value)

    def clean(self):
        data = super().clean()
        seen = data.get('seen_generation')
        if self.instance.pk is not None and seen is not None and seen != self.instance.generation:
            raise ValidationError(
                f'{exceptions.ProviderConcurrentUpdate()} (generation {seen} when this page '
                f'was loaded, {self.instance.generation} now): reload the page.')
        return data


class RootFilter(YesNoFilter):
    title = 'root provider'
    parameter_name = 'root'

    def condition(self):
        return Q(parent_provider__isnull=True)


class HasAllocationsFilter(YesNoFilter):
    title = 'has allocations'
    parameter_name = 'allocated'

    def condition(self):
        return Q(pk__in=ResourceProvider.objects.in_use())


@admin.register(ResourceProvider)
class ResourceProviderAdmin(ServiceAdmin):
    form = ProviderForm
    # The root is on the provider's page: beside the parent, its column
    # pushed the counts out of a 1440 px window.
    list_display = ('name', 'uuid', 'parent_provider', 'generation', 'inventory_count',
                    'trait_count', 'aggregate_count')
    list_select_related = ('parent_provider',)
    list_filter = (RootFilter, HasAllocationsFilter, ('traits', RelatedOnly),
                   ('aggregates', RelatedOnly), ('inventories__resource_class', RelatedOnly))
    search_fields = ('name', 'uuid')
    autocomplete_fields = ('parent_provider',)
    readonly_fields = ('root_provider', 'generation', 'child_providers', 'allocation_list',
                       'created_at', 'updated_at')
    inlines = (InventoryInline, ProviderTraitInline, ProviderAggregateInline)

    def get_fields(self, request, obj=None):
        if obj is None:
            return ('name', 'uuid', 'parent_provider')
        return ('name', 'uuid', 'parent_provider', 'seen_generation', *self.readonly_fields)

    def get_readonly_fields(self, request, obj=None):
        # The uuid is chosen (or generated) at creation and never changes.
        return ('uuid', *self.readonly_fields) if obj is not None else self.readonly_fields

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(
            inventory_count=count_of(Inventory, 'resource_provider'),
            trait_count=count_of(ProviderTrait, 'resource_provider'),
            aggregate_count=count_of(ProviderAggregate, 'resource_provider'))

    inventory_count = count_column('inventory_count', 'inventories')
    trait_count = count_column('trait_count', 'traits')
    aggregate_count = count_column('aggregate_count', 'aggregates')

    @admin.display(description='child providers')
    def child_providers(self, provider):
        return first_links(provider.children.order_by('name'), changelist_link(
            ResourceProvider, 'every child', parent_provider__id__exact=provider.pk))

    @admin.display(description='allocations')
    def allocation_list(self, provider):
        allocations = provider.allocations
        return changelist_link(allocations.model, f'{allocations.count()} allocation(s)',
                               resource_provider__id__exact=provider.pk)

    def save_model(self, request, obj, form, change):
        parent_uuid = obj.parent_provider.uuid if obj.parent_provider_id else None
        if change:
            saved = services.provider_update(
                provider=ResourceProvider.objects.get(pk=obj.pk), name=obj.name,
                parent_provider_uuid=parent_uuid, allow_reparenting=True)
        else:
            saved = services.provider_create(name=obj.name, uuid=obj.uuid,
                                             parent_provider_uuid=parent_uuid)
        adopt(obj, saved)
        seen = form.cleaned_data.get('seen_generation')
        if change and seen is not None:
            # The inlines' services claim the generation the operator saw.
            obj.generation = seen

    def delete_refusal(self, provider):
        try:
            services.check_provider_delete(provider)
        except exceptions.PlacementDomainError as exc:
            return str(exc)
        return None

    def delete_model(self, request, obj):
        services.provider_delete(provider=obj)


@admin.register(Inventory)
class InventoryAdmin(ReadOnlyAdmin):
    """Inventories across providers; they are edited on their provider's page."""
    list_display = ('resource_provider', 'resource_class', 'total', 'reserved', 'min_unit',
                    'max_unit', 'step_size', 'allocation_ratio', 'capacity', 'used')
    list_select_related = ('resource_provider', 'resource_class')
    list_filter = (('resource_class', RelatedOnly),)
    search_fields = ('resource_provider__name', 'resource_provider__uuid', 'resource_class__name')

    def get_queryset(self, request):
        return super().get_queryset(request)

    @admin.display(description='used', ordering='used')
    def used(self, inventory):
        return inventory.used


# ---- resource classes and traits ---------------------------------------------------

class CustomNameForm(forms.ModelForm):
    """A CUSTOM_* name, as the API's schemas accept it."""
    name = forms.RegexField(
        regex=CUSTOM_NAME_PATTERN, max_length=255,
        error_messages={'invalid': 'A custom name starts with CUSTOM_ and uses only '
                                   'A-Z, 0-9 and _.'})

    class Meta:
        fields = ['name']


class CustomFilter(YesNoFilter):
    title = 'custom'
    parameter_name = 'custom'


class ResourceClassCustomFilter(CustomFilter):

    def condition(self):
        return Q(id__gte=ResourceClass.MIN_CUSTOM_ID)


class TraitCustomFilter(CustomFilter):

    def condition(self):
        return Q(name__startswith=Trait.CUSTOM_PREFIX)


class TraitInUseFilter(YesNoFilter):
    title = 'used by providers'
    parameter_name = 'associated'

    def condition(self):
        return Exists(ProviderTrait.objects.filter(trait=OuterRef('pk')))


class StandardOrCustomAdmin(ServiceAdmin):
    """Names from the standard libraries are read-only; CUSTOM_ ones are
    edited through the services."""
    form = CustomNameForm
    search_fields = ('name',)

    def get_fields(self, request, obj=None):
        return ('name',) if obj is None else ('name', *self.readonly_fields)

    @admin.display(description='custom', boolean=True)
    def is_custom(self, obj):
        return obj.is_custom

    def has_delete_permission(self, request, obj=None):
        return super().has_delete_permission(request, obj) and (obj is None or obj.is_custom)


@admin.register(ResourceClass)
class ResourceClassAdmin(StandardOrCustomAdmin):
    """Standard classes (os-resource-classes) are read-only; custom ones are
    created, renamed and deleted through the services."""
    list_display = ('name', 'id', 'is_custom', 'inventory_count')
    list_filter = (ResourceClassCustomFilter,)
    readonly_fields = ('id', 'is_custom', 'provider_list', 'created_at', 'updated_at')

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(
            inventory_count=count_of(Inventory, 'resource_class'))

    inventory_count = count_column('inventory_count', 'inventories')

    @admin.display(description='providers')
    def provider_list(self, rc):
        return changelist_link(ResourceProvider, f'providers with {rc.name} inventory',
                               inventories__resource_class__id__exact=rc.pk)

    def change_refusal(self, rc):
        if not rc.is_custom:
            return str(exceptions.ResourceClassCannotUpdateStandard(name=rc.name))
        return None

    def delete_refusal(self, rc):
        if not rc.is_custom:
            return str(exceptions.ResourceClassCannotDeleteStandard(name=rc.name))
        return None

    def save_model(self, request, obj, form, change):
        if change:
            services.resource_class_rename(resource_class=obj, name=obj.name)
        else:
            adopt(obj, services.resource_class_create(name=obj.name))

    def delete_model(self, request, obj):
        services.resource_class_delete(resource_class=obj)


@admin.register(Trait)
class TraitAdmin(StandardOrCustomAdmin):
    """Standard traits (os-traits) are read-only; custom ones are created and
    deleted through the services. No trait is ever renamed."""
    list_display = ('name', 'is_custom', 'provider_count')
    list_filter = (TraitCustomFilter, TraitInUseFilter)
    readonly_fields = ('is_custom', 'provider_list', 'created_at')

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(
            provider_count=count_of(ProviderTrait, 'trait'))

    provider_count = count_column('provider_count', 'providers')

    @admin.display(description='providers')
    def provider_list(self, trait):
        return changelist_link(ResourceProvider, f'{trait.provider_count} provider(s)',
                               traits__id__exact=trait.pk)

    def change_refusal(self, trait):
        if not trait.is_custom:
            return f'Cannot update standard trait {trait.name}.'
        return f'Cannot rename trait {trait.name}: create the new trait and delete this one.'

    def delete_refusal(self, trait):
        if not trait.is_custom:
            return str(exceptions.TraitCannotDeleteStandard(name=trait.name))
        return None

    def save_model(self, request, obj, form, change):
        trait, _created = services.trait_ensure(name=obj.name)
        adopt(obj, trait)

    def delete_model(self, request, obj):
        services.trait_delete(trait=obj)


# ---- aggregates ------------------------------------------------------------------

@admin.register(Aggregate)
class AggregateAdmin(ReadOnlyAdmin):
    """Aggregates exist through their members, which are set on each
    provider's page. A pool can hold thousands of members: its page links
    to them in the providers' (paged) list. Its name (with_names) is
    changed through its label (PoolLabelAdmin)."""
    list_display = ('uuid', 'pool_name', 'member_count', 'created_at')
    search_fields = ('uuid',)
    fields = ('uuid', 'pool_name', 'members', 'created_at')
    readonly_fields = ('pool_name', 'members')

    def get_queryset(self, request):
        return super().get_queryset(request).with_names().annotate(
            member_count=count_of(ProviderAggregate, 'aggregate'))

    member_count = count_column('member_count', 'members')

    @admin.display(description='name', ordering='name')
    def pool_name(self, aggregate):
        if aggregate.label is not None:
            return format_html('<a href="{}">{}</a>', reverse(
                'admin:providers_poollabel_change', args=[aggregate.pk]), aggregate.name)
        return format_html('{} · <a href="{}?aggregate_uuid={}">label it</a>', aggregate.name,
                           reverse('admin:providers_poollabel_add'), aggregate.uuid)

    @admin.display(description='members')
    def members(self, aggregate):
        return format_html('{} · <a href="{}">pool dashboard</a>', changelist_link(
            ResourceProvider, f'{aggregate.member_count} member provider(s)',
            aggregates__id__exact=aggregate.pk), reverse('ui:aggregate', args=[aggregate.uuid]))


class PoolLabelForm(forms.ModelForm):
    """A pool's label; its aggregate named by uuid, one that exists (a
    label names a pool, it does not make one)."""
    aggregate_uuid = forms.CharField(label='aggregate UUID', max_length=255)

    class Meta:
        model = PoolLabel
        fields = ['name']

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk is not None:
            self.initial['aggregate_uuid'] = self.instance.aggregate.uuid
            self.fields['aggregate_uuid'].disabled = True

    def clean_aggregate_uuid(self):
        value = self.cleaned_data['aggregate_uuid']
        aggregate = Aggregate.objects.filter(uuid=value).first()
        if aggregate is None:
            raise ValidationError('No aggregate with this uuid.')
        if self.instance.pk is None and PoolLabel.objects.filter(aggregate=aggregate).exists():
            raise ValidationError('This pool has a label already: change that one.')
        self.instance.aggregate = aggregate
        return value


@admin.register(PoolLabel)
class PoolLabelAdmin(ServiceAdmin):
    """The names admins give pools (as PUT /pool_labels/{uuid} does)."""
    form = PoolLabelForm
    list_display = ('name', 'aggregate', 'updated_at')
    list_select_related = ('aggregate',)
    search_fields = ('name', 'aggregate__uuid')
    fields = ('aggregate_uuid', 'name')

    def save_model(self, request, obj, form, change):
        services.pool_label_set(aggregate=obj.aggregate, name=form.cleaned_data['name'])
        adopt(obj, PoolLabel.objects.get(aggregate=obj.aggregate))

    def delete_model(self, request, obj):
        services.pool_label_delete(aggregate=obj.aggregate)


# ---- the event log -----------------------------------------------------------------

class EventProviderInline(ReadOnlyInline):
    model = EventProvider
    fields = ('provider_uuid', 'generation_before', 'generation_after')


class SentFilter(YesNoFilter):
    title = 'sent'
    parameter_name = 'sent'

    def condition(self):
        return Q(sent_at__isnull=False)


@admin.register(Event)
class EventAdmin(ReadOnlyAdmin):
    """The event log, newest first: what changed and whether the
    notification went out; who asked (user, project, request id) on the
    event's page. Events are written by the services only."""
    list_display = ('id', 'event_type', 'created_at', 'provider_list', 'consumer_uuid', 'sent')
    list_filter = ('event_type', SentFilter, 'created_at')
    search_fields = ('=providers__provider_uuid', '=consumer_uuid', '=request_id', '=user_id')
    ordering = ('-id',)
    date_hierarchy = 'created_at'
    inlines = (EventProviderInline,)
    fields = ('event_type', 'created_at', 'consumer_uuid', 'consumer_generation_before',
              'consumer_generation_after', 'payload', 'request_id', 'user_id', 'project_id',
              'sent_at')

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related('providers')

    @admin.display(description='providers')
    def provider_list(self, event):
        # One uuid to a row (a write can touch many providers): the
        # event's page lists them.
        providers = [p.provider_uuid for p in event.providers.all()]
        more = f' (+{len(providers) - 1})' if len(providers) > 1 else ''
        return f'{providers[0]}{more}' if providers else None

    @admin.display(description='sent', boolean=True, ordering='sent_at')
    def sent(self, event):
        return event.sent_at is not None


# ---- usage trends ---------------------------------------------------------------------

class CloudFilter(YesNoFilter):
    title = 'whole cloud'
    parameter_name = 'cloud'

    def condition(self):
        return Q(aggregate__isnull=True)


@admin.register(UsageSnapshot)
class UsageSnapshotAdmin(ReadOnlyAdmin):
    """The usage-trend snapshots, newest first: taken by manage.py
    snapshot_usage and the notification dispatcher only (providers.trends)."""
    list_display = ('taken_at', 'scope', 'resource_class', 'total', 'reserved', 'capacity',
                    'used', 'providers')
    list_filter = (CloudFilter, ('resource_class', RelatedOnly), 'taken_at')
    list_select_related = ('aggregate', 'resource_class')
    search_fields = ('=aggregate__uuid',)
    ordering = ('-taken_at', 'resource_class_id')
    date_hierarchy = 'taken_at'
    fields = ('taken_at', 'aggregate', 'resource_class', 'total', 'reserved', 'capacity', 'used',
              'providers')

    @admin.display(description='pool', ordering='aggregate__uuid')
    def scope(self, snapshot):
        return snapshot.aggregate.uuid if snapshot.aggregate else 'whole cloud'
