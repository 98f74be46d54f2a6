"""Research: which providers survive each constraint of a request.

One function per constraint, each a single query through the catalogue's
query vocabulary (providers.querysets), returning the provider ids that pass
it (or, for forbidden traits and aggregates, the ids it excludes). Research
runs them in Placement's order, request-wide first and then for one request
group at a time, keeps what each found (GroupFindings) and records every
stage (Stage) with its count. Constructing it does no I/O.

A stage that leaves nothing ends the search with NoCandidates: the answer is
empty, not an error. Resolution order matters for which error or empty
answer wins (an unknown trait after an empty member_of is an empty answer,
as in Placement). With exhaustive=True (explain) the research goes on after
that, so every constraint of every group gets its count; names met once
the answer is known to be empty then match nothing instead of raising.
"""
import dataclasses
from types import SimpleNamespace

from django.db import connections
from django.db.models import Count, F, Q, Subquery, Value
from django.db.models.expressions import RawSQL

from placement_site import exceptions
from placement_site.prepared import Ids, Prepared
from placement_site.queries import storable
from providers.candidates.findings import (
    GroupFindings,
    RequestFindings,
    Stage,
    StageRecord,
    aggregates_text,
    root_traits_text,
    traits_text,
)
from providers.models import (
    Inventory,
    ProviderAggregate,
    ProviderTrait,
    ResourceClass,
    ResourceProvider,
    Trait,
)
from providers.querysets import (
    SHARING_TRAIT,
    ids_in_aggregates,
    ids_with_any_trait,
    trees_served_by,
)

# member_of narrows the capacity queries to at most this many providers; a
# larger IN list costs more than it saves.
CAPACITY_SCOPE_LIMIT = 20000


# The search counts the cloud's trees up to this many (plus one): enough
# for summaries.Summaries to choose how to read up to 1,000 trees' rows.
TREES_COUNTED = 2000


# A limit above this reads every tree (and stays within any database's
# integers: limit=10**30 is a valid request).
TREE_LIMIT_MAX = 1_000_000


class NoCandidates(Exception):
    """Some stage left nothing: the answer is empty (not an error)."""


