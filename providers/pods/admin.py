"""Django admin for pods and pod bindings.

Every write goes through providers.pods.services, as the API's do: pods
are created, changed and deleted with pod_create, pod_update and
pod_delete (a pod anybody was ever bound to is kept: its bindings are
history); a binding is added as an admin's explicit binding (binding_bind,
which ends the tenant's open binding with the reason 'admin') and ended by
an action (binding_end). Bindings are never edited or deleted here.

Forms check with the API's rules (the patterns and bounds of schemas.py,
known resource classes) before saving; a refusal that still happens while
saving becomes an error message, and nothing changes.
"""
import re
from decimal import Decimal

import jsonschema
from django import forms
from django.contrib import admin
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q
from django.http import HttpResponseRedirect
from django.urls import reverse
from django.utils.html import format_html

from placement_site import exceptions
from placement_site.admin import RelatedOnly
from placement_site.admin import ServiceAdmin
from placement_site.admin import YesNoFilter
from placement_site.admin import adopt
from placement_site.admin import change_url
from placement_site.admin import changelist_link
from placement_site.validation import NAME_PATTERN
from placement_site.validation import is_uuid_like
from providers.models import ResourceProvider
from providers.pods import schemas
from providers.pods import selection
from providers.pods import services
from providers.pods.models import GENERAL_PURPOSE
from providers.pods.models import Pod
from providers.pods.models import PodBinding
from providers.pods.models import affinity_tag

TAGS_RULE = schemas.POD_FIELDS['affinity_tags']
THRESHOLDS_RULE = schemas.POD_FIELDS['thresholds']
PERCENT_RULE = THRESHOLDS_RULE['patternProperties'][NAME_PATTERN]
PERCENT = re.compile(r'^([0-9]+(?:\.[0-9]+)?)\s*%?$')


# ---- key=value text, one per line ----------------------------------------------------

def lines_of(text):
    """(key, value) of each non-blank `key=value` line; a line without '='
    or a key given twice is a ValidationError."""
    pairs = {}
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        key, equals, value = line.partition('=')
        key, value = key.strip(), value.strip()
        if not equals:
            raise ValidationError(f'“{line}”: write one key=value per line.')
        if key in pairs:
            raise ValidationError(f'“{key}” is given twice.')
        pairs[key] = value
    return pairs


def check_rule(value, rule):
    """The API's own check of the body's member (jsonschema, as the API
    words its first error)."""
    validator = jsonschema.validators.validator_for(rule)(rule)
    error = jsonschema.exceptions.best_match(validator.iter_errors(value))
    if error is not None:
        raise ValidationError(error.message)


def tags_text(tags):
    return '\n'.join(affinity_tag(key, value) for key, value in sorted(tags.items()))


def percent_text(percent):
    return str(int(percent)) if float(percent).is_integer() else repr(float(percent))


def thresholds_text(thresholds):
    return '\n'.join(f'{name}={percent_text(percent)}'
                     for name, percent in sorted(thresholds.items()))


def parse_tags(text):
    """{key: value} from `key=value` lines, by the API's affinity_tags rule."""
    tags = lines_of(text)
    key_rule = re.compile(schemas.TAG_KEY_PATTERN)
    value_rule = re.compile(schemas.TAG_VALUE_PATTERN)
    for key, value in tags.items():
        if not key_rule.match(key):
            raise ValidationError(f'“{key}={value}”: keys are 1 to 64 letters, digits or _ . : / -')
        if not value_rule.match(value):
            raise ValidationError(
                f'“{key}={value}”: values are 1 to 64 letters, digits, spaces (not at either '
                "end) or _ . : / ( ) + , ; & # @ ! ? % * ' [ ] -")
    if len(tags) > TAGS_RULE['maxProperties']:
        raise ValidationError(f'A pod has at most {TAGS_RULE["maxProperties"]} affinity tags.')
    check_rule(tags, TAGS_RULE)
    return tags


def parse_thresholds(text):
    """{class: percent} from `CLASS=percent` lines, by the API's thresholds
    rule; an unknown class is refused as the service refuses it."""
    thresholds = {}
    low, high = PERCENT_RULE['exclusiveMinimum'], PERCENT_RULE['maximum']
    for name, value in lines_of(text).items():
        if not re.match(NAME_PATTERN, name):
            raise ValidationError(
                f'“{name}”: a resource class name uses only A-Z, 0-9 and _.')
        number = PERCENT.match(value)
        percent = Decimal(number.group(1)) if number else None
        if percent is None or not low < percent <= high:
            raise ValidationError(f'“{name}={value}”: a threshold is a percentage above {low} '
                                  f'and at most {high}.')
        thresholds[name] = int(percent) if percent == percent.to_integral() else float(percent)
    check_rule(thresholds, THRESHOLDS_RULE)
    try:
        services.check_thresholds(thresholds)
    except exceptions.PlacementDomainError as exc:
        raise ValidationError(str(exc))
    return thresholds


# ---- pods -----------------------------------------------------------------------------

