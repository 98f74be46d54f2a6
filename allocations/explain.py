"""Why does (or doesn't) an allocation-candidates request fit?

For each request group, a funnel: starting from every provider, how many
are left after each constraint of the group in turn, and so how many each
constraint eliminated. A suffixed group needs one provider to satisfy it
all, so its funnel counts providers. The unsuffixed group may spread over a
tree and sharing providers, so when the cloud has trees or sharing providers
its funnel counts trees (root providers): a tree passes a resource
constraint when one of its providers, or a sharing provider in one of its
aggregates, can take the amount.

One query per constraint; explaining is not on the scheduler's hot path.
"""
from dataclasses import dataclass

import os_traits
from django.db.models import Q

from providers.models import Inventory, ProviderAggregate, ProviderTrait, ResourceProvider


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


def explain_search(search):
    """A Funnel per request group of a parsed CandidateSearch."""
    return explain_groups(
        search.groups, search.params,
        has_trees=ResourceProvider.objects.filter(parent_provider__isnull=False).exists(),
        has_sharing=ProviderTrait.objects.filter(
            trait__name=os_traits.MISC_SHARES_VIA_AGGREGATE).exists())


def explain_groups(groups, params, *, has_trees, has_sharing):
    """A Funnel per request group (by suffix)."""
    funnels = []
    for suffix, group in groups.items():
        trees = not group.use_same_provider and (has_trees or has_sharing)
        funnels.append(_funnel(group, params, trees))
    return funnels


def _funnel(group, params, trees):
    providers = ResourceProvider.objects.all()
    candidates = providers.filter(parent_provider__isnull=True) if trees else providers
    steps = _constraints(group, params, trees)
    total = candidates.count()
    result, remaining = [], total
    for text, failure, condition in steps:
        candidates = candidates.filter(condition)
        left = candidates.count()
        result.append(Step(text, failure, left, remaining - left))
        remaining = left
    return Funnel(group.suffix, 'trees' if trees else 'providers', total, result)


def _fitting(class_name, amount):
    return Inventory.objects.filter(resource_class__name=class_name).able_to_fit(amount)


def _in_aggregates(uuids):
    return ProviderAggregate.objects.filter(aggregate__uuid__in=list(uuids))


def _with_traits(names):
    return ProviderTrait.objects.filter(trait__name__in=list(names))


def _root_traits(params):
    conditions = []
    for name in sorted(params.root_required):
        conditions.append((f'root trait {name}', f'have a root without trait {name}',
                           Q(root_provider_id__in=_with_traits([name]).values(
                               'resource_provider_id'))))
    for name in sorted(params.root_forbidden):
        conditions.append((f'root without trait {name}', f'have a root with trait {name}',
                           ~Q(root_provider_id__in=_with_traits([name]).values(
                               'resource_provider_id'))))
    return conditions


def _constraints(group, params, trees):
    """Each constraint as one provider, or one tree with its sharing
    providers (trees=True), must meet it: (text, failure, condition)."""
    # What a matching provider row says about the unit being counted.
    owner = 'resource_provider__root_provider_id' if trees else 'resource_provider_id'
    steps = []
    if group.in_tree:
        root = ResourceProvider.objects.filter(uuid=group.in_tree).values('root_provider_id')[:1]
        steps.append((f'in tree of {group.in_tree}', f'are not in the tree of {group.in_tree}',
                      Q(id__in=root) if trees else Q(root_provider_id__in=root)))
    for name, amount in group.resources.items():
        fitting = _fitting(name, amount)
        condition = Q(id__in=fitting.values(owner))
        if trees and not group.in_tree:  # sharing providers serve no in_tree request
            condition |= Q(id__in=_roots_sharing_with(fitting))
        steps.append((f'{amount} {name}', f'lack {amount} {name}', condition))
    for any_of in group.required_traits:
        steps.append((f'trait {_either(any_of)}', f'lack trait {_either(any_of)}',
                      Q(id__in=_with_traits(any_of).values(owner))))
    for name in sorted(group.forbidden_traits):
        steps.append((f'without trait {name}', f'have forbidden trait {name}',
                      ~Q(id__in=_with_traits([name]).values('resource_provider_id'))))
    for any_of in group.member_of:
        steps.append((f'in aggregate {_either(any_of)}', f'are not in aggregate {_either(any_of)}',
                      Q(id__in=_in_aggregates(any_of).values(owner))))
    if group.forbidden_aggs:
        steps.append((f'not in aggregate {_either(group.forbidden_aggs)}',
                      f'are in forbidden aggregate {_either(group.forbidden_aggs)}',
                      ~Q(id__in=_in_aggregates(group.forbidden_aggs).values('resource_provider_id'))))
    return steps + _root_traits(params)


def _roots_sharing_with(fitting):
    """Roots of the trees that share an aggregate with a sharing provider
    among the fitting inventories."""
    sharing = _with_traits([os_traits.MISC_SHARES_VIA_AGGREGATE]).values('resource_provider_id')
    shared_aggs = ProviderAggregate.objects.filter(
        resource_provider_id__in=fitting.filter(resource_provider_id__in=sharing).values(
            'resource_provider_id'),
    ).values('aggregate_id')
    return ProviderAggregate.objects.filter(aggregate_id__in=shared_aggs).values(
        'resource_provider__root_provider_id')


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
