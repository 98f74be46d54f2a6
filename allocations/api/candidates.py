"""GET /allocation_candidates: the view and its answer. Parsing and the
search itself live in providers.candidates; GET /explain/allocation_candidates
(allocations.api.explain) takes the same query string."""
from django.utils import timezone

from placement_site import exceptions
from placement_site import microversion
from placement_site import replicas
from placement_site.api import PlacementViewSet
from placement_site.api import accept_json
from placement_site.api import check_query_encoding
from placement_site.api import compact_json
from placement_site.api import versions
from placement_site.errors import Worded
from placement_site.errors import worded
from placement_site.microversion import ByVersion
from placement_site.openapi import MEMBER_OF_GRAMMAR
from placement_site.openapi import REQUIRED_GRAMMAR
from placement_site.openapi import RESOURCES
from placement_site.openapi import RESOURCES_GRAMMAR
from placement_site.openapi import ROOT_REQUIRED_GRAMMAR
from placement_site.openapi import UUID
from placement_site.openapi import UUID_KEY
from placement_site.openapi import Component
from placement_site.openapi import closed
from placement_site.openapi import member_of_parameter
from placement_site.openapi import operation
from placement_site.openapi import query
from placement_site.openapi import required_parameter
from placement_site.openapi import resources_map
from placement_site.validation import GROUP_SUFFIX
from placement_site.validation import GROUP_SUFFIX_1_33
from placement_site.validation import MAX_INT
from providers.candidates import parse
from providers.candidates import select_candidates
from providers.candidates.query import QUERY_BY_VERSION
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
    if result.streamed:   # read with the search: those of the trees written
        summaries = result.summaries_of(writer.roots)
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


# ---- the answer and parameters the operation describes -------------------------------

_AMOUNTS = {'resources': resources_map('The amounts to allocate.')}
ALLOCATION_REQUEST = Component('AllocationRequest', closed({
    'type': 'object',
    'properties': {
        'allocations': ByVersion([
            ((1, 12), {
                'type': 'object',
                'description': 'Keyed by resource provider uuid: the body of a PUT '
                               '/allocations/{consumer_uuid} needs this as it is.',
                'patternProperties': {UUID_KEY: {
                    'type': 'object', 'properties': _AMOUNTS, 'required': ['resources']}},
                'additionalProperties': False,
            })], {
                'type': 'array',
                'description': 'Before 1.12: the body of a PUT /allocations/{consumer_uuid} '
                               'needs this list as it is.',
                'items': {
                    'type': 'object',
                    'properties': {
                        'resource_provider': {
                            'type': 'object', 'properties': {'uuid': UUID},
                            'required': ['uuid']},
                        **_AMOUNTS,
                    },
                    'required': ['resource_provider', 'resources'],
                },
            }),
        'mappings': microversion.since((1, 34), {
            'type': 'object',
            'description': 'From 1.34: the providers that satisfied each request group, keyed '
                           'by group suffix ("" for the unsuffixed group).',
            'additionalProperties': {'type': 'array', 'items': UUID},
        }),
    },
    'required': ['allocations', 'mappings'],
}))

PROVIDER_SUMMARY = Component('ProviderSummary', closed({
    'type': 'object',
    'properties': {
        'resources': resources_map(
            'The requested classes; from 1.27 every class of the provider\'s inventory.', {
                'type': 'object',
                'properties': {'capacity': {'type': 'integer'}, 'used': {'type': 'integer'}},
                'required': ['capacity', 'used'],
            }),
        'traits': microversion.since((1, 17), {
            'type': 'array', 'items': {'type': 'string'}, 'description': 'From 1.17.'}),
        'parent_provider_uuid': microversion.since((1, 29), {
            **UUID, 'type': ['string', 'null'], 'description': 'From 1.29.'}),
        'root_provider_uuid': microversion.since((1, 29), {**UUID, 'description': 'From 1.29.'}),
    },
    'required': ['resources', 'traits', 'parent_provider_uuid', 'root_provider_uuid'],
}))

ALLOCATION_CANDIDATES = Component('AllocationCandidates', closed({
    'type': 'object',
    'properties': {
        'allocation_requests': {'type': 'array', 'items': ALLOCATION_REQUEST},
        'provider_summaries': {
            'type': 'object',
            'description': 'Every provider in an allocation request (from 1.29 with the rest '
                           'of their trees), keyed by uuid.',
            'patternProperties': {UUID_KEY: PROVIDER_SUMMARY},
            'additionalProperties': False,
        },
    },
    'required': ['allocation_requests', 'provider_summaries'],
}))


