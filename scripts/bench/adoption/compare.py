"""Two answers to the same GET, the source's and ours, judged: the same
bytes, the same JSON, the same members in another order, two valid samples
of limited candidates, a deliberate difference (README), or different.
"""
import concurrent.futures as cf
import json
import urllib.parse
from collections import Counter
from email.utils import parsedate_to_datetime

# Headers that are per answer by nature (the request id) or per second (Date).
IGNORED_HEADERS = {'date', 'x-openstack-request-id', 'openstack-request-id'}
# Headers only we send, by design (docs/conditional.md): not compared on our side.
OURS_ONLY_HEADERS = {'etag'}


def request_id_free(answer):
    """The body with the answer's own request id (error bodies carry it) blanked."""
    rid = answer.header('x-openstack-request-id')
    return answer.body.replace(rid.encode(), b'<request-id>') if rid else answer.body


def is_now(answer):
    """Last-Modified equal to the answer's Date (within 2 s): dated 'now'."""
    modified, date = answer.header('last-modified'), answer.header('date')
    if not (modified and date):
        return False
    return abs((parsedate_to_datetime(modified) - parsedate_to_datetime(date)).total_seconds()) <= 2


def canonical_request(areq):
    """An allocation request with its lists (mappings, pre-1.12 allocations)
    in a fixed order: Placement builds them from sets."""
    areq = dict(areq)
    if isinstance(areq.get('allocations'), list):
        areq['allocations'] = sorted(areq['allocations'],
                                     key=lambda a: json.dumps(a, sort_keys=True))
    if 'mappings' in areq:
        areq['mappings'] = {k: sorted(v) for k, v in areq['mappings'].items()}
    return json.dumps(areq, sort_keys=True)


def canonical_summaries(summaries):
    return {rp: dict(s, traits=sorted(s['traits'])) if 'traits' in s else s
            for rp, s in summaries.items()}


def providers_of(areq):
    allocations = areq['allocations']
    if isinstance(allocations, dict):
        return list(allocations)
    return [a['resource_provider']['uuid'] for a in allocations]