class PodForm(forms.ModelForm):
    """A pod as the API takes it, with its tags and thresholds as text."""
    aggregate_uuid = forms.CharField(
        label='aggregate UUID', max_length=255, required=False,
        help_text='The pool of providers the pod is. Leave empty to make a new aggregate.')
    affinity_tags = forms.CharField(
        widget=forms.Textarea(attrs={'rows': 3}), required=False,
        help_text='One key=value per line (resource=CAD). A pod without tags takes '
                  'general-purpose work only.')
    thresholds = forms.CharField(
        widget=forms.Textarea(attrs={'rows': 3}), required=False,
        help_text='One CLASS=percent per line (VCPU=80): at that use of a class the pod takes '
                  'no new tenants and moves bound ones on.')

    class Meta:
        model = Pod
        fields = ['name', 'aggregate_uuid', 'availability_zone', 'affinity_tags', 'thresholds',
                  'state']

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        pod = self.instance
        if pod.pk is not None:
            self.initial.update(aggregate_uuid=pod.aggregate.uuid,
                                affinity_tags=tags_text(pod.affinity_tags),
                                thresholds=thresholds_text(pod.thresholds))
            if 'aggregate_uuid' in self.fields:
                field = self.fields['aggregate_uuid']
                field.required = True
                field.help_text = 'The pool of providers the pod is.'

    def clean_aggregate_uuid(self):
        value = self.cleaned_data['aggregate_uuid'].strip()
        if not value:
            return None
        if not is_uuid_like(value):
            raise ValidationError('Enter a valid UUID.')
        other = Pod.objects.filter(aggregate__uuid=value).exclude(pk=self.instance.pk).first()
        if other is not None:
            raise ValidationError(str(exceptions.AggregateIsAnotherPod(aggregate=value,
                                                                       pod=other.name)))
        return value

    def clean_affinity_tags(self):
        return parse_tags(self.cleaned_data['affinity_tags'])

    def clean_thresholds(self):
        return parse_thresholds(self.cleaned_data['thresholds'])


@admin.register(Pod)
class PodAdmin(ServiceAdmin):
    """Pods with their pool and the tenants bound now; written through
    pod_create, pod_update and pod_delete."""
    form = PodForm
    # (Created at: on the pod's page; the list fits a 1440 px window.)
    list_display = ('name', 'pool', 'availability_zone', 'state', 'tag_list', 'threshold_list',
                    'tenants')
    list_filter = ('state', 'availability_zone')
    search_fields = ('name', 'uuid', 'aggregate__uuid')
    readonly_fields = ('uuid', 'pool_links', 'tenants', 'binding_list', 'created_at',
                       'updated_at')

    def get_fields(self, request, obj=None):
        fields = ('name', 'aggregate_uuid', 'availability_zone', 'affinity_tags', 'thresholds',
                  'state')
        return fields if obj is None else (*fields, *self.readonly_fields)

    def get_queryset(self, request):
        return super().get_queryset(request).with_aggregate().with_open_binding_counts()

    @admin.display(description='aggregate', ordering='aggregate__uuid')
    def pool(self, pod):
        """The pool's dashboard page."""
        uuid = pod.aggregate.uuid
        return format_html('<a href="{}">{}</a>', reverse('ui:aggregate', args=[uuid]), uuid)

    @admin.display(description='affinity tags')
    def tag_list(self, pod):
        return ', '.join(pod.tags) or 'general purpose'

    @admin.display(description='thresholds')
    def threshold_list(self, pod):
        return ', '.join(f'{name} {percent_text(percent)}%'
                         for name, percent in sorted(pod.thresholds.items())) or None

    @admin.display(description='tenants bound', ordering='tenants')
    def tenants(self, pod):
        return changelist_link(PodBinding, pod.tenants, pod__id__exact=pod.pk, open='yes')

    @admin.display(description='pool')
    def pool_links(self, pod):
        return format_html('{} · {}', self.pool(pod), changelist_link(
            ResourceProvider, 'member providers', aggregates__id__exact=pod.aggregate_id))

    @admin.display(description='bindings')
    def binding_list(self, pod):
        return changelist_link(PodBinding, 'every binding, ended ones too',
                               pod__id__exact=pod.pk)

    def save_model(self, request, obj, form, change):
        data = form.cleaned_data
        fields = {name: data[name] for name in services.POD_FIELDS}
        if change:
            pod = Pod.objects.with_aggregate().get(pk=obj.pk)
            aggregate = data['aggregate_uuid']
            saved = services.pod_update(
                pod=pod, aggregate_uuid=aggregate if aggregate != pod.aggregate.uuid else None,
                **{name: value for name, value in fields.items()
                   if value != getattr(pod, name)})
        else:
            saved = services.pod_create(aggregate_uuid=data['aggregate_uuid'], **fields)
        adopt(obj, saved)

    def delete_refusal(self, pod):
        return services.check_pod_delete(pod)

    def delete_model(self, request, obj):
        services.pod_delete(pod=obj)


