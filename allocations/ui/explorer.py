"""The candidate explorer's page: a candidate search (or its explanation)
as GET /allocation_candidates answers it, within the operator budget,
for an admin or a project's own viewer."""
import collections
import dataclasses
import pickle

from django.conf import settings
from django.shortcuts import render

from allocations.ui import reports
from allocations.ui.forms import ExplorerForm
from placement_site import budgets
from placement_site import errors
from placement_site import microversion
from placement_site import replicas
from placement_site.viewers import cloud_pages
from providers import candidates
from providers import ledger
from providers import remembered
from providers.candidates import combine
from providers.candidates import matching
from providers.models import ResourceClass
from providers.models import ResourceProvider

# The explorer's budget (docs/serving.md), with its form's bounds
# (allocations.ui.forms): the search stops after the operator budget's
# seconds, each query too, and a page larger than this is not sent.
EXPLORER_MAX_ANSWER_BYTES = 4 * 1024 * 1024
# Where the search spends its time in Python: matching and combining, pure
# functions of what was read, which budgets.search_time() may stop.
SEARCH_MODULES = (matching, combine)


@cloud_pages
@replicas.advisory
def explorer(request):
    form = ExplorerForm(request.GET or None)
    context = {'form': form}
    if form.is_valid():
        query = form.query()
        if form.cleaned_data['as_project']:
            # The project's pod (its binding's, or a preview of a binding
            # request's) narrows the search as a scheduler's member_of would.
            placed = context['placed'] = reports.project_pod(
                form.cleaned_data['as_project'], form.cleaned_data['affinity'],
                form.requested_resources())
            if placed.pod is None:
                context['error'] = placed.refusal
                return render(request, 'ui/explorer.html', context)
            query.appendlist('member_of', placed.pod.aggregate.uuid)
        context['query'] = query.urlencode(safe=':,!')
        try:
            with budgets.search_time(budgets.operator_seconds(), SEARCH_MODULES):
                context.update(_explored(query, request.GET, pod=context.get('placed')))
        except errors.PlacementError as exc:   # domain errors too: they are PlacementErrors
            context['error'] = exc.detail
        except budgets.OverBudget as exc:
            return _over_budget(request, context, exc)
    return _sized(request, context)


def _over_budget(request, context, exc):
    """The form again, saying the search ran out of time (503, as every
    operator request over its budget)."""
    budgets.note(request, exc)
    context['error'] = (
        f'{exc.what} took longer than the explorer\'s budget of '
        f'{exc.seconds or budgets.operator_seconds():g} s and was stopped. Narrow it: fewer '
        'request groups, group_policy=none rather than isolate, member_of, in_tree or '
        'required traits.')
    return budgets.unavailable(render(request, 'ui/explorer.html', context, status=503))


def _sized(request, context):
    """The page, or, when it would be larger than the explorer's budget,
    the form saying so."""
    page = render(request, 'ui/explorer.html', context)
    if len(page.content) <= EXPLORER_MAX_ANSWER_BYTES:
        return page
    kept = {name: context[name] for name in ('form', 'query', 'placed') if name in context}
    return render(request, 'ui/explorer.html', {**kept, 'error': (
        f'The answer would be {len(page.content) / 1024:,.0f} KiB, over the explorer\'s budget '
        f'of {EXPLORER_MAX_ANSWER_BYTES / 1024:,.0f} KiB: ask for fewer candidates or narrow '
        'the request.')})


def _explored(query, params, pod=None):
    """_explore's answer, remembered against the books' change log like the
    other dashboards' reads (everything the search reads writes the log),
    except for a project's pod (bindings are not in the log) or a random
    draw of candidates. A search for resources alone is held by the ledger
    while claims leave it as it is: no tree it shows changed, and no
    provider came to fit the amounts or stopped fitting them."""
    if pod is not None or settings.PLACEMENT_RANDOMIZE_ALLOCATION_CANDIDATES:
        return _explore(query, params)[0]
    using = ResourceProvider.objects.all().db
    key = ('explorer', query.urlencode(), params.urlencode())
    if set(query) <= {'resources', 'limit'} and ledger.serves(using):
        held = ledger.held_answer(using, key)
        if held is not None:
            return held
        answer, shown, wanted = _explore(query, params)
        ledger.keep_answer(using, key, answer, _spoils(shown, _class_ids(wanted)),
                           len(pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)))
        return answer
    return remembered.remembered(using, key, lambda: _explore(query, params)[0])


def _class_ids(wanted):
    """{class id: amount} of {class name: amount}."""
    ids = dict(ResourceClass.objects.filter(name__in=list(wanted)).values_list('name', 'id'))
    return {ids[name]: amount for name, amount in wanted.items() if name in ids}


def _spoils(shown, wanted):
    """Whether a tree's change spoils an explorer answer for the amounts
    `wanted` ({class id: amount}) that shows the providers `shown`: a tree
    added, gone, or its providers moved or renamed, a shown tree changed at
    all, or which of its inventories take their amount changed."""
    def spoiled(old, new):
        if old is None or new is None or old.placement() != new.placement():
            return True
        if any(provider.id in shown for provider in new.providers):
            return old is not new
        return old.fitting(wanted) != new.fitting(wanted)
    return spoiled


def _explore(query, params):
    """(answer, shown, wanted): the candidates for the query (at the latest
    microversion), with provider names, the funnels, the explanation, the
    near misses and the suggestions, each with a link re-running the
    explorer's `params` as the suggestion rewrites them; the ids of the
    providers it shows; the unsuffixed group's resources."""
    latest = microversion.parse(microversion.MAX_VERSION)
    parsed = candidates.parse(query, latest)
    explanation = candidates.explain_candidates(parsed, counted=False)
    result = explanation.result
    if result.allocation_requests and candidates.stops_at_the_limit(parsed, result):
        # The API's search then reads only the trees it takes, its own
        # choice among many: show the API's answer.
        result = candidates.select_candidates(parsed)
    summaries = result.summaries_by_id
    names = dict(ResourceProvider.objects.filter(
        pk__in=[s.id for s in result.summaries]).values_list('pk', 'name'))

    def provider(provider_id):
        return names.get(provider_id, summaries[provider_id].uuid), summaries[provider_id].uuid

    rows = []
    for request in result.allocation_requests:
        by_provider = collections.defaultdict(dict)
        for provider_id, class_name, amount in request.resources:
            by_provider[provider_id][class_name] = amount
        rows.append({
            'allocations': [(*provider(p), amounts) for p, amounts in by_provider.items()],
            'mappings': {suffix: [summaries[p].uuid for p in ids]
                         for suffix, ids in request.mappings.items()},
        })
    answer = {
        'candidates': rows,
        'summaries': sorted(((*provider(s.id), {
            'resources': {name: {'capacity': capacity, 'used': used}
                          for name, (capacity, used, _max_unit) in s.resources.items()},
            'traits': s.traits,
        }) for s in result.summaries), key=lambda row: row[0]),
        # Without the ids each funnel passed (up to one per provider).
        'funnels': [dataclasses.replace(funnel, passed=set()) for funnel in explanation.funnels],
        'explanation': explanation.why + explanation.closest,
        'near_misses': explanation.near_misses,
        'suggestions': [{
            'text': suggestion.text, 'root_required': suggestion.root_required,
            'link': '?' + suggestion.rewrite(params).urlencode(safe=':,!'),
        } for suggestion in explanation.suggestions],
    }
    unsuffixed = parsed.groups.get('')
    return (answer, {s.id for s in result.summaries},
            dict(unsuffixed.resources) if unsuffixed is not None else {})
