"""The Placement API in the tests: a client over Django's test client, builders
that go through the API, and the checks of Placement's error answers."""
import json
import uuid as uuid_lib

from django.test import Client

from providers.models import Inventory
from tests.support.state import unchanged

LATEST = '1.39'


class PlacementClient:
    """Requests as a Placement client sends them: token, microversion, JSON."""

    def __init__(self, token='admin', version=LATEST):
        self.client = Client()
        self.token = token
        self.version = version

    def request(self, method, path, body=None, *, version=None, token=None, headers=None,
                content_type='application/json', raw=None):
        headers = dict(headers or {})
        token = self.token if token is None else token
        if token is not False:
            headers.setdefault('X-Auth-Token', token)
        version = self.version if version is None else version
        if version is not False:
            headers.setdefault('OpenStack-API-Version', f'placement {version}')
        headers.setdefault('Accept', 'application/json')
        data = raw if raw is not None else (json.dumps(body) if body is not None else '')
        kwargs = {'headers': headers}
        if data or content_type != 'application/json':
            kwargs['content_type'] = content_type
        response = self.client.generic(method, path, data=data, **kwargs)
        # The answer's bytes, whether sent whole or streamed.
        response.bytes = (b''.join(response.streaming_content) if response.streaming
                          else response.content)
        response.body = _json_or_none(response)
        return response

    def get(self, path, **kwargs):
        return self.request('GET', path, **kwargs)

    def post(self, path, body=None, **kwargs):
        return self.request('POST', path, body, **kwargs)

    def put(self, path, body=None, **kwargs):
        return self.request('PUT', path, body, **kwargs)

    def delete(self, path, **kwargs):
        return self.request('DELETE', path, **kwargs)

    # ---- builders (through the API, so tests exercise real behaviour) ----

    def create_provider(self, name=None, uuid=None, parent=None):
        body = {'name': name or f'rp-{uuid_lib.uuid4().hex[:8]}',
                'uuid': uuid or str(uuid_lib.uuid4())}
        if parent:
            body['parent_provider_uuid'] = parent
        response = self.post('/resource_providers', body, version=LATEST)
        assert response.status_code == 200, response.content
        return response.body

    def set_inventory(self, rp_uuid, inventories):
        return self._put_at_generation(rp_uuid, 'inventories', inventories=inventories)

    def set_traits(self, rp_uuid, traits):
        return self._put_at_generation(rp_uuid, 'traits', traits=traits)

    def set_aggregates(self, rp_uuid, aggregates):
        return self._put_at_generation(rp_uuid, 'aggregates', aggregates=aggregates)

    def _put_at_generation(self, rp_uuid, what, **body):
        """Replace one of a provider's collections at its current generation."""
        generation = self.get(f'/resource_providers/{rp_uuid}').body['generation']
        response = self.put(f'/resource_providers/{rp_uuid}/{what}',
                            {'resource_provider_generation': generation, **body})
        assert response.status_code == 200, response.content
        return response.body

    def allocate(self, consumer, allocations, *, project='proj', user='user',
                 consumer_type='INSTANCE', generation=None):
        response = self.put(f'/allocations/{consumer}', {
            'allocations': {rp: {'resources': res} for rp, res in allocations.items()},
            'project_id': project, 'user_id': user,
            'consumer_generation': generation, 'consumer_type': consumer_type})
        return response


def new_uuid():
    return str(uuid_lib.uuid4())


def generation(client, rp_uuid):
    """The provider's generation as the API reports it."""
    response = client.get(f'/resource_providers/{rp_uuid}')
    assert response.status_code == 200, response.content
    return response.body['generation']


def vcpu_provider(client, total=8):
    """A new provider with `total` VCPU, created through `client` (after
    any settings change, since the first request builds the policy
    enforcer)."""
    uuid = client.create_provider()['uuid']
    client.set_inventory(uuid, {'VCPU': {'total': total}})
    return uuid


def allocation_body(rp):
    """PUT /allocations/{consumer}'s body (1.38+) for a new consumer of 1 VCPU of rp."""
    return {'allocations': {rp: {'resources': {'VCPU': 1}}}, 'project_id': 'proj',
            'user_id': 'user', 'consumer_generation': None, 'consumer_type': 'INSTANCE'}


