"""GET /allocation_candidates and GET /explain/allocation_candidates: the
views and their answers. Parsing and the search itself live in
providers.candidates."""
import contextlib

from django.utils import timezone

from placement_site import errors, exceptions, microversion, replicas
from placement_site.api import (
    PlacementViewSet,
    accept_json,
    check_query_encoding,
    fast_dumps,
    versions,
)
from providers.candidates import explain, parse, select_candidates
from providers.candidates.selector import no_cycle_collection


def parsed_query(request, version):
    """The request's CandidateQuery (400 for bad input)."""
    check_query_encoding(request)
    return parse(request.GET, version)


@contextlib.contextmanager
def unknown_names_refused():
    """Unknown resource classes and traits in the query are Placement's 400s."""
    try:
        yield
    except exceptions.ResourceClassNotFound as exc:
        raise errors.bad_request(f'Invalid resource class in resources parameter: {exc}')
    except exceptions.TraitNotFound as exc:
        raise errors.bad_request(str(exc))


# ---- the answer ------------------------------------------------------------------

def answer_body(result, groups, version):
    summaries = result.summaries_by_id
    uuid_of = {pk: summary.uuid for pk, summary in summaries.items()}
    as_dict, with_mappings = version.matches((1, 12)), version.matches((1, 34))
    requests = []
    for request in result.allocation_requests:
        by_provider = {}
        for provider_id, class_name, amount in request.resources:
            uuid = uuid_of[provider_id]
            if uuid in by_provider:
                by_provider[uuid][class_name] = amount
            else:
                by_provider[uuid] = {class_name: amount}
        if as_dict:
            entry = {'allocations': {u: {'resources': r} for u, r in by_provider.items()}}
            if with_mappings:
                entry['mappings'] = {suffix: [uuid_of[p] for p in providers]
                                     for suffix, providers in request.mappings.items()}
        else:
            entry = {'allocations': [{'resource_provider': {'uuid': u}, 'resources': r}
                                     for u, r in by_provider.items()]}
        requests.append(entry)
    requested = {name for g in groups.values() for name in g.resources}
    all_classes = version.matches((1, 27))
    with_traits = version.matches((1, 17))
    with_tree = version.matches((1, 29))
    provider_summaries = {}
    for summary in result.summaries:
        entry = {'resources': {
            name: {'capacity': capacity, 'used': used}
            for name, (capacity, used, _max_unit) in summary.resources.items()
            if all_classes or name in requested}}
        if with_traits:
            entry['traits'] = summary.traits
        if with_tree:
            entry['parent_provider_uuid'] = (
                uuid_of[summary.parent_id] if summary.parent_id else None)
            entry['root_provider_uuid'] = uuid_of[summary.root_id]
        provider_summaries[summary.uuid] = entry
    return {'allocation_requests': requests, 'provider_summaries': provider_summaries}


class AllocationCandidatesViewSet(PlacementViewSet):
    """/allocation_candidates"""

    @replicas.advisory
    @versions('1.10')
    @accept_json
    def list(self, request):
        self.authorize('placement:allocation_candidates:list')
        candidate_query = parsed_query(request, self.version)
        with no_cycle_collection(), unknown_names_refused():
            return self._answer(candidate_query)

    def _answer(self, candidate_query):
        # A call of its own: the search's objects are freed when it returns,
        # before the cycle collector is back on (it would walk every one).
        result = select_candidates(candidate_query)
        # The answer is uuids, class and trait names and numbers: ASCII.
        return self.respond(answer_body(result, candidate_query.groups, self.version),
                            last_modified=timezone.now(), dumps=fast_dumps)


class ExplainViewSet(PlacementViewSet):
    """/explain/allocation_candidates: the same query string as
    GET /allocation_candidates, answered with how many providers survive each
    constraint and, when nothing fits, what eliminated them. Without an
    OpenStack-API-Version header the latest microversion's rules apply."""

    @replicas.advisory
    @accept_json
    def list(self, request):
        version = self.version
        if microversion.HEADER not in {k.lower() for k in request.headers}:
            version = microversion.parse(microversion.MAX_VERSION)
        if not version.matches((1, 10)):
            raise errors.not_found()
        self.authorize('placement:allocation_candidates:list')
        candidate_query = parsed_query(request, version)
        with unknown_names_refused():
            explanation = explain.explain_candidates(
                candidate_query, suggest_root_required=version.matches((1, 35)))
        result = explanation.result
        body = {
            'microversion': str(version),
            'allocation_candidates': len(result.allocation_requests),
            'groups': [{
                'suffix': funnel.group,
                'unit': funnel.unit,
                'total': funnel.total,
                'funnel': [{'constraint': step.constraint, 'remaining': step.remaining,
                            'eliminated': step.eliminated} for step in funnel.steps],
            } for funnel in explanation.funnels],
            'search_stages': [{'group': record.group, 'stage': explain.STAGE_LABELS[record.stage],
                               'detail': record.detail, 'remaining': record.remaining}
                              for record in result.stages],
            'explanation': explanation.sentences,
            'suggestions': [{
                'text': suggestion.text,
                'traits': suggestion.traits,
                'from': 'required',
                'to': 'root_required',
                'query': suggestion.rewrite(request.GET).urlencode(safe=':,!'),
                'trees': suggestion.trees,
                'trees_now': suggestion.trees_now,
            } for suggestion in explanation.suggestions],
            'near_misses': [{
                'group': miss.group, 'tree': miss.tree, 'tree_uuid': miss.tree_uuid,
                'provider': miss.provider, 'provider_uuid': miss.provider_uuid,
                'resource_class': miss.resource_class, 'requested': miss.requested,
                'lacking': miss.lacking, 'limit': miss.limit, 'text': miss.text,
            } for miss in explanation.near_misses],
        }
        return self.respond(body, cache_headers=False)
