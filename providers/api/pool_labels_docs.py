"""OpenAPI descriptions of /pool_labels/{uuid} (not part of OpenStack
Placement): the names admins give pools."""
from drf_spectacular.utils import extend_schema_view

from placement_site.openapi import LINKS, UUID, Component, closed, operation, path, request_body
from providers.api import pool_labels as views

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

POOL_LABEL_UPDATE = request_body('PoolLabelUpdate', views.POOL_LABEL_PUT)
POOL_UUID = path('uuid', "The pool's aggregate uuid.", UUID)
TAG = 'Pool labels'
OURS = 'Not part of OpenStack Placement. '

extend_schema_view(
    retrieve=operation(
        'showPoolLabel', tag=TAG, summary="Show a pool's label", parameters=[POOL_UUID],
        description=OURS + "A pool's label and the name it goes by "
                           '(`placement:pool_labels:show`).',
        responses={200: (POOL_LABEL, 'The label and name.')}, cached=[],
        errors={404: 'No aggregate with that uuid.'},
    ),
    update=operation(
        'updatePoolLabel', tag=TAG, summary='Label a pool', parameters=[POOL_UUID],
        description=OURS + 'Set (or replace) the name the pool goes by. Nothing of '
                           "Placement's changes: no provider generation moves. Admin only "
                           '(`placement:pool_labels:update`).',
        request=POOL_LABEL_UPDATE, responses={200: (POOL_LABEL, 'The label as set.')},
        cached=[],
        errors={400: 'The label is not a string of 1 to 200 characters that are not all '
                     'blanks.',
                404: 'No aggregate with that uuid.'},
    ),
    destroy=operation(
        'deletePoolLabel', tag=TAG, summary="Remove a pool's label", parameters=[POOL_UUID],
        description=OURS + 'The pool goes by its pod or sharing provider again (none set: '
                           'nothing changes). Admin only (`placement:pool_labels:delete`).',
        responses={204: (None, 'Removed.')}, accept_json=False,
        errors={404: 'No aggregate with that uuid.'},
    ),
)(views.PoolLabelViewSet)
