"""Why does (or doesn't) an allocation-candidates request fit?

explain_candidates() runs the search itself (select_candidates with
explain=True, so every constraint is researched even when the answer is
empty) and reads what the research found; its own queries map providers to
their roots (always) and, for a group that fits nearly nothing, read the
inventories of the group's classes and name the closest misses (a fixed
number, whatever the number of providers).

For each request group, a funnel: starting from every provider, how many
are left after each constraint of the group in turn, and so how many each
constraint eliminated. A suffixed group needs one provider to satisfy it
all, so its funnel counts providers. The unsuffixed group may spread over a
tree and sharing providers, so when the cloud has trees or sharing providers
its funnel counts trees (root providers): a tree passes a resource
constraint when one of its providers, or a sharing provider in one of its
aggregates, can take the amount, and a required trait when one of the
providers able to take a requested class has it (as Placement reads
`required` in the unsuffixed group: on the providers of the resources, not
anywhere in the tree).

Beyond the funnels:
- suggestions: when trees have a required trait of the unsuffixed group
  only on their root while the resources come from its children (a
  NUMA-modelled compute node), the request with the trait moved to
  root_required, and how many trees it would fit;
- near misses: for a group that fits fewer than NEARLY_EMPTY trees
  (providers), the closest of those that meet every constraint but one
  resource class, and by how much they fall short.
"""
import collections
import math
from dataclasses import dataclass, field

from allocations.candidates.research import Stage, root_traits_text
from allocations.candidates.selector import select_candidates
from providers import rules
from providers.models import Inventory, ResourceProvider

# What the explain endpoint calls each stage of the search.
STAGE_LABELS = {
    Stage.ROOT_TRAITS: 'root_required',
    Stage.MEMBER_OF: 'member_of',
    Stage.IN_TREE: 'in_tree',
    Stage.CAPACITY: 'capacity',
    Stage.REQUIRED_TRAITS: 'required traits',
    Stage.FORBIDDEN_TRAITS: 'providers with forbidden traits',
    Stage.FORBIDDEN_AGGREGATES: 'providers in forbidden aggregates',
    Stage.SHARING: 'sharing providers',
    Stage.PROVIDERS_MATCHING: 'providers meeting the group',
    Stage.TREES_UNDER_ROOT: 'trees under root_required',
    Stage.TREES_IN_AGGREGATES: 'member_of (provider or its tree)',
    Stage.TREES_OUTSIDE_AGGREGATES: 'trees outside forbidden aggregates',
    Stage.TREES_WITH_CLASSES: 'trees with every class so far',
    Stage.TREES_WITH_TRAITS: 'trees with the traits',
    Stage.GROUP_CANDIDATES: 'candidates for the group',
    Stage.COMBINED: 'combined candidates',
}

# A group that fits fewer trees (providers) than this is nearly empty, and
# its closest misses are named: this many at most.
NEARLY_EMPTY = 3
NEAR_MISSES = 3

# The verbs failures start with, said of one tree or provider.
SINGULAR_VERBS = {'lack': 'lacks', 'are': 'is', 'have': 'has'}


@dataclass
class Step:
    constraint: str     # what passes, e.g. '2 VCPU'
    failure: str        # what the eliminated lack, e.g. 'lack 2 VCPU'
    remaining: int
    eliminated: int


@dataclass
class Funnel:
    group: str
    unit: str           # 'providers' or 'trees'
    total: int
    steps: list
    passed: set = field(default_factory=set, repr=False)  # ids left after every step


@dataclass
class Constraint:
    """One constraint of a group as the funnel applies it."""
    kind: str           # 'in_tree', 'resources', 'required', 'forbidden', 'member_of',
                        # 'forbidden_aggregates' or 'root_required'
    text: str
    failure: str
    keep: object        # keep(ids) -> the ids (providers, or roots of trees) passing it
    index: int = 0      # which required set (kind 'required')


@dataclass
class Suggestion:
    """The unsuffixed group's required traits that some trees have only on
    their root, moved to root_required."""
    traits: list        # the traits moved, sorted
    root_required: str  # root_required's value with them
    trees: int          # trees the group would fit so
    trees_now: int
    text: str

    def rewrite(self, params):
        """A copy of `params` (a QueryDict: GET /allocation_candidates' query
        string, or the explorer's form, which names both fields alike) with
        the traits moved from `required` to `root_required`."""
        params = params.copy()
        moved = set(self.traits)
        kept = []
        for value in params.getlist('required'):
            if value.startswith('in:'):
                if {name.strip() for name in value[3:].split(',')} - moved:
                    kept.append(value)
                continue
            names = [name.strip() for name in value.split(',')]
            names = [name for name in names if name and name not in moved]
            if names:
                kept.append(','.join(names))
        if kept:
            params.setlist('required', kept)
        else:
            params.pop('required', None)
        params['root_required'] = self.root_required
        return params


