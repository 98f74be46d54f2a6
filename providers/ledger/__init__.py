"""The dashboards' books kept in step with the writes.

An image of every provider tree (providers.ledger.image) is kept per
database and process, read again tree by tree as the triggers' tree
stamps (providers.ledger.stamps) say which trees a write touched; the
roll-ups the pages and GET /capacity read (a grouping's books, how many
more of a shape fit each group, each tree's count) are folds over it
(providers.ledger.folds), moved along with the changed trees only. The
first read after a claim costs what the claim changed.

Writes never read here: inside a transaction that may write, the books
are summed from the live rows (providers.books, providers.capacity), and
tests/ledger/ holds the folds to those sums on random write sequences.
"""
import dataclasses
import logging
import threading

from django.conf import settings
from django.db import connections

from providers import change_log
from providers.fits import Fit
from providers.ledger import groupings
from providers.ledger.folds import BooksFold
from providers.ledger.folds import FitsFold
from providers.ledger.folds import FullestFold
from providers.ledger.folds import FullestTreesFold
from providers.ledger.folds import GuardedAnswer
from providers.ledger.live import forget
from providers.ledger.live import ledger
from providers.ledger.live import unobserved

LOG = logging.getLogger('placement.ledger')

__all__ = ['books', 'fits', 'folded', 'forget', 'fullest_providers', 'fullest_trees', 'groupings',
           'held_answer', 'in_background', 'keep_answer', 'provider_counts', 'serves', 'tree_books',
           'tree_fits']


def serves(using):
    """Whether reads on `using` may come from the ledger: it is on, this
    is not the API pool (the image is the operator pool's: an API worker
    reading GET /pods sums the rows rather than read a cloud into its
    memory), and they are not inside a transaction that may write (a page's
    read snapshot may: placement_site.snapshots)."""
    return (settings.PLACEMENT_LEDGER and settings.PLACEMENT_SERVING_POOL != 'api'
            and change_log.serving(using))


def _shapes_key(shapes):
    return tuple(tuple(sorted(shape.items())) for shape in shapes)


def _every_pool(grouping):
    """(the grouping of every pool when it names some, the pools it names):
    one fold serves every page of pools."""
    if grouping.kind == groupings.POOLS and grouping.aggregates is not None:
        return dataclasses.replace(grouping, aggregates=None), grouping.aggregates
    return grouping, None


def books(using, grouping, classes=None):
    """{group: {class name: ClassUsage}} of the grouping, the classes
    `classes` (None: all), as providers.books.scope_books sums it."""
    grouping, wanted = _every_pool(grouping)
    classes = None if classes is None else frozenset(classes)

    def answer(fold, image):
        return fold.value(image, groups=wanted, classes=classes)
    return ledger(using).read(('books', grouping), lambda: BooksFold(grouping), answer)


def fits(using, grouping, shapes):
    """{group: [Fit per shape]}, as providers.capacity.fit_counts counts them."""
    grouping, wanted = _every_pool(grouping)
    return ledger(using).read(('fits', grouping, _shapes_key(shapes)),
                              lambda: FitsFold(grouping, shapes),
                              lambda fold, image: fold.value(image, groups=wanted))


def folded(using, key, grouping, make, answer):
    """answer(fold, image, groups) of a fold another module defines
    (make(grouping) builds it: build, update, value, estimated_size as in
    providers.ledger.folds), kept under `key` and the grouping; groups: the
    pools the grouping names (None: all), one fold serving every pool."""
    grouping, wanted = _every_pool(grouping)
    return ledger(using).read((*key, grouping), lambda: make(grouping),
                              lambda fold, image: answer(fold, image, wanted))


def tree_fits(using, grouping, shapes):
    """(total [Fit per shape], {root: [count per shape]}) over the trees of
    a CLOUD grouping, as providers.capacity.tree_fit_counts counts them."""
    def answer(fold, image):
        fits = fold.value(image).get(groupings.CLOUD)
        return fits or [Fit(0) for _ in shapes], fold.tree_counts(image)
    return ledger(using).read(('tree fits', grouping, _shapes_key(shapes)),
                              lambda: FitsFold(grouping, shapes, per_tree=True), answer)


def fullest_providers(using, wanted):
    """FullestFold.providers: ([provider id] fullest first, whether all)."""
    return ledger(using).read(('fullest',), FullestFold,
                              lambda fold, image: fold.providers(wanted))


def fullest_trees(using, wanted, fullest=True):
    """FullestTreesFold.value, and the roots of the trees without capacity:
    ([(root, fullest class id)], whether all, [root])."""
    return ledger(using).read(('fullest trees',), FullestTreesFold, lambda fold, image: (
        *fold.value(wanted, fullest), fold.without_capacity()))


def held_answer(using, key):
    """An answer kept with keep_answer() and still as it was, or None."""
    fold = ledger(using).held(('answer', key))
    return None if fold is None else fold.value


def keep_answer(using, key, value, spoiled, size):
    """Hold `value`, read from the database in the snapshot this reads the
    books' version in, while the trees that change leave it as it is
    (folds.GuardedAnswer: spoiled(old tree, new tree))."""
    ledger(using).keep(('answer', key), GuardedAnswer(value, spoiled, size),
                       change_log.version(using))


def provider_counts(using):
    """(providers, roots): how many providers, and trees, the image holds."""
    image = ledger(using).current()
    return image.provider_count, len(image.trees)


def tree_books(using, roots):
    """{root: {class name: ClassUsage}} of the trees `roots`, from the image."""
    image = ledger(using).current()
    fold = BooksFold(groupings.Grouping(groupings.TREES))
    for root in roots:
        tree = image.trees.get(root)
        if tree is not None:
            fold.add(image, tree)
    return fold.value(image)


def in_background(work, using='default'):
    """work(using) in a thread of its own (a failure is logged, not raised:
    the pages read it themselves then), its connection closed after."""
    def run():
        try:
            try:
                with unobserved():   # no page read it: nothing to follow yet
                    work(using)
            finally:
                connections[using].close()
        except Exception:   # the database not up yet, say: the pages will read
            LOG.warning('ledger: reading the image at start failed', exc_info=True)
    threading.Thread(target=run, name='ledger-prewarm', daemon=True).start()
