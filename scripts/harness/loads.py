"""Clients writing to Placement from several threads, and the books read
back straight from the database afterwards: the resilience tests
(tests/placement_site/test_resilience.py: claims while the database crashes, restarts or
fails over and the server's processes are killed) and the high-availability
runs (scripts/bench/ha.py: a mix of writes through several API servers on
a Galera cluster) share these.

ClaimsLoad claims for new consumers; MixedLoad claims, deletes what it
claimed, writes several consumers at once (POST /allocations), and rewrites
the inventories, traits and aggregates of a provider of its own after
reading its generation. No write of either can meet a real generation
conflict: new consumers carry no generation, deletes none, and nobody else
writes a client's own provider. So every 409 is a fault (a database abort
the server let through, or a read that missed a write made through another
node), and so is every 5xx but the 503 of a database that is away."""
import collections
import hashlib
import itertools
import json
import threading
import time
import uuid
from dataclasses import dataclass
from dataclasses import field

import requests

from scripts.harness.api import HEADERS
from scripts.harness.process import wait_for

# One claim: a little of a compute node and of the shared disk pool, three
# allocation rows written in one transaction (or none).
CLAIM = {'VCPU': 1, 'MEMORY_MB': 64}
SHARED_CLAIM = {'DISK_GB': 1}
ROWS_PER_CLAIM = len(CLAIM) + len(SHARED_CLAIM)
OK = {200, 204}
# A connection per request: a kept-alive one that the server closes as idle
# just when the next request goes out is reset, whatever the database does
# (gunicorn keeps idle connections 2 s).
CLOSE = {**HEADERS, 'Connection': 'close'}

KINDS = ('claim', 'delete', 'post', 'inventory', 'traits', 'aggregates')
# A MixedLoad client's round: mostly claims and deletes (every client
# contends for the shared disk pool and the compute nodes), then one of each
# other write.
ROUND = ('claim', 'claim', 'delete', 'claim', 'post', 'delete', 'inventory', 'claim',
         'delete', 'traits', 'claim', 'delete', 'aggregates', 'delete')


@dataclass
class Cloud:
    computes: list
    pool: str
    own: list = field(default_factory=list)   # one provider per client, written by it alone


def seed(call, *, computes=8, own=0):
    """Compute nodes and a disk pool they share through an aggregate, with
    room for far more claims than a run makes, and `own` providers of
    nothing (one per MixedLoad client). `call(method, path, body)` answers
    a requests.Response; the names are new ones, in a database seeded
    before too."""
    aggregate = str(uuid.uuid4())
    prefix = aggregate[:8]

    def provider(name, inventories=None, traits=()):
        rp = str(uuid.uuid4())
        _ok(call('POST', '/resource_providers', {'name': f'{prefix}-{name}', 'uuid': rp}))
        if not inventories:
            return rp
        _ok(call('PUT', f'/resource_providers/{rp}/inventories', {
            'resource_provider_generation': 0,
            'inventories': {rc: {'total': total} for rc, total in inventories.items()}}))
        _ok(call('PUT', f'/resource_providers/{rp}/aggregates', {
            'resource_provider_generation': 1, 'aggregates': [aggregate]}))
        if traits:
            _ok(call('PUT', f'/resource_providers/{rp}/traits', {
                'resource_provider_generation': 2, 'traits': list(traits)}))
        return rp
    nodes = [provider(f'cn-{i}', {'VCPU': 100000, 'MEMORY_MB': 10000000})
             for i in range(computes)]
    pool = provider('disk-pool', {'DISK_GB': 10000000}, ['MISC_SHARES_VIA_AGGREGATE'])
    return Cloud(nodes, pool, [provider(f'own-{i}') for i in range(own)])


def _ok(answer):
    assert answer.status_code in OK, answer.text
    return answer


