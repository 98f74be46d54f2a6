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
import enum
from dataclasses import dataclass, field

from placement_site import exceptions
from placement_site.queries import storable
from providers.models import Inventory, ResourceClass, ResourceProvider, Trait
from providers.querysets import (SHARING_TRAIT, ids_in_aggregates, ids_with_any_trait,
                                 trees_served_by)


# member_of narrows the capacity queries to at most this many providers; a
# larger IN list costs more than it saves.
CAPACITY_SCOPE_LIMIT = 20000

class Stage(enum.Enum):
    """The stages of the search, in the order they run. The explain
    endpoint maps them to its labels."""
    # research, request-wide
    ROOT_TRAITS = 'root_traits'                    # roots meeting root_required
    # research, per request group
    MEMBER_OF = 'member_of'                        # providers in every member_of set
    IN_TREE = 'in_tree'                            # the tree in_tree names
    CAPACITY = 'capacity'                          # providers able to fit one class's amount
    REQUIRED_TRAITS = 'required_traits'            # providers with every required trait (set)
    FORBIDDEN_TRAITS = 'forbidden_traits'          # providers with a forbidden trait
    FORBIDDEN_AGGREGATES = 'forbidden_aggregates'  # providers in a forbidden aggregate
    SHARING = 'sharing'                            # sharing providers of a class
    # matching, per request group (matching.py)
    PROVIDERS_MATCHING = 'providers_matching'      # single providers meeting the whole group
    TREES_UNDER_ROOT = 'trees_under_root'          # trees left by root_required
    TREES_IN_AGGREGATES = 'trees_in_aggregates'    # ... by member_of (provider or its tree)
    TREES_OUTSIDE_AGGREGATES = 'trees_outside_aggregates'  # ... by forbidden aggregates
    TREES_WITH_CLASSES = 'trees_with_classes'      # trees with every class so far
    TREES_WITH_TRAITS = 'trees_with_traits'        # trees that can meet the traits
    GROUP_CANDIDATES = 'group_candidates'          # the group's allocation requests
    # combining (combine.py)
    COMBINED = 'combined'                          # candidates after combining the groups


@dataclass
class StageRecord:
    """How many providers (trees, candidates) one stage left or found."""
    stage: Stage
    group: str      # the group's suffix ('' for the unsuffixed group and request-wide stages)
    remaining: int
    detail: str = ''


class NoCandidates(Exception):
    """Some stage left nothing: the answer is empty (not an error)."""


@dataclass
class GroupFindings:
    """What the research found for one request group. Resource classes are
    keyed by name, as the group names them."""
    group: object                        # the RequestGroup
    tree_mode: bool                      # may spread over a tree and sharing providers
    alive: bool = True                   # False once a stage left nothing
    class_ids: dict = field(default_factory=dict)      # class name -> id
    member_sets: list = field(default_factory=list)    # per member_of set: provider ids
    members: set = None                  # in every member_of set (None: no member_of)
    tree_root: int = None                # in_tree's root id
    capacity: dict = field(default_factory=dict)       # class name -> {(provider id, root id)}
    required_ids: list = field(default_factory=list)   # per required set: trait ids
    required_sets: list = field(default_factory=list)  # per required set: provider ids
    forbidden: set = field(default_factory=set)        # providers with a forbidden trait
    in_forbidden_aggs: set = field(default_factory=set)
    sharing: frozenset = frozenset()     # sharing providers the group may use (tree mode)
    capacity_sharing: dict = field(default_factory=dict)  # class name -> sharing providers with capacity
    sharing_by_class: dict = field(default_factory=dict)  # class name -> sharing providers fitting
    served: dict = field(default_factory=dict)         # sharing provider -> roots it serves

    @property
    def suffix(self):
        return self.group.suffix

    @property
    def resources(self):
        """{class name: amount}"""
        return self.group.resources

    def with_all_required(self):
        """Providers having a trait of every required set."""
        return set.intersection(*self.required_sets)