# ---- pod bindings ---------------------------------------------------------------------

class PodChoiceField(forms.ModelChoiceField):

    def label_from_instance(self, pod):
        serves = ', '.join(pod.tags) or 'general purpose'
        return f'{pod.name} ({serves}; {pod.availability_zone}; {pod.state})'


class BindingForm(forms.ModelForm):
    """An admin's explicit binding: the tenant goes to the pod named,
    whatever the filters say, if the pod serves the affinity."""
    affinity = forms.RegexField(
        label='affinity tag', regex=schemas.AFFINITY_PATTERN, required=False, strip=True,
        error_messages={'invalid': 'An affinity tag is key=value (resource=CAD): 1 to 64 '
                                   'letters, digits or _ . : / - each side.'},
        help_text='key=value, as the pods\' tags; empty for general-purpose work.')
    pod = PodChoiceField(queryset=Pod.objects.in_line())

    class Meta:
        model = PodBinding
        fields = ['project_id', 'affinity', 'pod']

    def clean(self):
        data = super().clean()
        pod = data.get('pod')
        affinity = data.get('affinity') or GENERAL_PURPOSE
        if pod is not None and 'affinity' not in self.errors and not pod.serves(affinity):
            raise ValidationError(str(exceptions.PodDoesNotServeAffinity(
                name=pod.name, affinity=selection.describe_affinity(affinity))))
        return data


class OpenFilter(YesNoFilter):
    title = 'open'
    parameter_name = 'open'

    def condition(self):
        return Q(ended_at__isnull=True)


@admin.register(PodBinding)
class PodBindingAdmin(ServiceAdmin):
    """Tenants bound to pods, and the history of their bindings, newest
    first. Added as an admin's explicit binding (binding_bind), ended by the
    action (binding_end); never edited or deleted."""
    form = BindingForm
    list_display = ('project_id', 'affinity_shown', 'pod', 'started_at', 'ended_at',
                    'end_reason')
    list_select_related = ('pod',)
    list_filter = (OpenFilter, 'end_reason', ('pod', RelatedOnly))
    search_fields = ('project_id', 'uuid')
    ordering = ('-started_at', '-id')
    actions = ['end_bindings']
    fields = ('uuid', 'project_id', 'affinity_shown', 'pod_link', 'started_at', 'ended_at',
              'end_reason')
    readonly_fields = fields

    def get_fields(self, request, obj=None):
        return ('project_id', 'affinity', 'pod') if obj is None else self.fields

    def get_readonly_fields(self, request, obj=None):
        return () if obj is None else self.readonly_fields

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def has_end_permission(self, request):
        """Ending a binding is the one change made to one: the user's
        change permission on bindings."""
        return admin.ModelAdmin.has_change_permission(self, request)

    @admin.display(description='affinity', ordering='affinity')
    def affinity_shown(self, binding):
        return binding.affinity or 'general purpose'

    @admin.display(description='pod')
    def pod_link(self, binding):
        return format_html('<a href="{}">{}</a>', change_url(binding.pod), binding.pod)

    def save_model(self, request, obj, form, change):
        data = form.cleaned_data
        answer = services.binding_bind(project_id=data['project_id'],
                                       affinity=data['affinity'] or GENERAL_PURPOSE,
                                       pod=data['pod'])
        adopt(obj, answer.binding)
        obj.answer = answer

    def response_add(self, request, obj, post_url_continue=None):
        answer = obj.answer
        affinity = selection.describe_affinity(obj.affinity)
        if not answer.created:
            self.message_user(request, f'Project {obj.project_id} was already bound to pod '
                                       f'{obj.pod} for {affinity} work: nothing changed.',
                              messages.WARNING)
        else:
            ended = (f'; its binding to pod {answer.replaced.pod} ended (admin)'
                     if answer.replaced is not None else '')
            self.message_user(request, f'Project {obj.project_id} is bound to pod {obj.pod} '
                                       f'for {affinity} work{ended}.', messages.SUCCESS)
        return HttpResponseRedirect(reverse('admin:pods_podbinding_changelist'))

    @admin.action(permissions=['end'], description='End selected bindings (admin)')
    def end_bindings(self, request, queryset):
        """binding_end for each, all or nothing: refused as a whole when
        any selected binding has ended already."""
        bindings = list(queryset.order_by('pk'))
        refusals = [str(exceptions.PodBindingEnded(
            uuid=b.uuid, ended_at=b.ended_at.isoformat(), reason=b.end_reason))
            for b in bindings if not b.is_open]
        if not refusals:
            try:
                with transaction.atomic():
                    for binding in bindings:
                        services.binding_end(binding=binding)
            except exceptions.PlacementDomainError as exc:
                refusals = [str(exc)]
        if refusals:
            self.message_user(request, ' '.join(['Nothing was ended.', *refusals]),
                              messages.ERROR)
            return
        self.message_user(request, f'Ended {len(bindings)} binding(s) (admin).', messages.SUCCESS)
