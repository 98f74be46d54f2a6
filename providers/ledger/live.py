"""The ledger of one database: its image of the cloud and the roll-ups
(folds) kept on it, shared by every thread of the process.

Each read first brings the image up to date: one small read of the books'
version (providers.change_log) while nothing changed; otherwise, in one
snapshot, the tree stamps (one row per tree) and the trees whose stamps
moved, read again, and every fold moved along (providers.ledger.folds). So
the first read after a claim costs what the claim changed, not what the
cloud holds. A fold nobody reads stays until the byte budget needs its
room (PLACEMENT_LEDGER_MB: a cloud's folds grow with its trees and
consumers); a fold is built from the whole image the first time it is
asked for.

When a quarter of the trees changed at once (a bulk load, an import), the
image is read whole again and the folds built afresh when next asked.
"""
import collections
import contextlib
import gc
import logging
import threading
import time

import cachetools
from django.conf import settings
from django.db import connections

from placement_site import snapshots
from providers import change_log
from providers.ledger import stamps
from providers.ledger.image import Image
from providers.ledger.image import streamed

LOG = logging.getLogger('placement.ledger')

# Below this many changed trees the image always reads only those.
REREAD_FLOOR = 2000
# Moves remembered for answers computed while the image moved on.
MOVES_KEPT = 32
# A fold built this big (bytes, as estimated) is settled (settle()).
SETTLED_BYTES = 1 << 20
# The operator pool follows the writes (Ledger.follow) this long after the
# last page read the ledger; then it waits for the next.
FOLLOWED_SECONDS = 60.0


def settle():
    """Keep what was just built out of the cyclic collector's full passes.
    An image and its folds are a million containers at 100,000 providers,
    living until changes replace them (then freed by reference counting:
    they hold no cycles); every full pass over them stopped the operator's
    threads for 0.3-0.6 s, one every ten seconds or so under churn. A
    collection first, so no garbage is frozen with them."""
    gc.collect()
    gc.freeze()


class _Entry:
    """A fold in the budget: its estimated size counts against it."""
    __slots__ = ('fold', 'size')

    def __init__(self, fold, size):
        self.fold = fold
        self.size = size


class _Folds(cachetools.LRUCache):
    """The folds in their byte budget; the least recently read one that
    makes room says so (it is built again when next asked for)."""

    def __init__(self, using):
        super().__init__(budget_bytes(), getsizeof=lambda entry: entry.size)
        self.using = using

    def popitem(self):
        key, entry = super().popitem()
        LOG.info('ledger %s: dropped %s (%d bytes) for room', self.using, key[0], entry.size)
        return key, entry


class _Touched(collections.namedtuple('_Touched', 'version trees')):
    """What a remembered move keeps of an image: its version and the trees
    the move touched (all GuardedAnswer.update reads). Whole images kept
    for 32 moves held 32 copies of the cloud's tree index, which every
    full collection walked: 100 ms of it at 100,000 providers."""

    @classmethod
    def of(cls, image, roots):
        return cls(image.version, {root: image.trees[root] for root in roots
                                   if root in image.trees})


