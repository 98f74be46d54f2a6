"""OpenAPI descriptions of the allocation operations: allocations of
consumers and on providers, usages of providers and projects, allocation
candidates and the reshaper.

Request bodies are the JSON Schemas the views validate at each microversion
(allocations.schemas); answers are described here.
"""
from drf_spectacular.utils import extend_schema_view

from allocations import schemas
from allocations.api import candidates, views
from placement_site import microversion
from placement_site.microversion import ByVersion
from placement_site.openapi import (
    GENERATION,
    MEMBER_OF_GRAMMAR,
    PROVIDER_UUID,
    REQUIRED_GRAMMAR,
    RESOURCES,
    RESOURCES_GRAMMAR,
    ROOT_REQUIRED_GRAMMAR,
    UUID,
    UUID_KEY,
    Component,
    closed,
    link,
    member_of_parameter,
    operation,
    path,
    query,
    request_body,
    required_parameter,
    resources_map,
)
from placement_site.validation import (
    CONSUMER_TYPE_QUERY_PATTERN,
    GROUP_SUFFIX,
    GROUP_SUFFIX_1_33,
    MAX_INT,
    NAME_PATTERN,
)
from providers.api.views import NO_PROVIDER
from providers.candidates.explain import STAGE_LABELS
from providers.candidates.query import QUERY_BY_VERSION

# ---- answers ----------------------------------------------------------------------

CONSUMER_GENERATION = {
    'type': 'integer',
    'description': "From 1.28: the consumer's generation, incremented by every change to its "
                   'allocations. Writers send the value they read (null for a new consumer).',
}

CONSUMER_ALLOCATIONS = Component('ConsumerAllocations', closed({
    'type': 'object',
    'properties': {
        'allocations': {
            'type': 'object',
            'description': 'Keyed by resource provider uuid.',
            'patternProperties': {UUID_KEY: {
                'type': 'object',
                'properties': {
                    'resources': resources_map('The amounts allocated.'),
                    'generation': GENERATION,
                },
                'required': ['resources', 'generation'],
            }},
            'additionalProperties': False,
        },
        'project_id': microversion.since((1, 12), {'type': 'string', 'description': 'From 1.12.'}),
        'user_id': microversion.since((1, 12), {'type': 'string', 'description': 'From 1.12.'}),
        'consumer_generation': microversion.since((1, 28), CONSUMER_GENERATION),
        'consumer_type': microversion.since((1, 38), {
            'type': 'string', 'description': 'From 1.38, e.g. INSTANCE.'}),
    },
    'required': ['allocations'],
}), description='The allocations of one consumer. The other fields are left out while the '
               'consumer has no allocations.')

PROVIDER_ALLOCATIONS = Component('ResourceProviderAllocations', closed({
    'type': 'object',
    'properties': {
        'allocations': {
            'type': 'object',
            'description': 'Keyed by consumer uuid.',
            'additionalProperties': {
                'type': 'object',
                'properties': {
                    'resources': resources_map('The amounts allocated.'),
                    'consumer_generation': microversion.since((1, 28), CONSUMER_GENERATION),
                },
                'required': ['resources', 'consumer_generation'],
            },
        },
        'resource_provider_generation': GENERATION,
    },
    'required': ['allocations', 'resource_provider_generation'],
}))

PROVIDER_USAGES = Component('ResourceProviderUsages', closed({
    'type': 'object',
    'properties': {
        'resource_provider_generation': GENERATION,
        'usages': resources_map('The amount allocated of every class the provider has '
                                'inventory of.'),
    },
    'required': ['resource_provider_generation', 'usages'],
}))

USAGES = Component('Usages', closed({
    'type': 'object',
    'properties': {
        'usages': ByVersion([
            ((1, 38), {
                'type': 'object',
                'description': '{consumer type: {resource class: amount, consumer_count: '
                               'consumers}}, where the consumer type is a name, `unknown` '
                               '(consumers written before 1.38) or `all` (when asked for).',
                'additionalProperties': {
                    'type': 'object',
                    'properties': {'consumer_count': {'type': 'integer', 'minimum': 0}},
                    'patternProperties': {NAME_PATTERN: {'type': 'integer', 'minimum': 0}},
                    'additionalProperties': False,
                    'required': ['consumer_count'],
                },
            })], resources_map('The amount used of each resource class.')),
    },
    'required': ['usages'],
}))

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
                    'stage': {'type': 'string', 'enum': list(STAGE_LABELS.values())},
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

# ---- request bodies (the views' schemas at the microversion described) ------------

ALLOCATIONS_UPDATE = request_body(
    'ConsumerAllocationsUpdate', schemas.ALLOCATIONS_PUT_BY_VERSION,
    'From 1.12 `allocations` is keyed by resource provider uuid.')
ALLOCATIONS_MANAGE = request_body(
    'AllocationsManage', schemas.ALLOCATIONS_POST_BY_VERSION, 'Keyed by consumer uuid.')
RESHAPE = request_body(
    'Reshape', schemas.RESHAPER_POST_BY_VERSION,
    '`inventories` is keyed by resource provider uuid, `allocations` by consumer uuid.')

# ---- parameters --------------------------------------------------------------------

CONSUMER_UUID = path('consumer_uuid', 'The uuid of the consumer.', UUID)

_OWNER_ID = {'type': 'string', 'minLength': 1, 'maxLength': 255}
USAGE_QUERY = [
    query('project_id', 'The project whose usage to sum.', _OWNER_ID),
    query('user_id', "Only this user's consumers.", _OWNER_ID),
    query('consumer_type', 'Only this consumer type; `all` sums every type under `all`, '
          '`unknown` only consumers without a type.',
          {'type': 'string', 'pattern': CONSUMER_TYPE_QUERY_PATTERN, 'maxLength': 255}),
]

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

