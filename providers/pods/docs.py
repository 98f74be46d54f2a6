"""OpenAPI descriptions of the pod operations (not part of OpenStack
Placement): /pods and /pod_bindings."""
from drf_spectacular.utils import extend_schema_view

from placement_site.openapi import (
    LINKS,
    UUID,
    Component,
    closed,
    link,
    operation,
    path,
    query,
    request_body,
    resources_map,
)
from providers.pods import schemas, views

# ---- answers ----------------------------------------------------------------------

_MOMENT = {'type': 'string', 'format': 'date-time'}
_PERCENT = {'type': ['number', 'null'],
            'description': 'Percent of the capacity in use; null without capacity.'}

POD = Component('Pod', closed({
    'type': 'object',
    'properties': {
        'uuid': UUID,
        'name': {'type': 'string'},
        'aggregate': {**UUID, 'description': "The pod's aggregate: pass it as `member_of` to "
                                             'GET /allocation_candidates.'},
        'availability_zone': {'type': 'string'},
        'affinity_tags': {
            'type': 'object', 'additionalProperties': {'type': 'string'},
            'description': 'Resource-affinity tags, key: value (e.g. resource: CAD Modeling, '
                           'requested as `resource=CAD Modeling`); none for a general-purpose '
                           'pod.'},
        'thresholds': resources_map('Utilisation thresholds, percent of capacity.',
                                    {'type': 'number'}),
        'state': {'type': 'string', 'enum': schemas.STATES},
        'created_at': _MOMENT,
        'updated_at': {**_MOMENT, 'type': ['string', 'null']},
        'resources': resources_map(
            "The pod's live books per resource class: its members' inventories and "
            'those of the trees of member roots (sharing providers in the aggregate '
            'included).', {
                'type': 'object',
                'properties': {
                    'total': {'type': 'integer'},
                    'reserved': {'type': 'integer'},
                    'capacity': {'type': 'number',
                                 'description': '(total - reserved) * allocation_ratio, '
                                                'summed.'},
                    'used': {'type': 'integer'},
                    'free': {'type': 'number'},
                    'utilization': _PERCENT,
                    'threshold': {'type': ['number', 'null']},
                    'threshold_reached': {'type': 'boolean'},
                },
                'required': ['total', 'reserved', 'capacity', 'used', 'free', 'utilization',
                             'threshold', 'threshold_reached'],
            }),
        'tenants': {'type': 'integer', 'description': (
            'Tenants (projects) bound to the pod now; a project bound to it for several '
            'affinities counts once.')},
        'links': LINKS,
    },
    'required': ['uuid', 'name', 'aggregate', 'availability_zone', 'affinity_tags',
                 'thresholds', 'state', 'created_at', 'updated_at', 'resources', 'tenants',
                 'links'],
}))

POD_LIST = Component('PodList', closed({
    'type': 'object',
    'properties': {'pods': {'type': 'array', 'items': POD,
                            'description': 'Oldest first.'}},
    'required': ['pods'],
}))

_BINDING = {
    'type': 'object',
    'properties': {
        'uuid': UUID,
        'project_id': {'type': 'string'},
        'affinity': {'type': ['string', 'null'],
                     'description': 'key=value; null for general purpose.'},
        'pod': {'type': 'object', 'properties': {'uuid': UUID, 'name': {'type': 'string'}},
                'required': ['uuid', 'name']},
        'member_of': {**UUID, 'description': "The pod's aggregate, for `member_of` on GET "
                                             '/allocation_candidates.'},
        'started_at': _MOMENT,
        'ended_at': {**_MOMENT, 'type': ['string', 'null'],
                     'description': 'Null while the binding is open.'},
        'end_reason': {
            'type': ['string', 'null'],
            'enum': ['threshold', 'capacity', 'maintenance', 'availability_zone', 'affinity',
                     'admin', None],
            'description': 'Why it ended: the filter its pod failed at a binding request '
                           '(threshold, capacity, maintenance, availability_zone, affinity) or '
                           'an admin.'},
        'links': LINKS,
    },
    'required': ['uuid', 'project_id', 'affinity', 'pod', 'member_of', 'started_at',
                 'ended_at', 'end_reason', 'links'],
}
POD_BINDING = Component('PodBinding', closed(_BINDING))

