"""Resource classes and traits in the admin: the standard ones read-only,
custom ones created, renamed and deleted through the services."""

from django import forms
from django.contrib import admin
from django.db.models import Exists
from django.db.models import OuterRef
from django.db.models import Q

from placement_site import exceptions
from placement_site.admin import ServiceAdmin
from placement_site.admin import YesNoFilter
from placement_site.admin import adopt
from placement_site.admin import changelist_link
from placement_site.admin import count_column
from placement_site.queries import count_of
from placement_site.validation import CUSTOM_NAME_PATTERN
from providers import services
from providers.models import Inventory
from providers.models import ProviderTrait
from providers.models import ResourceClass
from providers.models import ResourceProvider
from providers.models import Trait


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
