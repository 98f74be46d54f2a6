"""Matching: from one group's findings to the group's allocation requests,
in Python over the ids the research found: pure functions of the
RequestFindings and the group's GroupFindings, which they do not change.
Each returns the StageRecords of what it left.

- A suffixed group (or any group in a cloud without trees or sharing
  providers) needs one provider with every class, trait and aggregate of the
  group: single_provider_requests.
- The unsuffixed group may take each class from a different provider of one
  tree, or from a sharing provider reached through an aggregate:
  iter_tree_requests, which first keeps the trees that can hold every class
  (trees_matching) and then takes the product of their providers per class.
"""
import bisect
import collections
import collections.abc
import itertools
import math

from providers.candidates.findings import Stage
from providers.candidates.findings import StageRecord
from providers.candidates.findings import traits_text


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

    parts = None   # a CombinedRequest's: the groups' requests it takes together

    def only_sharing(self, sharing):
        """Does the request use sharing providers only? Only such a request
        can come out identical for several anchor trees."""
        return all(p in sharing for p, _, _ in self.resources)


def group_requests(wide, findings, *, one_group, lazy=False):
    """(the allocation requests of one researched group, the stage
    records): a list, or with lazy=True an iterator that builds trees'
    requests only as they are taken (a `limit` needs the first few of
    many). one_group: the group is the query's only one."""
    if not findings.tree_mode:
        return single_provider_requests(wide, findings)
    trees, records = matched_trees(wide, findings, one_group=one_group)
    requests = iter_tree_requests(wide, findings, trees)
    return (requests if lazy else list(requests)), records


# ---- one provider satisfies the whole group -------------------------------------------

def providers_matching(findings):
    """((provider id, root id) of the providers meeting the whole group,
    the stage records)."""
    if not findings.resources:
        matching = findings.resourceless
    else:
        allowed, excluded = findings.allowed()
        capacity = [findings.capacity[name] for name in findings.resources]
        ids = set.intersection(*({p for p, _ in pairs} for pairs in capacity))
        if allowed is not None:
            ids &= allowed
        ids -= excluded
        matching = [pair for pair in capacity[-1] if pair[0] in ids]
    return matching, [StageRecord(Stage.PROVIDERS_MATCHING, findings.suffix, len(matching))]


def single_provider_requests(wide, findings):
    """(the group's requests, one provider each, the stage records): in
    the provider's tree and, for a sharing provider, in each tree it
    serves."""
    pairs, records = providers_matching(findings)
    suffix = findings.suffix
    same = findings.group.use_same_provider
    resources = list(findings.resources.items())
    requests = []
    for provider_id, root_id in pairs:
        amounts = [(provider_id, name, amount) for name, amount in resources]
        mappings = {suffix: {provider_id}}
        if wide.in_anchors(root_id):
            requests.append(AllocationRequest(root_id, amounts, mappings, same))
        for anchor_id in findings.served.get(provider_id, ()):
            if anchor_id != root_id and wide.in_anchors(anchor_id):
                requests.append(AllocationRequest(anchor_id, amounts, mappings, same))
    return requests, records


# ---- a tree (plus sharing providers) satisfies the group together -----------------

def trees_matching(wide, findings):
    """({(provider id, anchor root id, class id)} that together can hold
    every class of the group in some tree, the stage records)."""
    suffix = findings.suffix
    records = []
    combined = set()
    for name in findings.resources:
        class_id = findings.class_ids[name]
        candidates = {(p, root, class_id) for p, root in findings.capacity[name]}
        for provider_id in findings.sharing_by_class.get(name, ()):
            candidates |= {(provider_id, anchor, class_id)
                           for anchor in findings.served.get(provider_id, ())}
        if wide.anchors is not None:
            candidates = {c for c in candidates if c[1] in wide.anchors}
            if not candidates:
                records.append(StageRecord(Stage.TREES_UNDER_ROOT, suffix, 0, name))
                return set(), records
        if findings.members is not None:
            members = findings.members
            candidates = {c for c in candidates if c[0] in members or c[1] in members}
            if not candidates:
                records.append(StageRecord(Stage.TREES_IN_AGGREGATES, suffix, 0, name))
                return set(), records
        if findings.in_forbidden_aggs:
            bad = findings.in_forbidden_aggs
            candidates = {c for c in candidates if c[0] not in bad and c[1] not in bad}
            if not candidates:
                records.append(StageRecord(Stage.TREES_OUTSIDE_AGGREGATES, suffix, 0, name))
                return set(), records
        if not combined:
            combined = candidates
        else:
            both = {c[1] for c in combined} & {c[1] for c in candidates}
            combined = {c for c in combined | candidates if c[1] in both}
        records.append(StageRecord(Stage.TREES_WITH_CLASSES, suffix,
                                   len({c[1] for c in combined}), name))
        if not combined:
            return set(), records
    if (not findings.required_sets and not findings.forbidden) or findings.sharing:
        # (With sharing providers the traits are checked per combination.)
        return combined, records
    keep = _trees_with_traits(findings, {(c[0], c[1]) for c in combined})
    combined = {c for c in combined if c[1] in keep}
    records.append(StageRecord(Stage.TREES_WITH_TRAITS, suffix, len({c[1] for c in combined}),
                               _traits_text(findings)))
    return combined, records