class Research:
    """The research for one CandidateQuery: the only stage of the search
    that reads the database. The selector asks for the request-wide
    findings, then for each group's in turn (a later group is not
    researched once an earlier one leaves nothing, so which error or empty
    answer wins is Placement's)."""

    def __init__(self, query, *, exhaustive=False):
        self.query = query
        self.exhaustive = exhaustive
        # How many trees the answer can take at most (the selector's `limit`
        # for a lone group), or None: all of them.
        self.tree_limit = None
        self._researched = {}   # a group's constraints -> (its findings, its records)
        self.records = []
        self.alive = True            # False once the answer is known to be empty
        self.class_ids = {}
        self.trait_ids = {}
        self.wide = RequestFindings()
        self._provider_roots = None
        # Read with the request-wide findings (one query): per aggregate of
        # a lone member_of set, its members ({id: root}); the providers under
        # any of them ({id: root}, None if not read); per required trait, the
        # providers with it.
        self._members, self._under, self._with_trait = {}, None, {}

    # -- the record

    def record(self, stage, group, remaining, detail=''):
        self.records.append(StageRecord(stage, group, remaining, detail))

    def dead_end(self, draft=None):
        """Nothing can come of the request: stop, unless explaining."""
        self.alive = False
        if draft is not None:
            draft.alive = False
        if not self.exhaustive:
            raise NoCandidates()

    def narrowed(self, stage, draft, ids, detail=''):
        """Record a stage that must leave something; its ids."""
        self.record(stage, draft.group.suffix, len(ids), detail)
        if not ids:
            self.dead_end(draft)
        return ids

    # -- names

    def class_id(self, name):
        return self._resolved(self.class_ids, name, exceptions.ResourceClassNotFound(name=name))

    def trait_id(self, name):
        return self._resolved(self.trait_ids, name, exceptions.TraitNotFound(names=name))

    def _resolved(self, ids, name, not_found):
        """The id of a name, else raise not_found; once explaining an answer
        known to be empty, None (the name matches nothing)."""
        if name in ids:
            return ids[name]
        if self.exhaustive and not self.alive:
            return None
        raise not_found

    def _read_request_wide(self):
        """(has_trees, sharing_roots, trees), the ids of the request's class and
        trait names (unknown names raise when first used, as Placement
        answers 400), and the providers of its groups' aggregates and
        required traits: one query."""
        query = self.query
        class_names = {rc for g in query.groups.values() for rc in g.resources}
        trait_names = set(query.params.root_required) | set(query.params.root_forbidden)
        aggregates, required = set(), set()
        for group in query.groups.values():
            trait_names |= set(group.forbidden_traits)
            for any_of in group.required_traits:
                trait_names |= any_of
                required |= any_of
            if len(group.member_of) == 1:  # several: their intersection, read apart
                aggregates |= group.member_of[0]
        class_names = tuple(sorted(n for n in class_names if storable(n)))
        trait_names = tuple(sorted(n for n in trait_names if storable(n)))
        has_trees, sharing_roots, trees = False, {}, 0
        ids = {'class': self.class_ids, 'trait': self.trait_ids}
        linked = {'member': self._members, 'has': self._with_trait}
        for uuid in aggregates:
            self._members[uuid] = {}
        if aggregates:
            self._under = {}
        required = tuple(sorted(n for n in required if storable(n)))
        for name in required:
            self._with_trait[name] = {}
        for kind, name, pk, root in _REQUEST_WIDE.rows(
                class_names, trait_names, tuple(sorted(aggregates)), required):
            if kind == 'sharing':
                sharing_roots[pk] = root
            elif kind == 'tree':
                has_trees = True
            elif kind == 'trees':
                trees = pk
            elif kind == 'under':
                self._under[pk] = root
            elif kind in linked:
                linked[kind][name][pk] = root
            else:
                ids[kind][name] = pk
        return has_trees, sharing_roots, trees

    def _read_with(self, read, names):
        """{provider id: root} of the providers that the request-wide read
        found for any of the names (aggregates, traits), or None if it did
        not read them all."""
        if not all(name in read for name in names):
            return None
        found = {}
        for name in names:
            found.update(read[name])
        return found

    # -- request-wide

    def request_wide(self):
        """The RequestFindings (raises NoCandidates when root_required
        leaves no root, unless explaining)."""
        has_trees, sharing_roots, trees = self._read_request_wide()
        self.wide = RequestFindings(has_trees, sharing_roots, trees=trees)
        anchors = self._root_traits()
        self.wide = RequestFindings(has_trees, sharing_roots, anchors, trees)
        if anchors is not None and not anchors:
            self.dead_end()
        return self.wide

    def _root_traits(self):
        """root_required: the roots every candidate's tree must hang from
        (None: any)."""
        params = self.query.params
        if not (params.root_required or params.root_forbidden):
            return None
        required = [{self.trait_id(t)} for t in params.root_required]
        forbidden = {self.trait_id(t) for t in params.root_forbidden}
        roots = ResourceProvider.objects.roots().with_traits(required)
        if forbidden:
            roots = roots.without_traits(forbidden)
        anchors = frozenset(roots.values_list('id', flat=True))
        self.record(Stage.ROOT_TRAITS, '', len(anchors), root_traits_text(params))
        return anchors

    # -- one request group

    def group(self, group):
        """Research one request group: its GroupFindings (raises
        NoCandidates when a stage leaves nothing, unless explaining). A
        group asking exactly what an earlier one asked (nova's six groups of
        one device each) is given that one's findings and records, under
        its own suffix, without reading them again."""
        constraints = _constraints(group)
        twin = self._researched.get(constraints)
        if twin is not None:
            findings, records = twin
            self.records.extend(dataclasses.replace(r, group=group.suffix) for r in records)
            return dataclasses.replace(findings, group=group)
        first_record = len(self.records)
        findings = self._research_group(group)
        self._researched[constraints] = (findings, self.records[first_record:])
        return findings

    def _research_group(self, group):
        wide = self.wide
        tree_mode = not group.use_same_provider and bool(wide.sharing or wide.has_trees)
        found = SimpleNamespace(group=group, tree_mode=tree_mode, alive=self.alive)
        # Resolution order matters for which error or empty answer wins.
        found.class_ids = {name: self.class_id(name) for name in group.resources}
        found.members, found.member_sets = None, ()
        if group.member_of:
            self._member_of(found)
        found.required_ids = tuple({self.trait_id(t) for t in any_of} - {None}
                                   for any_of in group.required_traits)
        forbidden_ids = {self.trait_id(t) for t in group.forbidden_traits} - {None}
        found.tree_root = None
        if group.in_tree:
            self._in_tree(found)
        self._capacity(found)
        found.required_sets = ()
        if found.required_ids:
            self._required(found)
        found.forbidden = found.in_forbidden_aggs = frozenset()
        if forbidden_ids:
            found.forbidden = providers_with_any_trait(forbidden_ids)
            self.record(Stage.FORBIDDEN_TRAITS, group.suffix, len(found.forbidden),
                        ', '.join(sorted(group.forbidden_traits)))
        if group.forbidden_aggs:
            found.in_forbidden_aggs = providers_in_aggregates(group.forbidden_aggs)
            self.record(Stage.FORBIDDEN_AGGREGATES, group.suffix, len(found.in_forbidden_aggs),
                        ', '.join(sorted(group.forbidden_aggs)))
        self._sharing(found)
        del found.capacity_sharing
        findings = GroupFindings(**vars(found))
        if not group.resources and findings.alive and not tree_mode:
            findings = self._resourceless(findings)
        return findings

    def _member_of(self, found):
        members = None
        sets = []
        for any_of in found.group.member_of:
            read = self._read_with(self._members, any_of)
            in_set = set(read) if read is not None else providers_in_aggregates(any_of)
            sets.append(in_set)
            members = in_set if members is None else members & in_set
            if not members and not self.exhaustive:
                break
        found.member_sets = tuple(sets)
        found.members = self.narrowed(Stage.MEMBER_OF, found, members,
                                      aggregates_text(found.group.member_of))

    def _capacity_scope(self, found):
        """(the providers member_of leaves the group (None: all), and their
        roots when known ({provider id: root id}, else None)), so the
        capacity queries weigh the usage of those only: the members, and in
        a tree every provider under a member root (sharing providers count
        only when members, see _sharing). Not when explaining, whose
        funnel counts every provider with capacity."""
        if found.members is None or self.exhaustive:
            return None, None
        if not found.tree_mode:
            return found.members, None
        if len(found.members) > CAPACITY_SCOPE_LIMIT:
            return None, None
        member_of = found.group.member_of
        members = self._read_with(self._members, member_of[0]) if len(member_of) == 1 else None
        if members is not None:
            roots = {provider: root for provider, root in self._under.items() if root in members}
            roots.update(members)
        else:
            roots = dict(_MEMBERS_AND_UNDER.rows(Ids(found.members)))
        return (roots.keys(), roots) if len(roots) <= CAPACITY_SCOPE_LIMIT else (None, None)

    def _in_tree(self, found):
        uuid = found.group.in_tree
        root = next((root for root, in _ROOT_OF_UUID.rows(uuid)), None)
        found.tree_root = root
        self.narrowed(Stage.IN_TREE, found, set() if root is None else {root}, uuid)

    def _capacity(self, found):
        """Per class, the providers able to take the group's amount, and
        which of them are sharing providers (one query)."""
        group = found.group
        wanted = {found.class_ids[name]: amount for name, amount in group.resources.items()
                  if found.class_ids[name] is not None}
        fitting, sharing_fitting = {}, {}
        if wanted and not (group.in_tree and found.tree_root is None):
            trees = self.tree_limit if self._trees_suffice(found, wanted) else None
            within, roots = self._capacity_scope(found)
            fitting, sharing_fitting = providers_with_capacity(
                wanted, found.tree_root, within, self.wide.sharing, trees,
                self.provider_roots if within is None else roots)
            if trees is not None and self.wide.sharing and len(
                    {root for pairs in fitting.values() for _, root in pairs}) < trees:
                # Too few trees hold every class themselves: those sharing
                # providers serve may make up the rest.
                fitting, sharing_fitting = providers_with_capacity(
                    wanted, found.tree_root, None, self.wide.sharing, roots=self.provider_roots)
        found.capacity, found.capacity_sharing = {}, {}
        for name, amount in group.resources.items():
            class_id = found.class_ids[name]
            found.capacity[name] = self.narrowed(
                Stage.CAPACITY, found, fitting.get(class_id, set()), f'{amount} {name}')
            found.capacity_sharing[name] = sharing_fitting.get(class_id, set())

    def provider_roots(self):
        """{provider id: root id}, read once per search when first asked:
        explaining, of every provider (explain's funnels read them all);
        else of those whose root is another (a root's is its own id)."""
        if self._provider_roots is None:
            self._provider_roots = dict(
                (_EVERY_ROOT if self.exhaustive else _NOT_OWN_ROOTS).rows())
        return self._provider_roots

    def _trees_suffice(self, found, wanted):
        return (not self.exhaustive and len(wanted) == len(found.group.resources)
                and trees_suffice(self.query, self.wide, found, self.tree_limit))

    def _required(self, found):
        found.required_sets = tuple(
            set(read) if (read := self._read_with(self._with_trait, names)) is not None
            else providers_with_any_trait(ids)
            for names, ids in zip(found.group.required_traits, found.required_ids))
        with_all = set.intersection(*found.required_sets)
        self.record(Stage.REQUIRED_TRAITS, found.group.suffix, len(with_all),
                    traits_text(found.group.required_traits))
        # One provider must have them all; a tree may gather them from
        # several, but not from a set no provider has.
        hopeless = not all(found.required_sets) if found.tree_mode else not with_all
        if hopeless:
            self.dead_end(found)

    def _sharing(self, found):
        """The sharing providers the group may use, and the trees those
        with room serve.

        Placement narrows the request's sharing providers to the group's
        member_of aggregates; kept for identical answers."""
        sharing = frozenset(self.wide.sharing)
        if found.members is not None:
            sharing = sharing & found.members
        found.sharing, found.sharing_by_class, found.served = frozenset(), {}, {}
        if not found.tree_mode:
            # One provider takes the group: a sharing provider with room
            # for every class is anchored in each tree it serves.
            with_room = list(found.capacity_sharing.values())
            if with_room:
                found.served = trees_served(set.intersection(*with_room) & sharing)
            return
        found.sharing = sharing
        if found.group.in_tree or not sharing:  # no sharing within one tree
            return
        found.sharing_by_class = {name: providers & sharing
                                  for name, providers in found.capacity_sharing.items()}
        found.served = trees_served(set().union(*found.sharing_by_class.values()))
        for name, providers in found.sharing_by_class.items():
            if providers:
                self.record(Stage.SHARING, found.group.suffix, len(providers), name)

    def _resourceless(self, found):
        """The same group met without resources (same_subtree, 1.36): by the
        providers of its traits and aggregates, and with neither by none, as in
        Placement (two queries: their roots, the trees sharing ones serve).
        Only suffixed groups (one provider each) may ask no resources."""
        allowed, excluded = found.allowed()
        if not allowed:
            return found
        pairs = frozenset(provider_roots(allowed - excluded))
        served = trees_served({p for p, _ in pairs} & self.wide.sharing)
        return dataclasses.replace(found, resourceless=pairs, served=served)