@dataclass
class NearMiss:
    """A tree (or provider) that meets every constraint of its group but
    one resource class, with what it lacks of it."""
    group: str
    unit: str           # 'trees' or 'providers', as the group's funnel counts
    tree_id: int
    provider_id: int    # the provider of the tree that came closest
    resource_class: str
    requested: int
    lacking: int
    limit: str          # 'capacity' (free capacity) or 'max_unit'
    tree: str = ''      # names and uuids, read for the closest only
    tree_uuid: str = ''
    provider: str = ''
    provider_uuid: str = ''

    @property
    def name(self):
        return self.tree if self.unit == 'trees' else self.provider

    @property
    def shortfall(self):
        if self.limit == 'max_unit':
            return (f'takes at most {self.requested - self.lacking:,} {self.resource_class} '
                    'at once (max_unit)')
        return f'lacks {self.lacking:,} {self.resource_class}'

    @property
    def text(self):
        return f'{self.name} {self.shortfall}'


@dataclass
class Explanation:
    result: object      # the selector's CandidateResult
    funnels: list       # a Funnel per request group
    suggestions: list = field(default_factory=list)
    near_misses: list = field(default_factory=list)

    @property
    def why(self):
        """For an empty answer, why (see summary)."""
        return summary(self.funnels, self.result.allocation_requests)

    @property
    def closest(self):
        """A sentence per group with near misses."""
        by_group = collections.defaultdict(list)
        for miss in self.near_misses:
            by_group[miss.group].append(miss.text)
        return [f"{_label(funnel)}, closest: {'; '.join(by_group[funnel.group])}"
                for funnel in self.funnels if by_group.get(funnel.group)]

    @property
    def sentences(self):
        return self.why + self.closest + [s.text for s in self.suggestions]


def explain_candidates(query, *, settings=None, suggest_root_required=True, counted=True):
    """The candidates for a CandidateQuery, with a Funnel per group, the
    suggestions and the near misses. suggest_root_required=False before
    microversion 1.35, which has no root_required. counted=False builds
    only the candidates a limit takes, not every group's to count them (the
    search stages' GROUP_CANDIDATES): the funnels do not need them."""
    result = select_candidates(query, settings=settings, explain=True, counted=counted)
    research = result.research
    roots_of = dict(ResourceProvider.objects.values_list('id', 'root_provider_id'))
    explained = []
    for suffix in query.groups:
        found = research.findings[suffix]
        constraints = _constraints(found, research, roots_of)
        explained.append((found, constraints, _funnel(found, constraints, roots_of)))
    suggestions = []
    if suggest_root_required:
        for found, constraints, funnel in explained:
            suggestions += _root_trait_suggestions(found, research, constraints, funnel, roots_of)
    near_misses = _near_misses(explained, research, roots_of)
    return Explanation(result, [funnel for _, _, funnel in explained], suggestions, near_misses)


def _universe(found, roots_of):
    """What the group's funnel counts: every root, or every provider."""
    if found.tree_mode:
        return {pk for pk, root in roots_of.items() if pk == root}
    return set(roots_of)


def _funnel(found, constraints, roots_of):
    remaining = _universe(found, roots_of)
    total = len(remaining)
    steps = []
    for constraint in constraints:
        left = constraint.keep(remaining)
        steps.append(Step(constraint.text, constraint.failure, len(left),
                          len(remaining) - len(left)))
        remaining = left
    return Funnel(found.suffix, 'trees' if found.tree_mode else 'providers', total, steps,
                  remaining)


