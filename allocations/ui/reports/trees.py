"""A provider's tree: its nodes, its books, the consumers holding any of it and
the sharing providers it reaches or serves."""
import collections
from dataclasses import dataclass
from dataclasses import field

from django.db.models import Count
from django.db.models import Window

from allocations.models import Allocation
from allocations.models import Consumer
from allocations.ui.paging import Counted
from providers import books
from providers import scopes
from providers.models import Inventory
from providers.models import ResourceProvider


def tree_usage_of(root_ids):
    """{root id: [books.ClassUsage]}: each tree's books summed over every
    provider of it (one query)."""
    root_ids = list(root_ids)
    if not root_ids:
        return {}
    scope = scopes.trees().narrowed(resource_provider__root_provider_id__in=root_ids)
    return {root: list(classes.values()) for root, classes in books.scope_books(scope).items()}


@dataclass
class TreeNode:
    provider: ResourceProvider
    children: list = field(default_factory=list)
    inventories: list = field(default_factory=list)


def provider_tree(provider, with_inventories=False):
    """The provider's whole tree as nested TreeNodes, root first (one
    query; with each provider's inventories and their use, two)."""
    nodes = {p.pk: TreeNode(p) for p in ResourceProvider.objects.filter(
        root_provider_id=provider.root_provider_id).order_by('name')}
    if with_inventories:
        for provider_id, inventories in utilization_of(nodes).items():
            nodes[provider_id].inventories = inventories
    root = None
    for node in nodes.values():
        parent = nodes.get(node.provider.parent_provider_id)
        if parent is None:
            root = node
        else:
            parent.children.append(node)
    return root


def consumers_holding(**within):
    """The consumers holding allocations narrowed by `within` (Allocation
    lookups: a provider, a tree's providers), by uuid, with their owners
    (paginate it: Counted). A semi-join from those allocations: the
    database starts from them, not from every consumer of the cloud; and
    counted as the distinct consumers of those allocations alone."""
    return Counted(
        Consumer.objects.filter(pk__in=Allocation.objects.filter(**within).values(
            'consumer_id')).select_related('project', 'user', 'consumer_type').order_by('uuid'),
        lambda: Allocation.objects.filter(**within).values('consumer_id').distinct().count())


def holdings(consumers, **within):
    """[(consumer, [allocation with its provider and class])] for the
    consumers (a page), their allocations narrowed by `within` (Allocation
    lookups), in the consumers' order. One query."""
    consumers = list(consumers)
    held = collections.defaultdict(list)
    for allocation in Allocation.objects.filter(
            consumer_id__in=[c.pk for c in consumers], **within).select_related(
            'resource_provider', 'resource_class').order_by(
            'resource_provider__name', 'resource_class_id'):
        held[allocation.consumer_id].append(allocation)
    return [(consumer, held[consumer.pk]) for consumer in consumers]


def is_sharing(provider):
    return ResourceProvider.objects.filter(pk=provider.pk).sharing().exists()


# A share may serve every tree of the cloud: its page names this many.
RELATED_SHOWN = 100


def sharing_relations(provider, sharing):
    """(the first RELATED_SHOWN by name, how many): for a sharing provider, the
    roots of the trees it serves through its aggregates, as the candidate
    search finds them (a share may serve every tree of the cloud); for any
    other provider, the sharing providers serving its tree. One query: the
    rows shown, each with how many there are in all (a window count)."""
    if sharing:
        related = ResourceProvider.objects.filter(pk=provider.pk).roots_served().exclude(
            pk=provider.root_provider_id)
    else:
        related = ResourceProvider.objects.sharing().serving_tree(provider.root_provider_id)
    shown = list(related.annotate(related_count=Window(Count('*'))).order_by(
        'name')[:RELATED_SHOWN])
    return shown, shown[0].related_count if shown else 0


def utilization_of(provider_ids):
    """{provider id: [inventory with used/capacity/utilization]} (one query)."""
    by_provider = collections.defaultdict(list)
    for inventory in Inventory.objects.filter(
            resource_provider_id__in=list(provider_ids)).with_utilization().select_related(
            'resource_class').order_by('resource_class_id'):
        by_provider[inventory.resource_provider_id].append(inventory)
    return by_provider