def trees_suffice(query, wide, found, tree_limit):
    """May the capacity query read only the first `tree_limit` trees
    holding every class of the group (found: its findings so far)? When
    each such tree gives the group a candidate, whatever else it holds: the
    group is the request's only one, spreads over its tree (or the cloud is
    flat), and no trait or aggregate is checked per provider or
    combination."""
    group = found.group
    return (tree_limit is not None and 0 <= tree_limit <= TREE_LIMIT_MAX
            and len(query.groups) == 1
            and (found.tree_mode or not (wide.has_trees or wide.sharing))
            and wide.anchors is None
            and not (group.required_traits or group.forbidden_traits or group.member_of
                     or group.forbidden_aggs or group.in_tree))


def _constraints(group):
    """What a group asks, all but its suffix: groups asking the same have
    the same findings."""
    return (group.use_same_provider, tuple(sorted(group.resources.items())),
            tuple(frozenset(s) for s in group.required_traits), frozenset(group.forbidden_traits),
            tuple(frozenset(s) for s in group.member_of), frozenset(group.forbidden_aggs),
            group.in_tree)


def trees_served(provider_ids):
    """{sharing provider id: roots of the trees it serves} (one query, none
    for no providers)."""
    served = {}
    if provider_ids:
        for sharing_id, root_id in trees_served_by(provider_ids):
            served.setdefault(sharing_id, set()).add(root_id)
    return served


