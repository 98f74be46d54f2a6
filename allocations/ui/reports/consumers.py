"""A consumer (also one gone, from the event log) and a project: its usage,
hosts, consumers, pools and pod bindings."""
import collections
from dataclasses import dataclass

from django.db.models import Count
from django.db.models import F
from django.db.models import Q
from django.db.models import Sum

from allocations import ledger as allocation_ledger
from allocations.models import Allocation
from allocations.models import ConsumerType
from allocations.ui.paging import Counted
from allocations.ui.reports.usage import ledger_serves
from allocations.ui.reports.usage import owned_consumers
from providers.models import Aggregate
from providers.models import Event
from providers.models import ProviderAggregate
from providers.models import ResourceClass
from providers.pods.models import PodBinding


def consumer_history(uuid):
    """The event log's changes of the allocations of the consumer `uuid`
    (there or deleted), newest first (paginate it; the log is indexed by
    consumer)."""
    return Event.objects.filter(consumer_uuid=uuid).order_by('-id')


@dataclass(frozen=True)
class FormerConsumer:
    """A consumer that is no longer there, as the event log last knew it:
    its owner and type from its newest event naming them (None when the
    log has none left, pruned or never written: an API DELETE's event
    names no owner), its last generation, and the newest event (`last`: a
    dict of event_type, created_at and user_id; its allocation.delete, or
    an allocation.update when the rows went behind Placement's back)."""
    uuid: str
    project_id: str
    user_id: str
    consumer_type: str
    generation: int
    last: dict


def former_consumer(uuid):
    """A FormerConsumer for `uuid` when the event log names a consumer of
    that uuid, else None (a uuid no consumer ever had). Two queries."""
    events = consumer_history(uuid)
    last = events.values('event_type', 'created_at', 'user_id', 'consumer_generation_before',
                         'consumer_generation_after').first()
    if last is None:
        return None
    owner = events.filter(payload__has_key='project_id').values_list('payload', flat=True).first()
    project_id = user_id = consumer_type = None
    if owner is not None:
        project_id, user_id = owner.get('project_id'), owner.get('user_id')
        consumer_type = owner.get('consumer_type') or ConsumerType.UNKNOWN
    generation = last['consumer_generation_after']
    if generation is None:   # deleted: the generation it had until then
        generation = last['consumer_generation_before']
    return FormerConsumer(uuid=uuid, project_id=project_id, user_id=user_id,
                          consumer_type=consumer_type, generation=generation, last=last)


def project_usage(project):
    """{class name: used} of the project's consumers, in class order: from
    the ledger, or one query."""
    if ledger_serves():
        sums, _ = allocation_ledger.owner_usage(Allocation.objects.db,
                                                lambda owner: owner[0] == project.pk)
        totals = collections.Counter()
        for by_class in sums.values():
            totals.update(by_class)
        names = dict(ResourceClass.objects.filter(pk__in=list(totals)).values_list('pk', 'name'))
        # (A class the page's snapshot does not know yet: the image is a moment ahead.)
        return {names[class_id]: totals[class_id] for class_id in sorted(totals)
                if class_id in names}
    held = Allocation.objects.filter(consumer__project=project)
    return dict(held.values_list('resource_class__name').annotate(used=Sum('used')).order_by(
        'resource_class_id'))


def project_hosts(project, limit=20):
    """(hosts, count): the provider trees the project's consumers sit on,
    most consumers first (then by name), at most `limit`, each a dict with
    `consumers`, `name` and `uuid`; and how many trees there are. From the
    ledger, or two queries."""
    if ledger_serves():
        (hosts, count), _ = allocation_ledger.project_trees(Allocation.objects.db, project.pk,
                                                             limit)
        return [{'resource_provider__root_provider_id': root, 'name': name, 'uuid': uuid,
                 'consumers': consumers} for root, name, uuid, consumers in hosts], count
    per_root = Allocation.objects.filter(consumer__project=project).values(
        'resource_provider__root_provider_id')
    return (list(per_root.annotate(
        consumers=Count('consumer_id', distinct=True),
        name=F('resource_provider__root_provider__name'),
        uuid=F('resource_provider__root_provider__uuid'),
    ).order_by('-consumers', 'name')[:limit]), per_root.order_by().distinct().count())


def project_consumers(project):
    """The project's consumers holding allocations, by uuid, with their
    owners (paginate it). From the consumers' side, by the project's index:
    a large project's allocations are many, its consumers' rows few.
    Counted by the ledger's owners' usage where it serves (counting 36,000
    consumers' EXISTS took a large project's page 50 ms of every read)."""
    listed = owned_consumers(project=project.external_id).select_related(
        'project', 'user', 'consumer_type').order_by('uuid')
    if not ledger_serves():
        return listed
    return Counted(listed, lambda: sum(allocation_ledger.owner_usage(
        Allocation.objects.db, lambda owner: owner[0] == project.pk)[1].values()))


def project_pools(project, limit=50):
    """The pools (aggregates) the project's consumers sit in, as member_of
    reads a pool: a provider holding their allocations, or its tree's root,
    is a member. At most `limit`, by uuid (one query, the ledger saying which)."""
    if ledger_serves():
        _, pools = allocation_ledger.project_trees(Allocation.objects.db, project.pk, 0)
        return list(Aggregate.objects.filter(pk__in=pools).order_by('uuid')[:limit])
    return _pools_holding(Allocation.objects.filter(consumer__project=project), limit)


def _pools_holding(held, limit):
    def pools_of(providers):
        return ProviderAggregate.objects.filter(resource_provider_id__in=providers).values(
            'aggregate_id')
    # Two semi-joins over the (few) aggregates, not an OR over every membership.
    return list(Aggregate.objects.filter(
        Q(pk__in=pools_of(held.values('resource_provider_id')))
        | Q(pk__in=pools_of(held.values('resource_provider__root_provider_id'))),
    ).order_by('uuid')[:limit])


def project_bindings(project):
    """The project's open pod bindings, by affinity (one query)."""
    return PodBinding.objects.open().filter(project_id=project.external_id).select_related(
        'pod', 'pod__aggregate').order_by('affinity')
