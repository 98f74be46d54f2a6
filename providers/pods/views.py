"""The pod API (not part of OpenStack Placement): /pods and /pod_bindings,
with Placement's authentication, policy, error format and microversion
header, the same at every microversion."""
from placement_site import errors
from placement_site import exceptions
from placement_site.api import PlacementViewSet
from placement_site.api import accept_json
from placement_site.api import json_body
from placement_site.api import page_after_marker
from placement_site.api import query_params
from placement_site.api import require_json
from placement_site.api import timestamp
from placement_site.errors import Worded
from placement_site.errors import worded
from placement_site.openapi import LINKS
from placement_site.openapi import UUID
from placement_site.openapi import Component
from placement_site.openapi import closed
from placement_site.openapi import link
from placement_site.openapi import operation
from placement_site.openapi import paging_parameters
from placement_site.openapi import path
from placement_site.openapi import query
from placement_site.openapi import request_body
from placement_site.openapi import resources_map
from placement_site.queries import storable
from placement_site.validation import normalize_uuid
from providers.pods import schemas
from providers.pods import selection
from providers.pods import services
from providers.pods.models import GENERAL_PURPOSE
from providers.pods.models import Pod
from providers.pods.models import PodBinding

POD_POLICY = 'placement:pods:%s'
BINDING_POLICY = 'placement:pod_bindings:%s'


def pod_url(pod):
    return f'/pods/{pod.uuid}'


def binding_url(binding):
    return f'/pod_bindings/{binding.uuid}'


def pod_body(candidate, tenants):
    """A pod with its live books (selection.PodBooks)."""
    pod = candidate.pod
    resources = {}
    for name, usage in candidate.classes.items():
        threshold = pod.thresholds.get(name)
        utilization = candidate.percent(name)
        resources[name] = {
            'total': usage.total, 'reserved': usage.reserved, 'capacity': usage.capacity,
            'used': usage.used, 'free': usage.free, 'utilization': utilization,
            'threshold': threshold,
            'threshold_reached': bool(threshold is not None and utilization is not None
                                      and utilization >= threshold),
        }
    return {
        'uuid': pod.uuid,
        'name': pod.name,
        'aggregate': pod.aggregate.uuid,
        'availability_zone': pod.availability_zone,
        'affinity_tags': pod.affinity_tags,
        'thresholds': pod.thresholds,
        'state': pod.state,
        'created_at': timestamp(pod.created_at),
        'updated_at': timestamp(pod.updated_at),
        'resources': resources,
        'tenants': tenants,
        'links': [{'rel': 'self', 'href': pod_url(pod)},
                  {'rel': 'bindings', 'href': f'/pod_bindings?pod={pod.uuid}'}],
    }


def binding_body(binding):
    pod = binding.pod
    return {
        'uuid': binding.uuid,
        'project_id': binding.project_id,
        'affinity': binding.affinity or None,
        'pod': {'uuid': pod.uuid, 'name': pod.name},
        # What a scheduler passes as member_of to GET /allocation_candidates.
        'member_of': pod.aggregate.uuid,
        'started_at': timestamp(binding.started_at),
        'ended_at': timestamp(binding.ended_at),
        'end_reason': binding.end_reason,
        'links': [{'rel': 'self', 'href': binding_url(binding)},
                  {'rel': 'pod', 'href': pod_url(pod)}],
    }


def pods_found():
    """Pods as the answers show them: with their aggregates and tenant counts."""
    return Pod.objects.with_aggregate().with_open_binding_counts()


def find_pod(uuid, pods=Pod.objects):
    pod = None
    if storable(uuid):
        pod = pods.with_aggregate().filter(uuid=uuid).first()
    if pod is None:
        raise exceptions.PodNotFound(uuid=uuid)
    return pod


def find_binding(uuid):
    binding = None
    if storable(uuid):
        binding = PodBinding.objects.select_related('pod__aggregate').filter(uuid=uuid).first()
    if binding is None:
        raise exceptions.PodBindingNotFound(uuid=uuid)
    return binding


# A refused pod write: an unknown class in thresholds is the body's fault;
# retries that ran out a plain conflict (no code, never a 412).
POD_REFUSALS = {
    **exceptions.unknown_class_in('thresholds'),
    exceptions.ConcurrentUpdate: Worded('{error}', code=errors.DEFAULT, stale=False),
}