def sorted_deep(value):
    """The JSON value with every list sorted: Placement 16 has no ORDER BY in
    any list query, so its lists come in the order the database returns rows."""
    if isinstance(value, dict):
        return {k: sorted_deep(v) for k, v in value.items()}
    if isinstance(value, list):
        return sorted((sorted_deep(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
    return value


def deliberate(path, version, old, new):
    """A difference README lists as deliberate, with its reason, or None."""
    if (path.startswith('/usages') and old.status == 500 and new.status == 200
            and version and tuple(map(int, version.split('.'))) >= (1, 38)
            and b'GroupingError' in old.body):
        return ('GET /usages at 1.38+ on PostgreSQL: Placement 16.0.0 answers 500 '
                '(a GROUP BY its SQL lacks); ours answers 200 (README, deliberate differences)')
    return None


def same_candidates(a, b):
    """The same allocation requests and summaries, in any order."""
    return (sorted(map(canonical_request, a['allocation_requests']))
            == sorted(map(canonical_request, b['allocation_requests']))
            and canonical_summaries(a['provider_summaries'])
            == canonical_summaries(b['provider_summaries'])
            and {k: v for k, v in a.items() if k not in ('allocation_requests',
                                                         'provider_summaries')}
            == {k: v for k, v in b.items() if k not in ('allocation_requests',
                                                        'provider_summaries')})


def valid_sample(answer, full, limit, roots):
    """A limited answer as Placement makes it from the full one: `limit`
    distinct requests of the full answer, and the summaries of every
    provider in the trees those requests use (research_context.limit_results)."""
    reqs = [canonical_request(a) for a in answer['allocation_requests']]
    pool = {canonical_request(a) for a in full['allocation_requests']}
    if len(reqs) != min(limit, len(pool)) or len(set(reqs)) != len(reqs) or not set(reqs) <= pool:
        return False
    used = {roots.get(rp) for a in answer['allocation_requests'] for rp in providers_of(a)}
    expected = {rp: s for rp, s in full['provider_summaries'].items() if roots.get(rp) in used}
    return canonical_summaries(answer['provider_summaries']) == canonical_summaries(expected)


def compare(path, version, old, new, full=None, roots=None):
    """(verdict, problems, now): verdict is bytes, json (the same JSON
    written differently), order (the same members, lists in another order),
    sample (limited candidates: both valid samples of the source's full
    answer `full`), deliberate (a documented difference) or different."""
    problems = []
    if old.status != new.status:
        problems.append(f'status {old.status} != {new.status}')
    headers = {}
    for side, answer in (('old', old), ('new', new)):
        ignored = IGNORED_HEADERS | {'content-length', 'last-modified'} | (
            OURS_ONLY_HEADERS if side == 'new' else set())
        headers[side] = Counter((k.lower(), v) for k, v in answer.headers
                                if k.lower() not in ignored)
        if int(answer.header('content-length') or len(answer.body)) != len(answer.body):
            problems.append(f'{side} content-length does not match its body')
    if headers['old'] != headers['new']:
        only_old = headers['old'] - headers['new']
        only_new = headers['new'] - headers['old']
        problems.append(f'headers: only old {sorted(only_old.elements())}, '
                        f'only new {sorted(only_new.elements())}')
    lm_old, lm_new = old.header('last-modified'), new.header('last-modified')
    now = False
    if lm_old != lm_new:
        if lm_old and lm_new and is_now(old) and is_now(new):
            now = True
        else:
            problems.append(f'last-modified {lm_old} != {lm_new}')
    reason = deliberate(path, version, old, new)
    if reason:
        return 'deliberate', [reason], now
    body_old, body_new = request_id_free(old), request_id_free(new)
    verdict = 'bytes'
    if body_old != body_new:
        try:
            j_old, j_new = json.loads(body_old), json.loads(body_new)
        except ValueError:
            j_old, j_new = body_old, body_new
        if j_old == j_new:
            verdict = 'json'
        elif (path.startswith('/allocation_candidates') and old.status == new.status == 200
              and same_candidates(j_old, j_new)):
            verdict = 'order'
        elif (full is not None and old.status == new.status == 200
              and valid_sample(j_old, full, limit_of(path), roots)
              and valid_sample(j_new, full, limit_of(path), roots)):
            verdict = 'sample'
        elif old.status == new.status and sorted_deep(j_old) == sorted_deep(j_new):
            verdict = 'order'
        else:
            problems.append('body differs')
    if problems:
        return 'different', problems, now
    return verdict, [], now


def diff_text(old, new, limit=1500):
    def show(a):
        heads = '\n'.join(f'  {k}: {v}' for k, v in sorted(a.headers))
        return f'{a.status}\n{heads}\n  {a.body[:limit].decode(errors="replace")}'
    return f'--- old\n{show(old)}\n--- ours\n{show(new)}'


def limit_of(path):
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(path).query)
    return int(query['limit'][0]) if 'limit' in query else None


def without_limit(path):
    parts = urllib.parse.urlsplit(path)
    query = [(k, v) for k, v in urllib.parse.parse_qsl(parts.query) if k != 'limit']
    return parts.path + '?' + urllib.parse.urlencode(query, safe=':,!')


def compare_all(source, ours, reqs, threads, roots):
    results = []

    def one(req):
        path, version = req
        old = source.call('GET', path, version=version)
        new = ours.call('GET', path, version=version)
        full = None
        if path.startswith('/allocation_candidates') and limit_of(path) and old.status == 200:
            full = source.expect('GET', without_limit(path), version=version).json()
        verdict, problems, now = compare(path, version, old, new, full, roots)
        return path, version, verdict, problems, now, old, new

    with cf.ThreadPoolExecutor(threads) as pool:
        for result in pool.map(one, reqs):
            results.append(result)
    return results
