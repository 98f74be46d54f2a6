"""Results remembered against the books' change log (providers.change_log).

`remembered()` keeps a result (the explorer's answer, a scope's books
where the ledger does not keep them) in the process for as long as the
version read before computing it is the newest: a warm dashboard costs one
small read, and any change to the books makes the next read compute
afresh. Results are kept pickled, so no reader can change them, within a
byte budget (PLACEMENT_REMEMBERED_MB), the least recently read dropped
first. Inside a transaction that may write nothing is remembered or
served: a write sees its own rows, exactly, and a rolled-back write cannot
leave a result behind; a page's read snapshot (placement_site.snapshots)
is served like any read. A read at an older version than the results
held (a snapshot begun before another thread's read) is computed, not
kept.
"""
import pickle
import threading

import cachetools
from django.conf import settings
from django.core.exceptions import EmptyResultSet

from providers.change_log import older
from providers.change_log import serving
from providers.change_log import version


class _Remembered:
    """One database's remembered results, all computed at one version,
    pickled, in a byte budget."""

    def __init__(self):
        self.version = None
        self.results = cachetools.LRUCache(budget_bytes(), getsizeof=len)


def budget_bytes():
    """What remembered answers may hold, in bytes (PLACEMENT_REMEMBERED_MB)."""
    return int(settings.PLACEMENT_REMEMBERED_MB * 1024 * 1024)


_remembered = {}
_lock = threading.Lock()


def query_key(queryset):
    """What a queryset reads, as its SQL and parameters: a remembered
    result's key."""
    try:
        return repr(queryset.query.get_compiler(using=queryset.db).as_sql())
    except EmptyResultSet:
        return 'nothing'


def remembered(using, key, compute):
    """compute(), or what it returned for `key` on database `using` while
    nothing in the books has changed since. Results must not be changed by
    their readers."""
    if not serving(using):
        return compute()
    current = version(using)
    with _lock:
        held = _remembered.get(using)
        if held is None:
            held = _remembered[using] = _Remembered()
        if older(current, held.version):
            return compute()   # a snapshot older than what is held: not kept
        if held.version != current:
            held.version = current
            held.results.clear()
        kept = held.results.get(key)
    if kept is not None:
        return pickle.loads(kept)
    result = compute()
    kept = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
    with _lock:
        held = _remembered[using]
        if held.version == current and len(kept) <= held.results.maxsize:
            held.results[key] = kept
    return result


def forget():
    """Drop every remembered result (tests that rewrite the clock or the
    settings the results depend on)."""
    with _lock:
        _remembered.clear()