class Ledger:

    def __init__(self, using):
        self.using = using
        self.image = None
        self.lock = threading.RLock()
        self.folds = _Folds(using)
        self.refreshes = 0   # how many times the image moved
        self.last_read = 0.0  # when a page last read it (time.monotonic())
        self.follower = None
        self.follower_lock = threading.Lock()
        self.builds = 0      # how many folds were built from a whole image
        # The last moves, (old, new, trees affected; old and new _Touched):
        # what an answer computed meanwhile, at an older version, is moved along.
        self.moves = collections.deque(maxlen=MOVES_KEPT)

    def _refresh(self):
        # All of it at one moment: the page's snapshot when one is open.
        with snapshots.read_snapshot(self.using):
            version = change_log.version(self.using)
            # Read in a page's snapshot older than the image (another
            # thread moved it on meanwhile), the image stays as it is.
            if self.image is not None and (version == self.image.version or change_log.older(
                    version, self.image.version)):
                return
            connection = connections[self.using]
            tree_stamps = stamps.read(connection)
            rows = streamed(connection)
            old = self.image
            changed = old.changed_roots(tree_stamps) if old is not None else None
            if changed is None or len(changed) > max(REREAD_FLOOR, len(tree_stamps) // 4):
                started = time.monotonic()
                self.image = None   # the old one's memory back before the new one's
                self.folds.clear()
                self.moves.clear()
                self.image = Image.read(rows, version, tree_stamps)
                settle()
                LOG.info('ledger %s: read %d trees in %.2f s', self.using,
                         len(self.image.trees), time.monotonic() - started)
            else:
                new = old.succeeded(rows, version, tree_stamps, changed)
                affected = self._move_folds(old, new, changed)
                self.moves.append((_Touched.of(old, affected), _Touched.of(new, affected),
                                   affected))
                self.image = new
        self.refreshes += 1

    def _move_folds(self, old, new, changed):
        """Every fold follows the change: the trees read again, and those
        whose sharing providers changed (a share joined an aggregate)."""
        affected = set(changed)
        if (old.sharing or new.sharing) and new.members is not old.members:
            old_reach, new_reach = old.reach, new.reach
            affected.update(root for root in old_reach.keys() | new_reach.keys()
                            if old_reach.get(root) != new_reach.get(root))
        for key in list(self.folds.keys()):
            if not self.folds[key].fold.update(old, new, affected):
                del self.folds[key]   # built afresh when next asked for
        return affected

    def follow(self):
        """Keep the image close behind the writes while pages read it: a
        page after a pause (an export's seconds, an admin reading) finds
        the trees changed meanwhile already read, and reads only those
        changed since the last second. In the operator pool alone (its
        process is niced), every PLACEMENT_LEDGER_FOLLOW_SECONDS, until a
        minute passes with no page read, or the ledger is dropped."""
        every = settings.PLACEMENT_LEDGER_FOLLOW_SECONDS
        if every <= 0 or settings.PLACEMENT_SERVING_POOL != 'operator':
            return
        with self.follower_lock:
            if self.follower is None or not self.follower.is_alive():
                self.follower = threading.Thread(target=self._follow, args=(every,),
                                                 name='ledger-follower', daemon=True)
                self.follower.start()

    def _follow(self, every):
        try:
            while (time.monotonic() - self.last_read < FOLLOWED_SECONDS
                   and _ledgers.get(self.using) is self):
                time.sleep(every)
                try:
                    with self.lock:
                        self._refresh()
                except Exception:   # the database away: the pages will say so
                    LOG.warning('ledger %s: following the writes failed', self.using,
                                exc_info=True)
                    connections[self.using].close()
                    time.sleep(max(every, 5.0))
        finally:
            connections[self.using].close()

    def _read_now(self):
        if getattr(_unobserved, 'active', False):
            return
        self.last_read = time.monotonic()
        self.follow()

    def held(self, key):
        """The fold `key` if the ledger holds it (brought up to date), else None."""
        self._read_now()
        with self.lock:
            self._refresh()
            entry = self.folds.get(key)
            return entry.fold if entry is not None else None

    def keep(self, key, fold, version):
        """Hold a fold made outside the ledger at `version` (an answer read
        from the database: GuardedAnswer), moved along the moves since; not
        when the ledger no longer knows that version, or a move spoils it."""
        with self.lock:
            if self.image is None:
                return
            if version != self.image.version:
                since = [i for i, (old, _, _) in enumerate(self.moves) if old.version == version]
                if not since:
                    return
                for old, new, affected in list(self.moves)[since[-1]:]:
                    if not fold.update(old, new, affected):
                        return
            entry = _Entry(fold, fold.estimated_size())
            self.folds.pop(key, None)
            if entry.size <= self.folds.maxsize:
                self.folds[key] = entry

    def read(self, key, make, answer):
        """answer(fold, image) of the fold `key` (make() builds an empty
        one), brought up to date first."""
        self._read_now()
        with self.lock:
            self._refresh()
            entry = self.folds.get(key)
            if entry is None:
                started = time.monotonic()
                entry = _Entry(make(), 0)
                entry.fold.build(self.image)
                if entry.fold.estimated_size() >= SETTLED_BYTES:
                    settle()
                self.builds += 1
                LOG.info('ledger %s: built %s in %.2f s', self.using, key[0],
                         time.monotonic() - started)
            # Sized again as it is read: a fold grows and shrinks with its trees.
            entry.size = entry.fold.estimated_size()
            self.folds.pop(key, None)
            if entry.size <= self.folds.maxsize:
                self.folds[key] = entry
            return answer(entry.fold, self.image)

    def current(self):
        """The image, brought up to date."""
        self._read_now()
        with self.lock:
            self._refresh()
            return self.image


_unobserved = threading.local()


@contextlib.contextmanager
def unobserved():
    """Reads in this thread that are not a page's (the operator pool's
    start-up reads): they do not start the follower."""
    _unobserved.active = True
    try:
        yield
    finally:
        _unobserved.active = False


def budget_bytes():
    """What the folds may hold, in bytes (PLACEMENT_LEDGER_MB)."""
    return int(settings.PLACEMENT_LEDGER_MB * 1024 * 1024)


_ledgers = {}
_ledgers_lock = threading.Lock()


def ledger(using='default'):
    with _ledgers_lock:
        db_ledger = _ledgers.get(using)
        if db_ledger is None:
            db_ledger = _ledgers[using] = Ledger(using)
        return db_ledger


def forget():
    """Drop every ledger (tests that roll the database back under them)."""
    with _ledgers_lock:
        _ledgers.clear()
