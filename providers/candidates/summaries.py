"""Provider summaries: capacity, usage, max_unit and traits of every provider
in the trees the candidates come from, read for the answer (which lists
them) and, when several groups are combined, for combining (which checks
each combination's capacity with them).

The selector reads them between the stages, never a later stage: when
several groups are combined, before combining, the trees their requests use
(and, for candidates handed on as they are made, the traits of the trees
every group reaches: the answer's); after combining, the trees of the
candidates kept (after any limit) and their traits. Reading trees is two
queries per call (providers, inventories with usage and their class names),
whatever the number of trees; traits are read once, and named from one
read of the traits, unless this process read them at the providers'
present generations already (_TraitsRead). Constructing Summaries does no
I/O.
"""
import collections

from django.contrib.postgres.aggregates import ArrayAgg
from django.db import connections
from django.db import router
from django.db.models import CharField
from django.db.models.functions import Cast

from placement_site.prepared import Ids
from placement_site.prepared import Prepared
from providers import rules
from providers.models import Inventory
from providers.models import ProviderTrait
from providers.models import ResourceProvider
from providers.models import Trait

# Above this many trees, reading whole tables beats a huge IN list; above
# LISTED_ANYWAY, it may already (see Summaries._by_list).
WHOLE_TABLE_THRESHOLD = 1000
LISTED_ANYWAY = 200


class ProviderSummary:
    __slots__ = ('id', 'uuid', 'parent_id', 'root_id', 'version', 'resources', 'traits')

    def __init__(self, id, uuid, parent_id, root_id, version=None):
        self.id = id
        self.uuid = uuid
        self.parent_id = parent_id
        self.root_id = root_id
        self.version = version  # (generation, updated_at): see _TraitsRead
        self.resources = {}   # class name -> (capacity, used, max_unit)
        self.traits = []      # names, in trait id order


class Summaries:
    """The ProviderSummary of every provider in the trees read so far, for
    one search."""

    def __init__(self, wide):
        self.wide = wide     # the RequestFindings: the roots of the providers
        self.by_id = {}      # provider id -> ProviderSummary
        self.read_roots = set()
        self._trait_names = None

    def roots(self, requests):
        """The trees of every provider the requests use."""
        root_of = self.wide.root_of
        return {root_of(r, p) for r in requests for p, _, _ in r.resources}

    def read_trees(self, root_ids):
        """Read every provider of the trees not read yet."""
        new_roots = set(root_ids) - self.read_roots
        if not new_roots:
            return
        self.read_roots |= new_roots
        roots = Ids(new_roots) if self._by_list(new_roots) else None
        added = {}
        for pk, uuid, parent_id, root_id, generation, updated_at in _PROVIDERS.rows(roots):
            if root_id in new_roots and pk not in self.by_id:
                added[pk] = ProviderSummary(pk, uuid, parent_id, root_id,
                                            (generation, updated_at))
        names = {}  # each class's name once, however many rows carry it
        for provider_id, name, total, reserved, ratio, max_unit, used in \
                _INVENTORIES.rows(*_narrowed(roots, added)):
            summary = added.get(provider_id)
            if summary is not None:
                summary.resources[names.setdefault(name, name)] = (
                    rules.whole_capacity(total, reserved, ratio), int(used or 0), max_unit)
        self.by_id.update(added)

    def _by_list(self, roots):
        """Read these trees' rows by a list of them, or the whole tables?
        A long list costs the database more to plan than a read of every
        row: beyond LISTED_ANYWAY trees, a list is used only for less than
        half of the cloud's (as the research counted them)."""
        if len(roots) > WHOLE_TABLE_THRESHOLD:
            return False
        return len(roots) <= LISTED_ANYWAY or 2 * len(roots) < self.wide.trees

    def _set_traits(self, summaries):
        """The traits of these summaries, in trait id order (as Placement's
        (trait, provider) key gives them): as this process last read them
        where the provider's generation is unchanged; else ids, named from
        one read of the traits (aggregating the names instead costs
        PostgreSQL more than that read)."""
        by_id = {s.id: s for s in _TRAITS_READ.recalled(summaries)}
        if not by_id:
            return
        self._read_traits(by_id)
        _TRAITS_READ.remember(list(by_id.values()))

    def _read_traits(self, by_id):
        summaries = by_id.values()
        roots = {s.root_id for s in summaries}
        narrowed = _narrowed(Ids(roots) if self._by_list(roots) else None, by_id)
        trait_names = self.trait_names()
        if connections[router.db_for_read(ProviderTrait)].vendor == 'postgresql':
            # One row per provider instead of one per trait (~30 per node),
            # sorted here: ordering within each aggregate costs PostgreSQL
            # a sort per provider (13 against 9 ms for 2,500 providers).
            for provider_id, trait_ids in _TRAIT_IDS_AGGREGATED.rows(*narrowed):
                summary = by_id.get(provider_id)
                if summary is not None:
                    summary.traits = [trait_names[t] for t in sorted(trait_ids)]
            return
        # Sorted here, per provider: ORDER BY trait_id lets MariaDB walk the
        # whole (trait, provider) index instead of the trees' few providers
        # (15 of a 27 ms answer at 1,000 compute nodes).
        trait_ids = collections.defaultdict(list)
        for provider_id, trait_id in _TRAIT_IDS.rows(*narrowed):
            if provider_id in by_id:
                trait_ids[provider_id].append(trait_id)
        for provider_id, ids in trait_ids.items():
            by_id[provider_id].traits = [trait_names[t] for t in sorted(ids)]

    def trait_names(self):
        """{trait id: name}, read once per search."""
        if self._trait_names is None:
            self._trait_names = dict(_TRAIT_NAMES.rows())
        return self._trait_names

    def for_answer(self, requests, only=None):
        """The summaries of every provider in the trees the requests use
        (before 1.29: only the providers in `only`), with their traits."""
        if not requests:
            return []
        return self.with_traits(self.roots(requests), only)

    def with_traits(self, roots, only=None):
        """The summaries of every provider in these trees, read if need be,
        with their traits (only: of these providers alone)."""
        self.read_trees(roots)
        answer = in_trees(self.by_id, roots, only)
        self._set_traits(answer)
        return answer


