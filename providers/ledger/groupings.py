"""The groups of providers the roll-ups sum over, read from the image as
providers.scopes reads them from the database: the whole cloud, a pool
(an aggregate's members and the trees of member roots), a tree, the
providers with a trait, an availability zone (the union of its pods'
pools). A group's sharing providers are those that share within it, as
a candidate search with member_of takes them: the whole cloud's, a pool's
own members, those with the trait, a zone's pools' members, a tree's root
when it shares.

tests/ledger/ holds these to providers.scopes' answers.
"""
import collections
import functools
from dataclasses import dataclass

# The kinds; CLOUD is also the whole cloud's one group (providers.scopes.CLOUD).
CLOUD, POOLS, TREES, TRAITS, ZONES = 'cloud', 'pools', 'trees', 'traits', 'zones'


@dataclass(frozen=True)
class Grouping:
    """kind: one of the above. aggregates: the pools (aggregate ids) of
    POOLS, None for every one. zones: ((zone, aggregate ids), ...) of
    ZONES. without_root_trait: trees whose root has this trait are left
    out (os-capacity's disabled compute nodes)."""
    kind: str
    aggregates: frozenset = None
    zones: tuple = ()
    without_root_trait: str = None

    def included(self, image, tree):
        if self.without_root_trait is None:
            return True
        bit = image.trait_bit(self.without_root_trait)
        root = tree.root_provider
        return bit is None or root is None or not root.traits >> bit & 1

    def groups_of(self, image, tree, provider):
        """The groups a provider (image.Provider) of the tree is in (its
        inventories count there)."""
        kind = self.kind
        if kind == CLOUD:
            return (CLOUD,)
        if kind == TREES:
            return (tree.root,)
        if kind == TRAITS:
            return image.trait_ids_of(provider.traits)
        pools = tree.aggregates_of(provider)
        if kind == POOLS:
            return pools if self.aggregates is None else pools & self.aggregates
        return tuple(zone for zone, aggregates in self.zones if pools & aggregates)

    def shares_in(self, image, tree, provider, group):
        """Whether a sharing provider (image.Provider) of the tree shares
        within `group`."""
        kind = self.kind
        if kind == CLOUD:
            return True
        if kind == TREES:
            return provider.id == tree.root
        if kind == TRAITS:
            return group in image.trait_ids_of(provider.traits)
        own = provider.aggregates
        if kind == POOLS:
            return group in own
        return bool(own & self.zone_pools[group])

    @functools.cached_property
    def zone_pools(self):
        return dict(self.zones)

    def sharing(self, image):
        """{group: frozenset of the sharing providers sharing within it}."""
        providers_by_group = collections.defaultdict(set)
        for pk, root in image.sharing.items():
            tree = image.trees.get(root)
            if tree is None or not self.included(image, tree):
                continue
            provider = tree.provider(pk)
            for group in self.groups_of(image, tree, provider):
                if self.shares_in(image, tree, provider, group):
                    providers_by_group[group].add(pk)
        return {group: frozenset(providers) for group, providers in providers_by_group.items()}

    def parts(self, image, tree):
        """[(groups, provider ids)]: the tree's providers split by the
        groups they are in, each set of providers once with every group it
        makes up in this tree (a tree's part of a group); None for the ids:
        all of them."""
        if not self.included(image, tree):
            return []
        if self.kind == CLOUD:
            return [((CLOUD,), None)]
        if self.kind == TREES:
            return [((tree.root,), None)]
        members = collections.defaultdict(set)
        for provider in tree.providers:
            for group in self.groups_of(image, tree, provider):
                members[group].add(provider.id)
        by_part = collections.defaultdict(list)
        for group, providers in members.items():
            by_part[frozenset(providers)].append(group)
        return [(groups, providers) for providers, groups in by_part.items()]
