"""providers.fits.count_fits on its own: synthetic trees and sharing
pools, against the true maximum found by trying every claim count per tree
(the brute force against the real API is tests/providers/test_capacity_fits.py)."""
import collections
import itertools
import math
import random

from providers import fits

OTHER = 9   # a class every tree has 3 of and no pool offers


def synthetic(own, pools):
    """own: {tree: {class: slots}}; pools: {sharing id: (class, slots,
    trees served)}: count_fits' own, pools and reach. Every tree also has 3
    of class OTHER."""
    own_slots = collections.defaultdict(collections.Counter)
    for tree, classes in own.items():
        own_slots[tree][OTHER] = 3
        own_slots[tree].update(classes)
    pool_slots = collections.defaultdict(collections.Counter)
    reach = collections.defaultdict(set)
    for provider, (class_id, slots, trees) in pools.items():
        pool_slots[provider][class_id] = slots
        for tree in trees:
            reach[tree].add(provider)
    return own_slots, pool_slots, reach


def true_maximum(own, pools, reach, classes):
    """The maximum by trying every claim count (0..3) per tree: feasible
    when each class's flow carries every claim."""
    trees = sorted(set(own) | set(reach))
    component = fits._ComponentFit(trees, set(pools), own, pools, reach, classes)
    best = 0
    for counts in itertools.product(range(4), repeat=len(trees)):
        claims = {t: n for t, n in zip(trees, counts) if n}
        if sum(counts) > best and all(
                component._carried(claims, c, classes) == claims for c in classes):
            best = sum(counts)
    return best


def test_with_several_classes_from_sharing_providers_the_count_may_be_a_lower_bound():
    # Three classes from sharing providers serving overlapping sets of trees:
    # four claims fit (the exhaustive count), count_fits finds three and says so.
    cloud = synthetic(
        {1: {1: 1, 2: 2, 3: 2}, 2: {1: 2}, 3: {2: 2}},
        {11: (1, 2, {1, 2, 3}), 12: (1, 2, {3}), 13: (2, 1, {1, 2}), 14: (3, 2, {1}),
         15: (3, 1, {1, 2, 3})})
    classes = [OTHER, 1, 2, 3]
    assert true_maximum(*cloud, classes) == 4
    assert fits.count_fits(*cloud, classes) == fits.Fit(3, exact=False)


def test_never_more_than_the_maximum_and_exact_means_maximal():
    rng = random.Random(13)
    exact = 0
    for _ in range(300):
        classes = range(1, rng.randint(2, 3) + 1)
        own = {t: {c: rng.randint(1, 2) for c in classes if rng.random() < 0.3}
               for t in (1, 2, 3)}
        pools, pid = {}, 10
        for c in classes:
            for _ in range(rng.randint(1, 2)):
                pid += 1
                trees = {t for t in own if rng.random() < 0.6}
                if trees:
                    pools[pid] = (c, rng.randint(1, 2), trees)
        cloud = synthetic(own, pools)
        wanted = [OTHER, *classes]
        found = fits.count_fits(*cloud, wanted)
        maximum = true_maximum(*cloud, wanted)
        assert found.count <= maximum, (own, pools)
        if found.exact:
            assert found.count == maximum, (own, pools)
            exact += 1
    assert exact > 250   # a lower bound is the rare case


def test_a_tree_holds_as_many_claims_as_its_scarcest_class():
    own = {1: collections.Counter({1: 5, 2: 2}), 2: collections.Counter({1: 1})}
    assert fits.count_fits(own, {}, {}, [1, 2]) == fits.Fit(2)
    assert fits.count_fits(own, {}, {}, []) == fits.Fit(0)


def test_one_shared_class_counts_as_count_fits_does():
    """fits.count_one_shared_class, from what each tree asks of the sharing
    providers reaching it, is count_fits' count on random trees."""
    rng = random.Random(5)
    shared, other, third = 1, 2, 3
    for _ in range(300):
        providers = {f's{k}': rng.randint(0, 12) for k in range(rng.randint(1, 3))}
        own = collections.defaultdict(collections.Counter)
        reach = collections.defaultdict(set)
        alone = 0
        demands = collections.defaultdict(collections.Counter)
        shape = [shared] if rng.random() < 0.2 else [shared, other, third]
        for tree in range(rng.randint(1, 7)):
            for class_id in shape:
                if rng.random() < 0.8:
                    own[tree][class_id] = rng.randint(0, 6)
            reach[tree] = {p for p in providers if rng.random() < 0.5}
            others = min((own[tree][c] for c in shape if c != shared), default=math.inf)
            alone += min(others, own[tree][shared])
            if max(others - own[tree][shared], 0) and reach[tree]:
                demands[frozenset(reach[tree])][max(others - own[tree][shared], 0)] += 1
        for provider in providers:   # each serves its own tree, with none of its own
            reach[1000 + int(provider[1:])].add(provider)
            if shape == [shared]:
                demands[frozenset({provider})][math.inf] += 1
        pools = collections.defaultdict(collections.Counter,
                                        {p: collections.Counter({shared: n})
                                         for p, n in providers.items()})
        expected = fits.count_fits(own, pools, reach, shape)
        assert expected.exact
        assert alone + fits.count_one_shared_class(demands, providers) == expected.count
