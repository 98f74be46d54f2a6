"""Research: every read that decides which providers can hold a request,
and, explaining, every read the explanation needs but one. The search's other
reads are the provider summaries of the trees it uses (summaries.py) and
the names of the near misses an explanation chose (reads.provider_names).

research(query) runs one query per constraint (reads.py), each returning
the provider ids that pass it (or, for forbidden traits and aggregates, the
ids it excludes), in Placement's order: request-wide first, then one
request group at a time. It
hands on a Researched (findings.py): RequestFindings, a GroupFindings per
group built once its stages are read, and a StageRecord per stage with its
count. Nothing later asks it anything: its input is the query, whether the
search is explained, and the settings that bound a lone group's answer.

Research's own rules:
- A stage that leaves nothing ends the research: the answer is empty, not
  an error. An unknown resource class or trait in a group is refused: the
  first is handed on (Researched.refused) and ends the research too (unless
  explaining), and the selector raises it unless an earlier group has no
  candidates (Placement researches and matches one group at a time, so an
  unknown trait after an empty member_of, or after a group that fits
  nothing, is an empty answer).
  An unknown name in the request-wide parameters raises at once.
- A lone group whose every tree with the classes gives candidates reads
  only the first trees its answer takes (trees_suffice; how many:
  combine.answer_stops_at, for the settings given).
- Explaining (exhaustive=True), research goes on past a stage that leaves
  nothing, so every constraint of every group gets its count (names met
  once nothing is left match nothing), and reads what the explanation
  reads: every provider's root; the inventories of the groups' classes and
  the trees served by the sharing providers of them without room, when
  some resource step of a group eliminates a tree or provider (so that the
  explanation can name the limit that stops it).
"""
import dataclasses

from placement_site import exceptions
from placement_site.prepared import Ids
from placement_site.queries import storable
from providers.candidates import reads
from providers.candidates.combine import answer_stops_at
from providers.candidates.findings import GroupFindings
from providers.candidates.findings import RequestFindings
from providers.candidates.findings import Researched
from providers.candidates.findings import Stage
from providers.candidates.findings import StageRecord
from providers.candidates.findings import aggregates_text
from providers.candidates.findings import root_traits_text
from providers.candidates.findings import traits_text
from providers.models import ResourceProvider

# member_of narrows the capacity queries to at most this many providers; a
# larger IN list costs more than it saves.
CAPACITY_SCOPE_LIMIT = 20000


# A limit above this reads every tree (and stays within any database's
# integers: limit=10**30 is a valid request).
TREE_LIMIT_MAX = 1_000_000


def research(query, *, exhaustive=False, bounded_by=None):
    """The Researched for a CandidateQuery. exhaustive: explaining (see the
    module's docstring). bounded_by: the SearchSettings that, with the
    query's limit, bound how many candidates the answer takes (None: every
    candidate is made, to be counted); a lone group then reads only the
    trees those take, where trees_suffice."""
    return _Research(query, exhaustive, bounded_by).run()


class _NothingLeft(Exception):
    """A stage left nothing (or a name was refused): research stops."""


