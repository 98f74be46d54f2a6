"""Aggregates (pools) and their labels in the admin."""

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.urls import reverse
from django.utils.html import format_html

from placement_site.admin import ReadOnlyAdmin
from placement_site.admin import ServiceAdmin
from placement_site.admin import adopt
from placement_site.admin import changelist_link
from placement_site.admin import count_column
from placement_site.queries import count_of
from providers import services
from providers.models import Aggregate
from providers.models import PoolLabel
from providers.models import ProviderAggregate
from providers.models import ResourceProvider


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