def lasting_headers(response):
    """The answer's headers but those that differ from one request to the
    next (its id and time); Content-Length: None when there is none."""
    headers = {k: v for k, v in response.items()
               if k not in ('x-openstack-request-id', 'Last-Modified')}
    return {'Content-Length': None, **headers}


def _json_or_none(response):
    if (response.get('Content-Type', '').startswith('application/json') and response.bytes
            and 'Content-Encoding' not in response):
        return json.loads(response.bytes)
    return None


def error_of(response):
    """The single error of a Placement error body."""
    errors = response.body['errors']
    assert len(errors) == 1
    return errors[0]


ERROR_TITLES = {400: 'Bad Request', 403: 'Forbidden', 404: 'Not Found',
                405: 'Method Not Allowed', 409: 'Conflict', 412: 'Precondition Failed',
                413: 'Request Entity Too Large', 415: 'Unsupported Media Type'}


UNDEFINED = 'placement.undefined_code'


def assert_error(response, status, detail=None, code=UNDEFINED):
    """A Placement JSON error body; code=None for microversions before 1.23."""
    assert response.status_code == status, response.content
    assert response['Content-Type'] == 'application/json'
    error = error_of(response)
    assert error['status'] == status
    assert error['title'] == ERROR_TITLES[status]
    assert error['request_id'] == response['x-openstack-request-id']
    assert error['request_id'].startswith('req-')
    if code is None:
        assert 'code' not in error
    else:
        assert error['code'] == code
    if detail is not None:
        assert detail in error['detail']
    return error


def assert_put_media_type_refused(client, path, content_type, body=None):
    """A PUT of `body` to `path` sent as `content_type` (without a body, and
    so without a Content-Type: content_type None) is Placement's 415 and
    changes nothing."""
    with unchanged():
        response = (client.put(path) if body is None
                    else client.put(path, body, content_type=content_type))
        assert_error(response, 415, f'The media type {content_type} is not supported, '
                                    'use application/json')


def assert_version_refused(response, version, literal=None):
    """Placement's answer to the version header `version`: a 406 for one it
    cannot serve or, where its part `literal` is not a number, a 400."""
    if literal is None:
        status, detail = 406, ('The resource could not be generated that was acceptable to your '
                               'browser (content of type application/json. \n\n Invalid '
                               f'microversion: Unacceptable version header: {version}')
    else:
        status, detail = 400, ('The server could not comply with the request since it is either '
                               'malformed or otherwise incorrect.\n\n Invalid microversion: '
                               f'invalid version string: {version}; invalid literal for int() '
                               f"with base 10: '{literal}'  ")
    assert response.status_code == status
    error = error_of(response)
    assert (error['status'], error['detail']) == (status, detail)


def assert_not_acceptable(response):
    """The plain-text 406 Placement sends for Accept: text/plain."""
    assert response.status_code == 406
    assert response['Content-Type'].startswith('text/plain')
    text = response.content.decode()
    assert text.startswith('406 Not Acceptable')
    assert 'Only application/json is provided' in text


def most_claims(api, query):
    """The largest number of claims of the request the API grants one after
    another (exhaustive, memoised on the usage state)."""
    memo = {}
    usage = usage_state()

    def key():
        return frozenset(item for item in usage.items() if item[1])

    def search():
        state = key()
        if state in memo:
            return memo[state]
        answer = api.get(f'/allocation_candidates?{query}')
        assert answer.status_code == 200, answer.content
        distinct = {json.dumps(r['allocations'], sort_keys=True): r['allocations']
                    for r in answer.body['allocation_requests']}
        best = 0
        for allocations in distinct.values():
            consumer = new_uuid()
            claimed = api.put(f'/allocations/{consumer}', {
                'allocations': allocations, 'project_id': 'proj', 'user_id': 'user',
                'consumer_generation': None, 'consumer_type': 'INSTANCE'})
            assert claimed.status_code == 204, claimed.content
            for rp, held in allocations.items():
                for rc, amount in held['resources'].items():
                    usage[rp, rc] += amount
            best = max(best, 1 + search())
            for rp, held in allocations.items():
                for rc, amount in held['resources'].items():
                    usage[rp, rc] -= amount
            assert api.delete(f'/allocations/{consumer}').status_code == 204
        memo[state] = best
        return best

    found = search()
    assert usage_state() == usage   # every claim undone
    return found


def usage_state():
    return {(rp, rc): used for rp, rc, used in Inventory.objects.values_list(
        'resource_provider__uuid', 'resource_class__name', 'used')}
