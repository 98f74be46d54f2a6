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
SINGULAR_VERBS = {'lack': 'lacks', 'are': 'is', 'have': 'has', 'take': 'takes'}


def cause_text(causes, limit, short=False):
    """What the units a resource step eliminated for `limit` have in
    common (limits.Causes), said of several: 'take at most 32 VCPU at
    once (max_unit), not 64'; short, after 'cannot take 64 VCPU:', 'take
    at most 32 at once (max_unit)'."""
    name, amount = causes.name, causes.amount
    what, it = ('', 'it') if short else (f' {name}', f'{amount:,} {name}')
    not_amount = '' if short else f', not {amount:,}'
    if limit == 'capacity':
        return 'lack it free' if short else f'lack {amount:,} {name}'
    if limit == 'max_unit':
        return (f'take at most {_either(causes.max_units)}{what} at once (max_unit)'
                f'{not_amount}')
    if limit == 'min_unit':
        return (f'take at least {_either(causes.min_units)}{what} at once (min_unit)'
                f'{not_amount}')
    if limit == 'step_size':
        return (f"take {'it' if short else name} only in steps of {_either(causes.steps)} "
                f'(step_size){not_amount}')
    if limit == 'split':
        return (f'have {it} free only split across their providers '
                f'(at most {int(causes.split_largest):,} on one)')
    if limit == 'limits':
        return (f'have no provider both with {it} free and allowing it (max_unit, min_unit, '
                'step_size)')
    none = 'none' if short else f'no {name}'
    if limit == 'unreached':
        return f'have {none}, nor a sharing provider of it in their aggregates'
    return f'have {none}'


def causes_text(causes, unit, eliminated):
    """A resource step's eliminated units, by cause: '40 trees take at most
    32 VCPU at once (max_unit), not 64' or, with several causes, '40 trees
    cannot take 64 VCPU: 30 take at most 32 at once (max_unit), 10 lack it
    free'."""
    ordered = [(limit, causes.counts[limit]) for limit in CAUSE_ORDER if causes.counts[limit]]
    if len(ordered) == 1 and ordered[0][1] == eliminated:
        return _counted_failure(eliminated, unit, cause_text(causes, ordered[0][0]))
    parts = ', '.join(f'{count:,} {_verb(cause_text(causes, limit, short=True), count)}'
                      for limit, count in ordered)
    head = _counted_failure(eliminated, unit, f'cannot take {causes.amount:,} {causes.name}')
    return f'{head}: {parts}' if parts else head


def cause_rows(causes):
    """[(limit, count, text)] of a resource step's limits.Causes, in
    CAUSE_ORDER ('max_unit', 30, 'take at most 32 VCPU at once (max_unit),
    not 64')."""
    return [(limit, causes.counts[limit], _verb(cause_text(causes, limit), causes.counts[limit]))
            for limit in CAUSE_ORDER if causes.counts[limit]]


# The order causes are listed in.
CAUSE_ORDER = ('max_unit', 'min_unit', 'step_size', 'split', 'capacity', 'limits', 'unreached',
               'none')


def _counted_failure(count, unit, failure):
    return f'{count:,} {unit} {failure}' if count != 1 else f'1 {unit[:-1]} {_singular(failure)}'


def _either(values, shown=3):
    """'16 or 32'; '4, 8, 16 or more' past `shown` values."""
    values = [f'{value:,}' for value in sorted(values)]
    if len(values) > shown:
        return f"{', '.join(values[:shown])} or more"
    return ' or '.join(values)


def _verb(failure, count):
    return failure if count != 1 else _singular(failure)


# How each rule of combining that ruled trees out is told (combining.py).
BLOCKED_TEXTS = {
    'isolate': 'group_policy=isolate rules out {trees} (their groups fit only by sharing a '
               'provider)',
    'same_subtree': 'same_subtree rules out {trees}',
    'isolate_and_same_subtree': 'group_policy=isolate and same_subtree each rule out {trees}',
    'isolate_with_same_subtree': 'group_policy=isolate and same_subtree together rule out '
                                 '{trees}',
    'provider_capacity': 'in {trees} the groups together would exceed a provider\'s capacity '
                         'or max_unit',
    'tree_capacity': "in {trees} the groups together ask for more of a class than the "
                     "tree's providers have",
    'one_provider_per_tree': 'before microversion 1.29 a candidate may use one provider per '
                             'tree, which rules out {trees}',
    'apart': 'only some of the groups fit in {trees}',
}


def summary(funnels, candidates, blocked=None):
    """For an empty answer, why: the groups that nothing satisfies, each with
    what eliminated its providers in the funnel's order ('412 providers lack
    2 VCPU; 30 more lack trait HW_CPU_X86_AVX2'), or, when every group fits
    on its own, that no combination of them does and which rules of
    combining rule out how many trees (`blocked`, combining.blocked_trees)."""
    if candidates:
        return []
    sentences = []
    for funnel in funnels:
        if not funnel.steps or funnel.steps[-1].remaining:
            continue
        parts = [_step_text(step, funnel.unit, index)
                 for index, step in enumerate(s for s in funnel.steps if s.eliminated)]
        sentences.append(f"{label(funnel)}: {'; '.join(parts)}")
    if not sentences:
        fitting = ', '.join(_counted(label(f), f.steps[-1].remaining if f.steps else f.total,
                                     f.unit) for f in funnels)
        why = '; '.join(BLOCKED_TEXTS[cause].format(
            trees=f"{count:,} tree{'s' if count != 1 else ''}")
            for cause, count in sorted((blocked or {}).items(),
                                       key=lambda item: list(BLOCKED_TEXTS).index(item[0])))
        sentences.append(f'Every request group fits on its own ({fitting}), but no '
                         f"combination of them does{': ' + why if why else ''}.")
    return sentences


def _step_text(step, unit, index):
    """'412 providers lack 2 VCPU', '30 more ...' after the first."""
    if step.causes is not None:
        text = causes_text(step.causes, unit, step.eliminated)
    else:
        text = _counted_failure(step.eliminated, unit, step.failure)
    if index:
        count, _, rest = text.partition(' ')
        text = f'{count} more {rest}'
    return text


def _counted(label, count, unit):
    return f'{label} {count:,} {unit if count != 1 else unit[:-1]}'


def _singular(failure):
    """'lack 2 VCPU' said of one tree or provider: 'lacks 2 VCPU'."""
    verb, _, rest = failure.partition(' ')
    rest = rest.replace(' their ', ' its ').replace('(their ', '(its ')
    return f"{SINGULAR_VERBS.get(verb, verb)} {rest}"


def label(funnel):
    return f'group {funnel.group}' if funnel.group else 'unsuffixed group'