def in_trees(by_id, roots, only=None):
    """The summaries (of `by_id`, in its order) of every provider in these
    trees (only: of these providers alone). No I/O."""
    return [s for s in by_id.values() if s.root_id in roots and (only is None or s.id in only)]


class _TraitsRead:
    """Each provider's trait names as this process last read them, with the
    uuid, generation and updated_at they were read at. A provider's traits
    change only with both of those (providers.services.traits_replace
    bumps the generation and stamps the time) and a trait is never renamed,
    so while they are unchanged the names need no read: most of an answer's
    providers, most of the time (the traits are a third of the summaries'
    reads). The time tells apart a provider whose id, uuid and generation
    came back with other traits: a database restored to an older state and
    written again, or a test's rolled-back rows. Forgotten all at once when
    full, so a worker's memory stays bounded; identical lists are kept
    once."""

    def __init__(self, size):
        self.size = size
        self._by_id = {}     # provider id -> (uuid, version, trait names)
        self._lists = {}     # tuple of names -> the one list of them

    def recalled(self, summaries):
        """Set the traits of the summaries remembered; the others, to read."""
        by_id, unknown = self._by_id, []
        for summary in summaries:
            seen = by_id.get(summary.id)
            if seen is not None and seen[1] == summary.version and seen[0] == summary.uuid:
                summary.traits = seen[2]
            else:
                unknown.append(summary)
        return unknown

    def remember(self, summaries):
        """Remember the summaries' traits, unless they are more than it
        keeps (a whole cloud's: each would push out the last)."""
        if len(summaries) > self.size:
            return
        by_id, lists = self._by_id, self._lists
        for summary in summaries:
            if len(by_id) >= self.size:
                self.forget()
            names = lists.setdefault(tuple(summary.traits), summary.traits)
            by_id[summary.id] = (summary.uuid, summary.version, names)

    def forget(self):
        self._by_id.clear()
        self._lists.clear()


# Providers whose traits a worker remembers (about 10 MB at most).
TRAITS_REMEMBERED = 50_000
_TRAITS_READ = _TraitsRead(TRAITS_REMEMBERED)


def forget_traits():
    """Read every provider's traits again from the next search on."""
    _TRAITS_READ.forget()


# ---- the reads, compiled once per shape (placement_site.prepared.Prepared); `roots`
# or `providers` (Ids) narrows each to some trees or providers, None reads the
# whole table.

# Up to this many providers, their rows are read by their ids (an index);
# beyond, planning the long list costs more than joining their trees' roots.
BY_ID_THRESHOLD = 1000


def _narrowed(roots, providers):
    """(roots, providers) for a read of some providers' rows (Ids or None
    for each): by their ids, else by their roots, else the whole table."""
    if roots is None:
        return None, None
    if len(providers) <= BY_ID_THRESHOLD:
        return None, Ids(providers)
    return roots, None


def _in_trees(queryset, roots, root_field='root_provider_id'):
    return queryset if roots is None else queryset.filter(**{f'{root_field}__in_ids': roots})


def _of(queryset, roots, providers):
    """Rows of the providers, or of the trees' providers (a join), or all."""
    if providers is not None:
        return queryset.filter(resource_provider_id__in_ids=providers)
    return _in_trees(queryset, roots, 'resource_provider__root_provider_id')


# updated_at as text: compared, never read as a time (a datetime per row
# made reading 100,000 providers twice as slow).
_PROVIDERS = Prepared(ResourceProvider, lambda roots: _in_trees(
    ResourceProvider.objects.annotate(stamp=Cast('updated_at', CharField())), roots).values_list(
    'id', 'uuid', 'parent_provider_id', 'root_provider_id', 'generation', 'stamp'))
_INVENTORIES = Prepared(Inventory, lambda roots, providers: _of(
    Inventory.objects.all(), roots, providers).values_list(
    'resource_provider_id', 'resource_class__name', 'total', 'reserved', 'allocation_ratio',
    'max_unit', 'used').order_by('id'))
_TRAIT_NAMES = Prepared(Trait, lambda: Trait.objects.values_list('id', 'name'))
_TRAIT_IDS_AGGREGATED = Prepared(ProviderTrait, lambda roots, providers: _of(
    ProviderTrait.objects.all(), roots, providers).values('resource_provider_id').annotate(
    ids=ArrayAgg('trait_id')).values_list('resource_provider_id', 'ids').order_by())
_TRAIT_IDS = Prepared(ProviderTrait, lambda roots, providers: _of(
    ProviderTrait.objects.all(), roots, providers).values_list(
    'resource_provider_id', 'trait_id').order_by())
