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


# What each limit refuses, said of several trees or providers (_singular
# says it of one): a resource step's causes and a near miss's shortfall.
REFUSALS = {
    'capacity': 'lack {lacking}',
    'max_unit': 'take at most {values}{what} at once (max_unit)',
    'min_unit': 'take at least {values}{what} at once (min_unit)',
    'step_size': 'take {the_class} only in steps of {values} (step_size)',
    'split': 'have {asked} free only split across {across} (at most {largest} on one)',
    'limits': 'have no provider both with {asked} free and allowing it (max_unit, min_unit, '
              'step_size)',
    'unreached': 'have {none}, nor a sharing provider of it in their aggregates',
    'none': 'have {none}',
}

# The least change that lifts a limit on one provider: a near miss's.
CHANGES = {
    'capacity': 'free {lacking} on {where}',
    'split': 'free {lacking} on {where}, or ask less than {amount} per provider',
    'max_unit': 'raise max_unit of {name} on {where} to {amount}',
    'min_unit': 'lower min_unit of {name} on {where} to {amount}',
    'step_size': 'a step_size of {name} on {where} that divides {amount}',
}

# The limits an inventory sets itself, each refusing an amount by its value.
UNIT_LIMITS = ('max_unit', 'min_unit', 'step_size')


def refusal(limit, *, name='', values='', asked='it', lacking='it free',
            across='their providers', largest=''):
    """What `limit` refuses, said of several ('take at most 32 VCPU at once
    (max_unit)'). name: the class ('' after 'cannot take 64 VCPU:');
    values: the limit's ('16 or 32'); asked: what is asked ('64 VCPU', or
    'it'); lacking: what is missing free; across, largest: the providers a
    split is across and the most free on one."""
    return REFUSALS[limit].format(
        what=f' {name}' if name else '', the_class=name or 'it',
        none=f'no {name}' if name else 'none', values=values, asked=asked, lacking=lacking,
        across=across, largest=largest)


def change(limit, *, name, where, amount, lacking):
    """The least change that would let a provider (`where`) take `amount`
    of the class `name` past `limit` ('raise max_unit of VCPU on cn1 to
    64'); lacking: what it lacks free."""
    return CHANGES[limit].format(name=name, where=where, amount=f'{amount:,}',
                                 lacking=f'{lacking:,} {name}')


def refused_by_one(limit, **fields):
    """refusal() said of one tree or provider ('takes at most 32 VCPU at
    once (max_unit)')."""
    return _singular(refusal(limit, **fields))


def cause_text(causes, limit, short=False):
    """What the units a resource step eliminated for `limit` have in
    common (limits.Causes), said of several: 'take at most 32 VCPU at
    once (max_unit), not 64'; short, after 'cannot take 64 VCPU:', 'take
    at most 32 at once (max_unit)'."""
    values = _either({'max_unit': causes.max_units, 'min_unit': causes.min_units,
                      'step_size': causes.steps}.get(limit, ()))
    largest = f'{int(causes.split_largest):,}'
    if short:
        return refusal(limit, values=values, largest=largest)
    asked = f'{causes.amount:,} {causes.name}'
    text = refusal(limit, name=causes.name, values=values, asked=asked, lacking=asked,
                   largest=largest)
    return f'{text}, not {causes.amount:,}' if limit in UNIT_LIMITS else text


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
