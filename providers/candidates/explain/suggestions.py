"""Suggestions: required traits of the unsuffixed group that trees have
only on their root (a NUMA-modelled compute node), moved to
root_required, when that fits more trees."""
import collections
from dataclasses import dataclass


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


def root_trait_suggestions(findings, params, constraints, funnel, roots_of):
    """For the unsuffixed group in a cloud of trees: the trees the funnel
    drops only for required traits (single traits, not any-of sets) that
    they have on their root provider, which supplies none of the resources
    (Placement looks for `required` on the providers of the resources, and
    for `root_required` on the root). A suggestion per set of such traits,
    when moving them to root_required fits more trees than now (it may
    lose trees that have a trait on a child supplying resources but not on
    their root)."""
    group = findings.group
    if group.suffix or not findings.tree_mode or not group.resources:
        return []
    roots = findings.units(roots_of)
    passing = [constraint.keep(roots) for constraint in constraints]
    on_root = {}  # constraint index -> roots having the trait
    for i, constraint in enumerate(constraints):
        if constraint.kind != 'required':
            continue
        any_of = group.required_traits[constraint.index]
        trait = next(iter(any_of))
        if len(any_of) == 1 and trait not in params.root_required | params.root_forbidden:
            on_root[i] = roots & findings.required_sets[constraint.index]
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
            _suggestion_text(findings, traits, rescued, root_required, len(would),
                             len(funnel.passed))))
    return sorted(suggestions, key=lambda s: (-s.trees, s.traits))


def _suggestion_text(findings, traits, rescued, root_required, would, now):
    from_children = [name for name in findings.resources
                     if any(root in rescued and p != root for p, root in findings.capacity[name])]
    shared = [name for name in findings.resources if name not in from_children]
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