def _constraints(found, research, roots_of):
    """Each constraint of the group, in the funnel's order."""
    group, trees = found.group, found.tree_mode

    def owners(provider_ids):
        # what a matching provider says about the unit being counted
        return {roots_of[p] for p in provider_ids if p in roots_of} if trees else provider_ids

    def only(passing):
        return lambda ids: ids & passing

    def without(failing):
        return lambda ids: ids - failing

    def at_resources(having):
        if not trees or not group.resources:
            return owners(having)
        # The providers able to take a requested class: in a tree, where
        # the group's required traits must be.
        supplying = set()
        for pairs in found.capacity.values():
            supplying.update(p for p, _ in pairs)
        having = having & supplying
        passing = owners(having)
        for provider_id in having & found.served.keys():
            passing = passing | found.served[provider_id]
        return passing

    steps = []
    if group.in_tree:
        root = found.tree_root
        in_tree = {root} if trees else {p for p, r in roots_of.items() if r == root}
        steps.append(Constraint('in_tree', f'in tree of {group.in_tree}',
                                f'are not in the tree of {group.in_tree}',
                                only(in_tree if root is not None else set())))
    for name, amount in group.resources.items():
        pairs = found.capacity.get(name, ())  # (provider, its root) with room enough
        passing = {root for _, root in pairs} if trees else {p for p, _ in pairs}
        for provider_id in found.served.keys() & {p for p, _ in pairs}:
            passing |= found.served[provider_id]
        steps.append(Constraint('resources', f'{amount:,} {name}', f'lack {amount:,} {name}',
                                only(passing)))
    where = ' on a provider of their resources' if trees and group.resources else ''
    for index, (any_of, having) in enumerate(zip(group.required_traits, found.required_sets)):
        steps.append(Constraint('required', f'trait {_either(any_of)}',
                                f'lack trait {_either(any_of)}{where}',
                                only(at_resources(having)), index))
    if group.forbidden_traits:
        names = sorted(group.forbidden_traits)
        text = f'trait {names[0]}' if len(names) == 1 else f"traits {', '.join(names)}"
        steps.append(Constraint('forbidden', f'without {text}',
                                f'have forbidden trait {_either(names)}',
                                without(found.forbidden)))
    for any_of, members in zip(group.member_of, found.member_sets):
        steps.append(Constraint('member_of', f'in aggregate {_either(any_of)}',
                                f'are not in aggregate {_either(any_of)}',
                                only(owners(members))))
    if group.forbidden_aggs:
        steps.append(Constraint('forbidden_aggregates',
                                f'not in aggregate {_either(group.forbidden_aggs)}',
                                f'are in forbidden aggregate {_either(group.forbidden_aggs)}',
                                without(found.in_forbidden_aggs)))
    if research.anchors is not None:
        anchors = research.anchors
        steps.append(Constraint('root_required', *_root_texts(research.query.params),
                                lambda ids: {i for i in ids if roots_of.get(i) in anchors}))
    return steps


def _root_texts(params):
    if len(params.root_required) == 1 and not params.root_forbidden:
        name = next(iter(params.root_required))
        return f'root trait {name}', f'have a root without trait {name}'
    if len(params.root_forbidden) == 1 and not params.root_required:
        name = next(iter(params.root_forbidden))
        return f'root without trait {name}', f'have a root with trait {name}'
    text = root_traits_text(params)
    return f'root traits {text}', f'have a root not matching {text}'


def _either(names):
    names = sorted(names)
    return names[0] if len(names) == 1 else '(' + ' or '.join(names) + ')'


# ---- traits on the root that belong in root_required ------------------------------

def _root_trait_suggestions(found, research, constraints, funnel, roots_of):
    """For the unsuffixed group in a cloud of trees: the trees the funnel
    drops only for required traits (single traits, not any-of sets) that
    they have on their root provider, which supplies none of the resources
    (Placement looks for `required` on the providers of the resources, and
    for `root_required` on the root). A suggestion per set of such traits,
    when moving them to root_required fits more trees than now (it may
    lose trees that have a trait on a child supplying resources but not on
    their root)."""
    group = found.group
    if group.suffix or not found.tree_mode or not group.resources:
        return []
    params = research.query.params
    roots = _universe(found, roots_of)
    passing = [constraint.keep(roots) for constraint in constraints]
    on_root = {}  # constraint index -> roots having the trait
    for i, constraint in enumerate(constraints):
        if constraint.kind != 'required':
            continue
        any_of = group.required_traits[constraint.index]
        trait = next(iter(any_of))
        if len(any_of) == 1 and trait not in params.root_required | params.root_forbidden:
            on_root[i] = roots & found.required_sets[constraint.index]
    if not on_root:
        return []
    rescued_by = collections.defaultdict(set)  # constraint indexes failed -> trees
    for root in roots - funnel.passed:
        failed = frozenset(i for i, ids in enumerate(passing) if root not in ids)
        if failed and all(i in on_root and root in on_root[i] for i in failed):
            rescued_by[failed].add(root)
    suggestions = []
    for moved, rescued in rescued_by.items():
        would = roots
        for i, ids in enumerate(passing):
            would = would & (on_root[i] if i in moved else ids)
        if len(would) <= len(funnel.passed):
            continue
        traits = sorted(next(iter(group.required_traits[constraints[i].index])) for i in moved)
        root_required = ','.join(sorted(params.root_required) + traits
                                 + ['!' + t for t in sorted(params.root_forbidden)])
        suggestions.append(Suggestion(
            traits, root_required, len(would), len(funnel.passed),
            _suggestion_text(found, traits, rescued, root_required, len(would),
                             len(funnel.passed))))
    return sorted(suggestions, key=lambda s: (-s.trees, s.traits))


