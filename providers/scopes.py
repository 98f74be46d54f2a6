"""Groups of providers as SQL: the inventories of every group of a grouping,
each row carrying `grp`, the group's key, so that books and "how many more
fit" are summed in the database whatever the size of the cloud.

A group is the whole cloud, a pool (an aggregate's members and every
provider in the tree of a member root, as a candidate search's member_of
reads it: querysets.in_pools), one tree, or the providers with a trait
(those providers only). The pods' availability zones (unions of pools) are
built on pools by providers.capacity.

Sharing providers share only with the groups they are members of, as with
member_of a candidate search takes them only from the members themselves:
`sharing` names them per group.
"""
import collections
import dataclasses
import functools
from dataclasses import dataclass

from django.core.exceptions import EmptyResultSet
from django.db import connections
from django.db.models import F
from django.db.models import Q
from django.db.models import Value

from providers import remembered
from providers import rules
from providers.ledger import groupings
from providers.models import Inventory
from providers.models import ProviderAggregate
from providers.models import ProviderTrait
from providers.models import ResourceProvider
from providers.querysets import SHARING_TRAIT
from providers.querysets import in_pools
from providers.querysets import trees_served_by

CLOUD = groupings.CLOUD


@dataclass
class Scope:
    """parts: Inventory querysets whose rows carry `grp` (a group's
    inventories are in one or more parts, never twice, and a tree's are all
    in the same part); sharing_of: reads {grp: ids of the sharing providers
    that are members of the group}, once, when `sharing` is first asked;
    grouping: the same groups as providers.ledger reads them from its image
    (None: only the parts say what the scope is), and classes, the resource
    classes the scope is narrowed to (None: all)."""
    parts: list
    sharing_of: object = dict
    grouping: groupings.Grouping = None
    classes: frozenset = None

    @functools.cached_property
    def sharing(self):
        return self.sharing_of()

    def _with_parts(self, parts, grouping=None, classes=None):
        return Scope(parts, lambda: self.sharing, grouping, classes)

    def narrowed(self, **filters):
        """The scope with every part filtered (Inventory lookups). Narrowed
        to resource classes, the ledger still knows it."""
        parts = [part.filter(**filters) for part in self.parts]
        if set(filters) == {'resource_class_id__in'} and self.grouping is not None:
            classes = frozenset(filters['resource_class_id__in'])
            return self._with_parts(parts, self.grouping, classes if self.classes is None
                                    else classes & self.classes)
        return self._with_parts(parts)

    def without_trees_whose_root_has(self, trait_name):
        """Without the trees whose root has the trait (os-capacity leaves out
        the compute nodes nova disabled)."""
        roots = ProviderTrait.objects.filter(trait__name=trait_name).values('resource_provider_id')
        grouping = self.grouping and dataclasses.replace(self.grouping,
                                                         without_root_trait=trait_name)
        return Scope(self.excluding_trees(roots).parts, lambda: self.sharing, grouping,
                     self.classes)

    def narrowed_to_trees(self, *roots):
        """Only the inventories of the trees whose roots are in one of the
        subqueries `roots`."""
        within = Q()
        for ids in roots:
            within |= Q(resource_provider__root_provider_id__in=ids)
        return self._with_parts([part.filter(within) for part in self.parts])

    def excluding_trees(self, *roots):
        """Without the inventories of the trees whose roots are in one of
        the subqueries `roots`."""
        parts = self.parts
        for ids in roots:
            parts = [part.exclude(resource_provider__root_provider_id__in=ids) for part in parts]
        return self._with_parts(parts)

    def annotated(self, **annotations):
        return self._with_parts([part.annotate(**annotations) for part in self.parts])

    @property
    def db(self):
        return self.parts[0].db

    def key(self):
        """What the scope reads, as its parts' SQL: a key for results
        remembered against the books' version (providers.change_log)."""
        return tuple(remembered.query_key(part) for part in self.parts)


def sharing_ids():
    """The sharing providers' ids, as a subquery of the link table alone."""
    return ProviderTrait.objects.filter(trait__name=SHARING_TRAIT).values('resource_provider_id')


def cloud():
    """One group, CLOUD: every inventory."""
    return Scope([Inventory.objects.annotate(grp=Value(CLOUD))],
                 lambda: {CLOUD: set(sharing_ids().values_list('resource_provider_id', flat=True))},
                 groupings.Grouping(groupings.CLOUD))