def claim_body(cloud, index):
    """A claim of CLAIM on one of the compute nodes (by `index`) and
    SHARED_CLAIM on the pool, for a new consumer."""
    node = cloud.computes[index % len(cloud.computes)]
    return {'allocations': {node: {'resources': CLAIM}, cloud.pool: {'resources': SHARED_CLAIM}},
            'project_id': 'load', 'user_id': 'tester', 'consumer_generation': None,
            'consumer_type': 'INSTANCE'}


@dataclass
class Answer:
    kind: str
    target: str          # which API server (its URL)
    sent: float          # time.monotonic()
    done: float = 0.0
    status: int = None   # None: no HTTP answer at all (see error)
    code: str = ''       # Placement's error code
    error: str = ''
    body: str = ''
    headers: dict = field(default_factory=dict)
    consumers: tuple = ()
    provider: str = None     # the own provider written
    generation: int = None   # its generation after the write

    @property
    def consumer(self):
        return self.consumers[0]


class Clients:
    """`clients` threads each running `_client(index)` until stop(), the
    answers they record kept in order."""

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

    def run_for(self, seconds):
        """The load for `seconds`; its answers."""
        self.start()
        self._stop.wait(seconds)
        return self.stop()

    def record(self, answer):
        with self._lock:
            self.answers.append(answer)

    def count(self, condition):
        with self._lock:
            return sum(1 for a in self.answers if condition(a))

    def wait_for(self, count, *, after=0.0, timeout=60):
        """Until `count` writes sent after `after` (monotonic) succeeded."""
        wait_for(lambda: self.count(lambda a: a.status in OK and a.sent >= after) >= count,
                 f'{count} writes to succeed', timeout=timeout, interval=0.05)

    def acknowledged(self):
        """The consumers of the claims that succeeded."""
        return {c for a in self.answers if a.status in OK and a.kind in ('claim', 'post')
                for c in a.consumers}

    def _send(self, session, method, url, answer, body=None, timeout=60):
        reply = session.request(method, url, json=body, headers=CLOSE, timeout=timeout)
        answer.status, answer.body = reply.status_code, reply.text[:2000]
        answer.headers = dict(reply.headers)
        if reply.status_code >= 400:
            try:
                answer.code = json.loads(reply.text)['errors'][0].get('code', '')
            except (ValueError, KeyError, IndexError, TypeError):
                answer.code = ''
        return reply

    def _attempt(self, session, answer, send):
        """send(session), which fills `answer`; the answer recorded, a pause
        of `self.pause` after an error. The session to go on with: a new one
        after a broken connection."""
        try:
            send(session)
        except requests.RequestException as exc:
            answer.error = f'{type(exc).__name__}: {exc}'
            session = requests.Session()
        answer.done = time.monotonic()
        self.record(answer)
        if answer.status not in OK:
            time.sleep(self.pause)
        return session

    def _client(self, index):
        raise NotImplementedError


class ClaimsLoad(Clients):
    """`clients` threads claiming for new consumers on `server` (its url),
    one after another, until stop(). After an error a client pauses `pause`
    seconds."""

    def __init__(self, server, cloud, clients=8, pause=0.05):
        super().__init__(clients)
        self.server, self.cloud, self.pause = server, cloud, pause

    def _client(self, index):
        session = requests.Session()
        count = 0
        while not self._stop.is_set():
            count += 1
            consumer = str(uuid.uuid4())
            answer = Answer('claim', self.server.url, time.monotonic(), consumers=(consumer,))
            session = self._attempt(session, answer, lambda s: self._send(
                s, 'PUT', f'{self.server.url}/allocations/{consumer}', answer,
                claim_body(self.cloud, index * 1000 + count)))