class Research:
    """The research for one CandidateQuery."""

    def __init__(self, query, *, exhaustive=False):
        self.query = query
        self.exhaustive = exhaustive
        self.records = []
        self.alive = True            # False once the answer is known to be empty
        self.class_ids = {}
        self.trait_ids = {}
        self.has_trees = False
        self.sharing = frozenset()   # every sharing provider
        self.anchors = None          # roots root_required allows (None: any root)
        self.findings = {}           # suffix -> GroupFindings

    # -- the record

    def record(self, stage, group, remaining, detail=''):
        self.records.append(StageRecord(stage, group, remaining, detail))

    def dead_end(self, findings=None):
        """Nothing can come of the request: stop, unless explaining."""
        self.alive = False
        if findings is not None:
            findings.alive = False
        if not self.exhaustive:
            raise NoCandidates()

    def narrowed(self, stage, findings, ids, detail=''):
        """Record a stage that must leave something; its ids."""
        self.record(stage, findings.suffix, len(ids), detail)
        if not ids:
            self.dead_end(findings)
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

    def _lookups(self):
        """Names to ids for every class and trait in the request (2 queries);
        unknown names raise when first used, as Placement answers 400."""
        query = self.query
        class_names = {rc for g in query.groups.values() for rc in g.resources}
        self.class_ids = dict(ResourceClass.objects.filter(
            name__in=[n for n in class_names if storable(n)]).values_list('name', 'id'))
        trait_names = set(query.params.root_required) | set(query.params.root_forbidden)
        for group in query.groups.values():
            trait_names |= set(group.forbidden_traits)
            for any_of in group.required_traits:
                trait_names |= any_of
        self.trait_ids = dict(Trait.objects.filter(
            name__in=[n for n in trait_names if storable(n)]).values_list('name', 'id'))

    # -- request-wide

    def request_wide(self):
        self._lookups()
        self.has_trees = ResourceProvider.objects.filter(parent_provider__isnull=False).exists()
        self._root_traits()
        self.sharing = frozenset(ids_with_any_trait(
            Trait.objects.filter(name=SHARING_TRAIT).values('id')))

    def _root_traits(self):
        """root_required: the roots every candidate's tree must hang from."""
        params = self.query.params
        if not (params.root_required or params.root_forbidden):
            return
        required = [{self.trait_id(t)} for t in params.root_required]
        forbidden = {self.trait_id(t) for t in params.root_forbidden}
        roots = ResourceProvider.objects.roots().with_traits(required)
        if forbidden:
            roots = roots.without_traits(forbidden)
        self.anchors = set(roots.values_list('id', flat=True))
        self.record(Stage.ROOT_TRAITS, '', len(self.anchors), root_traits_text(params))
        if not self.anchors:
            self.dead_end()

    def in_anchors(self, root_id):
        return self.anchors is None or root_id in self.anchors

    # -- one request group

    def group(self, group):
        """Research one request group: its GroupFindings."""
        tree_mode = not group.use_same_provider and bool(self.sharing or self.has_trees)
        found = GroupFindings(group, tree_mode, alive=self.alive)
        self.findings[group.suffix] = found
        # Resolution order matters for which error or empty answer wins.
        found.class_ids = {name: self.class_id(name) for name in group.resources}
        if group.member_of:
            self._member_of(found)
        found.required_ids = [{self.trait_id(t) for t in any_of} - {None}
                              for any_of in group.required_traits]
        forbidden_ids = {self.trait_id(t) for t in group.forbidden_traits} - {None}
        if group.in_tree:
            self._in_tree(found)
        wanted = {found.class_ids[name]: amount for name, amount in group.resources.items()
                  if found.class_ids[name] is not None}
        fitting, sharing_fitting = {}, {}
        if wanted and not (group.in_tree and found.tree_root is None):
            fitting, sharing_fitting = providers_with_capacity(
                wanted, found.tree_root, self._capacity_scope(found), self.sharing)
        for name, amount in group.resources.items():
            class_id = found.class_ids[name]
            found.capacity[name] = self.narrowed(
                Stage.CAPACITY, found, fitting.get(class_id, set()), f'{amount} {name}')
            found.capacity_sharing[name] = sharing_fitting.get(class_id, set())
        if found.required_ids:
            self._required(found)
        if forbidden_ids:
            found.forbidden = providers_with_any_trait(forbidden_ids)
            self.record(Stage.FORBIDDEN_TRAITS, found.suffix, len(found.forbidden),
                        ', '.join(sorted(group.forbidden_traits)))
        if group.forbidden_aggs:
            found.in_forbidden_aggs = providers_in_aggregates(group.forbidden_aggs)
            self.record(Stage.FORBIDDEN_AGGREGATES, found.suffix, len(found.in_forbidden_aggs),
                        ', '.join(sorted(group.forbidden_aggs)))
        if tree_mode:
            self._sharing(found)
        return found

    def _member_of(self, found):
        members = None
        for any_of in found.group.member_of:
            in_set = providers_in_aggregates(any_of)
            found.member_sets.append(in_set)
            members = in_set if members is None else members & in_set
            if not members and not self.exhaustive:
                break
        found.members = self.narrowed(Stage.MEMBER_OF, found, members,
                                      aggregates_text(found.group.member_of))

    def _capacity_scope(self, found):
        """The providers member_of leaves the group (None: all), so the
        capacity queries weigh the usage of those only: the members, and in
        a tree every provider under a member root (sharing providers count
        only when members, see _sharing). Not when explaining, whose
        funnel counts every provider with capacity."""
        if found.members is None or self.exhaustive:
            return None
        if not found.tree_mode:
            return found.members
        if len(found.members) > CAPACITY_SCOPE_LIMIT:
            return None
        under = ResourceProvider.objects.filter(
            root_provider_id__in_ids=found.members).values_list('id', flat=True)
        scope = found.members | set(under)
        return scope if len(scope) <= CAPACITY_SCOPE_LIMIT else None

    def _in_tree(self, found):
        uuid = found.group.in_tree
        root = ResourceProvider.objects.filter(uuid=uuid).values_list(
            'root_provider_id', flat=True).first()
        found.tree_root = root
        self.narrowed(Stage.IN_TREE, found, set() if root is None else {root}, uuid)

    def _required(self, found):
        found.required_sets = [providers_with_any_trait(ids) for ids in found.required_ids]
        with_all = found.with_all_required()
        self.record(Stage.REQUIRED_TRAITS, found.suffix, len(with_all),
                    traits_text(found.group.required_traits))
        # One provider must have them all; a tree may gather them from
        # several, but not from a set no provider has.
        hopeless = not all(found.required_sets) if found.tree_mode else not with_all
        if hopeless:
            self.dead_end(found)

    def _sharing(self, found):
        """The sharing providers the group may use, and the trees they serve.

        Placement narrows the request's sharing providers to the group's
        member_of aggregates; kept for identical answers."""
        sharing = self.sharing
        if found.members is not None:
            sharing = sharing & found.members
        found.sharing = sharing
        if found.group.in_tree or not sharing:  # no sharing within one tree
            return
        found.sharing_by_class = {name: providers & sharing
                                  for name, providers in found.capacity_sharing.items()}
        found.served = self.trees_served(set().union(*found.sharing_by_class.values()))
        for name, providers in found.sharing_by_class.items():
            if providers:
                self.record(Stage.SHARING, found.suffix, len(providers), name)

    def trees_served(self, provider_ids):
        """{sharing provider id: roots of the trees it serves} (one query)."""
        served = {}
        if provider_ids:
            for sharing_id, root_id in trees_served_by(provider_ids):
                served.setdefault(sharing_id, set()).add(root_id)
        return served


