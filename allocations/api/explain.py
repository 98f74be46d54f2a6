"""GET /explain/allocation_candidates (not part of OpenStack Placement): the
query string of GET /allocation_candidates, answered with how many providers
survive each constraint and, when nothing fits, what eliminated them
(providers.candidates.explain)."""
from allocations.api.candidates import CANDIDATE_QUERY
from allocations.api.candidates import parsed_query
from allocations.api.candidates import unknown_names_refused
from placement_site import microversion
from placement_site import replicas
from placement_site.api import PlacementViewSet
from placement_site.api import accept_json
from placement_site.api import versions
from placement_site.openapi import UUID
from placement_site.openapi import Component
from placement_site.openapi import closed
from placement_site.openapi import operation
from providers.candidates import explain
from providers.candidates.query import QUERY_BY_VERSION

# ---- the answer the operation describes ----------------------------------------------

EXPLANATION = Component('AllocationCandidatesExplanation', closed({
    'type': 'object',
    'properties': {
        'microversion': {'type': 'string', 'description': 'The microversion whose rules applied.'},
        'allocation_candidates': {
            'type': 'integer',
            'description': 'How many allocation requests GET /allocation_candidates answers.'},
        'groups': {
            'type': 'array',
            'description': 'A funnel per request group: how many providers (or, for an '
                           'unsuffixed group in a cloud with trees or sharing providers, trees) '
                           'are left after each of its constraints in turn.',
            'items': {
                'type': 'object',
                'properties': {
                    'suffix': {'type': 'string', 'description': '"" for the unsuffixed group.'},
                    'unit': {'type': 'string', 'enum': ['providers', 'trees']},
                    'total': {'type': 'integer'},
                    'funnel': {
                        'type': 'array',
                        'items': {
                            'type': 'object',
                            'properties': {
                                'constraint': {'type': 'string', 'example': '2 VCPU'},
                                'remaining': {'type': 'integer'},
                                'eliminated': {'type': 'integer'},
                                'causes': {
                                    'type': 'array',
                                    'description': (
                                        'A resource step only, when it eliminated some: why, '
                                        'by the limit that alone stops each: `max_unit`, '
                                        '`min_unit`, `step_size` (an inventory refuses the '
                                        'amount whatever is free), `split` (the tree has it '
                                        'free only across several providers, as a '
                                        'NUMA-modelled host), `capacity` (not free), '
                                        '`limits` (no provider is one change away), '
                                        '`unreached` (sharing providers of the class serve '
                                        'other trees) or `none` (no inventory of it). The '
                                        'counts add up to `eliminated`.'),
                                    'items': {
                                        'type': 'object',
                                        'properties': {
                                            'limit': {'type': 'string', 'enum': [
                                                'max_unit', 'min_unit', 'step_size', 'split',
                                                'capacity', 'limits', 'unreached', 'none']},
                                            'count': {'type': 'integer'},
                                            'text': {'type': 'string', 'example': (
                                                'take at most 32 VCPU at once (max_unit), '
                                                'not 64')},
                                        },
                                        'required': ['limit', 'count', 'text'],
                                    },
                                },
                            },
                            'required': ['constraint', 'remaining', 'eliminated'],
                        },
                    },
                },
                'required': ['suffix', 'unit', 'total', 'funnel'],
            },
        },
        'search_stages': {
            'type': 'array',
            'description': 'Each stage of the search in the order it ran, with how many '
                           'providers, trees or candidates it found or left.',
            'items': {
                'type': 'object',
                'properties': {
                    'group': {'type': 'string'},
                    'stage': {'type': 'string', 'enum': list(explain.STAGE_LABELS.values())},
                    'detail': {'type': 'string'},
                    'remaining': {'type': 'integer'},
                },
                'required': ['group', 'stage', 'detail', 'remaining'],
            },
        },
        'explanation': {
            'type': 'array', 'items': {'type': 'string'},
            'description': 'In words: when nothing fits, why (per group what eliminated its '
                           'providers, or that the groups fit only on their own); the closest '
                           'misses of each group that fits fewer than 3 trees or providers '
                           '("group _M, closest: cn01-numa0 lacks 1,024 MEMORY_MB; ..."); the '
                           'texts of the suggestions. Empty when the request fits and there '
                           'is nothing to add.'},
        'suggestions': {
            'type': 'array',
            'description': 'Requests that would fit more trees: the unsuffixed group\'s '
                           'required traits that trees have only on their root provider, '
                           'while child providers supply the resources (Placement looks for '
                           '`required` on the providers of the resources), moved to '
                           '`root_required`. From 1.35.',
            'items': {
                'type': 'object',
                'properties': {
                    'text': {'type': 'string', 'example': (
                        '3 trees have HW_CPU_X86_AVX2 only on their root provider while '
                        'their VCPU and MEMORY_MB come from child providers; ask '
                        'root_required=HW_CPU_X86_AVX2 instead (then 3 trees fit the '
                        'unsuffixed group, not 0)')},
                    'traits': {'type': 'array', 'items': {'type': 'string'},
                               'description': 'The traits moved.'},
                    'from': {'type': 'string', 'enum': ['required']},
                    'to': {'type': 'string', 'enum': ['root_required']},
                    'query': {'type': 'string',
                              'description': 'The query string with the traits moved.'},
                    'trees': {'type': 'integer',
                              'description': 'Trees the unsuffixed group would fit.'},
                    'trees_now': {'type': 'integer',
                                  'description': 'Trees the unsuffixed group fits now.'},
                },
                'required': ['text', 'traits', 'from', 'to', 'query', 'trees', 'trees_now'],
            },
        },
        'near_misses': {
            'type': 'array',
            'description': 'For each group that fits fewer than 3 trees (providers), or '
                           'fewer than the `limit` asked, the 3 closest of the others: those '
                           'meeting every constraint of the group but one resource class, '
                           'which one limit alone stops, by the smallest share of the amount '
                           'asked. What they lack honours allocation ratios, reserved and '
                           'used amounts, min_unit, max_unit, step_size and sharing '
                           'providers.',
            'items': {
                'type': 'object',
                'properties': {
                    'group': {'type': 'string', 'description': '"" for the unsuffixed group.'},
                    'tree': {'type': 'string', 'description': "The tree's root provider."},
                    'tree_uuid': UUID,
                    'provider': {'type': 'string',
                                 'description': 'The provider that came closest (a sharing '
                                                'provider for a class the tree shares).'},
                    'provider_uuid': UUID,
                    'resource_class': {'type': 'string'},
                    'requested': {'type': 'integer'},
                    'lacking': {'type': 'integer',
                                'description': "How far it is, in the limit's terms: what "
                                               'it lacks free (`capacity`; `split`: on the '
                                               'closest provider), the amount above max_unit '
                                               'or below min_unit, the distance to a '
                                               'multiple of step_size.'},
                    'limit': {'type': 'string',
                              'enum': ['capacity', 'split', 'max_unit', 'min_unit',
                                       'step_size', 'limits'],
                              'description': 'Free capacity; free capacity the tree has only '
                                             'across several providers; the largest or '
                                             'smallest amount one allocation may take; the '
                                             'multiple it must be of; several of them at '
                                             'once (`limits`, after every one-limit miss; '
                                             '`lacking` is then what it lacks free).'},
                    'text': {'type': 'string', 'example': 'r1-rack05-cn01 lacks 1,024 MEMORY_MB'},
                    'change': {'type': 'string',
                               'description': 'The least change that would let it fit.',
                               'example': 'free 1,024 MEMORY_MB on r1-rack05-cn01-numa0'},
                },
                'required': ['group', 'tree', 'tree_uuid', 'provider', 'provider_uuid',
                             'resource_class', 'requested', 'lacking', 'limit', 'text',
                             'change'],
            },
        },
    },
    'required': ['microversion', 'allocation_candidates', 'groups', 'search_stages',
                 'explanation', 'suggestions', 'near_misses'],
}))


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

    @operation(
        'explainAllocationCandidates', tag='Allocation candidates',
        summary='Explain allocation candidates',
        description='Not part of OpenStack Placement. Takes the query string of GET '
                    '/allocation_candidates and answers how many providers survive each '
                    'constraint of each request group and, when nothing fits, what eliminated '
                    'them, which trees came closest and by how much, and a rewritten request '
                    'when a required trait belongs in `root_required`. Without an '
                    'OpenStack-API-Version header the latest microversion\'s rules apply, '
                    'unlike everywhere else.',
        parameters=CANDIDATE_QUERY, query_schema=QUERY_BY_VERSION,
        responses={200: (EXPLANATION, 'The explanation.')}, cached=[],
        errors={400: 'Invalid query parameters, as for GET /allocation_candidates.'},
    )
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
