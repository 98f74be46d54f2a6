"""Placement on a Galera cluster under load, and its books read back from
every node: the high-availability tests (tests/test_galera.py) and the full
runs (scripts/galera_run.py, docs/ha.md) share these.

Each client claims for new consumers, deletes what it claimed, writes
several consumers at once (POST /allocations), and rewrites the
inventories, traits and aggregates of a provider of its own after reading
its generation. No write of this mix can meet a real generation conflict:
new consumers carry no generation, deletes none, and nobody else writes a
client's own provider. So every 409 is a fault (a database abort the server
let through, or a read that missed a write made through another node), and
so is every 5xx but the 503 of a database that is away."""
import collections
import itertools
import json
import time
import uuid
from dataclasses import dataclass, field

import requests

from tests.claims_load import CLAIM, ROWS_PER_CLAIM, SHARED_CLAIM, Clients
from tests.servers import HEADERS

KINDS = ('claim', 'delete', 'post', 'inventory', 'traits', 'aggregates')
# A client's round: mostly claims and deletes (every client contends for the
# shared disk pool and the compute nodes), then one of each other write.
ROUND = ('claim', 'claim', 'delete', 'claim', 'post', 'delete', 'inventory', 'claim',
         'delete', 'traits', 'claim', 'delete', 'aggregates', 'delete')
OK = {200, 204}
CLOSE = {**HEADERS, 'Connection': 'close'}


@dataclass
class Cloud:
    computes: list
    pool: str
    own: list            # one provider per client, written by that client alone


def seed(call, clients, computes=6):
    """Compute nodes and a disk pool they share through an aggregate, with
    room for far more claims than a run makes, and a provider per client.
    `call(method, path, body)` answers a requests.Response."""
    aggregate = str(uuid.uuid4())
    prefix = aggregate[:8]   # names of their own, in a database seeded before

    def provider(name, inventories, traits=()):
        rp = str(uuid.uuid4())
        _ok(call('POST', '/resource_providers', {'name': f'{prefix}-{name}', 'uuid': rp}))
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
    own = []
    for i in range(clients):
        rp = str(uuid.uuid4())
        _ok(call('POST', '/resource_providers', {'name': f'{prefix}-own-{i}', 'uuid': rp}))
        own.append(rp)
    return Cloud(nodes, pool, own)


def _ok(answer):
    assert answer.status_code in OK, answer.text
    return answer


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
    consumers: tuple = ()
    provider: str = None     # the own provider written
    generation: int = None   # its generation after the write


