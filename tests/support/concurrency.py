"""Many writers at once: a pool of threads that start together, and a claim's
body."""
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor

import requests

from scripts.harness.api import HEADERS

WRITERS = 20


def together(count, work):
    """Run work(i) in `count` threads released at the same moment."""
    start = threading.Barrier(count)

    def run(i):
        start.wait()
        return work(i)
    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(run, range(count)))


def claim_body(provider, amount):
    return {'allocations': {provider: {'resources': {'VCPU': amount}}},
            'project_id': 'p', 'user_id': 'u', 'consumer_generation': None,
            'consumer_type': 'INSTANCE'}


class Server:
    def __init__(self, url):
        self.url = url

    def call(self, method, path, body=None):
        return requests.request(method, self.url + path, json=body, headers=HEADERS, timeout=120)

    def vcpu_provider(self, name, total):
        """A new provider `name` with `total` VCPU; its uuid."""
        rp = str(uuid.uuid4())
        assert self.call('POST', '/resource_providers',
                         {'name': name, 'uuid': rp}).status_code == 200
        assert self.call('PUT', f'/resource_providers/{rp}/inventories', {
            'resource_provider_generation': 0,
            'inventories': {'VCPU': {'total': total}}}).status_code == 200
        return rp