class _Research:
    """One research: the reads in order, and what they found so far."""

    def __init__(self, query, exhaustive, bounded_by):
        self.query = query
        self.exhaustive = exhaustive
        self.bounded_by = bounded_by
        self.tree_limit = None   # how many trees a lone group's answer takes (None: all)
        self.records = []
        self.wide_records = ()
        self.alive = True        # False once a stage left nothing or a name was refused
        self.refused = self.refused_by = None
        self.suffix = None       # the group being researched (None: request-wide)
        self.class_ids = {}
        self.trait_ids = {}
        self.wide = RequestFindings()
        self._by_constraints = {}   # a group's constraints -> its GroupFindings
        self._provider_roots = None
        # Read with the request-wide findings (one query): per aggregate of
        # a lone member_of set, its members ({id: root}); the providers under
        # any of them ({id: root}, None if not read); per required trait, the
        # providers with it.
        self._members, self._under, self._with_trait = {}, None, {}

    def run(self):
        groups = {}
        try:
            self._request_wide()
            self.wide_records = tuple(self.records)
            if self.bounded_by is not None and len(self.query.groups) == 1:
                self.tree_limit = answer_stops_at(self.query, self.bounded_by,
                                                  self.wide.has_trees)
            for suffix, group in self.query.groups.items():
                self.suffix = suffix
                groups[suffix] = self._group(group)
        except _NothingLeft:
            if self.suffix is None:
                self.wide_records = tuple(self.records)
        inventories = served = None
        if self.exhaustive:
            inventories, served = self._explained_rows(groups)
        return Researched(
            self.wide, groups, tuple(self.records), wide_records=self.wide_records,
            alive=self.alive, refused=self.refused, refused_by=self.refused_by,
            provider_roots=self._provider_roots, inventories=inventories, served=served)

    # -- the record

    def record(self, stage, remaining, detail=''):
        self.records.append(StageRecord(stage, self.suffix or '', remaining, detail))

    def dead_end(self):
        """Nothing can come of the request: stop, unless explaining."""
        self.alive = False
        if not self.exhaustive:
            raise _NothingLeft()

    def narrowed(self, stage, ids, detail=''):
        """Record a stage that must leave something; its ids."""
        self.record(stage, len(ids), detail)
        if not ids:
            self.dead_end()
        return ids

    # -- names

    def class_id(self, name):
        return self._resolved(self.class_ids, name, exceptions.ResourceClassNotFound(name=name))

    def trait_id(self, name):
        return self._resolved(self.trait_ids, name, exceptions.TraitNotFound(names=name))

    def _resolved(self, ids, name, not_found):
        """The id of a name; else None (it matches nothing), having refused
        the name if nothing was left empty yet (see the module's
        docstring)."""
        if name in ids:
            return ids[name]
        if self.suffix is None:
            raise not_found
        if self.alive:
            self.refused, self.refused_by = not_found, self.suffix
            self.dead_end()
        return None

    def _read_request_wide(self):
        """(has_trees, sharing_roots, trees), the ids of the request's class and
        trait names (unknown names are refused when first used, as Placement
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
        for kind, name, pk, root in reads.REQUEST_WIDE.rows(
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
        providers = {}
        for name in names:
            providers.update(read[name])
        return providers

    # -- request-wide

    def _request_wide(self):
        """Sets the RequestFindings (stops when root_required leaves no root,
        unless explaining)."""
        has_trees, sharing_roots, trees = self._read_request_wide()
        # What research hands on if root_required names an unknown trait.
        self.wide = RequestFindings(has_trees, sharing_roots, trees=trees)
        anchors = self._root_traits()
        self.wide = RequestFindings(has_trees, sharing_roots, anchors, trees)
        if anchors is not None and not anchors:
            self.dead_end()

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
        self.record(Stage.ROOT_TRAITS, len(anchors), root_traits_text(params))
        return anchors

    # -- one request group

    def _group(self, group):
        """Research one request group: its GroupFindings. A group asking
        exactly what an earlier one asked (nova's six groups of one device
        each) is given that one's findings and records, under its own
        suffix, without reading them again."""
        constraints = _constraints(group)
        twin = self._by_constraints.get(constraints)
        if twin is not None:
            records = tuple(dataclasses.replace(r, group=group.suffix) for r in twin.records)
            self.records.extend(records)
            return dataclasses.replace(twin, group=group, records=records)
        findings = self._research_group(group)
        self._by_constraints[constraints] = findings
        return findings

    def _research_group(self, group):
        first_record = len(self.records)
        wide = self.wide
        tree_mode = not group.use_same_provider and bool(wide.sharing or wide.has_trees)
        # Resolution order matters for which error or empty answer wins.
        class_ids = {name: self.class_id(name) for name in group.resources}
        member_sets, members = self._member_of(group) if group.member_of else ((), None)
        required_ids = tuple({self.trait_id(t) for t in any_of} - {None}
                             for any_of in group.required_traits)
        forbidden_ids = {self.trait_id(t) for t in group.forbidden_traits} - {None}
        tree_root = self._in_tree(group) if group.in_tree else None
        capacity, capacity_sharing = self._capacity(group, tree_mode, class_ids, members,
                                                    tree_root)
        required_sets = self._required(group, tree_mode, required_ids) if required_ids else ()
        forbidden = in_forbidden_aggs = frozenset()
        if forbidden_ids:
            forbidden = reads.providers_with_any_trait(forbidden_ids)
            self.record(Stage.FORBIDDEN_TRAITS, len(forbidden),
                        ', '.join(sorted(group.forbidden_traits)))
        if group.forbidden_aggs:
            in_forbidden_aggs = reads.providers_in_aggregates(group.forbidden_aggs)
            self.record(Stage.FORBIDDEN_AGGREGATES, len(in_forbidden_aggs),
                        ', '.join(sorted(group.forbidden_aggs)))
        sharing, sharing_by_class, served = self._sharing(group, tree_mode, members,
                                                          capacity_sharing)
        findings = GroupFindings(
            group, tree_mode, self.alive, class_ids, member_sets, members, tree_root, capacity,
            required_ids, required_sets, forbidden, in_forbidden_aggs, sharing, sharing_by_class,
            served, records=tuple(self.records[first_record:]))
        if not group.resources and findings.alive and not tree_mode:
            findings = self._resourceless(findings)
        return findings

    def _member_of(self, group):
        """(per member_of set, the providers in it; those in every set)."""
        members = None
        sets = []
        for any_of in group.member_of:
            read = self._read_with(self._members, any_of)
            in_set = set(read) if read is not None else reads.providers_in_aggregates(any_of)
            sets.append(in_set)
            members = in_set if members is None else members & in_set
            if not members and not self.exhaustive:
                break
        return tuple(sets), self.narrowed(Stage.MEMBER_OF, members,
                                          aggregates_text(group.member_of))

    def _capacity_scope(self, group, tree_mode, members):
        """(the providers member_of leaves the group (None: all), and their
        roots when known ({provider id: root id}, else None)), so the
        capacity queries weigh the usage of those only: the members, and in
        a tree every provider under a member root (sharing providers count
        only when members, see _sharing). Not when explaining, whose
        funnel counts every provider with capacity."""
        if members is None or self.exhaustive:
            return None, None
        if not tree_mode:
            return members, None
        if len(members) > CAPACITY_SCOPE_LIMIT:
            return None, None
        member_of = group.member_of
        read = self._read_with(self._members, member_of[0]) if len(member_of) == 1 else None
        if read is not None:
            roots = {provider: root for provider, root in self._under.items() if root in read}
            roots.update(read)
        else:
            roots = dict(reads.MEMBERS_AND_UNDER.rows(Ids(members)))
        return (roots.keys(), roots) if len(roots) <= CAPACITY_SCOPE_LIMIT else (None, None)

    def _in_tree(self, group):
        """in_tree's root id (None: no such provider)."""
        uuid = group.in_tree
        root = next((root for root, in reads.ROOT_OF_UUID.rows(uuid)), None)
        self.narrowed(Stage.IN_TREE, set() if root is None else {root}, uuid)
        return root

    def _capacity(self, group, tree_mode, class_ids, members, tree_root):
        """({class name: {(provider id, root id)}} of the providers able to
        take the group's amount of each class, {class name: the sharing
        providers among them}): one query."""
        wanted = {class_ids[name]: amount for name, amount in group.resources.items()
                  if class_ids[name] is not None}
        fitting, sharing_fitting = {}, {}
        if wanted and not (group.in_tree and tree_root is None):
            trees = self.tree_limit if self._trees_suffice(group, tree_mode, wanted) else None
            within, roots = self._capacity_scope(group, tree_mode, members)
            fitting, sharing_fitting = reads.providers_with_capacity(
                wanted, tree_root, within, self.wide.sharing, trees,
                self.provider_roots if within is None else roots)
            if trees is not None and self.wide.sharing and len(
                    {root for pairs in fitting.values() for _, root in pairs}) < trees:
                # Too few trees hold every class themselves: those sharing
                # providers serve may make up the rest.
                fitting, sharing_fitting = reads.providers_with_capacity(
                    wanted, tree_root, None, self.wide.sharing, roots=self.provider_roots)
        capacity, capacity_sharing = {}, {}
        for name, amount in group.resources.items():
            class_id = class_ids[name]
            capacity[name] = self.narrowed(Stage.CAPACITY, fitting.get(class_id, set()),
                                           f'{amount} {name}')
            capacity_sharing[name] = sharing_fitting.get(class_id, set())
        return capacity, capacity_sharing

    def provider_roots(self):
        """{provider id: root id}, read once per search when first asked:
        explaining, of every provider (the explanation reads them all);
        else of those whose root is another (a root's is its own id)."""
        if self._provider_roots is None:
            self._provider_roots = dict(
                (reads.EVERY_ROOT if self.exhaustive else reads.NOT_OWN_ROOTS).rows())
        return self._provider_roots

    def _trees_suffice(self, group, tree_mode, wanted):
        return (not self.exhaustive and len(wanted) == len(group.resources)
                and trees_suffice(self.query, self.wide, group, tree_mode, self.tree_limit))

    def _required(self, group, tree_mode, required_ids):
        """Per required set, the providers with one of its traits."""
        required_sets = tuple(
            set(read) if (read := self._read_with(self._with_trait, names)) is not None
            else reads.providers_with_any_trait(ids)
            for names, ids in zip(group.required_traits, required_ids))
        with_all = set.intersection(*required_sets)
        self.record(Stage.REQUIRED_TRAITS, len(with_all), traits_text(group.required_traits))
        # One provider must have them all; a tree may gather them from
        # several, but not from a set no provider has.
        hopeless = not all(required_sets) if tree_mode else not with_all
        if hopeless:
            self.dead_end()
        return required_sets

    def _sharing(self, group, tree_mode, members, capacity_sharing):
        """(the sharing providers the group may use, {class name: those of
        them with room}, {sharing provider: the trees it serves} of those
        with room).

        Placement narrows the request's sharing providers to the group's
        member_of aggregates; kept for identical answers."""
        sharing = frozenset(self.wide.sharing)
        if members is not None:
            sharing = sharing & members
        if not tree_mode:
            # One provider takes the group: a sharing provider with room
            # for every class is anchored in each tree it serves.
            with_room = list(capacity_sharing.values())
            served = reads.trees_served(set.intersection(*with_room) & sharing) if with_room else {}
            return frozenset(), {}, served
        if group.in_tree or not sharing:  # no sharing within one tree
            return sharing, {}, {}
        by_class = {name: providers & sharing for name, providers in capacity_sharing.items()}
        served = reads.trees_served(set().union(*by_class.values()))
        for name, providers in by_class.items():
            if providers:
                self.record(Stage.SHARING, len(providers), name)
        return sharing, by_class, served

    def _resourceless(self, findings):
        """The same group met without resources (same_subtree, 1.36): by the
        providers of its traits and aggregates, and with neither by none, as in
        Placement (two queries: their roots, the trees sharing ones serve).
        Only suffixed groups (one provider each) may ask no resources."""
        allowed, excluded = findings.allowed()
        if not allowed:
            return findings
        pairs = frozenset(reads.provider_roots(allowed - excluded))
        served = reads.trees_served({p for p, _ in pairs} & self.wide.sharing)
        return dataclasses.replace(findings, resourceless=pairs, served=served)

    # -- what the explanation reads

    def _explained_rows(self, groups):
        """(the inventories of the groups' classes, the trees served by the
        sharing providers of them that the unsuffixed group's findings leave
        out), read when some resource step of a group eliminates a tree or
        provider; else (None, None). At most two queries."""
        roots_of = self.provider_roots()
        roots = []

        def count_roots():
            if not roots:
                roots.append(sum(1 for pk, root in roots_of.items() if pk == root))
            return roots[0]

        if not any(_eliminated_by_resources(findings, roots_of, count_roots)
                   for findings in groups.values()):
            return None, None
        class_ids = tuple(sorted({class_id for findings in groups.values()
                                  for class_id in findings.class_ids.values()
                                  if class_id is not None}))
        inventories = {}
        for provider_id, class_id, *row in reads.INVENTORIES_OF_CLASSES.rows(class_ids):
            if provider_id in roots_of:
                inventories.setdefault(class_id, {})[provider_id] = tuple(row)
        unsuffixed = groups.get('')
        served = {}
        if (unsuffixed is not None and unsuffixed.tree_mode and unsuffixed.sharing
                and not unsuffixed.group.in_tree):
            served = reads.trees_served({p for rows in inventories.values() for p in rows
                                   if p in unsuffixed.sharing and p not in unsuffixed.served})
        return inventories, served


