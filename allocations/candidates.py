"""Allocation candidates: which combinations of providers can hold a request.

The search follows OpenStack Placement's semantics exactly (the same
candidates for the same data), in stages that each narrow the providers:

  1. per request group and resource class, the providers whose inventory can
     take the amount (capacity, min/max unit, step size), optionally within
     one tree (in_tree);
  2. aggregates (member_of, forbidden aggregates), traits (required, any-of,
     forbidden), root traits (root_required);
  3. trees: the unsuffixed group may combine providers of one tree with
     sharing providers reached through aggregates; suffixed groups each need
     a single provider;
  4. combining the groups per anchor tree, with group_policy, same_subtree
     and the capacity of the combination.

Stages 1-2 are SQL; stage 3-4 combine the surviving providers in Python.
The number of queries depends on the shape of the request (groups, classes,
member_of parameters), never on the number of providers. Every stage records
how many providers (or candidates) survived it, which is what the explain
endpoint reports.
"""
import collections
import itertools
import random
from dataclasses import dataclass, field

import os_traits
from django.db.models import Count, OuterRef, Q, Subquery

from providers import exceptions
from providers.models import (Inventory, ProviderAggregate, ProviderTrait, ResourceClass,
                              ResourceProvider, Trait)
from providers.querysets import usage_subquery
from providers.services import storable

SHARING_TRAIT = os_traits.MISC_SHARES_VIA_AGGREGATE
# Above this many trees, loading every provider beats a huge IN list.
WHOLE_TABLE_THRESHOLD = 1000


# ---- the request ------------------------------------------------------------

@dataclass
class RequestGroup:
    """One request group: the unsuffixed group may spread over a tree and
    sharing providers; a suffixed group needs a single provider."""
    suffix: str = ''
    resources: dict = field(default_factory=dict)       # class name -> amount
    required_traits: list = field(default_factory=list)  # list of any-of sets of names
    forbidden_traits: set = field(default_factory=set)
    member_of: list = field(default_factory=list)        # list of any-of sets of uuids
    forbidden_aggs: set = field(default_factory=set)
    in_tree: str = None

    @property
    def use_same_provider(self):
        return bool(self.suffix)


@dataclass
class RequestWideParams:
    limit: int = None
    group_policy: str = None
    root_required: set = field(default_factory=set)
    root_forbidden: set = field(default_factory=set)
    same_subtrees: list = field(default_factory=list)   # list of sets of suffixes


@dataclass
class SearchSettings:
    randomize: bool = False
    max_candidates: int = -1
    strategy: str = 'depth-first'


class NoCandidates(Exception):
    """Some stage left nothing: the answer is empty (not an error)."""


# ---- what the search produces -------------------------------------------------

class AllocationRequest:
    """One candidate: amounts per (provider, class), and which providers
    satisfied which group (mappings)."""
    __slots__ = ('anchor', 'use_same_provider', 'resources', 'mappings')

    def __init__(self, anchor, resources, mappings, use_same_provider=False):
        self.anchor = anchor              # root provider id of the anchor tree
        self.resources = resources        # list of (provider id, class name, amount)
        self.mappings = mappings          # {suffix: set of provider ids}
        self.use_same_provider = use_same_provider

    def key(self):
        """Identity as Placement compares requests: resources and mappings
        (not the anchor)."""
        return (tuple(sorted(self.resources)),
                tuple(sorted((s, tuple(sorted(ids))) for s, ids in self.mappings.items())))


class ProviderSummary:
    __slots__ = ('id', 'uuid', 'parent_id', 'root_id', 'resources', 'traits')

    def __init__(self, id, uuid, parent_id, root_id):
        self.id = id
        self.uuid = uuid
        self.parent_id = parent_id
        self.root_id = root_id
        self.resources = {}   # class name -> (capacity, used, max_unit)
        self.traits = []


@dataclass
class Stage:
    """How many providers (or candidates) were left after one filter."""
    group: str
    name: str
    remaining: int
    detail: str = ''


@dataclass
class SearchResult:
    allocation_requests: list
    summaries: list
    stages: list
    summaries_by_id: dict


# ---- the search ----------------------------------------------------------------

