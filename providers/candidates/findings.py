"""What the research found: the documented result every later stage reads.

Research (research.py) hands on one Researched: RequestFindings, a
GroupFindings per request group (each built once, when its stages are
read), its StageRecords, and, explaining, the rows the explanation reads.
Matching, combining and explain read them and never change them (the
dataclasses are frozen, and their sets are not to be changed either:
tests/candidates hold matching and combining to that). Every stage records
what it left as StageRecords, which the selector gathers in order. Pure: no
I/O, no Django.
"""
import enum
import functools
from dataclasses import dataclass
from dataclasses import field


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


@dataclass(frozen=True)
class StageRecord:
    """How many providers (trees, candidates) one stage left or found."""
    stage: Stage
    group: str      # the group's suffix ('' for the unsuffixed group and request-wide stages)
    remaining: int
    detail: str = ''


@dataclass(frozen=True)
class RequestFindings:
    """What holds for the whole request."""
    has_trees: bool = False              # some provider has a parent
    sharing_roots: dict = field(default_factory=dict)  # sharing provider id -> its own root id
    anchors: frozenset = None            # roots root_required allows (None: any root)
    trees: int = 0                       # how many trees, counted up to reads.TREES_COUNTED + 1

    @property
    def sharing(self):
        """Every sharing provider (MISC_SHARES_VIA_AGGREGATE)."""
        return self.sharing_roots.keys()

    def in_anchors(self, root_id):
        return self.anchors is None or root_id in self.anchors

    def root_of(self, request, provider_id):
        """The root of a provider an allocation request uses: its anchor
        tree's, unless it is a sharing provider serving that tree."""
        return self.sharing_roots.get(provider_id, request.anchor)


@dataclass(frozen=True)
class GroupFindings:
    """What the research found for one request group. Resource classes are
    keyed by name, as the group names them; providers are ids."""
    group: object                        # the RequestGroup
    tree_mode: bool                      # may spread over a tree and sharing providers
    alive: bool = True                   # False once a stage left nothing
    class_ids: dict = field(default_factory=dict)      # class name -> id (None: unknown)
    member_sets: tuple = ()              # per member_of set: provider ids in it
    members: set = None                  # in every member_of set (None: no member_of)
    tree_root: int = None                # in_tree's root id
    capacity: dict = field(default_factory=dict)       # class name -> {(provider id, root id)}
    required_ids: tuple = ()             # per required set: trait ids
    required_sets: tuple = ()            # per required set: providers with one of them
    forbidden: set = frozenset()         # providers with a forbidden trait
    in_forbidden_aggs: set = frozenset()  # providers in a forbidden aggregate
    sharing: frozenset = frozenset()     # sharing providers the group may use
    sharing_by_class: dict = field(default_factory=dict)  # class name -> usable ones with room
    served: dict = field(default_factory=dict)         # usable sharing provider -> roots served
    resourceless: frozenset = frozenset()  # (provider id, root id) meeting a group without
                                           # resources: its traits and aggregates
    records: tuple = ()                  # the StageRecords of its research, in order

    @property
    def suffix(self):
        return self.group.suffix

    @property
    def resources(self):
        """{class name: amount}"""
        return self.group.resources

    def units(self, roots_of):
        """What the explanation counts for the group: every root (a tree)
        when it may spread over a tree and sharing providers, else every
        provider (roots_of: {provider id: root id} of every provider)."""
        if self.tree_mode:
            return {pk for pk, root in roots_of.items() if pk == root}
        return set(roots_of)

    def units_in_tree(self, roots_of):
        """The units in the tree in_tree names (none when it names none)."""
        root = self.tree_root
        if root is None:
            return set()
        return {root} if self.tree_mode else {p for p, r in roots_of.items() if r == root}

    def units_with_room(self, name):
        """The units able to take the group's amount of the class: the
        providers with room for it, or in a tree its providers' trees and
        the trees that sharing providers with room serve. (Worked out once:
        research and the funnel both ask; not to be changed.)"""
        known = self._units_with_room
        if name not in known:
            pairs = self.capacity.get(name, ())
            passing = {p for p, _ in pairs}
            serving = self.served.keys() & passing
            if self.tree_mode:
                passing = {root for _, root in pairs}
            for provider_id in serving:
                passing |= self.served[provider_id]
            known[name] = passing
        return known[name]

    @functools.cached_property
    def _units_with_room(self):
        """{class name: units_with_room(name)}, as worked out so far."""
        return {}

    def with_all_required(self):
        """Providers having a trait of every required set."""
        return set.intersection(*self.required_sets)

    def allowed(self):
        """(providers the traits and member_of allow, None: any; providers
        forbidden traits or aggregates exclude)."""
        allowed = self.members
        if self.required_sets:
            with_all = self.with_all_required()
            allowed = with_all if allowed is None else allowed & with_all
        return allowed, self.in_forbidden_aggs | self.forbidden


@dataclass(frozen=True)
class Researched:
    """Everything research read for a query: what matching, combining and
    the explanation read."""
    wide: RequestFindings
    groups: dict                  # suffix -> GroupFindings of the groups researched, in order
    records: tuple                # every StageRecord of research, in order
    wide_records: tuple = ()      # ... those of the request-wide stages (the first)
    alive: bool = True            # False once a stage left nothing (or a name was refused)
    refused: Exception = None     # the first unknown name a group asked while alive
    refused_by: str = None        # ... that group's suffix
    provider_roots: dict = None   # provider id -> root id: explaining, of every provider; else of
                                  # those not their own root, if the capacity reads needed them
    inventories: dict = None      # explaining: class id -> {provider id: (total, reserved,
                                  # allocation_ratio, used, min_unit, max_unit, step_size)} of
                                  # the groups' classes, when a resource step eliminates some
    served: dict = None           # ... and sharing provider id -> the roots of the trees it
                                  # serves, for those of them the unsuffixed group's
                                  # GroupFindings leave out (without room)


# ---- how stages describe their constraint -------------------------------------------

def aggregates_text(member_of):
    return ' and '.join('(' + ' or '.join(sorted(s)) + ')' for s in member_of)


def traits_text(required, forbidden=()):
    parts = ['(' + ' or '.join(sorted(s)) + ')' if len(s) > 1 else next(iter(s))
             for s in required]
    parts += ['!' + t for t in sorted(forbidden)]
    return ', '.join(parts)


def root_traits_text(params):
    return ', '.join(sorted(params.root_required)
                     + ['!' + t for t in sorted(params.root_forbidden)])