def _trees_with_traits(findings, pairs):
    """Roots of the trees whose providers (`pairs` of provider id and root
    id; no sharing providers) can still meet the group's traits
    collectively: providers with a forbidden trait contribute none."""
    good = [(p, r) for p, r in pairs if p not in findings.forbidden]
    if not findings.required_sets:
        return {r for _, r in good}
    satisfied = collections.defaultdict(set)
    for provider_id, root_id in good:
        for index, having in enumerate(findings.required_sets):
            if provider_id in having:
                satisfied[root_id].add(index)
    wanted = len(findings.required_sets)
    return {r for r, indexes in satisfied.items() if len(indexes) == wanted}


def matched_trees(wide, findings, *, one_group):
    """({root id: {class id: [(provider id, class name, amount)]}}: the
    trees (with sharing providers) able to hold every class of the group,
    the stage records). one_group: the group is the query's only one."""
    if one_group:
        return _trees_of_one_group(wide, findings)
    combined, records = trees_matching(wide, findings)
    if not combined:
        return {}, records
    amounts = {findings.class_ids[name]: (name, amount)
               for name, amount in findings.resources.items()}
    trees = collections.defaultdict(lambda: collections.defaultdict(list))
    for provider_id, root_id, class_id in combined:
        trees[root_id][class_id].append((provider_id, *amounts[class_id]))
    return trees, records


def _trees_of_one_group(wide, findings):
    """matched_trees for the only group of a query, built per tree rather than
    from trees_matching's set of every (provider, tree, class): at 100,000
    providers that set is 350,000 tuples. The trees come in another order,
    which for one group decides only the order of the candidates (and which
    of them a limit keeps); their requests are the same."""
    suffix = findings.suffix
    anchors, members, bad = wide.anchors, findings.members, findings.in_forbidden_aggs
    records = []
    roots = None
    by_class = {}
    for name, amount in findings.resources.items():
        class_id = findings.class_ids[name]
        providers_by_root = collections.defaultdict(list)
        for provider_id, root_id in findings.capacity[name]:
            providers_by_root[root_id].append(provider_id)
        for provider_id in findings.sharing_by_class.get(name, ()):
            for anchor in findings.served.get(provider_id, ()):
                providers = providers_by_root[anchor]
                if provider_id not in providers:  # its own tree is among those it serves
                    providers.append(provider_id)
        for keep, stage in ((anchors is not None and (lambda root, p: root in anchors),
                             Stage.TREES_UNDER_ROOT),
                            (members is not None
                             and (lambda root, p: p in members or root in members),
                             Stage.TREES_IN_AGGREGATES),
                            (bool(bad) and (lambda root, p: p not in bad and root not in bad),
                             Stage.TREES_OUTSIDE_AGGREGATES)):
            if not keep:
                continue
            providers_by_root = {root: kept for root, ps in providers_by_root.items()
                                 if (kept := [p for p in ps if keep(root, p)])}
            if not providers_by_root:
                records.append(StageRecord(stage, suffix, 0, name))
                return {}, records
        roots = set(providers_by_root) if roots is None else roots & providers_by_root.keys()
        records.append(StageRecord(Stage.TREES_WITH_CLASSES, suffix, len(roots), name))
        if not roots:
            return {}, records
        by_class[class_id] = (providers_by_root, name, amount)
    if (findings.required_sets or findings.forbidden) and not findings.sharing:
        roots &= _trees_with_traits(findings, {(p, root) for root in roots
                                           for providers_by_root, _, _ in by_class.values()
                                           for p in providers_by_root[root]})
        records.append(StageRecord(Stage.TREES_WITH_TRAITS, suffix, len(roots),
                                   _traits_text(findings)))
    return _LazyTrees(roots, by_class), records


