"""The dashboards' forms: usage filters, the candidate explorer's request,
the capacity report's question and the audit's live list."""
from django import forms
from django.core.validators import RegexValidator
from django.http import QueryDict

from allocations import audit
from placement_site import errors
from providers import capacity
from providers import flavors
from providers.api import capacity as capacity_api
from providers.pods.schemas import AFFINITY_PATTERN
from providers.querystring import parse_resources


class UsageFilter(forms.Form):
    project = forms.CharField(required=False)
    user = forms.CharField(required=False)
    consumer_type = forms.CharField(required=False)
    top_class = forms.CharField(required=False, initial='VCPU', label='Top consumers of')


# The explorer's budget (docs/serving.md): requests beyond these bounds are
# refused before any search runs. Each group multiplies the combinations the
# search tries, and each candidate shown its page; the time and the size of
# the answer are bounded too (allocations.ui.views).
EXPLORER_MAX_GROUPS = 8
EXPLORER_MAX_LIMIT = 100
EXPLORER_DEFAULT_LIMIT = 20


class ExplorerForm(forms.Form):
    resources = forms.CharField(required=False, initial='VCPU:2,MEMORY_MB:2048,DISK_GB:20',
                                help_text='e.g. VCPU:2,MEMORY_MB:2048')
    required = forms.CharField(required=False, label='Required traits',
                               help_text='HW_CPU_X86_AVX2,!COMPUTE_STATUS_DISABLED or in:A,B')
    member_of = forms.CharField(required=False, label='Member of aggregate',
                                help_text='an aggregate uuid, in:uuid1,uuid2 or !uuid')
    in_tree = forms.CharField(required=False, label='In tree of provider (uuid)')
    root_required = forms.CharField(required=False, label='Root traits')
    groups = forms.CharField(
        required=False, widget=forms.Textarea(attrs={'rows': 3}), label='Request groups',
        help_text='one per line: SUFFIX resources=...&required=... e.g. '
                  '_NET resources=SRIOV_NET_VF:1&required=CUSTOM_PHYSNET_PUBLIC')
    group_policy = forms.ChoiceField(required=False, choices=[('', '—'), ('none', 'none'),
                                                              ('isolate', 'isolate')])
    same_subtree = forms.CharField(required=False, help_text='e.g. _COMPUTE,_NET')
    limit = forms.IntegerField(
        required=False, min_value=1, max_value=EXPLORER_MAX_LIMIT,
        initial=EXPLORER_DEFAULT_LIMIT,
        help_text=f'candidates shown, at most {EXPLORER_MAX_LIMIT} (empty: {EXPLORER_MAX_LIMIT})',
        error_messages={'max_value': (
            f'The explorer shows at most {EXPLORER_MAX_LIMIT} candidates (its budget): ask '
            'for fewer, or ask GET /allocation_candidates itself for more.')})
    # Not part of the query: the project's pod adds member_of to it.
    as_project = forms.CharField(required=False, max_length=255, label='As project',
                                 help_text="a project id: only its pod's providers")
    affinity = forms.CharField(
        required=False, label='Affinity tag', help_text='key=value, e.g. resource=CAD; '
        'empty: general purpose',
        validators=[RegexValidator(AFFINITY_PATTERN, 'Enter a tag as key=value.')])

    def clean_limit(self):
        return self.cleaned_data['limit'] or EXPLORER_MAX_LIMIT

    def clean(self):
        data = super().clean()
        if data.get('affinity') and not data.get('as_project'):
            self.add_error('affinity', 'An affinity tag needs a project.')
        groups = self.request_groups()
        if len(groups) > EXPLORER_MAX_GROUPS:
            self.add_error('groups', (
                f'At most {EXPLORER_MAX_GROUPS} request groups, the unsuffixed one and the '
                f'suffixed ones together: this asks for {len(groups)}. Each group multiplies '
                'the combinations the search tries (the explorer\'s budget).'))
        return data

    def request_groups(self):
        """The request groups asked for: '' for the unsuffixed one (when it
        asks for resources), then each suffix of the groups field."""
        data = self.cleaned_data
        suffixes = [''] if (data.get('resources') or '').strip() else []
        for line in (data.get('groups') or '').splitlines():
            suffix = line.strip().partition(' ')[0]
            if suffix and suffix not in suffixes:
                suffixes.append(suffix)
        return suffixes

    def requested_resources(self):
        """{class: amount} of the unsuffixed resources, {} when they do not
        parse (the candidate search then says why)."""
        try:
            return parse_resources(self.cleaned_data.get('resources') or '')
        except errors.PlacementError:
            return {}

    def query(self):
        """The GET /allocation_candidates query string for the form."""
        data = self.cleaned_data
        query = QueryDict(mutable=True)
        for name in ('resources', 'required', 'member_of', 'in_tree', 'root_required',
                     'group_policy', 'same_subtree'):
            if data.get(name):
                query[name] = data[name].strip()
        if data.get('limit'):
            query['limit'] = str(data['limit'])
        for line in (data.get('groups') or '').splitlines():
            suffix, _, params = line.strip().partition(' ')
            for key, value in QueryDict(params.strip()).lists():
                for item in value:
                    query.appendlist(f'{key}{suffix}', item)
        return query


class CapacityForm(forms.Form):
    """GET /capacity's question (providers.api.capacity.requested reads it,
    with Placement's 400s as the form's errors): the grouping, a shape (a
    configured flavor, or typed, which wins) and the classes shown."""
    group_by = forms.ChoiceField(required=False, label='By',
                                 choices=[(g, g.replace('_', ' ')) for g in capacity.GROUPINGS])
    flavor = forms.ChoiceField(required=False, label='How many more of')
    resources = forms.CharField(required=False, label='or the shape',
                                help_text='e.g. VCPU:4,MEMORY_MB:8192,DISK_GB:80')
    resource_class = forms.CharField(required=False, label='Classes',
                                     help_text='comma-separated; empty: every class')

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields['flavor'].choices = [('', '—')] + [
            (f.name, f'{f.name} ({f.query})') for f in flavors.configured_flavors()]

    def clean(self):
        data = super().clean()
        shape = (data.get('resources') or '').strip() or {
            f.name: f.query for f in flavors.configured_flavors()}.get(data.get('flavor'))
        try:
            data['asked'] = capacity_api.requested({
                'group_by': data.get('group_by') or capacity.CLOUD, 'resources': shape,
                'resource_class': (data.get('resource_class') or '').strip() or None})
        except errors.PlacementError as exc:
            raise forms.ValidationError(exc.detail) from exc
        return data


class LiveListForm(forms.Form):
    """The servers the cloud runs, for the audit's "not in the live list"."""
    servers = forms.CharField(
        widget=forms.Textarea(attrs={'rows': 6, 'spellcheck': 'false'}), label='Live servers',
        help_text='one uuid per line, from openstack server list --all-projects -f value -c ID')

    def clean_servers(self):
        try:
            return audit.read_live_list(self.cleaned_data['servers'].splitlines())
        except audit.BadLiveList as error:
            raise forms.ValidationError(str(error)) from error