class CandidateSearch:
    """GET /allocation_candidates for parsed groups and request-wide params."""

    def __init__(self, groups, params, *, nested_aware=True, settings=None):
        self.groups = groups
        self.params = params
        self.nested_aware = nested_aware
        self.settings = settings or SearchSettings()
        self.stages = []
        self.summaries = {}          # provider id -> ProviderSummary
        self.loaded_roots = set()
        self.multi_group_classes = set()
        self.class_totals = collections.Counter()
        self.anchor_root_ids = None
        self.summarized = None   # before 1.29: the providers candidates use

    def record(self, group, name, remaining, detail=''):
        self.stages.append(Stage(group, name, remaining, detail))

    def run(self):
        try:
            requests = self._search()
        except NoCandidates:
            requests = []
        summaries = self._finish(requests)
        return SearchResult(requests, summaries, self.stages, self.summaries)

    # -- request-wide lookups

    def _lookups(self):
        """Names to ids for every class and trait in the request (2 queries);
        unknown names raise, as Placement answers 400 for them."""
        class_names = {rc for g in self.groups.values() for rc in g.resources}
        self.class_ids = dict(ResourceClass.objects.filter(
            name__in=[n for n in class_names if storable(n)]).values_list('name', 'id'))
        self.class_names = {v: k for k, v in self.class_ids.items()}
        trait_names = set(self.params.root_required) | set(self.params.root_forbidden)
        for group in self.groups.values():
            trait_names |= set(group.forbidden_traits)
            for any_of in group.required_traits:
                trait_names |= any_of
        self.trait_ids = dict(Trait.objects.filter(
            name__in=[n for n in trait_names | {SHARING_TRAIT} if storable(n)],
        ).values_list('name', 'id'))

    def class_id(self, name):
        try:
            return self.class_ids[name]
        except KeyError:
            raise exceptions.ResourceClassNotFound(name=name)

    def trait_id(self, name):
        try:
            return self.trait_ids[name]
        except KeyError:
            raise exceptions.TraitNotFound(names=name)

    def _search(self):
        self._lookups()
        self.has_trees = ResourceProvider.objects.filter(parent_provider__isnull=False).exists()
        self._anchor_roots()
        # Placement narrows this one set in place when a group has member_of,
        # and later groups see the narrowed set; kept for identical answers.
        self.sharing = set(ProviderTrait.objects.filter(
            trait_id=self.trait_ids.get(SHARING_TRAIT)).values_list('resource_provider_id', flat=True))
        self.all_sharing = frozenset(self.sharing)
        by_suffix = {}
        for suffix, group in self.groups.items():
            search = GroupSearch(self, group)
            for name in group.resources:
                if name in self.class_totals:
                    self.multi_group_classes.add(name)
                self.class_totals[name] += group.resources[name]
            requests = search.candidates()
            self.record(suffix, 'candidates for the group', len(requests))
            if not requests:
                raise NoCandidates()
            for request in requests:
                request.use_same_provider = group.use_same_provider
            by_suffix[suffix] = requests
        requests = self._merge(by_suffix)
        requests = self._exclude_nested(requests)
        return self._limit(requests)

    def _anchor_roots(self):
        """root_required: the roots every candidate's tree must hang from."""
        required = {self.trait_id(t) for t in self.params.root_required}
        forbidden = {self.trait_id(t) for t in self.params.root_forbidden}
        if not (required or forbidden):
            return
        roots = ResourceProvider.objects.filter(parent_provider__isnull=True)
        if required:
            roots = roots.filter(providertrait__trait_id__in=required).annotate(
                matched=Count('providertrait__trait_id', distinct=True)).filter(
                matched=len(required))
        if forbidden:
            roots = roots.exclude(id__in=ProviderTrait.objects.filter(
                trait_id__in=forbidden).values('resource_provider_id'))
        self.anchor_root_ids = set(roots.values_list('id', flat=True))
        self.record('', 'root_required', len(self.anchor_root_ids),
                    ', '.join(sorted(self.params.root_required)
                              + ['!' + t for t in sorted(self.params.root_forbidden)]))
        if not self.anchor_root_ids:
            raise NoCandidates()

    def only_sharing(self, request):
        """Does the request use sharing providers only? Only such a request
        can come out identical for several anchor trees."""
        return all(p in self.all_sharing for p, _, _ in request.resources)

    def in_anchors(self, root_id):
        return self.anchor_root_ids is None or root_id in self.anchor_root_ids

    # -- provider summaries

    def load_summaries(self, root_ids, traits_needed=True):
        """Capacity, usage and traits of every provider in the trees."""
        new_roots = set(root_ids) - self.loaded_roots
        if not new_roots:
            return
        self.loaded_roots |= new_roots
        whole = len(new_roots) > WHOLE_TABLE_THRESHOLD
        providers = ResourceProvider.objects.all()
        inventories = Inventory.objects.all()
        provider_traits = ProviderTrait.objects.all()
        if not whole:
            providers = providers.filter(root_provider_id__in=new_roots)
            inventories = inventories.filter(resource_provider__root_provider_id__in=new_roots)
            provider_traits = provider_traits.filter(
                resource_provider__root_provider_id__in=new_roots)
        added = {}
        for pk, uuid, parent_id, root_id in providers.values_list(
                'id', 'uuid', 'parent_provider_id', 'root_provider_id'):
            if root_id in new_roots and pk not in self.summaries:
                added[pk] = ProviderSummary(pk, uuid, parent_id, root_id)
        rc_names = dict(ResourceClass.objects.values_list('id', 'name')) \
            if not hasattr(self, 'all_class_names') else self.all_class_names
        self.all_class_names = rc_names
        for provider_id, class_id, total, reserved, ratio, max_unit, used in inventories.annotate(
                used=usage_subquery()).values_list(
                'resource_provider_id', 'resource_class_id', 'total', 'reserved',
                'allocation_ratio', 'max_unit', 'used').order_by('id'):
            summary = added.get(provider_id)
            if summary is not None:
                summary.resources[rc_names[class_id]] = (
                    int((total - reserved) * ratio), int(used or 0), max_unit)
        if traits_needed:
            names = self.all_trait_names()
            # Trait id order, as Placement's (trait, provider) key gives it.
            for provider_id, trait_id in provider_traits.values_list(
                    'resource_provider_id', 'trait_id').order_by('trait_id'):
                summary = added.get(provider_id)
                if summary is not None:
                    summary.traits.append(names[trait_id])
        self.summaries.update(added)

    def all_trait_names(self):
        if not hasattr(self, '_trait_names'):
            self._trait_names = dict(Trait.objects.values_list('id', 'name'))
        return self._trait_names

    # -- combining the groups

    def _merge(self, by_suffix):
        limit = self.params.limit
        stop_at = self.settings.max_candidates
        excluding = not self.nested_aware and self.has_trees
        if limit and not self.settings.randomize and not excluding:
            # Any `limit` of the candidates is a correct answer (their order
            # is undefined), so stop as soon as there are enough.
            stop_at = limit if stop_at < 0 else min(stop_at, limit)
        if len(by_suffix) == 1:
            # One group: its requests are the candidates (every provider in
            # them passed the capacity check for its amount), less the
            # copies a sharing provider makes for each tree it serves.
            merged, seen = [], set()
            for request in next(iter(by_suffix.values())):
                if self.only_sharing(request):
                    key = request.key()
                    if key in seen:
                        continue
                    seen.add(key)
                merged.append(request)
                if 0 <= stop_at <= len(merged):
                    break
            self.record('', 'combined candidates', len(merged))
            return merged
        by_anchor = collections.defaultdict(lambda: collections.defaultdict(list))
        for suffix, requests in by_suffix.items():
            for request in requests:
                by_anchor[request.anchor][suffix].append(request)
        all_suffixes = set(by_suffix)
        granular = len(all_suffixes - {''})
        generators = [
            self._products(list(lists.values()))
            for root, lists in by_anchor.items()
            if set(lists) == all_suffixes and self._tree_can_hold(lists)
        ]
        if self.settings.strategy == 'breadth-first':
            combos = _roundrobin(generators)
        else:
            combos = itertools.chain(*generators)
        merged = {}
        for combo in combos:
            if not self._satisfies_group_policy(combo, granular):
                continue
            if not self._satisfies_same_subtree(combo):
                continue
            request = _consolidate(combo)
            merged.setdefault(request.key(), request)
            if 0 <= stop_at <= len(merged):
                break
        self.record('', 'combined candidates', len(merged))
        return list(merged.values())

    def _products(self, lists):
        """The cartesian product of the groups' requests, pruning prefixes
        that already exceed a provider's capacity or max_unit."""
        lists = [tuple(items) for items in lists]
        summaries = self.summaries

        def extend(index, chosen, amounts):
            if index == len(lists):
                yield tuple(chosen)
                return
            for request in lists[index]:
                added = dict(amounts)
                fits = True
                for provider_id, class_name, amount in request.resources:
                    key = (provider_id, class_name)
                    total = added.get(key, 0) + amount
                    capacity, used, max_unit = summaries[provider_id].resources[class_name]
                    if used + total > capacity or total > max_unit:
                        fits = False
                        break
                    added[key] = total
                if fits:
                    chosen.append(request)
                    yield from extend(index + 1, chosen, added)
                    chosen.pop()
        return extend(0, [], {})

    def _tree_can_hold(self, lists):
        """Placement's pre-check: a tree whose providers together lack the
        capacity asked of classes requested by several groups is skipped."""
        if not self.multi_group_classes:
            return True
        provider_ids = {p for requests in lists.values() for r in requests
                        for p, _, _ in r.resources}
        for name in self.multi_group_classes:
            available = sum(self.summaries[p].resources[name][0] for p in provider_ids
                            if name in self.summaries[p].resources)
            if self.class_totals[name] > available:
                return False
        return True

    def _satisfies_group_policy(self, combo, granular):
        """isolate: each suffixed group on a provider of its own."""
        if self.params.group_policy != 'isolate':
            return True
        providers = set()
        for request in combo:
            if request.use_same_provider:
                providers |= next(iter(request.mappings.values()))
        return len(providers) == granular

    def _satisfies_same_subtree(self, combo):
        for suffixes in self.params.same_subtrees:
            provider_ids = set()
            for request in combo:
                for suffix in suffixes:
                    provider_ids |= request.mappings.get(suffix, set())
            if not self._same_subtree(provider_ids):
                return False
        return True

    def _same_subtree(self, provider_ids):
        if len(provider_ids) <= 1:
            return True
        common = None
        for provider_id in provider_ids:
            ancestors = set()
            current = provider_id
            while current is not None:
                ancestors.add(current)
                current = self.summaries[current].parent_id
            common = ancestors if common is None else common & ancestors
        return bool(common & provider_ids)

    def _exclude_nested(self, requests):
        """Before 1.29 a candidate may use only one provider per tree, and
        the summaries cover only providers some candidate uses (chosen, as
        in Placement, before any limit applies)."""
        if self.nested_aware or not self.has_trees:
            return requests
        kept = []
        for request in requests:
            providers = {p for p, _, _ in request.resources}
            roots = {self.summaries[p].root_id for p in providers}
            if len(providers) == len(roots):
                kept.append(request)
        self.summarized = {p for r in kept for p, _, _ in r.resources}
        return kept

    def _limit(self, requests):
        limit = self.params.limit
        if limit and limit < len(requests):
            if self.settings.randomize:
                requests = random.sample(requests, limit)
            else:
                requests = requests[:limit]
        elif self.settings.randomize:
            random.shuffle(requests)
        return requests

    def _finish(self, requests):
        """The provider summaries for the trees the candidates use."""
        if not requests:
            return []
        roots = {self.summaries[p].root_id for r in requests for p, _, _ in r.resources}
        return [s for s in self.summaries.values()
                if s.root_id in roots and (self.summarized is None or s.id in self.summarized)]