# ---- one query per constraint ------------------------------------------------------

def providers_with_capacity(wanted, tree_root=None, within=None, sharing=frozenset(),
                            trees=None, roots=None):
    """({class id: {(provider id, root id)}}, {class id: {sharing provider id}}):
    the providers whose inventory of each class of `wanted` ({class id:
    amount}) can take its amount more (capacity, min/max unit, step size),
    optionally in one tree or among some providers, and which of them are
    in `sharing`. One query for every class; with `trees`, only in the
    first `trees` trees that have room for every class (the database
    groups the rows by tree and stops there: on MariaDB, which takes no
    LIMIT in an IN subquery, in a query of its own). `roots` gives the
    roots of the providers (those not in it are roots), as a dict or a
    function returning one, called only if some inventory fits; without
    it, each row's root is looked up in the query."""
    if trees is not None:  # (for a lone group: no member_of, no in_tree)
        fitting = _in_first_trees(wanted, trees)
        fitting = fitting.values_list(
            'resource_class_id', 'resource_provider_id', 'root').order_by()
    elif tree_root is None and roots is not None:
        # The roots from a map, not looked up per row: PostgreSQL's lookup
        # for each of 3,000 rows cost twice the rest of the query.
        fitting = _FITTING.rows(tuple(wanted), tuple(wanted.values()),
                                None if within is None else Ids(within), None, False)
        if fitting and callable(roots):
            roots = roots()
        fitting = [(class_id, provider_id, roots.get(provider_id, provider_id))
                   for class_id, provider_id in fitting]
    else:
        fitting = _FITTING.rows(tuple(wanted), tuple(wanted.values()),
                                None if within is None else Ids(within), tree_root, True)
    by_class = {class_id: set() for class_id in wanted}
    sharing_by_class = {class_id: set() for class_id in wanted}
    for class_id, provider_id, root_id in fitting:
        by_class[class_id].add((provider_id, root_id))
        if provider_id in sharing:
            sharing_by_class[class_id].add(provider_id)
    return by_class, sharing_by_class


