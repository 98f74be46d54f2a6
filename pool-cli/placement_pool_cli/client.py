"""Placement over HTTP for the pool commands: one fixed microversion, JSON
bodies, Placement's error detail as the command's error, and the reads and
generation-guarded writes the commands share."""
import uuid as uuid_lib
from urllib.parse import urlencode

from osc_lib import exceptions

# 1.39 is the newest Placement microversion and has all we use: 200 with the
# body on provider create (1.20), aggregates with generation (1.19),
# `required=` on provider lists (1.18) and error codes in bodies (1.23).
MICROVERSION = 'placement 1.39'
POOL_TRAIT = 'MISC_SHARES_VIA_AGGREGATE'
CONCURRENT_UPDATE = 'placement.concurrent_update'
# How often a write is tried when another writer bumped the generation first.
ATTEMPTS = 5
INVENTORY_FIELDS = ('total', 'reserved', 'min_unit', 'max_unit', 'step_size', 'allocation_ratio')


class PlacementError(exceptions.CommandError):
    """A non-2xx answer: the command fails with Placement's detail text."""

    def __init__(self, status, detail, code=None):
        self.status = status
        self.code = code
        # Placement's details span lines ("There was a conflict ...\n\n Name
        # ... exists.  "): one line reads better in a terminal.
        self.detail = ' '.join(str(detail).split())
        super().__init__(f'{self.detail} (HTTP {status})')


def _error(response):
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and body.get('errors'):
        first = body['errors'][0]
        return PlacementError(response.status_code, first.get('detail') or first.get('title'),
                              first.get('code'))
    if isinstance(body, dict) and isinstance(body.get('error'), dict):
        # Keystone's (and keystonemiddleware's) error format.
        return PlacementError(response.status_code, body['error'].get('message'))
    return PlacementError(response.status_code, response.text.strip() or response.reason)


def capacity(record):
    """What allocations can use: (total - reserved) * allocation_ratio, as
    Placement computes it."""
    return int((record['total'] - record['reserved']) * record['allocation_ratio'])


class PlacementClient:
    def __init__(self, session, endpoint):
        self.session = session
        self.endpoint = endpoint.rstrip('/')

    # ---- HTTP ----------------------------------------------------------------

    def request(self, method, path, body=None, **query):
        url = self.endpoint + path + (f'?{urlencode(query)}' if query else '')
        headers = {'OpenStack-API-Version': MICROVERSION, 'Accept': 'application/json'}
        response = self.session.request(url, method, json=body, headers=headers,
                                        raise_exc=False)
        if not 200 <= response.status_code < 300:
            raise _error(response)
        return response.json() if response.content else None

    def get(self, path, **query):
        return self.request('GET', path, **query)

    def post(self, path, body):
        return self.request('POST', path, body)

    def put(self, path, body):
        return self.request('PUT', path, body)

    def delete(self, path):
        return self.request('DELETE', path)

    @staticmethod
    def retrying(write):
        """write() again while another writer changes the provider between
        our read of its generation and our write (409 concurrent_update)."""
        for attempt in range(1, ATTEMPTS + 1):
            try:
                return write()
            except PlacementError as exc:
                if exc.code != CONCURRENT_UPDATE or attempt == ATTEMPTS:
                    raise

    # ---- pools ---------------------------------------------------------------

    def find_pool(self, ident):
        """The pool by uuid or name, with its traits; a provider that lacks
        the pool trait is refused, so no pool command touches a compute node."""
        try:
            uuid_lib.UUID(ident)
        except ValueError:
            found = self.get('/resource_providers', name=ident)['resource_providers']
            if not found:
                raise exceptions.CommandError(f'No pool named {ident} found')
            provider = found[0]
        else:
            provider = self.get(f'/resource_providers/{ident}')
        traits = self.get(f'/resource_providers/{provider["uuid"]}/traits')['traits']
        if POOL_TRAIT not in traits:
            raise exceptions.CommandError(
                f'Resource provider {provider["name"]} ({provider["uuid"]}) is not a pool: '
                f'it lacks the {POOL_TRAIT} trait')
        provider['traits'] = sorted(traits)
        return provider

    def pools(self):
        return self.get('/resource_providers', required=POOL_TRAIT)['resource_providers']

    def inventory_rows(self, pool_uuid):
        """One row per resource class: the inventory record and its capacity,
        used and free (free is negative when the pool is over capacity)."""
        inventories = self.get(f'/resource_providers/{pool_uuid}/inventories')['inventories']
        usages = self.get(f'/resource_providers/{pool_uuid}/usages')['usages']
        rows = []
        for resource_class, record in sorted(inventories.items()):
            room, used = capacity(record), usages.get(resource_class, 0)
            rows.append({'resource_class': resource_class,
                         **{field: record[field] for field in INVENTORY_FIELDS},
                         'capacity': room, 'used': used, 'free': room - used})
        return rows

    def inventory_set(self, pool_uuid, resource_class, changes):
        """Set one resource class's inventory, leaving the pool's other
        classes alone: fields not in `changes` keep their current values
        (Placement's defaults when the class is new, which needs a total)."""
        path = f'/resource_providers/{pool_uuid}/inventories'

        def write():
            current = self.get(path)
            generation = current['resource_provider_generation']
            record = current['inventories'].get(resource_class)
            if record is None:
                if 'total' not in changes:
                    raise exceptions.CommandError(
                        f'The pool has no {resource_class} inventory yet: give --total')
                return self.post(path, {'resource_class': resource_class,
                                        'resource_provider_generation': generation, **changes})
            return self.put(f'{path}/{resource_class}', {
                **{field: record[field] for field in INVENTORY_FIELDS}, **changes,
                'resource_provider_generation': generation})
        return self.retrying(write)

    def aggregates_change(self, pool_uuid, change):
        """Replace the pool's aggregates with change(current aggregates), at
        the generation they were read at."""
        path = f'/resource_providers/{pool_uuid}/aggregates'

        def write():
            current = self.get(path)
            return self.put(path, {
                'aggregates': change(current['aggregates']),
                'resource_provider_generation': current['resource_provider_generation']})
        return self.retrying(write)