def _roundrobin(generators):
    pending = collections.deque(generators)
    while pending:
        generator = pending.popleft()
        try:
            item = next(generator)
        except StopIteration:
            continue
        yield item
        pending.append(generator)


def _consolidate(combo):
    """Requests of several groups -> one, summing amounts per provider/class."""
    amounts = {}
    mappings = collections.defaultdict(set)
    for request in combo:
        for provider_id, class_name, amount in request.resources:
            amounts[(provider_id, class_name)] = amounts.get((provider_id, class_name), 0) + amount
        for suffix, providers in request.mappings.items():
            mappings[suffix] |= providers
    return AllocationRequest(combo[0].anchor,
                             [(p, c, a) for (p, c), a in amounts.items()], dict(mappings))


class GroupSearch:
    """The providers that can satisfy one request group, and its candidates."""

    def __init__(self, search, group):
        self.search = search
        self.group = group
        self.suffix = group.suffix
        # Resolution order matters for which error or empty answer wins.
        self.resources = {search.class_id(name): amount for name, amount in group.resources.items()}
        self.rps_in_aggs = set()
        if group.member_of:
            self.rps_in_aggs = self._members_of_all(group.member_of)
            self.record('member_of', len(self.rps_in_aggs), _aggs_text(group.member_of))
            if not self.rps_in_aggs:
                raise NoCandidates()
        self.required_ids = [{search.trait_id(t) for t in any_of} for any_of in group.required_traits]
        self.forbidden_ids = {search.trait_id(t) for t in group.forbidden_traits}
        self.tree_root_id = None
        if group.in_tree:
            root = ResourceProvider.objects.filter(uuid=group.in_tree).values_list(
                'root_provider_id', flat=True).first()
            self.record('in_tree', 0 if root is None else 1, group.in_tree)
            if root is None:
                raise NoCandidates()
            self.tree_root_id = root
        self.with_resource = {}
        # The root comes from a per-row primary-key lookup, not a join: the
        # capacity filter defeats PostgreSQL's row estimate, and with a join
        # it picked a nested loop over every provider for every inventory.
        root = Subquery(ResourceProvider.objects.filter(
            pk=OuterRef('resource_provider_id')).values('root_provider_id')[:1])
        for class_id, amount in self.resources.items():
            fitting = Inventory.objects.filter(resource_class_id=class_id).able_to_fit(
                amount).annotate(root=root)
            if self.tree_root_id is not None:
                fitting = fitting.filter(root=self.tree_root_id)
            found = set(fitting.values_list('resource_provider_id', 'root').order_by())
            self.record('capacity', len(found), f'{amount} {search.class_names[class_id]}')
            if not found:
                raise NoCandidates()
            self.with_resource[class_id] = found

    def record(self, name, remaining, detail=''):
        self.search.record(self.suffix, name, remaining, detail)

    @staticmethod
    def _members_of_all(member_of):
        """Providers in (any of each set) for every set."""
        result = None
        for any_of in member_of:
            members = set(ProviderAggregate.objects.filter(
                aggregate__uuid__in=list(any_of)).values_list('resource_provider_id', flat=True))
            result = members if result is None else result & members
            if not result:
                return set()
        return result

    @staticmethod
    def _members_of_any(aggregate_uuids):
        return set(ProviderAggregate.objects.filter(
            aggregate__uuid__in=list(aggregate_uuids)).values_list('resource_provider_id', flat=True))

    @staticmethod
    def _having_any_trait(trait_ids):
        return set(ProviderTrait.objects.filter(trait_id__in=list(trait_ids)).values_list(
            'resource_provider_id', flat=True))

    def candidates(self):
        search = self.search
        if not self.group.use_same_provider and (search.sharing or search.has_trees):
            if self.required_ids:
                wanted = set().union(*self.required_ids)
                if not ProviderTrait.objects.filter(trait_id__in=wanted).exists():
                    self.record('required traits', 0, _traits_text(self.group.required_traits))
                    return []
            return self._multiple_provider_candidates(self._trees_matching_all())
        return self._single_provider_candidates(self._providers_matching())

    # -- one provider satisfies the whole group

    def _providers_matching(self):
        """(provider id, root id) of providers satisfying the whole group."""
        filtered, forbidden = self._trait_and_aggregate_filters()
        if filtered is None:
            return []
        found = set()
        first = True
        for class_id in self.resources:
            found = self.with_resource[class_id]
            ids = {p for p, _ in found}
            if first:
                first = False
                if filtered:
                    filtered &= ids
                else:
                    filtered = ids - forbidden
            else:
                filtered &= ids
            if not filtered:
                self.record('providers with all resources', 0)
                return []
        if not self.resources:
            found = self._with_roots(filtered, forbidden)
        matching = [pair for pair in found if pair[0] in filtered]
        self.record('providers with all resources', len(matching))
        return matching

    @staticmethod
    def _with_roots(allowed, forbidden):
        providers = ResourceProvider.objects.all()
        if allowed:
            providers = providers.filter(id__in=list(allowed))
        if forbidden:
            providers = providers.exclude(id__in=list(forbidden))
        return set(providers.values_list('id', 'root_provider_id'))

    def _trait_and_aggregate_filters(self):
        """(filtered ids or set() for 'no filter' or None for 'nothing'),
        forbidden ids."""
        filtered = set()
        if self.required_ids:
            filtered = self._having_all_required()
            self.record('required traits', len(filtered), _traits_text(self.group.required_traits))
            if not filtered:
                return None, set()
        if self.group.member_of:
            filtered = (filtered & self.rps_in_aggs) if filtered else set(self.rps_in_aggs)
            if not filtered:
                return None, set()
        forbidden = set()
        if self.group.forbidden_aggs:
            bad = self._members_of_any(self.group.forbidden_aggs)
            forbidden |= bad
            if filtered:
                filtered -= bad
                self.record('forbidden aggregates', len(filtered),
                            ', '.join(sorted(self.group.forbidden_aggs)))
                if not filtered:
                    return None, set()
        if self.forbidden_ids:
            bad = self._having_any_trait(self.forbidden_ids)
            forbidden |= bad
            if filtered:
                filtered -= bad
                self.record('forbidden traits', len(filtered),
                            ', '.join(sorted(self.group.forbidden_traits)))
                if not filtered:
                    return None, set()
        return filtered, forbidden

    def _having_all_required(self):
        traits_of = collections.defaultdict(set)
        for provider_id, trait_id in ProviderTrait.objects.filter(
                trait_id__in=set().union(*self.required_ids)).values_list(
                'resource_provider_id', 'trait_id'):
            traits_of[provider_id].add(trait_id)
        return {p for p, have in traits_of.items()
                if all(any_of & have for any_of in self.required_ids)}

    def _single_provider_candidates(self, pairs):
        if not pairs:
            return []
        search = self.search
        search.load_summaries({root for _, root in pairs})
        sharing_ids = [p for p, _ in pairs if SHARING_TRAIT in search.summaries[p].traits]
        anchors = _anchors_of_sharing(sharing_ids)
        requests = []
        for provider_id, root_id in pairs:
            resources = [(provider_id, search.class_names[c], a) for c, a in self.resources.items()]
            mappings = {self.suffix: {provider_id}}
            if search.in_anchors(root_id):
                requests.append(AllocationRequest(root_id, resources, mappings))
            for anchor_id in anchors.get(provider_id, ()):
                if anchor_id != root_id and search.in_anchors(anchor_id):
                    requests.append(AllocationRequest(anchor_id, resources, mappings))
        return requests

    # -- a tree (plus sharing providers) satisfies the group together

    def _trees_matching_all(self):
        """{(provider id, anchor root id, class id)} that together can hold
        every class of the group in some tree."""
        search = self.search
        bad_aggs = self._members_of_any(self.group.forbidden_aggs) if self.group.forbidden_aggs else set()
        combined = set()
        for class_id, amount in self.resources.items():
            name = search.class_names[class_id]
            found = {(p, root, class_id) for p, root in self.with_resource[class_id]}
            sharing = set(p for p, _ in self.with_resource[class_id])
            # (Placement narrows the request-wide sharing set in place.)
            if self.rps_in_aggs:
                search.sharing &= self.rps_in_aggs
            sharing &= search.sharing
            if sharing and self.tree_root_id is None:
                for provider_id, anchors in _anchors_of_sharing(sharing).items():
                    found |= {(provider_id, anchor, class_id) for anchor in anchors}
                self.record('sharing providers', len(sharing), name)
            if search.anchor_root_ids:
                found = {c for c in found if c[1] in search.anchor_root_ids}
                if not found:
                    self.record('trees under root_required', 0, name)
                    return set()
            if self.group.member_of:
                found = {c for c in found if c[0] in self.rps_in_aggs or c[1] in self.rps_in_aggs}
                if not found:
                    self.record('member_of (provider or its tree)', 0, name)
                    return set()
            if bad_aggs:
                found = {c for c in found if c[0] not in bad_aggs and c[1] not in bad_aggs}
                if not found:
                    self.record('forbidden aggregates', 0, name)
                    return set()
            if not combined:
                combined = found
            else:
                both = {c[1] for c in combined} & {c[1] for c in found}
                combined = {c for c in combined | found if c[1] in both}
            self.record('trees with every class so far', len({c[1] for c in combined}), name)
            if not combined:
                return set()
        if (not self.required_ids and not self.forbidden_ids) or search.sharing:
            return combined
        keep = self._trees_with_traits({c[0] for c in combined})
        combined = {c for c in combined if (c[0], c[1]) in keep}
        self.record('trees with the traits', len({c[1] for c in combined}),
                    _traits_text(self.group.required_traits, self.group.forbidden_traits))
        return combined

    def _trees_with_traits(self, provider_ids):
        """(provider id, root id) of providers in trees that can still meet
        the group's traits collectively."""
        roots = dict(ResourceProvider.objects.filter(id__in=list(provider_ids)).values_list(
            'id', 'root_provider_id'))
        bad = self._having_any_trait(self.forbidden_ids) if self.forbidden_ids else set()
        good = {p: r for p, r in roots.items() if p not in bad}
        if not self.required_ids:
            good_roots = set(good.values())
            return {(p, r) for p, r in roots.items() if r in good_roots}
        root_traits = collections.defaultdict(set)
        for provider_id, trait_id in ProviderTrait.objects.filter(
                resource_provider_id__in=list(good)).values_list('resource_provider_id', 'trait_id'):
            root_traits[good[provider_id]].add(trait_id)
        ok_roots = {r for r, have in root_traits.items()
                    if all(any_of & have for any_of in self.required_ids)}
        return {(p, r) for p, r in roots.items() if r in ok_roots}

    def _multiple_provider_candidates(self, combined):
        if not combined:
            return []
        search = self.search
        real_roots = {p: root for pairs in self.with_resource.values() for p, root in pairs}
        search.load_summaries({real_roots[c[0]] for c in combined})
        trees = collections.defaultdict(lambda: collections.defaultdict(list))
        for provider_id, root_id, class_id in combined:
            trees[root_id][class_id].append(
                (provider_id, search.class_names[class_id], self.resources[class_id]))
        required = self.group.required_traits
        forbidden = self.group.forbidden_traits
        requests, seen = [], set()
        for root_id, by_class in trees.items():
            lists = [sorted(by_class[c]) for c in sorted(by_class)]
            for combo in itertools.product(*lists):
                if not self._traits_ok(combo, required, forbidden):
                    continue
                request = AllocationRequest(
                    root_id, list(combo), {self.suffix: {p for p, _, _ in combo}})
                if search.only_sharing(request):
                    # Only sharing providers: the same request comes from every
                    # tree they serve. Like Placement, keep the first tree's.
                    key = request.key()
                    if key in seen:
                        continue
                    seen.add(key)
                requests.append(request)
        return requests

    def _traits_ok(self, combo, required, forbidden):
        have = set()
        for provider_id, _, _ in combo:
            traits = self.search.summaries[provider_id].traits
            if forbidden and forbidden.intersection(traits):
                return False
            have.update(traits)
        return all(any_of & have for any_of in required)


def _anchors_of_sharing(provider_ids):
    """{sharing provider id: roots of trees sharing an aggregate with it}."""
    if not provider_ids:
        return {}
    anchors = collections.defaultdict(set)
    rows = ProviderAggregate.objects.filter(
        aggregate__provideraggregate__resource_provider_id__in=list(provider_ids),
    ).values_list('aggregate__provideraggregate__resource_provider_id',
                  'resource_provider__root_provider_id')
    for sharing_id, root_id in rows:
        anchors[sharing_id].add(root_id)
    return anchors


def _aggs_text(member_of):
    return ' and '.join('(' + ' or '.join(sorted(s)) + ')' for s in member_of)


def _traits_text(required, forbidden=()):
    parts = ['(' + ' or '.join(sorted(s)) + ')' if len(s) > 1 else next(iter(s))
             for s in required]
    parts += ['!' + t for t in sorted(forbidden)]
    return ', '.join(parts)