SUFFIX = (f'From 1.33 a suffix is 1-64 characters matching `{GROUP_SUFFIX_1_33}`; from 1.25 '
          'to 1.32 a positive integer.')


def _groups(suffix, kinds):
    grammars = {'resources': RESOURCES_GRAMMAR, 'required': REQUIRED_GRAMMAR,
                'member_of': MEMBER_OF_GRAMMAR, 'in_tree': UUID}
    return {'type': 'object',
            'patternProperties': {f'^{kind}{suffix}$': grammars[kind] for kind in kinds},
            'additionalProperties': False,
            'example': {'resources1': 'SRIOV_NET_VF:1', 'required1': 'HW_NIC_SRIOV'}}


CANDIDATE_QUERY = [
    query('resources', f'The unsuffixed request group: {RESOURCES} One provider or several in '
          'a tree or aggregate may satisfy it together. Before 1.25 required; from 1.25 '
          'there must be this or a suffixed group.',
          {**RESOURCES_GRAMMAR, 'example': 'VCPU:4,MEMORY_MB:2048,DISK_GB:64'}),
    required_parameter(),
    member_of_parameter(),
    query('in_tree', 'Only providers in the tree of this provider.', UUID),
    query('groups', 'Suffixed request groups, each satisfied by a single provider: '
          '`resources{S}`, `required{S}`, `member_of{S}` and (from 1.31) `in_tree{S}`, '
          'with the same syntax as the unsuffixed parameters. '
          f'{SUFFIX} From 1.36 a group without resources is allowed when `same_subtree` '
          'names it.',
          ByVersion([
              ((1, 33), _groups(GROUP_SUFFIX_1_33,
                                ('resources', 'required', 'member_of', 'in_tree'))),
              ((1, 31), _groups(GROUP_SUFFIX, ('resources', 'required', 'member_of', 'in_tree'))),
          ], _groups(GROUP_SUFFIX, ('resources', 'required', 'member_of'))),
          stands_for='resources1', style='form', explode=True),
    query('limit', 'At most this many allocation requests.',
          {'type': 'integer', 'minimum': 1, 'maximum': MAX_INT}),
    query('group_policy', '`isolate`: suffixed groups use different providers; `none`: they '
          'may share. Required with more than one suffixed group with resources.',
          {'type': 'string', 'enum': ['none', 'isolate']}),
    query('root_required', 'Traits the root provider of every candidate must have (or, with '
          '`!`, lack), comma-separated. At most once.', ROOT_REQUIRED_GRAMMAR),
    query('same_subtree', 'Comma-separated group suffixes whose providers must be in one '
          'subtree; may repeat.',
          {'type': 'string', 'pattern': f'^{GROUP_SUFFIX_1_33}(?:,{GROUP_SUFFIX_1_33})*$'},
          repeatable=True),
]


class AllocationCandidatesViewSet(PlacementViewSet):
    """/allocation_candidates"""

    @operation(
        'listAllocationCandidates', tag='Allocation candidates',
        summary='List allocation candidates',
        description='Ways to satisfy the requested resources and traits from the providers: '
                    'allocation requests, each a ready-made body for PUT '
                    '/allocations/{consumer_uuid}, and a summary of every provider involved. '
                    'Any other query parameter is a 400.',
        parameters=CANDIDATE_QUERY, query_schema=QUERY_BY_VERSION,
        responses={200: (ALLOCATION_CANDIDATES, 'The candidates.')},
        errors={400: 'Invalid query parameters, unknown resource classes or traits, '
                     'conflicting required and forbidden traits, or groups that need '
                     '`group_policy` or `same_subtree`.'},
        changes={
            '1.12': 'allocations in allocation requests keyed by provider uuid.',
            '1.16': '`limit`.',
            '1.17': '`required`; traits in provider summaries.',
            '1.21': '`member_of`.',
            '1.22': 'forbidden traits (`!TRAIT`).',
            '1.24': '`member_of` may repeat.',
            '1.25': 'suffixed request groups and `group_policy`.',
            '1.27': 'provider summaries show every resource class of the provider.',
            '1.29': 'nested providers; parent and root uuids in provider summaries.',
            '1.31': '`in_tree` and `in_tree{S}`.',
            '1.32': 'forbidden aggregates (`!AGG`, `!in:`).',
            '1.33': 'named group suffixes.',
            '1.34': '`mappings` in allocation requests.',
            '1.35': '`root_required`.',
            '1.36': '`same_subtree`; groups without resources.',
            '1.39': '`required` may repeat and take `in:` (any of).',
        },
    )
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
