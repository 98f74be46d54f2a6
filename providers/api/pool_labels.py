"""/pool_labels/{uuid} (not part of OpenStack Placement): the name an admin
gives a pool (an aggregate), which every page, export and answer then
names it by (AggregateQuerySet.with_names). The same at every microversion."""
from placement_site import errors
from placement_site.api import PlacementViewSet, accept_json, json_body, require_json
from placement_site.queries import storable
from providers import services
from providers.models import Aggregate

POLICY = 'placement:pool_labels:%s'

# PUT /pool_labels/{uuid}: a name as a pod's or a provider's is (1 to 200
# characters), not only blanks, no NUL.
POOL_LABEL_PUT = {
    'type': 'object',
    'properties': {'label': {'type': 'string', 'minLength': 1, 'maxLength': 200,
                             'pattern': '^[^\\x00]*[^\\s\\x00][^\\x00]*$'}},
    'required': ['label'],
    'additionalProperties': False,
}


def find_pool(uuid):
    """The aggregate named by its uuid as the client wrote it, with its names."""
    pool = Aggregate.objects.with_names().filter(uuid=uuid).first() if storable(uuid) else None
    if pool is None:
        raise errors.not_found(f'No pool (aggregate) with uuid {uuid} found')
    return pool


def label_body(pool):
    return {'aggregate': pool.uuid, 'label': pool.label, 'name': pool.name,
            'links': [{'rel': 'self', 'href': f'/pool_labels/{pool.uuid}'}]}


class PoolLabelViewSet(PlacementViewSet):
    """/pool_labels/{uuid}: a pool's label, and the name it gives."""

    @accept_json
    def retrieve(self, request, uuid):
        self.authorize(POLICY % 'show')
        return self.respond(label_body(find_pool(uuid)), cache_headers=False)

    @require_json
    def update(self, request, uuid):
        self.authorize(POLICY % 'update')
        pool = find_pool(uuid)
        data = json_body(request, POOL_LABEL_PUT)
        services.pool_label_set(aggregate=pool, name=data['label'])
        return self.respond(label_body(find_pool(uuid)), cache_headers=False)

    def destroy(self, request, uuid):
        self.authorize(POLICY % 'delete')
        services.pool_label_delete(aggregate=find_pool(uuid))
        return self.no_content()