class MixedLoad(Clients):
    """`clients` threads running ROUND until stop(). Client i sends its
    n-th request to targets[(i + n) % len(targets)]: with one API server
    per Galera node, consecutive requests of a client (a read of a
    generation, then the write) go through different nodes."""

    def __init__(self, targets, cloud, clients=10, pause=0.05, timeout=60):
        super().__init__(clients, join_timeout=timeout + 30)
        self.targets, self.cloud = list(targets), cloud
        self.pause, self.timeout = pause, timeout

    def _client(self, index):
        session = requests.Session()
        sent = itertools.count(index)
        held = collections.deque()   # consumers this client claimed and holds
        own = self.cloud.own[index % len(self.cloud.own)]
        state = {'traits': 0}
        for step in itertools.cycle(ROUND):
            if self._stop.is_set():
                return
            if step == 'delete' and not held:
                step = 'claim'
            target = self.targets[next(sent) % len(self.targets)]
            answer = Answer(step, target, time.monotonic())
            session = self._attempt(session, answer, lambda s: self._write(
                s, step, target, answer, held, own, state, sent))

    def _write(self, session, step, target, answer, held, own, state, sent):
        cloud, timeout = self.cloud, self.timeout
        if step == 'claim':
            consumer = str(uuid.uuid4())
            answer.consumers = (consumer,)
            self._send(session, 'PUT', f'{target}/allocations/{consumer}', answer,
                       claim_body(cloud, len(held) + int(answer.sent * 1000)), timeout)
            if answer.status in OK:
                held.append(consumer)
        elif step == 'delete':
            consumer = held.popleft()
            answer.consumers = (consumer,)
            # Not sent again when it failed: whether a delete that got no
            # answer happened is unknown (check_books allows either).
            self._send(session, 'DELETE', f'{target}/allocations/{consumer}', answer,
                       timeout=timeout)
        elif step == 'post':
            consumers = (str(uuid.uuid4()), str(uuid.uuid4()))
            answer.consumers = consumers
            body = {c: claim_body(cloud, i + int(answer.sent * 1000))
                    for i, c in enumerate(consumers)}
            self._send(session, 'POST', f'{target}/allocations', answer, body, timeout)
            if answer.status in OK:
                held.extend(consumers)
        else:
            # Read the generation through this server, write through the next.
            probe = Answer('read', target, time.monotonic())
            reply = self._send(session, 'GET', f'{target}/resource_providers/{own}', probe,
                               timeout=timeout)
            if reply.status_code != 200:
                answer.status, answer.code, answer.body = probe.status, probe.code, probe.body
                return
            generation = reply.json()['generation']
            target = answer.target = self.targets[next(sent) % len(self.targets)]
            answer.provider = own
            path, body = own_write(step, own, generation, state)
            reply = self._send(session, 'PUT', f'{target}{path}', answer, body, timeout)
            if reply.status_code == 200:
                answer.generation = reply.json()['resource_provider_generation']


def own_write(step, rp, generation, state):
    """(path, body) of an admin's write to a client's own provider."""
    if step == 'inventory':
        state['traits'] += 1
        return (f'/resource_providers/{rp}/inventories', {
            'resource_provider_generation': generation,
            'inventories': {'VCPU': {'total': 8 + state['traits'] % 8}}})
    if step == 'traits':
        traits = ['HW_CPU_X86_AVX2'] if state['traits'] % 2 else ['HW_CPU_X86_SSE42']
        return (f'/resource_providers/{rp}/traits', {
            'resource_provider_generation': generation, 'traits': traits})
    return (f'/resource_providers/{rp}/aggregates', {
        'resource_provider_generation': generation, 'aggregates': [str(uuid.uuid4())]})


# ---- what the answers say ----------------------------------------------------------

def tally(answers):
    """{kind: Counter of statuses ('none' for no answer)}, with each error
    code of a 409 or 5xx counted as 'status code'."""
    kinds = collections.defaultdict(collections.Counter)
    for a in answers:
        status = 'none' if a.status is None else a.status
        kinds[a.kind][status] += 1
        if a.status is not None and (a.status == 409 or a.status >= 500) and a.code:
            kinds[a.kind][f'{a.status} {a.code}'] += 1
    return {kind: dict(counts) for kind, counts in sorted(kinds.items())}


def failures(answers):
    return [a for a in answers if a.status not in OK]


