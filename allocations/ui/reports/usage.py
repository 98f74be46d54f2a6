"""Usage by owner: allocations grouped by project, user and consumer type, and
the largest holders."""
import collections
from dataclasses import dataclass

from django.db.models import Count
from django.db.models import Exists
from django.db.models import OuterRef
from django.db.models import Q
from django.db.models import Sum

from allocations import ledger as allocation_ledger
from allocations.models import Allocation
from allocations.models import Consumer
from allocations.models import ConsumerType
from allocations.models import Project
from allocations.models import User as PlacementUser
from providers.models import ResourceClass


def owners_wanted(filters):
    """A test of owners ((project id, user id, consumer type id or -1), as
    allocations.ledger keys them) for the owner filters ({owner: external id
    or None}): one query per filter given."""
    tests = []
    if filters.get('project'):
        pk = Project.objects.filter(external_id=filters['project']).values_list('pk', flat=True)
        tests.append((0, pk.first()))
    if filters.get('user'):
        pk = PlacementUser.objects.filter(external_id=filters['user']).values_list('pk',
                                                                                  flat=True)
        tests.append((1, pk.first()))
    if filters.get('consumer_type') == ConsumerType.UNKNOWN:
        tests.append((2, -1))
    elif filters.get('consumer_type'):
        pk = ConsumerType.objects.filter(name=filters['consumer_type']).values_list('pk',
                                                                                  flat=True)
        tests.append((2, pk.first()))
    return lambda owner: all(owner[index] == wanted for index, wanted in tests)


def owned_allocations(project=None, user=None, consumer_type=None):
    """Allocations of the consumers matching the owner filters."""
    return Allocation.objects.filter(_owned('consumer__', project, user, consumer_type))


def owned_consumers(project=None, user=None, consumer_type=None):
    """Consumers holding allocations, matching the owner filters."""
    return Consumer.objects.filter(
        _owned('', project, user, consumer_type),
        Exists(Allocation.objects.filter(consumer=OuterRef('pk'))))


def _owned(prefix, project, user, consumer_type):
    owned = Q()
    if project:
        owned &= Q(**{f'{prefix}project__external_id': project})
    if user:
        owned &= Q(**{f'{prefix}user__external_id': user})
    if consumer_type == ConsumerType.UNKNOWN:
        owned &= Q(**{f'{prefix}consumer_type__isnull': True})
    elif consumer_type:
        owned &= Q(**{f'{prefix}consumer_type__name': consumer_type})
    return owned


OWNERS = ('project', 'user', 'consumer_type')


