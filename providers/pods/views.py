"""The pod API (not part of OpenStack Placement): /pods and /pod_bindings,
with Placement's authentication, policy, error format and microversion
header, the same at every microversion."""
from placement_site import errors, exceptions
from placement_site.api import (
    PlacementViewSet,
    accept_json,
    json_body,
    page_after_marker,
    query_params,
    require_json,
    timestamp,
)
from placement_site.errors import Worded, worded
from placement_site.queries import storable
from placement_site.validation import normalize_uuid
from providers.pods import schemas, selection, services
from providers.pods.models import GENERAL_PURPOSE, Pod, PodBinding

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

    @accept_json
    def retrieve(self, request, uuid):
        self.authorize(POD_POLICY % 'show')
        (body,) = self._respond_pods([find_pod(uuid, pods_found())])
        return self.respond(body, cache_headers=False)

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

    def destroy(self, request, uuid):
        self.authorize(POD_POLICY % 'delete')
        pod = find_pod(uuid)
        services.pod_delete(pod=pod)   # PodNotFound, PodInUse: their own 404 and 409
        return self.no_content()


class PodBindingViewSet(PlacementViewSet):
    """/pod_bindings[/{uuid}]: tenants bound to pods, and their history."""

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
            raise errors.bad_request(str(exceptions.PodNotFound(uuid=data['pod'])))
        return services.binding_bind(project_id=data['project_id'], affinity=affinity, pod=pod)

    @accept_json
    def retrieve(self, request, uuid):
        self.authorize(BINDING_POLICY % 'show')
        return self.respond(binding_body(find_binding(uuid)), cache_headers=False)

    def destroy(self, request, uuid):
        self.authorize(BINDING_POLICY % 'delete')
        binding = find_binding(uuid)
        services.binding_end(binding=binding)   # PodBindingEnded: its own 409
        return self.no_content()