def _in_first_trees(wanted, trees):
    """The inventories able to fit `wanted` in the first `trees` trees with
    room for every class, annotated with their `root`."""
    # Grouped by the root joined in, not with_root's per-row lookup: when
    # aggregating, PostgreSQL hashes the join (82 against 131 ms at 100,000
    # providers).
    with_root = F('resource_provider__root_provider_id')
    roots = Inventory.objects.able_to_fit_any(wanted).annotate(root=with_root).values(
        'root').annotate(classes=Count('resource_class_id', distinct=True)).filter(
        classes=len(wanted)).order_by('root').values_list('root', flat=True)[:trees]
    if connections[roots.db].vendor == 'mysql':
        roots = list(roots)
    # The trees' rows again, found from their roots by index.
    return Inventory.objects.filter(resource_provider__root_provider_id__in=roots).able_to_fit_any(
        wanted).annotate(root=with_root)


def providers_in_aggregates(aggregate_uuids):
    """Providers in at least one of the aggregates."""
    return {pk for pk, in _IN_AGGREGATES.rows(tuple(sorted(aggregate_uuids)))}


def providers_with_any_trait(trait_ids):
    """Providers having at least one of the traits."""
    return {pk for pk, in _WITH_ANY_TRAIT.rows(tuple(sorted(trait_ids)))}


def provider_roots(provider_ids):
    """(provider id, root id) of the providers: the candidates of a group
    that asks for no resources."""
    return set(_ROOTS_OF.rows(Ids(provider_ids)))


# ---- the research's reads, compiled once per shape (placement_site.prepared.Prepared) --