def _suggestion_text(found, traits, rescued, root_required, would, now):
    from_children = [name for name in found.resources
                     if any(root in rescued and p != root for p, root in found.capacity[name])]
    shared = [name for name in found.resources if name not in from_children]
    one = len(rescued) == 1
    their = 'its' if one else 'their'
    sources = []
    if from_children:
        verb = 'comes' if len(from_children) == 1 else 'come'
        sources.append(f'{_and(from_children)} {verb} from child providers')
    if shared:
        sources.append(f'{_and(shared)} from sharing providers')
    return (f"{len(rescued):,} {'tree has' if one else 'trees have'} {_and(traits)} only on "
            f"{their} root provider while {their} {' and '.join(sources)}; ask "
            f'root_required={root_required} instead (then {would:,} '
            f"{'tree fits' if would == 1 else 'trees fit'} the unsuffixed group, not {now:,})")


def _and(names):
    names = list(names)
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


# ---- near misses ------------------------------------------------------------------

def _near_misses(explained, research, roots_of):
    """The closest misses of every nearly empty group (see
    _group_near_misses), named. At most three queries: the inventories of
    the groups' classes, the trees their sharing providers serve, the
    names of the closest."""
    wanted = [(found, constraints, funnel) for found, constraints, funnel in explained
              if found.resources and len(funnel.passed) < NEARLY_EMPTY]
    class_ids = {class_id for found, _, _ in wanted for class_id in found.class_ids.values()
                 if class_id is not None}
    if not class_ids:
        return []
    inventories = list(Inventory.objects.filter(resource_class_id__in=class_ids).values_list(
        'resource_provider_id', 'resource_class_id', 'total', 'reserved', 'allocation_ratio',
        'used', 'min_unit', 'max_unit', 'step_size').order_by())
    # The trees that sharing providers without room enough serve (those
    # with room are known from the research).
    unserved = {row[0] for row in inventories for found, _, _ in wanted
                if _sharing_scope(found) and row[0] in found.sharing
                and row[0] not in found.served}
    served = research.trees_served(unserved)
    misses = []
    for found, constraints, funnel in wanted:
        misses += _group_near_misses(found, constraints, funnel, inventories, served, roots_of)
    if misses:
        named = {pk: (name, uuid) for pk, name, uuid in ResourceProvider.objects.filter(
            pk__in={m.tree_id for m in misses} | {m.provider_id for m in misses}).values_list(
            'pk', 'name', 'uuid')}
        for miss in misses:
            miss.tree, miss.tree_uuid = named[miss.tree_id]
            miss.provider, miss.provider_uuid = named[miss.provider_id]
    return misses


def _sharing_scope(found):
    """Does the group take classes from sharing providers? (Not within
    one tree, see Research._sharing.)"""
    return found.tree_mode and bool(found.sharing) and not found.group.in_tree