# ---- the answers, bodies and parameters the operations describe ----------------------

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


class PodViewSet(PlacementViewSet):
    """/pods[/{uuid}]: pods with their live capacity and use."""

    def _respond_pods(self, pods):
        """The pods' bodies; their tenant counts annotated (pods_found), or
        read here for a pod a service has just written."""
        tenants = {p.pk: p.tenants for p in pods if hasattr(p, 'tenants')}
        if len(tenants) < len(pods):
            tenants = dict(Pod.objects.filter(pk__in=[p.pk for p in pods])
                           .with_open_binding_counts().values_list('pk', 'tenants'))
        return [pod_body(candidate, tenants[candidate.pod.pk])
                for candidate in selection.pod_books(pods)]

    @operation(
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
    )
    @accept_json
    def list(self, request):
        self.authorize(POD_POLICY % 'list')
        params = query_params(request, schemas.POD_LIST_QUERY)
        pods = pods_found().in_line()
        if 'availability_zone' in params:
            zone = params['availability_zone']
            pods = pods.filter(availability_zone=zone) if storable(zone) else pods.none()
        if 'state' in params:
            pods = pods.filter(state=params['state'])
        pods = list(pods)
        if 'affinity' in params:
            pods = [p for p in pods if p.serves(params['affinity'])]
        return self.respond({'pods': self._respond_pods(pods)}, cache_headers=False)

    @operation(
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
    )
    @require_json
    def create(self, request):
        self.authorize(POD_POLICY % 'create')
        data = json_body(request, schemas.POD_POST)
        with worded(POD_REFUSALS):
            pod = services.pod_create(
                name=data['name'], uuid=data.get('uuid'), aggregate_uuid=data.get('aggregate'),
                availability_zone=data.get('availability_zone', 'nova'),
                affinity_tags=data.get('affinity_tags'), thresholds=data.get('thresholds'),
                state=data.get('state', Pod.ENABLED))
        (body,) = self._respond_pods([pod])
        return self.respond(body, status=201, location=pod_url(pod), cache_headers=False)

    @operation(
        'showPod', tag=PODS, summary='Show a pod', parameters=[POD_UUID],
        description=OURS + 'One pod with its live books (`placement:pods:show`).',
        responses={200: (POD, 'The pod.')}, cached=[], errors={404: 'No such pod.'},
    )
    @accept_json
    def retrieve(self, request, uuid):
        self.authorize(POD_POLICY % 'show')
        (body,) = self._respond_pods([find_pod(uuid, pods_found())])
        return self.respond(body, cache_headers=False)

    @operation(
        'updatePod', tag=PODS, summary='Change a pod', parameters=[POD_UUID],
        description=OURS + 'Change the fields given. A pod put into maintenance, or whose '
                           'thresholds are lowered, keeps its bindings until the tenants\' '
                           'next binding requests move them. Admin only '
                           '(`placement:pods:update`).',
        request=POD_UPDATE, responses={200: (POD, 'The pod as changed.')}, cached=[],
        errors={400: 'A threshold names an unknown resource class.', 404: 'No such pod.',
                409: 'The name is taken, or the aggregate is another pod.'},
    )
    @require_json
    def update(self, request, uuid):
        self.authorize(POD_POLICY % 'update')
        pod = find_pod(uuid)
        data = json_body(request, schemas.POD_PUT)
        aggregate_uuid = data.pop('aggregate', None)
        with worded(POD_REFUSALS):
            pod = services.pod_update(pod=pod, aggregate_uuid=aggregate_uuid, **data)
        (body,) = self._respond_pods([pod])
        return self.respond(body, cache_headers=False)

    @operation(
        'deletePod', tag=PODS, summary='Delete a pod', parameters=[POD_UUID],
        description=OURS + 'Delete a pod nobody was ever bound to (its aggregate and '
                           'providers stay). Admin only (`placement:pods:delete`).',
        responses={204: (None, 'Deleted.')}, accept_json=False,
        errors={404: 'No such pod.',
                409: 'The pod has bindings, whose history is kept (placement.pod.inuse).'},
    )
    def destroy(self, request, uuid):
        self.authorize(POD_POLICY % 'delete')
        pod = find_pod(uuid)
        services.pod_delete(pod=pod)   # PodNotFound, PodInUse: their own 404 and 409
        return self.no_content()