# ---- operations --------------------------------------------------------------------

ALLOCATIONS = 'Allocations'
WRITE_400 = 'A malformed consumer uuid, or an unknown resource provider or resource class.'
WRITE_409 = ('A stale consumer generation or a provider changed meanwhile '
             '(placement.concurrent_update); or a provider has no inventory of a class, or the '
             'amounts exceed its capacity or break its min_unit, max_unit or step_size.')
BODY_CHANGES = {
    '1.8': '`project_id` and `user_id` required.',
    '1.12': '`allocations` keyed by provider uuid instead of a list of '
            '{"resource_provider": {"uuid"}, "resources"}.',
    '1.28': '`consumer_generation` required (null for a new consumer); empty `allocations` '
            'remove the consumer\'s allocations.',
    '1.34': '`mappings` accepted.',
    '1.38': '`consumer_type` required.',
}

extend_schema_view(
    retrieve=operation(
        'showConsumerAllocations', tag=ALLOCATIONS, summary="List a consumer's allocations",
        description='The allocations a consumer holds, by provider. A consumer without '
                    'allocations gets empty `allocations`, not a 404 (and no ETag).',
        parameters=[CONSUMER_UUID],
        responses={200: (CONSUMER_ALLOCATIONS, 'The allocations.')},
        changes={'1.12': 'project_id and user_id.', '1.28': 'consumer_generation.',
                 '1.38': 'consumer_type.'},
        conditional='read',
    ),
    update=operation(
        'updateConsumerAllocations', tag=ALLOCATIONS, summary="Replace a consumer's allocations",
        description='Set every allocation of the consumer, atomically, after checking each '
                    "provider's capacity.",
        parameters=[CONSUMER_UUID], request=ALLOCATIONS_UPDATE,
        responses={204: (None, 'The allocations are set.')}, accept_json=False,
        links={204: {name: link(name, text, consumer_uuid='$request.path.consumer_uuid')
                     for name, text in (
                         ('showConsumerAllocations', "The consumer's allocations."),
                         ('updateConsumerAllocations', 'Change them.'),
                         ('deleteConsumerAllocations', 'Delete them.'))}},
        errors={400: WRITE_400, 409: WRITE_409},
        changes=BODY_CHANGES,
        conditional='write',
    ),
    create=operation(
        'manageAllocations', tag=ALLOCATIONS, summary='Replace the allocations of many consumers',
        description='Set the allocations of several consumers in one transaction, keyed by '
                    "consumer uuid; empty `allocations` remove a consumer's allocations.",
        request=ALLOCATIONS_MANAGE,
        responses={204: (None, 'The allocations are set.')}, accept_json=False,
        errors={400: WRITE_400, 409: WRITE_409},
        changes={key: BODY_CHANGES[key] for key in ('1.28', '1.34', '1.38')},
    ),
    destroy=operation(
        'deleteConsumerAllocations', tag=ALLOCATIONS, summary="Delete a consumer's allocations",
        description='Remove every allocation of the consumer.',
        parameters=[CONSUMER_UUID],
        responses={204: (None, 'Deleted.')}, accept_json=False,
        errors={404: 'The consumer has no allocations.'},
        conditional='write', etag=(),
    ),
)(views.AllocationViewSet)

extend_schema_view(
    retrieve=operation(
        'listProviderAllocations', tag=ALLOCATIONS, summary="List a provider's allocations",
        description='The allocations held against the provider, by consumer.',
        parameters=[PROVIDER_UUID],
        responses={200: (PROVIDER_ALLOCATIONS, 'The allocations.')},
        errors={404: NO_PROVIDER},
        changes={'1.28': 'consumer_generation.'},
    ),
)(views.ProviderAllocationsViewSet)

extend_schema_view(
    retrieve=operation(
        'listProviderUsages', tag='Usages', summary="Show a provider's usages",
        description='How much of each class of the provider\'s inventory is allocated.',
        parameters=[PROVIDER_UUID],
        responses={200: (PROVIDER_USAGES, 'The usages.')},
        errors={404: NO_PROVIDER},
    ),
)(views.ProviderUsagesViewSet)


extend_schema_view(
    list=operation(
        'listUsages', tag='Usages', summary="Show a project's usages",
        description="The resources a project's (and optionally a user's) consumers hold, "
                    'summed per resource class. Any other query parameter is a 400.',
        parameters=USAGE_QUERY, query_schema=views.USAGES_QUERY,
        responses={200: (USAGES, 'The usages.')},
        errors={400: 'Missing `project_id` or invalid query parameters.'},
        changes={'1.38': '`consumer_type`; usages grouped by consumer type, each with '
                         'consumer_count.'},
    ),
)(views.UsageViewSet)

extend_schema_view(
    create=operation(
        'reshape', tag='Reshaper', summary='Reshape provider trees',
        description='Replace the inventories of the named providers and the allocations of '
                    'the named consumers in one transaction, e.g. to move inventory and its '
                    'allocations from a compute node to new child providers. Every provider '
                    'and consumer not named keeps what it has.',
        request=RESHAPE,
        responses={204: (None, 'Reshaped.')}, accept_json=False,
        errors={400: 'An unknown provider (placement.resource_provider.not_found) or '
                     'resource class, or malformed data.',
                409: 'A stale provider or consumer generation, or allocations that do not '
                     'fit the new inventories.'},
        changes={'1.34': '`mappings` accepted in allocations.',
                 '1.38': '`consumer_type` required in allocations.'},
    ),
)(views.ReshaperViewSet)

extend_schema_view(
    list=operation(
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
    ),
)(candidates.AllocationCandidatesViewSet)

extend_schema_view(
    list=operation(
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
    ),
)(candidates.ExplainViewSet)
