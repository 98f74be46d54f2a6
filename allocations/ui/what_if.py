"""/ui/what-if/: POST /capacity/what-if as a plain form (hosts added to
pools, hosts drained by pool, name pattern or list, a ratio or reserved
amount changed) and its before/after table per flavor, for the cloud and
each pool. The form is read into the API's body and answered by the
API's own code (providers.api.what_if.answer): the same 400s, shown on the
form."""
from django import forms
from django.shortcuts import render

from placement_site import errors
from placement_site.api import validate
from placement_site.viewers import requires
from providers.api import capacity as capacity_api
from providers.api import what_if as what_if_api


def _listed(text):
    return [part.strip() for part in (text or '').split(',') if part.strip()]


def _pairs(text, kind, what):
    """{CLASS: kind(value)} of 'CLASS:value,CLASS:value'."""
    pairs = {}
    for part in _listed(text):
        name, sep, value = part.partition(':')
        try:
            pairs[name.strip()] = kind(value.strip())
        except ValueError:
            raise forms.ValidationError(f'{what}: {part!r} is not CLASS:{kind.__name__}') from None
        if not sep:
            raise forms.ValidationError(f'{what}: {part!r} is not CLASS:{kind.__name__}')
    return pairs


class WhatIfForm(forms.Form):
    resources = forms.CharField(required=False, label='Shape (empty: the flavors)',
                                help_text='e.g. VCPU:4,MEMORY_MB:8192')
    add_count = forms.IntegerField(required=False, min_value=1, label='Add hosts')
    add_inventories = forms.CharField(required=False, label='each with totals',
                                      help_text='VCPU:64,MEMORY_MB:262144,DISK_GB:2000')
    add_ratios = forms.CharField(required=False, label='ratios',
                                 help_text='VCPU:4.0,MEMORY_MB:1.0')
    add_reserved = forms.CharField(required=False, label='reserved', help_text='MEMORY_MB:4096')
    add_aggregates = forms.CharField(required=False, label='in pools (uuids)')
    add_traits = forms.CharField(required=False, label='traits', help_text='COMPUTE_NODE')
    remove_aggregates = forms.CharField(required=False, label='Drain pools (uuids)')
    remove_names = forms.CharField(required=False, label='hosts named like',
                                   help_text='cn01*, rack7-*')
    remove_hosts = forms.CharField(required=False, label='hosts (names or uuids)')
    set_class = forms.CharField(required=False, label='Set on class', help_text='VCPU')
    set_aggregate = forms.CharField(required=False, label='in pool (empty: all)')
    set_ratio = forms.FloatField(required=False, min_value=0, label='allocation ratio')
    set_reserved = forms.IntegerField(required=False, min_value=0, label='reserved')

    def body(self):
        """The API's request body of the form."""
        data = self.cleaned_data
        body = {}
        if data.get('resources'):
            body['resources'] = data['resources'].strip()
        if data.get('add_count'):
            totals = _pairs(data.get('add_inventories'), int, 'totals')
            ratios = _pairs(data.get('add_ratios'), float, 'ratios')
            reserved = _pairs(data.get('add_reserved'), int, 'reserved')
            inventories = {name: {'total': total} for name, total in totals.items()}
            for name, ratio in ratios.items():
                inventories.setdefault(name, {})['allocation_ratio'] = ratio
            for name, amount in reserved.items():
                inventories.setdefault(name, {})['reserved'] = amount
            body['add_hosts'] = [{
                'count': data['add_count'], 'inventories': inventories,
                'aggregates': _listed(data.get('add_aggregates')),
                'traits': _listed(data.get('add_traits'))}]
        removal = {key: _listed(data.get(f'remove_{key}'))
                   for key in ('aggregates', 'names', 'hosts')}
        if any(removal.values()):
            body['remove_hosts'] = {key: value for key, value in removal.items() if value}
        if data.get('set_class'):
            setting = {'resource_class': data['set_class'].strip()}
            if data.get('set_aggregate'):
                setting['aggregate'] = data['set_aggregate'].strip()
            if data.get('set_ratio') is not None:
                setting['allocation_ratio'] = data['set_ratio']
            if data.get('set_reserved') is not None:
                setting['reserved'] = data['set_reserved']
            body['set_inventories'] = [setting]
        return body


@requires(lambda v: v.may_read(capacity_api.POLICY), 'the what-if page')
def what_if(request):
    """The form, and once asked, the before/after table."""
    form = WhatIfForm(request.GET or None)
    outcome, problem = None, None
    if form.is_bound:
        try:
            if not form.is_valid():
                raise forms.ValidationError([e for errs in form.errors.values() for e in errs])
            body = form.body()
            validate(body, what_if_api.WHAT_IF_BODY, 'The change is not valid: {}')
            outcome = what_if_api.answer(body)
        except forms.ValidationError as exc:
            problem = '; '.join(exc.messages)
        except errors.PlacementError as exc:
            problem = exc.detail
    rows = []
    for group in (outcome or {}).get('groups', ()):
        rows.append({'group': group['group'], 'name': group['name'],
                     'fits': [dict(fits, name=name, delta=fits['after'] - fits['before'])
                              for name, fits in group['fits'].items()]})
    return render(request, 'ui/what_if.html', {
        'form': form, 'outcome': outcome, 'rows': rows, 'problem': problem,
    }, status=400 if problem else 200)