def summary(answers):
    by_status = collections.Counter('none' if a.status is None else a.status for a in answers)
    return {'requests': len(answers), 'by_status': dict(sorted(by_status.items(), key=str)),
            'by_kind': tally(answers)}


# ---- the books, read from the database ----------------------------------------------

@dataclass
class Books:
    node: str
    consumers: dict              # consumer uuid -> allocation rows
    over_capacity: list          # (provider uuid, class id, used, capacity)
    used_mismatches: list        # inventories whose `used` column is not the sum
    generations: dict            # provider uuid -> generation
    checksum: str = ''           # of every allocation row


def read_books(conn, node=''):
    """What the database behind `conn` (a DB-API connection, closed here)
    holds: PostgreSQL's as its postgres user, a Galera node's as root after
    making sure it has applied everything the cluster committed."""
    try:
        cursor = conn.cursor()
        cursor.execute('SELECT c.uuid, count(a.id) FROM consumers c '
                       'LEFT JOIN allocations a ON a.consumer_id = c.id GROUP BY c.uuid')
        consumers = {str(uuid): rows for uuid, rows in cursor.fetchall()}
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
        over = list(cursor.fetchall())
        cursor.execute("""
            SELECT i.id FROM inventories i
            WHERE i.used <> (SELECT coalesce(sum(a.used), 0) FROM allocations a
                             WHERE a.resource_provider_id = i.resource_provider_id
                               AND a.resource_class_id = i.resource_class_id)""")
        mismatches = [row[0] for row in cursor.fetchall()]
        cursor.execute('SELECT uuid, generation FROM resource_providers')
        generations = {str(uuid): generation for uuid, generation in cursor.fetchall()}
        cursor.execute('SELECT c.uuid, a.resource_provider_id, a.resource_class_id, a.used '
                       'FROM allocations a JOIN consumers c ON c.id = a.consumer_id')
        rows = sorted(':'.join(map(str, row)) for row in cursor.fetchall())
        checksum = hashlib.md5(','.join(rows).encode()).hexdigest()
    finally:
        conn.close()
    return Books(node, consumers, over, mismatches, generations, checksum)


def check_books(books, answers):
    """Everything wrong with one database's books given the answers the
    clients got: {problem: count or examples}; empty when they balance."""
    problems = {}
    acknowledged, deleted, maybe_deleted = set(), set(), set()
    for a in answers:
        if a.status in OK and a.kind in ('claim', 'post'):
            acknowledged.update(a.consumers)
        elif a.status in OK and a.kind == 'delete':
            deleted.update(a.consumers)
        elif a.kind == 'delete':
            maybe_deleted.update(a.consumers)   # no answer, or an error: either
    missing = (acknowledged - deleted - maybe_deleted) - set(books.consumers)
    if missing:
        problems['acknowledged claims missing'] = len(missing)
    lingering = deleted & set(books.consumers)
    if lingering:
        problems['acknowledged deletes still held'] = len(lingering)
    partial = {c: rows for c, rows in books.consumers.items() if rows != ROWS_PER_CLAIM}
    if partial:
        problems['partial consumers'] = dict(itertools.islice(partial.items(), 5))
    if books.over_capacity:
        problems['over capacity'] = books.over_capacity[:5]
    if books.used_mismatches:
        problems['used not the sum of allocations'] = books.used_mismatches[:5]
    # Every acknowledged write to an own provider is there: its generation
    # is the last one a client was given (or later, by a write whose answer
    # was lost).
    last = {}
    for a in sorted(answers, key=lambda a: a.done):
        if a.generation is not None:
            last[a.provider] = a.generation
    behind = {rp: (gen, books.generations.get(rp)) for rp, gen in last.items()
              if books.generations.get(rp, -1) < gen}
    if behind:
        problems['acknowledged provider writes lost'] = behind
    return problems


def assert_books_balance(books, answers):
    """Nothing acknowledged is missing, no consumer is half-written, no
    provider is over capacity, every usage total is the sum of its rows."""
    problems = check_books(books, answers)
    assert problems == {}, problems
