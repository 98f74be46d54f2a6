"""Claims from several clients against a gunicorn-served Placement, and the
books read back straight from PostgreSQL afterwards: for the resilience
tests (tests/test_resilience.py), which crash, restart and switch the
database or kill the server's processes while the claims go on."""
import threading
import time
import uuid
from dataclasses import dataclass, field

import psycopg2
import requests

from tests.servers import HEADERS

# One claim: a little of a compute node and of the shared disk pool, three
# allocation rows written in one transaction (or none).
CLAIM = {'VCPU': 1, 'MEMORY_MB': 64}
SHARED_CLAIM = {'DISK_GB': 1}
ROWS_PER_CLAIM = len(CLAIM) + len(SHARED_CLAIM)


@dataclass
class Cloud:
    computes: list
    pool: str


def seed(server, computes=8):
    """Compute nodes and a disk pool shared with them through an aggregate,
    with room for far more claims than a test makes."""
    aggregate = str(uuid.uuid4())

    def provider(name, inventories, traits=()):
        rp = str(uuid.uuid4())
        _ok(server.call('POST', '/resource_providers', {'name': name, 'uuid': rp}))
        _ok(server.call('PUT', f'/resource_providers/{rp}/inventories', {
            'resource_provider_generation': 0,
            'inventories': {rc: {'total': total} for rc, total in inventories.items()}}))
        _ok(server.call('PUT', f'/resource_providers/{rp}/aggregates', {
            'resource_provider_generation': 1, 'aggregates': [aggregate]}))
        if traits:
            _ok(server.call('PUT', f'/resource_providers/{rp}/traits', {
                'resource_provider_generation': 2, 'traits': list(traits)}))
        return rp
    nodes = [provider(f'cn-{i}', {'VCPU': 100000, 'MEMORY_MB': 10000000})
             for i in range(computes)]
    pool = provider('disk-pool', {'DISK_GB': 10000000}, ['MISC_SHARES_VIA_AGGREGATE'])
    return Cloud(nodes, pool)


def _ok(answer):
    assert answer.status_code in (200, 204), answer.text
    return answer


def claim_body(cloud, index):
    node = cloud.computes[index % len(cloud.computes)]
    return {'allocations': {node: {'resources': CLAIM}, cloud.pool: {'resources': SHARED_CLAIM}},
            'project_id': 'resilience', 'user_id': 'tester', 'consumer_generation': None,
            'consumer_type': 'INSTANCE'}


@dataclass
class Answer:
    consumer: str
    sent: float          # time.monotonic()
    done: float
    status: int = None   # None: no HTTP answer at all (see error)
    headers: dict = field(default_factory=dict)
    body: str = ''
    error: str = ''


class Clients:
    """`clients` threads each running `_client(index)` until stop(), the
    answers they record kept in order (the HA runs' load too:
    tests/ha_load.py)."""

    def __init__(self, clients, join_timeout=90):
        self.clients, self.join_timeout = clients, join_timeout
        self.answers = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = []

    def start(self):
        for index in range(self.clients):
            thread = threading.Thread(target=self._client, args=(index,), daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self):
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=self.join_timeout)
        return self.answers

    def record(self, answer):
        with self._lock:
            self.answers.append(answer)

    def count(self, condition):
        with self._lock:
            return sum(1 for a in self.answers if condition(a))

    def _client(self, index):
        raise NotImplementedError


class ClaimsLoad(Clients):
    """`clients` threads claiming for new consumers, one after another,
    until stop(). After an error a client pauses `pause` seconds."""

    def __init__(self, server, cloud, clients=8, pause=0.05):
        super().__init__(clients)
        self.server, self.cloud, self.pause = server, cloud, pause

    def _client(self, index):
        session = requests.Session()
        count = 0
        while not self._stop.is_set():
            count += 1
            consumer = str(uuid.uuid4())
            answer = Answer(consumer, time.monotonic(), 0)
            try:
                reply = session.put(f'{self.server.url}/allocations/{consumer}',
                                    json=claim_body(self.cloud, index * 1000 + count),
                                    headers=HEADERS, timeout=60)
                answer.status, answer.headers = reply.status_code, dict(reply.headers)
                answer.body = reply.text
            except requests.RequestException as exc:
                answer.error = f'{type(exc).__name__}: {exc}'
                session = requests.Session()
            answer.done = time.monotonic()
            self.record(answer)
            if answer.status != 204:
                time.sleep(self.pause)

    def acknowledged(self):
        return {a.consumer for a in self.answers if a.status == 204}


def wait_for_claims(load, count, timeout=60, after=0.0):
    """Until `count` claims sent after `after` (monotonic) were acknowledged."""
    deadline = time.monotonic() + timeout
    while load.count(lambda a: a.status == 204 and a.sent >= after) < count:
        if time.monotonic() > deadline:
            raise TimeoutError(f'fewer than {count} claims acknowledged in {timeout} s')
        time.sleep(0.05)


@dataclass
class Books:
    consumers: dict          # consumer uuid -> allocation rows
    over_capacity: list      # (provider uuid, class id, used, capacity)
    used_mismatches: list    # inventories whose `used` column is not the sum


def read_books(port):
    """What the database holds, read as postgres on the server at `port`."""
    conn = psycopg2.connect(host='127.0.0.1', port=port, user='postgres', dbname='placement',
                            connect_timeout=5)
    try:
        with conn.cursor() as cursor:
            cursor.execute('SELECT c.uuid, count(a.id) FROM consumers c '
                           'LEFT JOIN allocations a ON a.consumer_id = c.id GROUP BY c.uuid')
            consumers = dict(cursor.fetchall())
            cursor.execute("""
                SELECT rp.uuid, i.resource_class_id, s.used,
                       (i.total - i.reserved) * i.allocation_ratio
                FROM inventories i
                JOIN resource_providers rp ON rp.id = i.resource_provider_id
                JOIN (SELECT resource_provider_id, resource_class_id, sum(used) AS used
                      FROM allocations GROUP BY 1, 2) s
                  ON s.resource_provider_id = i.resource_provider_id
                 AND s.resource_class_id = i.resource_class_id
                WHERE s.used > (i.total - i.reserved) * i.allocation_ratio""")
            over = cursor.fetchall()
            cursor.execute("""
                SELECT i.id FROM inventories i
                WHERE i.used <> (SELECT coalesce(sum(a.used), 0) FROM allocations a
                                 WHERE a.resource_provider_id = i.resource_provider_id
                                   AND a.resource_class_id = i.resource_class_id)""")
            mismatches = [row[0] for row in cursor.fetchall()]
    finally:
        conn.close()
    return Books(consumers, over, mismatches)


def assert_books_balance(books, load):
    """Nothing acknowledged is missing, no consumer is half-written, no
    provider is over capacity, every usage total is the sum of its rows."""
    missing = load.acknowledged() - set(books.consumers)
    assert not missing, f'{len(missing)} acknowledged claims are missing'
    partial = {c: rows for c, rows in books.consumers.items() if rows != ROWS_PER_CLAIM}
    assert not partial, f'half-written consumers: {partial}'
    assert books.over_capacity == []
    assert books.used_mismatches == []