class _LazyTrees(collections.abc.Mapping):
    """{root id: {class id: [(provider id, class name, amount)]}}, each
    tree's lists made when it is read: a limit reads a few trees of many."""

    def __init__(self, roots, by_class):
        self._roots = roots
        self._by_class = by_class   # class id -> ({root: provider ids}, name, amount)

    def __getitem__(self, root):
        if root not in self._roots:
            raise KeyError(root)
        return {class_id: [(p, name, amount) for p in providers_by_root[root]]
                for class_id, (providers_by_root, name, amount) in self._by_class.items()}

    def __iter__(self):
        return iter(self._roots)

    def __len__(self):
        return len(self._roots)


def _sorted_lists(by_class):
    """A tree's providers per class, in class id order: the factors of its
    combinations, as Placement orders them."""
    return [sorted(by_class[c]) for c in sorted(by_class)]


def _may_repeat(sharing, by_class):
    """Could a combination of this tree use sharing providers only (and so
    come out the same for every tree they serve)?"""
    return bool(sharing) and all(
        any(p in sharing for p, _, _ in providers) for providers in by_class.values())


def iter_tree_requests(wide, findings, trees, anchors=None):
    """The requests of the matched trees (with sharing providers) that
    together satisfy an unsuffixed group, tree by tree; with `anchors`, only
    those of these anchor trees (the only ones the other groups reach)."""
    seen = set()
    use_same_provider = findings.group.use_same_provider
    sharing = wide.sharing
    check_traits = bool(findings.forbidden or findings.required_sets)
    for root_id, by_class in trees.items():
        may_repeat = _may_repeat(sharing, by_class)
        skipped = anchors is not None and root_id not in anchors
        if skipped and not may_repeat:
            continue
        # A skipped tree's sharing-only requests still come first for the
        # trees they serve: the copies of later trees are dropped.
        for combo in itertools.product(*_sorted_lists(by_class)):
            if check_traits and not _traits_ok(findings, combo):
                continue
            request = AllocationRequest(root_id, list(combo),
                                        {findings.suffix: {p for p, _, _ in combo}},
                                        use_same_provider)
            if may_repeat and request.only_sharing(sharing):
                # Only sharing providers: the same request comes from every
                # tree they serve. Like Placement, keep the first tree's.
                key = request.key()
                if key in seen:
                    continue
                seen.add(key)
            if not skipped:
                yield request


def samplable(findings):
    """Can the group's tree requests be drawn before they are built? Not
    when traits are checked per combination."""
    return findings.tree_mode and not (findings.forbidden or findings.required_sets)


def sample_tree_requests(wide, findings, trees, count, rng):
    """(requests, how many the group has): `count` of the group's tree
    requests drawn uniformly at random (as random.sample draws from the full
    list), building only those. A tree's requests are the product of its
    providers per class, so the i-th one is computed from i. When they
    cannot be counted before they are built (sharing-only copies to drop)
    or all are wanted anyway, all of them. Only for a samplable group."""
    sizes = [math.prod(len(providers) for providers in by_class.values())
             for by_class in trees.values()]
    total = sum(sizes)
    if total <= count or any(_may_repeat(wide.sharing, t) for t in trees.values()):
        requests = list(iter_tree_requests(wide, findings, trees))
        return requests, len(requests)
    roots = list(trees)
    starts = list(itertools.accumulate(sizes, initial=0))
    lists = {}
    requests = []
    for index in rng.sample(range(total), count):
        tree = bisect.bisect_right(starts, index) - 1
        root_id = roots[tree]
        if root_id not in lists:
            lists[root_id] = _sorted_lists(trees[root_id])
        offset, combo = index - starts[tree], []
        for providers in reversed(lists[root_id]):  # the last factor varies fastest
            offset, position = divmod(offset, len(providers))
            combo.append(providers[position])
        combo.reverse()
        requests.append(AllocationRequest(root_id, combo,
                                          {findings.suffix: {p for p, _, _ in combo}},
                                          findings.group.use_same_provider))
    return requests, total


def _traits_text(findings):
    return traits_text(findings.group.required_traits, findings.group.forbidden_traits)


def _traits_ok(findings, combo):
    """The combination's providers have a trait of every required set and
    none has a forbidden trait."""
    if findings.forbidden and any(p in findings.forbidden for p, _, _ in combo):
        return False
    return all(any(p in having for p, _, _ in combo) for having in findings.required_sets)
