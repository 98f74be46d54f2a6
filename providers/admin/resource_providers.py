"""Resource providers and their inventories in the admin."""
import uuid as uuid_lib

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.db.models import Q

from placement_site import exceptions
from placement_site.admin import ReadOnlyAdmin
from placement_site.admin import RelatedOnly
from placement_site.admin import ServiceAdmin
from placement_site.admin import YesNoFilter
from placement_site.admin import adopt
from placement_site.admin import changelist_link
from placement_site.admin import count_column
from placement_site.admin import first_links
from placement_site.queries import count_of
from placement_site.validation import is_uuid_like
from placement_site.validation import normalize_uuid
from providers import services
from providers.admin.inlines import InventoryInline
from providers.admin.inlines import ProviderAggregateInline
from providers.admin.inlines import ProviderTraitInline
from providers.models import Inventory
from providers.models import ProviderAggregate
from providers.models import ProviderTrait
from providers.models import ResourceProvider


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
