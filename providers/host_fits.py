"""One host: how many more of each flavor fit on its tree (with the
sharing providers serving it), which of its classes binds, and what it has
free that no flavor can use: the host page's."""
import collections
from dataclasses import dataclass

from providers import scopes
from providers.capacity import flavor_shapes
from providers.capacity import reached_tree_sums
from providers.fits import count_lone_tree
from providers.flavors import configured_flavors
from providers.models import ResourceProvider


@dataclass
class HostFit:
    """How many more of a flavor fit on one host (its tree's providers and
    the sharing providers serving it, as a candidate search with the
    flavor's resources would grant them one after another), and how many
    each of its classes alone would allow: the smallest binds."""
    flavor: object          # a flavors.Flavor
    count: int
    allows: dict            # class name -> how many that class alone allows

    @property
    def limited_by(self):
        """The classes that stop the host from taking more of the flavor."""
        return [name for name, count in self.allows.items() if count == self.count]


@dataclass
class Unusable:
    """A class's free capacity on a host that no configured flavor can use:
    what is free beyond the most any one flavor could still take of it
    (more fit x its amount)."""
    name: str
    free: int
    usable: int

    @property
    def amount(self):
        return max(self.free - self.usable, 0)


def host_fits(root_id, flavors=None):
    """[HostFit] of the flavors (the configured ones by default) on the
    tree rooted at root_id, from its providers' slots and those of the
    sharing providers serving it (fits.count_lone_tree): the classes' ids,
    the sharing providers serving the tree, the slots per class, three
    queries."""
    flavors = configured_flavors() if flavors is None else flavors
    counted, shapes = flavor_shapes(flavors)
    serving = set(ResourceProvider.objects.sharing().serving_tree(root_id).values_list(
        'pk', flat=True)) if shapes else set()
    own = [collections.Counter() for _ in shapes]      # per shape: class id -> slots
    pooled = [collections.Counter() for _ in shapes]
    classes = sorted({class_id for shape in shapes for class_id in shape})
    scope = scopes.trees().narrowed(resource_class_id__in=classes).narrowed_to_trees(
        [root_id], ResourceProvider.objects.filter(pk__in=serving).values('root_provider_id'))
    for _, root, sharing, class_id, *sums in reached_tree_sums(scope, shapes) if shapes else ():
        if root != root_id and sharing not in serving:
            continue    # another provider of a sharing provider's tree
        for index, slots in enumerate(sums):
            (own if sharing is None else pooled)[index][class_id] += int(slots or 0)
    fits_by_flavor = {}
    for index, (shape, flavor) in enumerate(zip(shapes, counted)):
        allows = {name: own[index][class_id] + pooled[index][class_id]
                  for name, class_id in zip(flavor.resources, shape)}
        fits_by_flavor[flavor.name] = HostFit(
            flavor, count_lone_tree(own[index], pooled[index], shape), allows)
    return [fits_by_flavor.get(flavor.name) or HostFit(flavor, 0, {}) for flavor in flavors]


def unusable(tree_books, fits):
    """[Unusable] of the classes the flavors ask for, from a host's books
    ({class name: books.ClassUsage}) and its [HostFit]."""
    classes = []
    for name, usage in tree_books.items():
        takers = [fit.count * fit.flavor.resources[name] for fit in fits
                  if name in fit.flavor.resources]
        if takers:
            classes.append(Unusable(name, int(usage.free), max(takers)))
    return classes
