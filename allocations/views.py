"""Dashboards: usage by project, user and consumer type; the candidate
explorer (allocation candidates, and why nothing fits)."""
from types import SimpleNamespace

from django import forms
from django.http import QueryDict
from django.shortcuts import render

from allocations import explain, querysets
from allocations.api import candidates as candidate_api
from allocations.models import ConsumerType
from placement_site import errors, microversion
from providers.models import ResourceClass, ResourceProvider
from providers.views import staff_only

TOP_CONSUMERS = 20


class UsageFilter(forms.Form):
    project = forms.CharField(required=False)
    user = forms.CharField(required=False)
    consumer_type = forms.CharField(required=False)
    top_class = forms.CharField(required=False, initial='VCPU', label='Top consumers of')


@staff_only
def usage(request):
    form = UsageFilter(request.GET or None)
    filters = form.cleaned_data if form.is_valid() else {}
    allocations = querysets.owned_allocations(
        filters.get('project'), filters.get('user'), filters.get('consumer_type'))
    top_class = (filters.get('top_class') or 'VCPU').upper()
    by_project = querysets.usage_by(allocations, ['project'])
    return render(request, 'ui/usage.html', {
        'form': form,
        'classes': _classes_in(by_project),
        'by_project': by_project,
        'by_type': querysets.usage_by(allocations, ['project', 'consumer_type']),
        'by_user': querysets.usage_by(allocations, ['project', 'user']),
        'top_class': top_class,
        'top': querysets.top_consumers(allocations, top_class, TOP_CONSUMERS),
        'top_limit': TOP_CONSUMERS,
        'consumer_types': ConsumerType.objects.order_by('name'),
    })


def _classes_in(rows):
    names = {name for row in rows for name in row['usages']}
    return list(ResourceClass.objects.filter(name__in=names).order_by('id')
                .values_list('name', flat=True))


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
    limit = forms.IntegerField(required=False, min_value=1, initial=20)

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


@staff_only
def explorer(request):
    form = ExplorerForm(request.GET or None)
    context = {'form': form}
    if form.is_valid():
        query = form.query()
        context['query'] = query.urlencode(safe=':,!')
        try:
            context.update(_search(query))
        except errors.PlacementError as exc:
            context['error'] = exc.detail
    return render(request, 'ui/explorer.html', context)


def _search(query):
    """The candidates for the query, with names, and the explanation."""
    latest = microversion.parse(microversion.MAX_VERSION)
    request = SimpleNamespace(GET=query, META={'QUERY_STRING': query.urlencode()})
    search = candidate_api.parsed_search(request, latest)
    result = candidate_api.run_search(search)
    body = candidate_api.answer_body(result, search.groups, latest)
    uuids = set(body['provider_summaries'])
    names = dict(ResourceProvider.objects.filter(uuid__in=uuids).values_list('uuid', 'name'))
    funnels = explain.explain_search(search)
    return {
        'candidates': [
            {'allocations': [(names.get(u, u), u, entry['resources'])
                             for u, entry in request_body['allocations'].items()],
             'mappings': request_body.get('mappings', {})}
            for request_body in body['allocation_requests']],
        'summaries': sorted(((names.get(u, u), u, s) for u, s in body['provider_summaries'].items()),
                            key=lambda row: row[0]),
        'funnels': funnels,
        'explanation': explain.summary(funnels, result.allocation_requests),
    }
