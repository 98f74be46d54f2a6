"""What explain says in words: the stages' labels, and for an empty answer
why, sentence by sentence."""
from providers.candidates.findings import Stage

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


# The verbs failures start with, said of one tree or provider.
SINGULAR_VERBS = {'lack': 'lacks', 'are': 'is', 'have': 'has'}



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
        sentences.append(f"{label(funnel)}: {'; '.join(parts)}")
    if not sentences:
        fitting = ', '.join(_counted(label(f), f.steps[-1].remaining if f.steps else f.total,
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


def label(funnel):
    return f'group {funnel.group}' if funnel.group else 'unsuffixed group'
