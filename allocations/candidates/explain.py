"""Why does (or doesn't) an allocation-candidates request fit?

explain_candidates() runs the search itself (select_candidates with
explain=True, so every constraint is researched even when the answer is
empty) and reads what the research found; the only query of its own maps
providers to their roots and counts them.

For each request group, a funnel: starting from every provider, how many
are left after each constraint of the group in turn, and so how many each
constraint eliminated. A suffixed group needs one provider to satisfy it
all, so its funnel counts providers. The unsuffixed group may spread over a
tree and sharing providers, so when the cloud has trees or sharing providers
its funnel counts trees (root providers): a tree passes a resource
constraint when one of its providers, or a sharing provider in one of its
aggregates, can take the amount.
"""
from dataclasses import dataclass

from allocations.candidates.research import Stage, root_traits_text
from allocations.candidates.selector import select_candidates
from providers.models import ResourceProvider

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


@dataclass
class Explanation:
    result: object      # the selector's CandidateResult
    funnels: list       # a Funnel per request group

    @property
    def sentences(self):
        return summary(self.funnels, self.result.allocation_requests)


def explain_candidates(query, *, settings=None):
    """The candidates for a CandidateQuery, with a Funnel per group."""
    result = select_candidates(query, settings=settings, explain=True)
    research = result.research
    roots_of = dict(ResourceProvider.objects.values_list('id', 'root_provider_id'))
    funnels = [_funnel(research.findings[suffix], research, roots_of)
               for suffix in query.groups]
    return Explanation(result, funnels)


def _funnel(found, research, roots_of):
    trees = found.tree_mode
    if trees:
        remaining = {pk for pk, root in roots_of.items() if pk == root}
    else:
        remaining = set(roots_of)
    total = len(remaining)
    steps = []
    for text, failure, keep in _constraints(found, research, roots_of):
        left = keep(remaining)
        steps.append(Step(text, failure, len(left), len(remaining) - len(left)))
        remaining = left
    return Funnel(found.suffix, 'trees' if trees else 'providers', total, steps)


def _constraints(found, research, roots_of):
    """Each constraint of the group, in the funnel's order, as (text,
    failure, keep) where keep(ids) returns the ids (providers, or roots of
    trees) that pass it."""
    group, trees = found.group, found.tree_mode

    def owners(provider_ids):
        # what a matching provider says about the unit being counted
        return {roots_of[p] for p in provider_ids if p in roots_of} if trees else provider_ids

    def only(passing):
        return lambda ids: ids & passing

    def without(failing):
        return lambda ids: ids - failing

    steps = []
    if group.in_tree:
        root = found.tree_root
        in_tree = {root} if trees else {p for p, r in roots_of.items() if r == root}
        steps.append((f'in tree of {group.in_tree}', f'are not in the tree of {group.in_tree}',
                      only(in_tree if root is not None else set())))
    for name, amount in group.resources.items():
        fitting = {p for p, _ in found.capacity.get(name, ())}
        passing = owners(fitting)
        for provider_id in fitting & set(found.served):
            passing = passing | found.served[provider_id]
        steps.append((f'{amount} {name}', f'lack {amount} {name}', only(passing)))
    for any_of, having in zip(group.required_traits, found.required_sets):
        steps.append((f'trait {_either(any_of)}', f'lack trait {_either(any_of)}',
                      only(owners(having))))
    if group.forbidden_traits:
        names = sorted(group.forbidden_traits)
        text = f'trait {names[0]}' if len(names) == 1 else f"traits {', '.join(names)}"
        steps.append((f'without {text}', f'have forbidden trait {_either(names)}',
                      without(found.forbidden)))
    for any_of, members in zip(group.member_of, found.member_sets):
        steps.append((f'in aggregate {_either(any_of)}', f'are not in aggregate {_either(any_of)}',
                      only(owners(members))))
    if group.forbidden_aggs:
        steps.append((f'not in aggregate {_either(group.forbidden_aggs)}',
                      f'are in forbidden aggregate {_either(group.forbidden_aggs)}',
                      without(found.in_forbidden_aggs)))
    if research.anchors is not None:
        anchors = research.anchors
        steps.append((*_root_texts(research.query.params),
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
        parts = [f'{step.eliminated}{" more" if index else ""} '
                 f'{funnel.unit if step.eliminated > 1 else funnel.unit[:-1]} {step.failure}'
                 for index, step in enumerate(s for s in funnel.steps if s.eliminated)]
        sentences.append(f"{_label(funnel)}: {'; '.join(parts)}")
    if not sentences:
        fitting = ', '.join(f'{_label(f)} {f.steps[-1].remaining if f.steps else f.total} {f.unit}'
                            for f in funnels)
        sentences.append(
            f'Every request group fits on its own ({fitting}), but no combination of them '
            'does: group_policy, same_subtree, root_required or the capacity left when the '
            'groups share providers rules them out.')
    return sentences


def _label(funnel):
    return f'group {funnel.group}' if funnel.group else 'unsuffixed group'