def _eliminated_by_resources(findings, roots_of, count_roots):
    """Does a resource step of the group's funnel (explain.funnel) eliminate
    a tree or provider: does one in its in_tree's tree (if any) lack room
    for a class? Counted, not listed: those with room for every class
    against all (count_roots() counts the trees)."""
    if not findings.resources:
        return False
    with_room = set.intersection(*(findings.units_with_room(name)
                                   for name in findings.resources))
    if findings.group.in_tree:
        return not findings.units_in_tree(roots_of) <= with_room
    if findings.tree_mode:
        return sum(1 for unit in with_room if roots_of.get(unit) == unit) < count_roots()
    return sum(1 for unit in with_room if unit in roots_of) < len(roots_of)


def trees_suffice(query, wide, group, tree_mode, tree_limit):
    """May the capacity query of a group (tree_mode: may it spread over a
    tree) read only the first `tree_limit` trees holding every class of
    the group? When each such tree gives the group a candidate, whatever
    else it holds: the group is the request's only one, spreads over its
    tree (or the cloud is flat), and no trait or aggregate is checked per
    provider or combination."""
    return (tree_limit is not None and 0 <= tree_limit <= TREE_LIMIT_MAX
            and len(query.groups) == 1
            and (tree_mode or not (wide.has_trees or wide.sharing))
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
