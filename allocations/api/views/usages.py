"""/resource_providers/{uuid}/usages and /usages: how much of a provider's
inventory is allocated, and what a project's consumers hold."""
from django.utils import timezone

from allocations import querysets
from allocations import schemas
from placement_site.api import PlacementViewSet
from placement_site.api import accept_json
from placement_site.api import query_params
from placement_site.api import versions
from placement_site.microversion import ByVersion
from placement_site.openapi import GENERATION
from placement_site.openapi import PROVIDER_UUID
from placement_site.openapi import Component
from placement_site.openapi import closed
from placement_site.openapi import operation
from placement_site.openapi import query
from placement_site.openapi import resources_map
from placement_site.validation import CONSUMER_TYPE_QUERY_PATTERN
from placement_site.validation import NAME_PATTERN
from providers.api.views import NO_PROVIDER
from providers.api.views import find_provider

# ---- the answers and parameters the operations describe ------------------------------

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

_OWNER_ID = {'type': 'string', 'minLength': 1, 'maxLength': 255}
USAGE_QUERY = [
    query('project_id', 'The project whose usage to sum.', _OWNER_ID),
    query('user_id', "Only this user's consumers.", _OWNER_ID),
    query('consumer_type', 'Only this consumer type; `all` sums every type under `all`, '
          '`unknown` only consumers without a type.',
          {'type': 'string', 'pattern': CONSUMER_TYPE_QUERY_PATTERN, 'maxLength': 255}),
]


class ProviderUsagesViewSet(PlacementViewSet):
    """/resource_providers/{uuid}/usages"""

    @operation(
        'listProviderUsages', tag='Usages', summary="Show a provider's usages",
        description='How much of each class of the provider\'s inventory is allocated.',
        parameters=[PROVIDER_UUID],
        responses={200: (PROVIDER_USAGES, 'The usages.')},
        errors={404: NO_PROVIDER},
    )
    @accept_json
    def retrieve(self, request, uuid):
        self.authorize('placement:resource_providers:usages')
        provider = find_provider(uuid, 'No resource provider with uuid {uuid} found: {error}',
                                 vary=True)
        body = {'resource_provider_generation': provider.generation,
                'usages': querysets.provider_usages(provider)}
        # Usage is "now": Placement does not date it.
        return self.respond(body, last_modified=timezone.now())


# GET /usages: consumer_type from 1.38.
USAGES_QUERY = ByVersion([((1, 38), schemas.USAGES_QUERY_1_38)], schemas.USAGES_QUERY_1_9,
                         since=(1, 9))


class UsageViewSet(PlacementViewSet):
    """/usages"""

    @operation(
        'listUsages', tag='Usages', summary="Show a project's usages",
        description="The resources a project's (and optionally a user's) consumers hold, "
                    'summed per resource class. Any other query parameter is a 400.',
        parameters=USAGE_QUERY, query_schema=USAGES_QUERY,
        responses={200: (USAGES, 'The usages.')},
        errors={400: 'Missing `project_id` or invalid query parameters.'},
        changes={'1.38': '`consumer_type`; usages grouped by consumer type, each with '
                         'consumer_count.'},
    )
    @versions('1.9')
    @accept_json
    def list(self, request):
        project_id = request.GET.get('project_id')
        user_id = request.GET.get('user_id')
        self.authorize('placement:usages', target={'project_id': project_id})
        query_params(request, USAGES_QUERY.at(self.version))
        if self.version.matches((1, 38)):
            usages = querysets.project_usages_by_consumer_type(
                project_id, user_id, request.GET.get('consumer_type'))
        else:
            usages = querysets.project_usages(project_id, user_id)
        # Usage is "now": Placement does not date it.
        return self.respond({'usages': usages}, last_modified=timezone.now())