class Load(Clients):
    """`clients` threads running ROUND until stop(). Client i sends its
    n-th request to targets[(i + n) % len(targets)]: with one API server
    per Galera node, consecutive requests of a client (a read of a
    generation, then the write) go through different nodes."""

    def __init__(self, targets, cloud, clients=10, pause=0.05, timeout=60):
        super().__init__(clients, join_timeout=timeout + 30)
        self.targets, self.cloud = list(targets), cloud
        self.pause, self.timeout = pause, timeout

    def run_for(self, seconds):
        self.start()
        time.sleep(seconds)
        return self.stop()

    def wait_for(self, count, *, after=0.0, timeout=60):
        """Until `count` writes sent after `after` (monotonic) succeeded."""
        deadline = time.monotonic() + timeout
        while self.count(lambda a: a.status in OK and a.sent >= after) < count:
            if time.monotonic() > deadline:
                raise TimeoutError(f'fewer than {count} writes succeeded in {timeout} s')
            time.sleep(0.05)

    # ---- one client ----

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
            try:
                session = self._write(session, step, target, answer, held, own, state, sent)
            except requests.RequestException as exc:
                answer.error = f'{type(exc).__name__}: {exc}'
                session = requests.Session()
            answer.done = time.monotonic()
            self.record(answer)
            if answer.status not in OK:
                time.sleep(self.pause)

    def _send(self, session, method, url, answer, body=None):
        # A connection per request: a kept-alive one that the server closes
        # as idle just when the next request goes out is reset, whatever the
        # database does (gunicorn keeps idle connections 2 s).
        reply = session.request(method, url, json=body, headers=CLOSE, timeout=self.timeout)
        answer.status, answer.body = reply.status_code, reply.text[:2000]
        if reply.status_code >= 400:
            try:
                answer.code = json.loads(reply.text)['errors'][0].get('code', '')
            except (ValueError, KeyError, IndexError, TypeError):
                answer.code = ''
        return reply

    def _write(self, session, step, target, answer, held, own, state, sent):
        cloud = self.cloud
        if step == 'claim':
            consumer = str(uuid.uuid4())
            answer.consumers = (consumer,)
            self._send(session, 'PUT', f'{target}/allocations/{consumer}', answer,
                       claim_body(cloud, len(held) + int(answer.sent * 1000)))
            if answer.status in OK:
                held.append(consumer)
        elif step == 'delete':
            consumer = held.popleft()
            answer.consumers = (consumer,)
            # Not sent again when it failed: whether a delete that got no
            # answer happened is unknown (check_books allows either).
            self._send(session, 'DELETE', f'{target}/allocations/{consumer}', answer)
        elif step == 'post':
            consumers = (str(uuid.uuid4()), str(uuid.uuid4()))
            answer.consumers = consumers
            body = {c: claim_body(cloud, i + int(answer.sent * 1000))
                    for i, c in enumerate(consumers)}
            self._send(session, 'POST', f'{target}/allocations', answer, body)
            if answer.status in OK:
                held.extend(consumers)
        else:
            # Read the generation through this server, write through the next.
            probe = Answer('read', target, time.monotonic())
            reply = self._send(session, 'GET', f'{target}/resource_providers/{own}', probe)
            if reply.status_code != 200:
                answer.status, answer.code, answer.body = probe.status, probe.code, probe.body
                return session
            generation = reply.json()['generation']
            target = answer.target = self.targets[next(sent) % len(self.targets)]
            answer.provider = own
            path, body = own_write(step, own, generation, state)
            reply = self._send(session, 'PUT', f'{target}{path}', answer, body)
            if reply.status_code == 200:
                answer.generation = reply.json()['resource_provider_generation']
        return session


def claim_body(cloud, index):
    node = cloud.computes[index % len(cloud.computes)]
    return {'allocations': {node: {'resources': CLAIM}, cloud.pool: {'resources': SHARED_CLAIM}},
            'project_id': 'ha', 'user_id': 'tester', 'consumer_generation': None,
            'consumer_type': 'INSTANCE'}


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


# ---- the books, read from each node ------------------------------------------------

@dataclass
class Books:
    node: str
    consumers: dict              # consumer uuid -> allocation rows
    over_capacity: list
    used_mismatches: list
    generations: dict            # provider uuid -> generation
    checksum: str = ''
    extra: dict = field(default_factory=dict)


def read_books(node):
    """What one Galera node holds (tests.galera_cluster.Node), read as root
    after making sure it has applied everything the cluster committed."""
    conn = node.connect(db='placement')
    try:
        cursor = conn.cursor()
        cursor.execute('SET SESSION wsrep_sync_wait = 1')
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
        over = list(cursor.fetchall())
        cursor.execute("""
            SELECT i.id FROM inventories i
            WHERE i.used <> (SELECT coalesce(sum(a.used), 0) FROM allocations a
                             WHERE a.resource_provider_id = i.resource_provider_id
                               AND a.resource_class_id = i.resource_class_id)""")
        mismatches = [row[0] for row in cursor.fetchall()]
        cursor.execute('SELECT uuid, generation FROM resource_providers')
        generations = dict(cursor.fetchall())
        cursor.execute("""
            SELECT md5(group_concat(concat_ws(':', c.uuid, a.resource_provider_id,
                                              a.resource_class_id, a.used)
                                    ORDER BY c.uuid, a.resource_provider_id,
                                             a.resource_class_id SEPARATOR ','))
            FROM allocations a JOIN consumers c ON c.id = a.consumer_id""")
        checksum = cursor.fetchone()[0] or ''
    finally:
        conn.close()
    return Books(node.name, consumers, over, mismatches, generations, checksum)


def check_books(books, answers, cloud):
    """Everything wrong with one node's books given the answers the clients
    got: {problem: count or examples}; empty when they balance."""
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