# ---- one query per constraint ------------------------------------------------------

def providers_with_capacity(wanted, tree_root=None, within=None, sharing=frozenset()):
    """({class id: {(provider id, root id)}}, {class id: {sharing provider id}}):
    the providers whose inventory of each class of `wanted` ({class id:
    amount}) can take its amount more (capacity, min/max unit, step size),
    optionally in one tree or among some providers, and which of them are
    in `sharing`. One query for every class."""
    fitting = Inventory.objects.all()
    if within is not None:
        fitting = fitting.filter(resource_provider_id__in_ids=within)
    fitting = fitting.able_to_fit_any(wanted).with_root()
    if tree_root is not None:
        fitting = fitting.filter(root=tree_root)
    by_class = {class_id: set() for class_id in wanted}
    sharing_by_class = {class_id: set() for class_id in wanted}
    for class_id, provider_id, root_id in fitting.values_list(
            'resource_class_id', 'resource_provider_id', 'root').order_by():
        by_class[class_id].add((provider_id, root_id))
        if provider_id in sharing:
            sharing_by_class[class_id].add(provider_id)
    return by_class, sharing_by_class


def providers_in_aggregates(aggregate_uuids):
    """Providers in at least one of the aggregates."""
    return set(ids_in_aggregates(aggregate_uuids))


def providers_with_any_trait(trait_ids):
    """Providers having at least one of the traits."""
    return set(ids_with_any_trait(trait_ids))


def provider_roots(provider_ids):
    """(provider id, root id) of the providers: the candidates of a group
    that asks for no resources."""
    return set(ResourceProvider.objects.filter(id__in_ids=provider_ids).values_list(
        'id', 'root_provider_id').order_by())


# ---- how stages describe their constraint -------------------------------------------

def aggregates_text(member_of):
    return ' and '.join('(' + ' or '.join(sorted(s)) + ')' for s in member_of)


def traits_text(required, forbidden=()):
    parts = ['(' + ' or '.join(sorted(s)) + ')' if len(s) > 1 else next(iter(s))
             for s in required]
    parts += ['!' + t for t in sorted(forbidden)]
    return ', '.join(parts)


def root_traits_text(params):
    return ', '.join(sorted(params.root_required) + ['!' + t for t in sorted(params.root_forbidden)])

