"""Why does (or doesn't) an allocation-candidates request fit?

For each request group, a funnel: starting from every provider, how many
are left after each constraint of the group in turn, and so how many each
constraint eliminated. A suffixed group needs one provider to satisfy it
all, so its funnel counts providers. The unsuffixed group may spread over a
tree and sharing providers, so when the cloud has trees or sharing providers
its funnel counts trees (root providers): a tree passes a resource
constraint when one of its providers, or a sharing provider in one of its
aggregates, can take the amount.

One plain query per constraint, id sets intersected in Python: no plan
for the statistics to get wrong.
"""
from dataclasses import dataclass

import os_traits
from django.db.models import OuterRef, Subquery

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
    providers = dict(ResourceProvider.objects.values_list('id', 'root_provider_id'))
    if trees:
        remaining = {pk for pk, root in providers.items() if pk == root}
    else:
        remaining = set(providers)
    total = len(remaining)
    steps = []
    for text, failure, keep in _constraints(group, params, trees, providers):
        left = keep(remaining)
        steps.append(Step(text, failure, len(left), len(remaining) - len(left)))
        remaining = left
    return Funnel(group.suffix, 'trees' if trees else 'providers', total, steps)


def _fitting(class_name, amount):
    """(provider id, root id) of providers whose inventory takes `amount`:
    the same capacity query the candidate search runs."""
    root = Subquery(ResourceProvider.objects.filter(
        pk=OuterRef('resource_provider_id')).values('root_provider_id')[:1])
    return set(Inventory.objects.filter(resource_class__name=class_name).able_to_fit(amount)
               .annotate(root=root).values_list('resource_provider_id', 'root').order_by())


def _in_aggregates(uuids):
    return set(ProviderAggregate.objects.filter(aggregate__uuid__in=list(uuids)).values_list(
        'resource_provider_id', flat=True))


def _with_traits(names):
    return set(ProviderTrait.objects.filter(trait__name__in=list(names)).values_list(
        'resource_provider_id', flat=True))


def _constraints(group, params, trees, providers):
    """Each constraint as one provider, or one tree with its sharing
    providers (trees=True), must meet it: (text, failure, keep) where
    keep(ids) returns the ids that pass. One plain query each."""
    def owners(provider_ids):
        # what a matching provider says about the unit being counted
        return {providers[p] for p in provider_ids if p in providers} if trees else provider_ids

    def only(passing):
        return lambda ids: ids & passing

    def without(failing):
        return lambda ids: ids - failing

    steps = []
    if group.in_tree:
        root = ResourceProvider.objects.filter(uuid=group.in_tree).values_list(
            'root_provider_id', flat=True).first()
        in_tree = {root} if trees else {p for p, r in providers.items() if r == root}
        steps.append((f'in tree of {group.in_tree}', f'are not in the tree of {group.in_tree}',
                      only(in_tree)))
    for name, amount in group.resources.items():
        fitting = {p for p, _ in _fitting(name, amount)}
        passing = owners(fitting)
        if trees and not group.in_tree:  # sharing providers serve no in_tree request
            passing = passing | _roots_sharing_with(fitting, providers)
        steps.append((f'{amount} {name}', f'lack {amount} {name}', only(passing)))
    for any_of in group.required_traits:
        steps.append((f'trait {_either(any_of)}', f'lack trait {_either(any_of)}',
                      only(owners(_with_traits(any_of)))))
    for name in sorted(group.forbidden_traits):
        steps.append((f'without trait {name}', f'have forbidden trait {name}',
                      without(_with_traits([name]))))
    for any_of in group.member_of:
        steps.append((f'in aggregate {_either(any_of)}', f'are not in aggregate {_either(any_of)}',
                      only(owners(_in_aggregates(any_of)))))
    if group.forbidden_aggs:
        steps.append((f'not in aggregate {_either(group.forbidden_aggs)}',
                      f'are in forbidden aggregate {_either(group.forbidden_aggs)}',
                      without(_in_aggregates(group.forbidden_aggs))))
    for name in sorted(params.root_required):
        roots = _with_traits([name])
        steps.append((f'root trait {name}', f'have a root without trait {name}',
                      lambda ids, roots=roots: {i for i in ids if providers[i] in roots}))
    for name in sorted(params.root_forbidden):
        roots = _with_traits([name])
        steps.append((f'root without trait {name}', f'have a root with trait {name}',
                      lambda ids, roots=roots: {i for i in ids if providers[i] not in roots}))
    return steps


def _roots_sharing_with(provider_ids, providers):
    """Roots of the trees that share an aggregate with a sharing provider
    among `provider_ids`."""
    sharing = provider_ids & _with_traits([os_traits.MISC_SHARES_VIA_AGGREGATE])
    if not sharing:
        return set()
    aggregates = ProviderAggregate.objects.filter(
        resource_provider_id__in=list(sharing)).values('aggregate_id')
    members = ProviderAggregate.objects.filter(aggregate_id__in=aggregates).values_list(
        'resource_provider_id', flat=True)
    return {providers[p] for p in members if p in providers}


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