POD_BINDING_ANSWER = Component('PodBindingAnswer', closed({
    **_BINDING,
    'properties': {**_BINDING['properties'], 'replaced': {
        'anyOf': [POD_BINDING, {'type': 'null'}],
        'description': 'The binding this request ended, if it moved the tenant.'}},
    'required': [*_BINDING['required'], 'replaced'],
}))

POD_BINDING_LIST = Component('PodBindingList', closed({
    'type': 'object',
    'properties': {
        'pod_bindings': {'type': 'array', 'items': POD_BINDING,
                         'description': 'Oldest first; ended ones are kept.'},
        'links': {**LINKS, 'description': 'A `next` link while more bindings match.'},
    },
    'required': ['pod_bindings', 'links'],
}))

POD_CREATE = request_body('PodCreate', schemas.POD_POST)
POD_UPDATE = request_body('PodUpdate', schemas.POD_PUT, 'The fields given change.')
BINDING_CREATE = request_body(
    'PodBindingRequest', schemas.BINDING_POST,
    'A binding request (project_id, affinity, availability_zone, resources), or with `pod` '
    "an admin's explicit binding to that pod.")

POD_UUID = path('uuid', 'The uuid of the pod.', UUID)
BINDING_UUID = path('uuid', 'The uuid of the pod binding.', UUID)
_AFFINITY = {'type': 'string', 'pattern': f'{schemas.AFFINITY_PATTERN}|^$',
             'example': 'resource=CAD'}


def pod_links(uuid):
    return {name: link(name, text, uuid=uuid) for name, text in (
        ('showPod', 'The pod.'), ('updatePod', 'Change it.'), ('deletePod', 'Delete it.'))}


def binding_links(uuid):
    return {name: link(name, text, uuid=uuid) for name, text in (
        ('showPodBinding', 'The binding.'), ('deletePodBinding', 'End it (admin).'))}


PODS = 'Pods'
BINDINGS = 'Pod bindings'
OURS = 'Not part of OpenStack Placement. '

extend_schema_view(
    list=operation(
        'listPods', tag=PODS, summary='List pods',
        description=OURS + 'Pods, oldest first, with their live capacity and use per '
                           'resource class against their thresholds (`placement:pods:list`).',
        parameters=[
            query('availability_zone', 'Only pods of this zone.',
                  {'type': 'string', 'minLength': 1}),
            query('state', 'Only pods in this state.',
                  {'type': 'string', 'enum': schemas.STATES}),
            query('affinity', 'Only pods serving this affinity tag (empty: general-purpose '
                              'pods).', _AFFINITY),
        ],
        query_schema=schemas.POD_LIST_QUERY,
        responses={200: (POD_LIST, 'The pods.')}, cached=[],
        errors={400: 'An invalid state or affinity tag.'},
    ),
    create=operation(
        'createPod', tag=PODS, summary='Create a pod',
        description=OURS + 'A pod of the aggregate named (created if new; a new aggregate '
                           'without one). Its providers join it through their aggregates '
                           '(`PUT /resource_providers/{uuid}/aggregates`). Admin only '
                           '(`placement:pods:create`).',
        request=POD_CREATE,
        responses={201: (POD, 'The new pod.')}, location=[201], cached=[],
        links={201: pod_links('$response.body#/uuid')},
        errors={400: 'A threshold names an unknown resource class.',
                409: 'The name or uuid is taken (placement.duplicate_name), or the '
                     'aggregate is another pod.'},
    ),
    retrieve=operation(
        'showPod', tag=PODS, summary='Show a pod', parameters=[POD_UUID],
        description=OURS + 'One pod with its live books (`placement:pods:show`).',
        responses={200: (POD, 'The pod.')}, cached=[], errors={404: 'No such pod.'},
    ),
    update=operation(
        'updatePod', tag=PODS, summary='Change a pod', parameters=[POD_UUID],
        description=OURS + 'Change the fields given. A pod put into maintenance, or whose '
                           'thresholds are lowered, keeps its bindings until the tenants\' '
                           'next binding requests move them. Admin only '
                           '(`placement:pods:update`).',
        request=POD_UPDATE, responses={200: (POD, 'The pod as changed.')}, cached=[],
        errors={400: 'A threshold names an unknown resource class.', 404: 'No such pod.',
                409: 'The name is taken, or the aggregate is another pod.'},
    ),
    destroy=operation(
        'deletePod', tag=PODS, summary='Delete a pod', parameters=[POD_UUID],
        description=OURS + 'Delete a pod nobody was ever bound to (its aggregate and '
                           'providers stay). Admin only (`placement:pods:delete`).',
        responses={204: (None, 'Deleted.')}, accept_json=False,
        errors={404: 'No such pod.',
                409: 'The pod has bindings, whose history is kept (placement.pod.inuse).'},
    ),
)(views.PodViewSet)

