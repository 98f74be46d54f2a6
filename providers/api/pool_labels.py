"""/pool_labels/{uuid} (not part of OpenStack Placement): the name an admin
gives a pool (an aggregate), which every page, export and answer then
names it by (AggregateQuerySet.with_names). The same at every microversion."""
from placement_site import errors
from placement_site.api import PlacementViewSet
from placement_site.api import accept_json
from placement_site.api import json_body
from placement_site.api import require_json
from placement_site.openapi import LINKS
from placement_site.openapi import UUID
from placement_site.openapi import Component
from placement_site.openapi import closed
from placement_site.openapi import operation
from placement_site.openapi import path
from placement_site.openapi import request_body
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


# ---- the answer, body and parameter the operations describe --------------------------

POOL_LABEL = Component('PoolLabel', closed({
    'type': 'object',
    'properties': {
        'aggregate': {'type': 'string', 'description': "The pool's aggregate uuid."},
        'label': {'type': ['string', 'null'],
                  'description': 'The name an admin gave the pool; null when none.'},
        'name': {'type': 'string', 'description': (
            'What the pool is called everywhere (dashboards, exports, `GET '
            '/capacity?group_by=aggregate`): its label; else the name of the pod built on '
            'it; else, when exactly one of its members is a sharing provider '
            '(MISC_SHARES_VIA_AGGREGATE), that provider\'s name; else its uuid.')},
        'links': LINKS,
    },
    'required': ['aggregate', 'label', 'name', 'links'],
}))

POOL_LABEL_UPDATE = request_body('PoolLabelUpdate', POOL_LABEL_PUT)
POOL_UUID = path('uuid', "The pool's aggregate uuid.", UUID)
TAG = 'Pool labels'
OURS = 'Not part of OpenStack Placement. '


class PoolLabelViewSet(PlacementViewSet):
    """/pool_labels/{uuid}: a pool's label, and the name it gives."""

    @operation(
        'showPoolLabel', tag=TAG, summary="Show a pool's label", parameters=[POOL_UUID],
        description=OURS + "A pool's label and the name it goes by "
                           '(`placement:pool_labels:show`).',
        responses={200: (POOL_LABEL, 'The label and name.')}, cached=[],
        errors={404: 'No aggregate with that uuid.'},
    )
    @accept_json
    def retrieve(self, request, uuid):
        self.authorize(POLICY % 'show')
        return self.respond(label_body(find_pool(uuid)), cache_headers=False)

    @operation(
        'updatePoolLabel', tag=TAG, summary='Label a pool', parameters=[POOL_UUID],
        description=OURS + 'Set (or replace) the name the pool goes by. Nothing of '
                           "Placement's changes: no provider generation moves. Admin only "
                           '(`placement:pool_labels:update`).',
        request=POOL_LABEL_UPDATE, responses={200: (POOL_LABEL, 'The label as set.')},
        cached=[],
        errors={400: 'The label is not a string of 1 to 200 characters that are not all '
                     'blanks.',
                404: 'No aggregate with that uuid.'},
    )
    @require_json
    def update(self, request, uuid):
        self.authorize(POLICY % 'update')
        pool = find_pool(uuid)
        data = json_body(request, POOL_LABEL_PUT)
        services.pool_label_set(aggregate=pool, name=data['label'])
        return self.respond(label_body(find_pool(uuid)), cache_headers=False)

    @operation(
        'deletePoolLabel', tag=TAG, summary="Remove a pool's label", parameters=[POOL_UUID],
        description=OURS + 'The pool goes by its pod or sharing provider again (none set: '
                           'nothing changes). Admin only (`placement:pool_labels:delete`).',
        responses={204: (None, 'Removed.')}, accept_json=False,
        errors={404: 'No aggregate with that uuid.'},
    )
    def destroy(self, request, uuid):
        self.authorize(POLICY % 'delete')
        services.pool_label_delete(aggregate=find_pool(uuid))
        return self.no_content()