class PodBindingViewSet(PlacementViewSet):
    """/pod_bindings[/{uuid}]: tenants bound to pods, and their history."""

    @operation(
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
            *paging_parameters('bindings', schemas.BINDING_PAGE_SIZE, schemas.BINDING_PAGE_MAX),
        ],
        query_schema=schemas.BINDING_LIST_QUERY,
        responses={200: (POD_BINDING_LIST, 'A page of bindings.')}, cached=[],
        errors={400: 'An invalid uuid, affinity tag or number.'},
    )
    @accept_json
    def list(self, request):
        self.authorize(BINDING_POLICY % 'list')
        params = query_params(request, schemas.BINDING_LIST_QUERY)
        found = PodBinding.objects.select_related('pod__aggregate')
        if 'project_id' in params:
            project = params['project_id']
            found = found.filter(project_id=project) if storable(project) else found.none()
        if 'pod' in params:
            found = found.filter(pod__uuid=normalize_uuid(params['pod']))
        if 'affinity' in params:
            found = found.filter(affinity=params['affinity'])
        if 'open' in params:
            found = found.filter(ended_at__isnull=params['open'] == 'true')
        page, links = page_after_marker(request, found, params, schemas.BINDING_PAGE_SIZE,
                                        schemas.BINDING_PAGE_MAX)
        return self.respond({'pod_bindings': [binding_body(b) for b in page], 'links': links},
                            cache_headers=False)

    @operation(
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
    )
    @require_json
    def create(self, request):
        self.authorize(BINDING_POLICY % 'create')
        data = json_body(request, schemas.BINDING_POST)
        affinity = data.get('affinity') or GENERAL_PURPOSE
        with worded(exceptions.unknown_class_in('resources')):
            if 'pod' in data:
                answer = self._bind_explicitly(data, affinity)
            else:
                answer = services.binding_request(selection.BindingRequest(
                    project_id=data['project_id'], affinity=affinity,
                    availability_zone=data.get('availability_zone') or None,
                    resources=data.get('resources') or {}))
        body = binding_body(answer.binding)
        body['replaced'] = binding_body(answer.replaced) if answer.replaced else None
        if answer.created:
            return self.respond(body, status=201, location=binding_url(answer.binding),
                                cache_headers=False)
        return self.respond(body, cache_headers=False)

    def _bind_explicitly(self, data, affinity):
        """An admin's override: the tenant goes to the pod named."""
        self.authorize(BINDING_POLICY % 'override')
        for name in ('availability_zone', 'resources'):
            if data.get(name):
                raise errors.bad_request(
                    f'An explicit binding names its pod: {name} is for binding requests.')
        pod = Pod.objects.with_aggregate().filter(uuid=normalize_uuid(data['pod'])).first()
        if pod is None:
            errors.raise_worded(exceptions.PodNotFound(uuid=data['pod']), status=400)
        return services.binding_bind(project_id=data['project_id'], affinity=affinity, pod=pod)

    @operation(
        'showPodBinding', tag=BINDINGS, summary='Show a pod binding', parameters=[BINDING_UUID],
        description=OURS + 'One binding (`placement:pod_bindings:show`).',
        responses={200: (POD_BINDING, 'The binding.')}, cached=[],
        errors={404: 'No such binding.'},
    )
    @accept_json
    def retrieve(self, request, uuid):
        self.authorize(BINDING_POLICY % 'show')
        return self.respond(binding_body(find_binding(uuid)), cache_headers=False)

    @operation(
        'deletePodBinding', tag=BINDINGS, summary='End a pod binding',
        parameters=[BINDING_UUID],
        description=OURS + "An admin unbinds the tenant: the binding ends with the reason "
                           "'admin' and stays in the history (`placement:pod_bindings:delete`).",
        responses={204: (None, 'Ended.')}, accept_json=False,
        errors={404: 'No such binding.', 409: 'The binding has already ended.'},
    )
    def destroy(self, request, uuid):
        self.authorize(BINDING_POLICY % 'delete')
        binding = find_binding(uuid)
        services.binding_end(binding=binding)   # PodBindingEnded: its own 409
        return self.no_content()