def pools(aggregate_ids=None):
    """A group per pool (key: the aggregate's id): its members and the
    trees of member roots. aggregate_ids: these pools (None: every one)."""
    if aggregate_ids is None:
        grouping = groupings.Grouping(groupings.POOLS)
        aggregate_ids = ProviderAggregate.objects.values('aggregate_id')
    else:
        aggregate_ids = list(aggregate_ids)
        grouping = groupings.Grouping(groupings.POOLS, frozenset(aggregate_ids))
    parts = [part.annotate(grp=F('pool'))
             for part in in_pools(Inventory.objects.all(), aggregate_ids)]

    def sharing():
        providers_by_pool = collections.defaultdict(set)
        for aggregate_id, provider_id in ProviderAggregate.objects.filter(
                aggregate_id__in=aggregate_ids, resource_provider_id__in=sharing_ids(),
        ).values_list('aggregate_id', 'resource_provider_id'):
            providers_by_pool[aggregate_id].add(provider_id)
        return providers_by_pool
    return Scope(parts, sharing, grouping)


def trees():
    """A group per tree (key: the root's id): every provider of the tree."""
    return Scope([Inventory.objects.annotate(grp=F('resource_provider__root_provider_id'))],
                 lambda: {pk: {pk} for pk in ResourceProvider.objects.sharing().filter(
                     parent_provider__isnull=True).values_list('id', flat=True)},
                 groupings.Grouping(groupings.TREES))


def traits():
    """A group per trait (key: the trait's id): the providers having it,
    not their trees."""
    def sharing():
        providers_by_trait = collections.defaultdict(set)
        for trait_id, provider_id in ProviderTrait.objects.filter(
                resource_provider_id__in=sharing_ids()).values_list(
                'trait_id', 'resource_provider_id'):
            providers_by_trait[trait_id].add(provider_id)
        return providers_by_trait
    return Scope([Inventory.objects.annotate(grp=F('resource_provider__providertrait__trait_id'))
                  .filter(grp__isnull=False)], sharing, groupings.Grouping(groupings.TRAITS))


def unions_of_pools(pools_of):
    """A group per key of `pools_of` ({key: aggregate ids}): the members of
    its pools and the trees of member roots, each inventory once (a pod's
    availability zone is the union of its pods' pools)."""
    parts, keys_of = [], collections.defaultdict(set)
    for key, aggregate_ids in pools_of.items():
        ids = ProviderAggregate.objects.filter(aggregate_id__in=list(aggregate_ids)).values(
            'resource_provider_id')
        parts.append(Inventory.objects.filter(
            rules.in_pool_sql(ids, 'resource_provider__')).annotate(grp=Value(key)))
        for aggregate_id in aggregate_ids:
            keys_of[aggregate_id].add(key)

    def sharing():
        providers_by_key = collections.defaultdict(set)
        for aggregate_id, provider_id in ProviderAggregate.objects.filter(
                aggregate_id__in=list(keys_of), resource_provider_id__in=sharing_ids(),
        ).values_list('aggregate_id', 'resource_provider_id'):
            for key in keys_of[aggregate_id]:
                providers_by_key[key].add(provider_id)
        return providers_by_key
    zones = tuple(sorted((key, frozenset(ids)) for key, ids in pools_of.items()))
    return Scope(parts, sharing, groupings.Grouping(groupings.ZONES, zones=zones))


def reached_roots():
    """The roots of every tree a sharing provider serves (those of the
    providers it shares an aggregate with, and its own), as two subqueries:
    where counting what fits needs more than per-tree sums. Two plain
    subqueries, not one with an OR, which PostgreSQL would run per row."""
    sharing = sharing_ids()
    served = ProviderAggregate.objects.filter(
        aggregate_id__in=ProviderAggregate.objects.filter(
            resource_provider_id__in=sharing).values('aggregate_id'),
        resource_provider__root_provider_id__isnull=False,
    ).values('resource_provider__root_provider_id')
    own = ResourceProvider.objects.filter(id__in=sharing, root_provider_id__isnull=False).values(
        'root_provider_id')
    return served, own


def served_trees():
    """{sharing provider id: roots of the trees it serves}."""
    served = collections.defaultdict(set)
    for provider_id, root_id in trees_served_by(sharing_ids()):
        served[provider_id].add(root_id)
    return served


# ---- SQL over a scope's parts -------------------------------------------------------

def union_sql(querysets):
    """(sql, params) of the querysets' rows together (UNION ALL; the
    querysets select the same columns in the same order), None for none.
    A queryset that can match nothing (`__in` an empty list) is left out."""
    compiled = []
    for qs in querysets:
        try:
            compiled.append(qs.query.get_compiler(using=qs.db).as_sql())
        except EmptyResultSet:
            pass
    if not compiled:
        return None
    # Each a derived table: MySQL adds ORDER BY NULL to a GROUP BY, which a
    # bare member of a UNION may not have.
    return (' UNION ALL '.join(f'SELECT * FROM ({sql}) part{index}'
                               for index, (sql, _) in enumerate(compiled)),
            tuple(param for _, params in compiled for param in params))


def fetch(scope, sql, params):
    """The rows of `sql` over the scope's parts, on the database they read."""
    with connections[scope.db].cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()