@dataclass
class Usage:
    """The owners' usage, per (project, user, consumer type): sums per
    class and consumers; rows() rolls them up by any of the three."""
    sums: dict        # (project, user, type) -> {class name: used}
    consumers: dict   # (project, user, type) -> consumers holding allocations

    @classmethod
    def read(cls, filters):
        """The owners' usage (filters: {owner: external id or None}), as
        read_now() sums it: from the ledger's sums, kept tree by tree
        (allocations.ledger), outside a writing transaction."""
        if not ledger_serves():
            return cls.read_now(filters)
        wanted = owners_wanted(filters)
        sums, counted = allocation_ledger.owner_usage(Allocation.objects.db, wanted)
        ids = {owner: (project, user, None if type_id < 0 else type_id)
               for owner in sums.keys() | counted.keys() for project, user, type_id in [owner]}
        return cls.named({ids[owner]: by_class for owner, by_class in sums.items()},
                         {ids[owner]: n for owner, n in counted.items()}, filters)

    @classmethod
    def read_now(cls, filters):
        """The sums over the filtered owners' allocations and their
        consumers' count, grouped by all three owners (each consumer has one
        of each, so coarser groups add up). Grouped by ids, the names read
        after for the few owners found: five queries, the two over every
        allocation and consumer joining nothing they need not."""
        grouped = collections.defaultdict(dict)
        for owner_ids in owned_allocations(**filters).values_list(
                'consumer__project_id', 'consumer__user_id', 'consumer__consumer_type_id',
                'resource_class_id').annotate(used=Sum('used')).order_by('resource_class_id'):
            *owner, class_id, used = owner_ids
            grouped[tuple(owner)][class_id] = used
        counted = {tuple(owner): n for *owner, n in owned_consumers(**filters).values_list(
            'project_id', 'user_id', 'consumer_type_id').annotate(n=Count('id')).order_by()}
        return cls.named(grouped, counted, filters)

    @classmethod
    def named(cls, grouped, counted, filters):
        """The Usage of sums ({(project, user, type) ids: {class id: used}})
        and consumers counted ({owner ids: n}), by the owners' and classes'
        names: four queries (the projects and users of the filtered owners
        only, when a filter is given)."""
        projects, users = Project.objects.all(), PlacementUser.objects.all()
        if any(filters.values()):  # a few owners: not every project's and user's name
            owners = grouped.keys() | counted.keys()
            projects = projects.filter(pk__in={project for project, _, _ in owners})
            users = users.filter(pk__in={user for _, user, _ in owners})
        projects = dict(projects.values_list('pk', 'external_id'))
        users = dict(users.values_list('pk', 'external_id'))
        types = dict(ConsumerType.objects.values_list('pk', 'name'))
        classes = dict(ResourceClass.objects.values_list('pk', 'name'))

        def name(names, pk):
            # Read after the sums: outside one snapshot the owner (or
            # class) may have gone in between, and is shown by its id.
            return names.get(pk, f'#{pk}')

        def named(owner):
            project, user, type_id = owner
            return (name(projects, project), name(users, user),
                    types.get(type_id, ConsumerType.UNKNOWN))
        sums = {named(owner): {name(classes, c): used for c, used in by_class.items()}
                for owner, by_class in grouped.items()}
        return cls(sums, {named(owner): n for owner, n in counted.items()})

    def rows(self, keys):
        """{'key': (...), 'usages': {class: used}, 'consumers': n} per owner
        keys ('project', 'user', 'consumer_type'), largest first."""
        positions = [OWNERS.index(key) for key in keys]
        rows = {}
        # Every owner of the cloud on each read (thousands of projects'
        # users): a row made only for a new key, the sums added in place.
        for owner, usages in self.sums.items():
            key = tuple(owner[p] for p in positions)
            row = rows.get(key)
            if row is None:
                row = rows[key] = {'key': key, 'usages': {}, 'consumers': 0}
            summed = row['usages']
            for name, used in usages.items():
                summed[name] = summed.get(name, 0) + used
            row['consumers'] += self.consumers.get(owner, 0)
        return sorted(rows.values(), key=lambda r: (-r['consumers'], r['key']))


def top_consumers(owners, resource_class, limit=20):
    """The consumers of the owners (filters: {owner: external id or None})
    holding the most of a class (ties by the consumer's age: sorting by uuid
    would join every consumer), with all they hold: the ledger says which
    (allocations.ledger), two queries read them; or three queries."""
    if not ledger_serves():
        class_id = ResourceClass.objects.filter(name=resource_class).values_list('id', flat=True)
        top = [(t['consumer_id'], t['amount']) for t in owned_allocations(**owners).filter(
            resource_class_id__in=class_id).values('consumer_id').annotate(
            amount=Sum('used')).order_by('-amount', 'consumer_id')[:limit]]
        return _holding(top)
    class_id = (ResourceClass.objects.filter(name=resource_class)
                .values_list('id', flat=True).first())
    if class_id is None:
        return []
    return _holding([(consumer, -used) for used, consumer in allocation_ledger.top_holders(
        Allocation.objects.db, class_id, owners_wanted(owners), limit)])


def _holding(top):
    """[(consumer, amount, {class name: used})] of [(consumer id, amount)]."""
    consumers = {c.pk: c for c in Consumer.objects.filter(
        pk__in=[consumer for consumer, _ in top]).select_related(
        'project', 'user', 'consumer_type')}
    holdings = collections.defaultdict(dict)
    for consumer_id, class_name, used in Allocation.objects.filter(
            consumer_id__in=list(consumers)).values_list(
            'consumer_id', 'resource_class__name').annotate(total=Sum('used')).order_by(
            'consumer_id', 'resource_class_id'):
        holdings[consumer_id][class_name] = used
    # A consumer gone since the sums were read is left out.
    return [(consumers[consumer], amount, holdings[consumer]) for consumer, amount in top
            if consumer in consumers]


def ledger_serves():
    """Whether the owners' sums come from the ledger (allocations.ledger):
    outside a writing transaction, they follow the writes tree by tree."""
    return allocation_ledger.serves(Allocation.objects.db)