def _request_wide(class_names, trait_names, aggregates=(), required=()):
    """(kind, name, id, root) rows: every sharing provider ('sharing', with
    its root), the first provider with a parent ('tree', if any), the
    classes and traits named ('class', 'trait'), how many trees there
    are, counted up to TREES_COUNTED + 1 ('trees', the count as its id);
    the providers in each of the aggregates ('member', named by its uuid)
    and those whose root is in any ('under'), with their roots; the
    providers with each of the `required` traits ('has', named by it)."""
    def rows(queryset, kind, name=Value('')):  # noqa: B008 (an expression, never changed)
        return queryset.annotate(kind=Value(kind), key=name).values_list(
            'kind', 'key', 'id', 'root').order_by()

    root = {'root': F('root_provider_id')}
    parts = [
        rows(ResourceProvider.objects.filter(id__in=ids_with_any_trait(
            Trait.objects.filter(name=SHARING_TRAIT).values('id'))).annotate(**root), 'sharing'),
        # A scalar subquery: SQLite takes no LIMIT in a UNION's parts.
        rows(ResourceProvider.objects.filter(id=Subquery(ResourceProvider.objects.filter(
            parent_provider__isnull=False).values('id')[:1])).annotate(**root), 'tree'),
    ]
    parts += [rows(model.objects.filter(name__in=names).annotate(root=Value(0)), kind, F('name'))
              for model, kind, names in ((ResourceClass, 'class', class_names),
                                         (Trait, 'trait', trait_names)) if names]
    if aggregates:
        # The links by aggregate, each with its provider's root; and the
        # providers whose root is linked to any (by their roots).
        members = ProviderAggregate.objects.filter(aggregate__uuid__in=aggregates)
        parts.append(members.annotate(kind=Value('member'), key=F('aggregate__uuid'),
                                      provider=F('resource_provider_id'),
                                      root=F('resource_provider__root_provider_id')).values_list(
            'kind', 'key', 'provider', 'root').order_by())
        parts.append(rows(ResourceProvider.objects.filter(
            root_provider_id__in=ids_in_aggregates(aggregates)).annotate(**root), 'under'))
    if required:
        parts.append(ProviderTrait.objects.filter(trait__name__in=required).annotate(
            kind=Value('has'), key=F('trait__name'), provider=F('resource_provider_id'),
            root=Value(0)).values_list('kind', 'key', 'provider', 'root').order_by())
    # Up to TREES_COUNTED + 1 roots, counted from the index on parents alone
    # (a quarter of the time of counting the roots up to the last one's id),
    # on the row of the first provider: none, no trees.
    first = ResourceProvider.objects.filter(id=Subquery(
        ResourceProvider.objects.order_by('id').values('id')[:1]))
    parts.append(first.annotate(kind=Value('trees'), key=Value(''), n=_BOUNDED_TREE_COUNT,
                                root=Value(0)).values_list('kind', 'key', 'n', 'root').order_by())
    return parts[0].union(*parts[1:], all=True)


_BOUNDED_TREE_COUNT = RawSQL(
    f'SELECT COUNT(*) FROM (SELECT 1 FROM {ResourceProvider._meta.db_table} '
    f'WHERE parent_provider_id IS NULL LIMIT {TREES_COUNTED + 1}) roots', ())


_REQUEST_WIDE = Prepared(ResourceProvider, _request_wide)
_MEMBERS_AND_UNDER = Prepared(ResourceProvider, lambda members: (
    ResourceProvider.objects.filter(Q(id__in_ids=members) | Q(root_provider_id__in_ids=members))
    .values_list('id', 'root_provider_id').order_by()))
# Providers whose root is another (a root's is its own id).
_NOT_OWN_ROOTS = Prepared(ResourceProvider, lambda: ResourceProvider.objects.exclude(
    root_provider_id=F('id')).values_list('id', 'root_provider_id').order_by())
_EVERY_ROOT = Prepared(ResourceProvider, lambda: ResourceProvider.objects.values_list(
    'id', 'root_provider_id'))
_ROOT_OF_UUID = Prepared(ResourceProvider, lambda uuid: ResourceProvider.objects.filter(
    uuid=uuid).values_list('root_provider_id').order_by()[:1])
_IN_AGGREGATES = Prepared(ProviderAggregate, lambda uuids: ids_in_aggregates(uuids).values_list(
    'resource_provider_id'))
_WITH_ANY_TRAIT = Prepared(ProviderTrait, lambda trait_ids: ids_with_any_trait(
    trait_ids).values_list('resource_provider_id'))
_ROOTS_OF = Prepared(ResourceProvider, lambda ids: ResourceProvider.objects.filter(
    id__in_ids=ids).values_list('id', 'root_provider_id').order_by())


def _fitting(class_ids, amounts, within, tree_root, rooted):
    """(class id, provider id[, root id]) of the inventories able to fit the
    amounts, among `within` or in the tree of `tree_root` if given; with
    each row's root (looked up per row) if `rooted`."""
    fitting = Inventory.objects.all()
    if within is not None:
        fitting = fitting.filter(resource_provider_id__in_ids=within)
    fitting = fitting.able_to_fit_any(dict(zip(class_ids, amounts)))
    if not rooted:
        return fitting.values_list('resource_class_id', 'resource_provider_id').order_by()
    fitting = fitting.with_root()
    if tree_root is not None:
        fitting = fitting.filter(root=tree_root)
    return fitting.values_list('resource_class_id', 'resource_provider_id', 'root').order_by()


_FITTING = Prepared(Inventory, _fitting)
