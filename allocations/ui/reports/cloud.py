"""The cloud's page: its books per class, counts, the fullest hosts, how many
more of each flavor fit and what is stranded."""
from dataclasses import dataclass

from django.db.models import Count
from django.db.models import Exists
from django.db.models import OuterRef
from django.db.models import Q

from allocations.models import Consumer
from allocations.models import Project
from allocations.ui.reports.usage import ledger_serves
from providers import books
from providers import capacity
from providers import ledger
from providers import scopes
from providers import stranded
from providers.flavors import Flavor
from providers.flavors import configured_flavors
from providers.models import ResourceProvider


def class_summary():
    """ClassUsage per resource class over the whole cloud. One query."""
    return list(books.scope_books(scopes.cloud()).get(scopes.CLOUD, {}).values())


@dataclass
class FlavorFit:
    """How many more of a configured flavor (PLACEMENT_CAPACITY_FLAVORS)
    fit: capacity.Fit's count, a lower bound when not exact."""
    flavor: Flavor
    fit: capacity.Fit
    why: str = ''   # when none fits: the limit that stops it (capacity.why_none_fit)


def flavor_fits(scope, groups):
    """{group key: [FlavorFit]} for the configured flavors in the groups
    (providers.capacity, as GET /capacity counts them), and why none fits
    where none does. Four queries (one more per part of the scope when a flavor fits none),
    whatever the number of groups."""
    flavors = configured_flavors()
    fits_by_group = capacity.flavor_fits(flavors, scope, groups)
    why = capacity.why_none_fit(flavors, scope, groups, fits_by_group)
    return {key: [FlavorFit(f, fits[f.name], why.get(key, {}).get(f.name, ''))
                  for f in flavors] for key, fits in fits_by_group.items()}


def cloud_flavor_fits():
    """[FlavorFit] over the whole cloud."""
    return flavor_fits(*capacity.grouping(capacity.CLOUD))[capacity.CLOUD]


def cloud_stranded():
    """[stranded.ClassStranded] of the whole cloud, for the configured flavors."""
    return list(stranded.stranded(capacity.CLOUD)[0].classes.values())


@dataclass
class Host:
    """A host (a provider tree) as the overview lists it: its root, and the
    books of its fullest class summed over the tree."""
    root: ResourceProvider
    fullest: books.ClassUsage


def fullest_hosts(limit=10):
    """[Host] of the `limit` fullest hosts (books.fullest_hosts; trees
    without capacity are never among them): their roots read, one query
    more."""
    fullest_classes = books.fullest_hosts(limit)
    roots = ResourceProvider.objects.in_bulk([root for root, _ in fullest_classes])
    # A tree the ledger holds may be gone from this page's snapshot.
    return [Host(roots[root], fullest) for root, fullest in fullest_classes if root in roots]


def cloud_counts():
    """The cloud's providers, roots (from the ledger's image outside a
    writing transaction), consumers and projects holding consumers (a
    project counted by an EXISTS per project on the consumers' index, not a
    DISTINCT over a join with every consumer). Two or three queries."""
    if ledger_serves():
        every, roots = ledger.provider_counts(ResourceProvider.objects.db)
    else:
        providers = ResourceProvider.objects.aggregate(
            all=Count('id'), roots=Count('id', filter=Q(parent_provider__isnull=True)))
        every, roots = providers['all'], providers['roots']
    return {
        'providers': every,
        'roots': roots,
        'consumers': Consumer.objects.count(),
        'projects': Project.objects.filter(
            Exists(Consumer.objects.filter(project=OuterRef('pk')))).count(),
    }
