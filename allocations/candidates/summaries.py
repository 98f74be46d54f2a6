"""Provider summaries: capacity, usage, max_unit and traits of every provider
in the trees the candidates come from. Matching and combining read them to
check the capacity of a combination; the answer lists them.

Loading is a fixed number of queries per call (providers, inventories with
usage, traits, and once the class and trait names), whatever the number of
trees; constructing Summaries does no I/O.
"""
from providers.models import Inventory, ProviderTrait, ResourceClass, ResourceProvider, Trait

# Above this many trees, reading whole tables beats a huge IN list.
WHOLE_TABLE_THRESHOLD = 1000


class ProviderSummary:
    __slots__ = ('id', 'uuid', 'parent_id', 'root_id', 'resources', 'traits')

    def __init__(self, id, uuid, parent_id, root_id):
        self.id = id
        self.uuid = uuid
        self.parent_id = parent_id
        self.root_id = root_id
        self.resources = {}   # class name -> (capacity, used, max_unit)
        self.traits = []      # names, in trait id order


class Summaries:
    """The ProviderSummary of every provider in the trees loaded so far."""

    def __init__(self):
        self.by_id = {}      # provider id -> ProviderSummary
        self.loaded_roots = set()
        self._class_names = None
        self._trait_names = None

    def load(self, root_ids):
        """Add every provider of the trees not loaded yet."""
        new_roots = set(root_ids) - self.loaded_roots
        if not new_roots:
            return
        self.loaded_roots |= new_roots
        providers = ResourceProvider.objects.all()
        inventories = Inventory.objects.all()
        provider_traits = ProviderTrait.objects.all()
        if len(new_roots) <= WHOLE_TABLE_THRESHOLD:
            providers = providers.filter(root_provider_id__in=new_roots)
            inventories = inventories.filter(resource_provider__root_provider_id__in=new_roots)
            provider_traits = provider_traits.filter(
                resource_provider__root_provider_id__in=new_roots)
        added = {}
        for pk, uuid, parent_id, root_id in providers.values_list(
                'id', 'uuid', 'parent_provider_id', 'root_provider_id'):
            if root_id in new_roots and pk not in self.by_id:
                added[pk] = ProviderSummary(pk, uuid, parent_id, root_id)
        class_names = self.class_names()
        for provider_id, class_id, total, reserved, ratio, max_unit, used in \
                inventories.with_usage().values_list(
                    'resource_provider_id', 'resource_class_id', 'total', 'reserved',
                    'allocation_ratio', 'max_unit', 'used').order_by('id'):
            summary = added.get(provider_id)
            if summary is not None:
                summary.resources[class_names[class_id]] = (
                    int((total - reserved) * ratio), int(used or 0), max_unit)
        trait_names = self.trait_names()
        # Trait id order, as Placement's (trait, provider) key gives it.
        for provider_id, trait_id in provider_traits.values_list(
                'resource_provider_id', 'trait_id').order_by('trait_id'):
            summary = added.get(provider_id)
            if summary is not None:
                summary.traits.append(trait_names[trait_id])
        self.by_id.update(added)

    def class_names(self):
        if self._class_names is None:
            self._class_names = dict(ResourceClass.objects.values_list('id', 'name'))
        return self._class_names

    def trait_names(self):
        if self._trait_names is None:
            self._trait_names = dict(Trait.objects.values_list('id', 'name'))
        return self._trait_names

    def for_answer(self, requests, only=None):
        """The summaries of every provider in the trees the requests use
        (before 1.29: only the providers in `only`)."""
        if not requests:
            return []
        by_id = self.by_id
        roots = {by_id[p].root_id for r in requests for p, _, _ in r.resources}
        return [s for s in by_id.values()
                if s.root_id in roots and (only is None or s.id in only)]
