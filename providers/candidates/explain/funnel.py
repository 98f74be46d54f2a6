"""A group's funnel: starting from every provider (or every tree, for the
unsuffixed group in a cloud of trees or sharing providers), how many are
left after each constraint of the group in turn, read from the group's
findings (see the package docstring for how a tree passes)."""
import functools
from dataclasses import dataclass
from dataclasses import field

from providers.candidates.explain import limits
from providers.candidates.explain import wording
from providers.candidates.findings import root_traits_text


@dataclass
class Step:
    constraint: str     # what passes, e.g. '2 VCPU'
    failure: str        # what the eliminated lack, e.g. 'lack 2 VCPU'
    remaining: int
    eliminated: int
    causes: object = None   # a resource step's limits.Causes (None: other steps)

    @property
    def cause_rows(self):
        return wording.cause_rows(self.causes) if self.causes else []


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
    causes: object = None   # causes(eliminated ids) -> limits.Causes (kind 'resources')


def funnel(findings, constraints, roots_of):
    remaining = findings.units(roots_of)
    total = len(remaining)
    steps = []
    for constraint in constraints:
        left = constraint.keep(remaining)
        eliminated = remaining - left
        steps.append(Step(constraint.text, constraint.failure, len(left), len(eliminated),
                          constraint.causes(eliminated)
                          if constraint.causes and eliminated else None))
        remaining = left
    return Funnel(findings.suffix, 'trees' if findings.tree_mode else 'providers', total, steps,
                  remaining)


def constraints(findings, params, wide, roots_of, inventories=None):
    """Each constraint of the group, in the funnel's order; with
    `inventories` (limits.Offers), a resource step names what stopped
    each unit it eliminated."""
    group, trees = findings.group, findings.tree_mode

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
        for pairs in findings.capacity.values():
            supplying.update(p for p, _ in pairs)
        having = having & supplying
        passing = owners(having)
        for provider_id in having & findings.served.keys():
            passing = passing | findings.served[provider_id]
        return passing

    steps = []
    if group.in_tree:
        steps.append(Constraint('in_tree', f'in tree of {group.in_tree}',
                                f'are not in the tree of {group.in_tree}',
                                only(findings.units_in_tree(roots_of))))
    for name, amount in group.resources.items():
        steps.append(Constraint(
            'resources', f'{amount:,} {name}', f'lack {amount:,} {name}',
            only(findings.units_with_room(name)),
            causes=inventories and functools.partial(limits.causes, findings, name, inventories)))
    where = ' on a provider of their resources' if trees and group.resources else ''
    for index, (any_of, having) in enumerate(zip(group.required_traits, findings.required_sets)):
        steps.append(Constraint('required', f'trait {either(any_of)}',
                                f'lack trait {either(any_of)}{where}',
                                only(at_resources(having)), index))
    if group.forbidden_traits:
        names = sorted(group.forbidden_traits)
        text = f'trait {names[0]}' if len(names) == 1 else f"traits {', '.join(names)}"
        steps.append(Constraint('forbidden', f'without {text}',
                                f'have forbidden trait {either(names)}',
                                without(findings.forbidden)))
    for any_of, members in zip(group.member_of, findings.member_sets):
        steps.append(Constraint('member_of', f'in aggregate {either(any_of)}',
                                f'are not in aggregate {either(any_of)}',
                                only(owners(members))))
    if group.forbidden_aggs:
        steps.append(Constraint('forbidden_aggregates',
                                f'not in aggregate {either(group.forbidden_aggs)}',
                                f'are in forbidden aggregate {either(group.forbidden_aggs)}',
                                without(findings.in_forbidden_aggs)))
    if wide.anchors is not None:
        anchors = wide.anchors
        steps.append(Constraint('root_required', *_root_texts(params),
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


def either(names):
    names = sorted(names)
    return names[0] if len(names) == 1 else '(' + ' or '.join(names) + ')'