extend_schema_view(
    list=operation(
        'listPodBindings', tag=BINDINGS, summary='List pod bindings',
        description=OURS + 'Bindings of tenants to pods, oldest first, ended ones included: '
                           'the history (`placement:pod_bindings:list`).',
        parameters=[
            query('project_id', "Only this project's bindings.",
                  {'type': 'string', 'minLength': 1}),
            query('pod', 'Only bindings to this pod.', UUID),
            query('affinity', 'Only bindings of this affinity tag (empty: general purpose).',
                  _AFFINITY),
            query('open', '`true`: only open bindings; `false`: only ended ones.',
                  {'type': 'string', 'enum': ['true', 'false']}),
            query('marker', 'Only bindings after this one (the `next` link sets it).',
                  {'type': 'string', 'pattern': '^[0-9]{1,18}$'}),
            query('limit', f'At most this many (default {schemas.BINDING_PAGE_SIZE}, at most '
                           f'{schemas.BINDING_PAGE_MAX}).',
                  {'type': 'string', 'pattern': '^[1-9][0-9]{0,17}$'}),
        ],
        query_schema=schemas.BINDING_LIST_QUERY,
        responses={200: (POD_BINDING_LIST, 'A page of bindings.')}, cached=[],
        errors={400: 'An invalid uuid, affinity tag or number.'},
    ),
    create=operation(
        'createPodBinding', tag=BINDINGS, summary='Ask for a pod binding',
        description=OURS + "Where should this tenant's new work of this affinity go? The "
                           "tenant's open binding is the answer (200) while its pod passes "
                           'the selection filters (availability zone, affinity, enabled, below '
                           'its thresholds, able to fit `resources`); otherwise it ends with '
                           'the reason its pod failed and the best pod by the weighers is '
                           'bound (201), in one transaction. With `pod`, an admin binds the '
                           'tenant to that pod (`placement:pod_bindings:override`). Pass '
                           '`member_of` to GET /allocation_candidates.',
        request=BINDING_CREATE,
        responses={200: (POD_BINDING_ANSWER, 'The open binding stands.'),
                   201: (POD_BINDING_ANSWER, 'A new binding (`replaced`: the one it ended).')},
        location=[201], cached=[], links={201: binding_links('$response.body#/uuid'),
                                          200: binding_links('$response.body#/uuid')},
        errors={400: 'A resource class that does not exist; the pod named does not exist '
                     'or does not serve the affinity, or an explicit binding also names a '
                     'zone or resources.',
                409: 'No pod passes the filters (placement.pod.none_available; the detail '
                     'says why each was refused); nothing changed.'},
    ),
    retrieve=operation(
        'showPodBinding', tag=BINDINGS, summary='Show a pod binding', parameters=[BINDING_UUID],
        description=OURS + 'One binding (`placement:pod_bindings:show`).',
        responses={200: (POD_BINDING, 'The binding.')}, cached=[],
        errors={404: 'No such binding.'},
    ),
    destroy=operation(
        'deletePodBinding', tag=BINDINGS, summary='End a pod binding',
        parameters=[BINDING_UUID],
        description=OURS + "An admin unbinds the tenant: the binding ends with the reason "
                           "'admin' and stays in the history (`placement:pod_bindings:delete`).",
        responses={204: (None, 'Ended.')}, accept_json=False,
        errors={404: 'No such binding.', 409: 'The binding has already ended.'},
    ),
)(views.PodBindingViewSet)
