"""GET /allocation_candidates and GET /explain/allocation_candidates: the
views and their answers. Parsing and the search itself live in
providers.candidates."""
from django.utils import timezone

from placement_site import exceptions, microversion, replicas
from placement_site.api import (
    PlacementViewSet,
    accept_json,
    check_query_encoding,
    compact_json,
    versions,
)
from placement_site.errors import Worded, worded
from providers.candidates import explain, parse, select_candidates
from providers.candidates.selector import no_cycle_collection


def parsed_query(request, version):
    """The request's CandidateQuery (400 for bad input)."""
    check_query_encoding(request)
    return parse(request.GET, version)


def unknown_names_refused():
    """Unknown resource classes and traits in the query are Placement's 400s."""
    return worded({**exceptions.unknown_class_in('resources parameter'),
                   exceptions.TraitNotFound: Worded('{error}', status=400)})


# ---- the answer ------------------------------------------------------------------
# Written as JSON text, candidate by candidate, so that a large answer is
# sent as it is made (PlacementViewSet.respond_chunks) instead of built whole
# in memory. Byte for byte what orjson makes of the answer as one object:
# uuids, class names, suffixes and trait names are ASCII.

CHUNK_CANDIDATES = 2000


class _Uuids(dict):
    """Provider id -> uuid, taken from the summaries as first asked."""

    def __init__(self, summaries_by_id):
        super().__init__()
        self.summaries_by_id = summaries_by_id

    def __missing__(self, provider_id):
        uuid = self[provider_id] = self.summaries_by_id[provider_id].uuid
        return uuid


class _Writer:
    """The JSON of each candidate at a microversion. A combined candidate's
    is joined from fragments written once per group request it combines
    (each is in many candidates)."""

    def __init__(self, result, version):
        self.uuid_of = _Uuids(result.summaries_by_id)
        self.as_dict, self.with_mappings = version.matches((1, 12)), version.matches((1, 34))
        self.root_of = result.wide.root_of
        self.roots = set()       # the trees the candidates written use (streamed results)
        self._parts = {}         # id(group request) -> (allocations, mappings, provider ids)

    def candidate(self, request):
        parts = request.parts
        if parts is not None:
            written = [self._part(part) for part in parts]
            providers, total = set(), 0
            for _, _, ids in written:
                providers |= ids
                total += len(ids)
            if len(providers) == total:  # no provider in two groups: nothing to sum
                # (A group that asks for no resources maps a provider but
                # allocates nothing.)
                allocations = ','.join(w[0] for w in written if w[0])
                if not self.as_dict:
                    return '{"allocations":[%s]}' % allocations
                if not self.with_mappings:
                    return '{"allocations":{%s}}' % allocations
                return '{"allocations":{%s},"mappings":{%s}}' % (
                    allocations, ','.join(w[1] for w in written if w[1]))
        return compact_json(self._entry(request))

    def _entry(self, request):
        """The candidate as Placement's JSON object."""
        uuid_of = self.uuid_of
        by_provider = {}
        for provider_id, class_name, amount in request.resources:
            u = uuid_of[provider_id]
            if u in by_provider:
                by_provider[u][class_name] = amount
            else:
                by_provider[u] = {class_name: amount}
        if not self.as_dict:
            return {'allocations': [{'resource_provider': {'uuid': u}, 'resources': r}
                                    for u, r in by_provider.items()]}
        entry = {'allocations': {u: {'resources': r} for u, r in by_provider.items()}}
        if self.with_mappings:
            entry['mappings'] = {suffix: [uuid_of[p] for p in providers]
                                 for suffix, providers in request.mappings.items()}
        return entry

    def _part(self, part):
        # Keyed by identity: the combined requests' parts live as long as
        # the search that is being written.
        written = self._parts.get(id(part))
        if written is None:
            entry = self._entry(part)
            # The members' text without the brackets around them.
            allocations = compact_json(entry['allocations'])[1:-1]
            mappings = compact_json(entry['mappings'])[1:-1] if self.with_mappings else ''
            ids = frozenset(p for p, _, _ in part.resources)
            self.roots.update(self.root_of(part, p) for p in ids)
            written = self._parts[id(part)] = (allocations, mappings, ids)
        return written


def answer_chunks(result, groups, version):
    """The answer's JSON, in bytes chunks of a few thousand candidates."""
    with no_cycle_collection():
        yield from _chunks(result, groups, version)


def _chunks(result, groups, version):
    writer = _Writer(result, version)
    yield from _listed('{"allocation_requests":[',
                       map(writer.candidate, result.allocation_requests), ']')
    summaries = result.summaries
    if result.streamed:
        with replicas.advisory_reads():
            summaries = result.of_trees(writer.roots)
    yield from _listed(',"provider_summaries":{', summaries_fragments(
        summaries, result.summaries_by_id, groups, version), '}}')


def _listed(opening, fragments, closing):
    """opening, the fragments separated by commas, closing: in bytes
    chunks of CHUNK_CANDIDATES fragments."""
    chunk, separator = [opening], ''
    for fragment in fragments:
        chunk.append(separator)
        chunk.append(fragment)
        separator = ','
        if len(chunk) >= 2 * CHUNK_CANDIDATES:
            yield ''.join(chunk).encode()
            chunk = []
    chunk.append(closing)
    yield ''.join(chunk).encode()


def summaries_fragments(summaries, by_id, groups, version):
    """Each provider summary's `"uuid":{...}`."""
    requested = {name for g in groups.values() for name in g.resources}
    all_classes = version.matches((1, 27))
    with_traits = version.matches((1, 17))
    with_tree = version.matches((1, 29))
    for summary in summaries:
        entry = {'resources': {
            name: {'capacity': capacity, 'used': used}
            for name, (capacity, used, _max_unit) in summary.resources.items()
            if all_classes or name in requested}}
        if with_traits:
            entry['traits'] = summary.traits
        if with_tree:
            entry['parent_provider_uuid'] = (
                by_id[summary.parent_id].uuid if summary.parent_id else None)
            entry['root_provider_uuid'] = by_id[summary.root_id].uuid
        yield '%s:%s' % (compact_json(summary.uuid), compact_json(entry))


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
        result = select_candidates(candidate_query, lazy=True)
        return self.respond_chunks(
            answer_chunks(result, candidate_query.groups, self.version),
            last_modified=timezone.now())


class ExplainViewSet(PlacementViewSet):
    """/explain/allocation_candidates: the same query string as
    GET /allocation_candidates, answered with how many providers survive each
    constraint and, when nothing fits, what eliminated them. Without an
    OpenStack-API-Version header the latest microversion's rules apply."""

    @property
    def version(self):
        """The request's microversion; without an OpenStack-API-Version header
        the latest, not 1.0 as everywhere else (@versions reads this one)."""
        if microversion.HEADER not in {k.lower() for k in self.request.headers}:
            return microversion.parse(microversion.MAX_VERSION)
        return self.request.version

    @replicas.advisory
    @accept_json
    @versions('1.10')
    def list(self, request):
        version = self.version
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
                            'eliminated': step.eliminated,
                            **({'causes': [{'limit': limit, 'count': count, 'text': text}
                                           for limit, count, text in explain.cause_rows(
                                               step.causes)]} if step.causes else {})}
                           for step in funnel.steps],
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
                'change': miss.change,
            } for miss in explanation.near_misses],
        }
        return self.respond(body, cache_headers=False)