def _group_near_misses(found, constraints, funnel, inventories, served, roots_of):
    """The NEAR_MISSES trees (providers) closest to fitting the group among
    those it eliminated: they meet every constraint of the group but one
    resource class, which one of their providers (or a sharing provider
    serving the tree) has but cannot take as much of as asked. Closest:
    lacking the smallest share of the amount asked, then the smallest
    amount, then the oldest tree (provider).

    How much a provider lacks honours its allocation ratio, reserved and
    used amounts (what the capacity check compares) and its max_unit; a
    provider whose min_unit or step size refuses the amount is not close.
    In a tree a required trait counts on any provider with an inventory
    of a requested class that could take it, had it room enough."""
    trees, resources = found.tree_mode, found.resources
    names = {class_id: name for name, class_id in found.class_ids.items() if class_id is not None}
    others = _universe(found, roots_of) - funnel.passed
    for constraint in constraints:
        if constraint.kind == 'resources' or (trees and constraint.kind == 'required'):
            continue
        others = constraint.keep(others)
    if not others:
        return []
    sharing = found.sharing if _sharing_scope(found) else frozenset()
    best = {}                                  # (unit, class name) -> (lacking, provider, limit)
    supplying = collections.defaultdict(set)   # unit -> providers that could take a class
    for provider_id, class_id, total, reserved, ratio, used, min_unit, max_unit, step in \
            inventories:
        name = names.get(class_id)
        if name is None or provider_id not in roots_of:
            continue
        amount = resources[name]
        if amount < min_unit or amount % step:
            continue
        lacking, limit = _shortfall(amount, total, reserved, ratio, used or 0, max_unit)
        units = {roots_of[provider_id]} if trees else {provider_id}
        if provider_id in sharing:
            units |= found.served.get(provider_id, set()) | served.get(provider_id, set())
        for unit in units & others:
            supplying[unit].add(provider_id)
            key = (unit, name)
            if key not in best or (lacking, provider_id) < best[key][:2]:
                best[key] = (lacking, provider_id, limit)
    if trees:
        for having in found.required_sets:
            others = {unit for unit in others if not having.isdisjoint(supplying[unit])}
    closest = []
    for unit in others:
        short = [(name, best.get((unit, name))) for name in resources]
        if not all(b for _, b in short):
            continue  # it has no inventory of a class at all: not close
        short = [(name, b) for name, b in short if b[0] > 0]
        if len(short) != 1:
            continue
        (name, (lacking, provider_id, limit)), = short
        amount = resources[name]
        closest.append(((lacking / amount, lacking, unit), NearMiss(
            found.suffix, funnel.unit, roots_of[unit] if trees else roots_of[provider_id],
            provider_id, name, amount, lacking, limit)))
    closest.sort(key=lambda pair: pair[0])
    return [miss for _, miss in closest[:NEAR_MISSES]]


def _shortfall(amount, total, reserved, ratio, used, max_unit):
    """(how much more an inventory would need to take `amount`, and what
    limits it: 'capacity' or 'max_unit'); at most 0 when it fits. The
    capacity check is used + amount <= capacity (providers.rules)."""
    by_capacity = math.ceil(used + amount - rules.capacity(total, reserved, ratio))
    by_max_unit = amount - max_unit
    if by_max_unit > by_capacity:
        return by_max_unit, 'max_unit'
    return by_capacity, 'capacity'


# ---- in words ---------------------------------------------------------------------

def summary(funnels, candidates):
    """For an empty answer, why: the groups that nothing satisfies, each with
    what eliminated its providers in the funnel's order ('412 providers lack
    2 VCPU; 30 more lack trait HW_CPU_X86_AVX2'), or, when every group fits
    on its own, that no combination of them does."""
    if candidates:
        return []
    sentences = []
    for funnel in funnels:
        if not funnel.steps or funnel.steps[-1].remaining:
            continue
        parts = [f'{step.eliminated:,}{" more" if index else ""} '
                 + (f'{funnel.unit} {step.failure}' if step.eliminated > 1
                    else f'{funnel.unit[:-1]} {_singular(step.failure)}')
                 for index, step in enumerate(s for s in funnel.steps if s.eliminated)]
        sentences.append(f"{_label(funnel)}: {'; '.join(parts)}")
    if not sentences:
        fitting = ', '.join(_counted(_label(f), f.steps[-1].remaining if f.steps else f.total,
                                     f.unit) for f in funnels)
        sentences.append(
            f'Every request group fits on its own ({fitting}), but no combination of them '
            'does: group_policy, same_subtree, root_required or the capacity left when the '
            'groups share providers rules them out.')
    return sentences


def _counted(label, count, unit):
    return f'{label} {count:,} {unit if count != 1 else unit[:-1]}'


def _singular(failure):
    """'lack 2 VCPU' said of one tree or provider: 'lacks 2 VCPU'."""
    verb, _, rest = failure.partition(' ')
    return f"{SINGULAR_VERBS.get(verb, verb)} {rest}"


def _label(funnel):
    return f'group {funnel.group}' if funnel.group else 'unsuffixed group'
