"""Writing allocations: one transaction per request, all or nothing.

Concurrency: the consumers' rows and then the providers' rows (in id order,
so two writers never deadlock) are locked before usage is read, so the
capacity check sees every committed allocation and nobody can add one until
we commit. Generations are still bumped with a guarded UPDATE
(... WHERE generation = <the value read under the lock>), so a writer that
slipped past the locks loses with 409 instead of overwriting.
"""
import collections
from dataclasses import dataclass
from dataclasses import field

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.db.models import Q
from django.utils import timezone

from allocations import audit
from allocations.models import Allocation
from allocations.models import Consumer
from allocations.models import ConsumerType
from allocations.models import Project
from allocations.models import User
from placement_site import exceptions
from placement_site.queries import storable
from placement_site.retries import retried
from placement_site.retries import retried_write
from providers import events
from providers import rules
from providers import services as provider_services
from providers.models import INVENTORY_FIELDS
from providers.models import Inventory
from providers.models import ResourceClass
from providers.models import ResourceProvider

NOT_CHECKED = object()  # consumer generation not given (microversion < 1.28)


@dataclass
class ConsumerAllocations:
    """What one consumer should hold after the write.

    `allocations` maps provider uuid -> {resource class: amount}; an empty
    mapping removes all the consumer's allocations (and the consumer).
    """
    consumer_uuid: str
    allocations: dict
    project_id: str = None
    user_id: str = None
    generation: object = NOT_CHECKED
    consumer_type: str = None
    # A repair (the orphan audit's): an allocation the consumer holds now,
    # asked for at the amount it holds, is kept as it is, not judged again
    # by its inventory's min_unit, max_unit, step_size or capacity, which
    # may have moved since it was made. Anything else asked is judged.
    repair: bool = False
    # filled in while writing
    consumer: Consumer = field(default=None, repr=False)
    created: bool = field(default=False, repr=False)


def allocations_replace(requests):
    """Replace the allocations of every consumer in `requests` at once.

    A concurrent writer that created the same consumer, project or user, or
    bumped a provider not yet locked, or a deadlock the database broke: the
    whole write again from fresh reads. Consumer generation conflicts are
    the client's to solve."""
    def forget_consumers():
        for request in requests:
            request.consumer = None
    return retried(lambda: _replace(requests), also=(exceptions.ProviderConcurrentUpdate,),
                   before_retry=forget_consumers, exhausted=exceptions.ProviderConcurrentUpdate)


@retried_write
def allocations_delete(*, consumer_uuid, generation=NOT_CHECKED):
    """Remove all allocations of a consumer, and the consumer.

    Returns False when the consumer holds no allocations. As in OpenStack
    Placement, freeing capacity does not bump the providers' generations.
    `generation`: only while the consumer is at it (If-Match named it).
    """
    if not storable(consumer_uuid):
        return False
    with transaction.atomic():
        consumer = Consumer.objects.select_for_update().filter(uuid=consumer_uuid).first()
        current_generation = None if consumer is None else consumer.generation
        if generation is not NOT_CHECKED and current_generation != generation:
            raise exceptions.ConsumerGenerationConflict(
                expected='null' if current_generation is None else current_generation,
                got=generation)
        if consumer is None:
            return False
        # Locked (in id order, as writers lock them) so that the generations
        # recorded below stay current until commit.
        held = sorted(ResourceProvider.objects.select_for_update().filter(
            pk__in=Allocation.objects.filter(consumer_id=consumer.pk).values(
                'resource_provider_id')).order_by('pk').values_list('uuid', 'generation'))
        deleted, _ = Allocation.objects.filter(consumer_id=consumer.pk).delete()
        if not deleted:
            return False
        consumer.delete()
        events.record(events.ALLOCATION_DELETE,
                      providers=[(uuid, gen, gen) for uuid, gen in held],
                      consumer=(consumer.uuid, consumer.generation, None),
                      payload={'allocations': {}})
    return True


@retried_write
def allocations_remove_orphaned(*, consumer_uuid, generation, lacking_inventory_only=False):
    """The orphan audit's repair (manage.py placement_audit --delete): all
    the consumer's allocations (and the consumer), or only those of classes
    their provider has no inventory of, removed as PUT /allocations/{uuid}
    of the rest would (providers and consumer bumped, one event).

    At the consumer's `generation` as the audit read it, so allocations
    written since are never lost (ConsumerGenerationConflict); what lacks
    inventory is found again under the locks. Returns how many allocations
    went (0: the consumer is gone, or none lacks inventory any more).

    What stays is kept as it is (ConsumerAllocations.repair): it only
    removes, so no rule that came after the kept allocations (a max_unit
    lowered, capacity shrunk) can refuse it."""
    with transaction.atomic():
        consumer = Consumer.objects.select_for_update().filter(uuid=consumer_uuid).first()
        if consumer is None:
            return 0
        if consumer.generation != generation:
            raise exceptions.ConsumerGenerationConflict(expected=consumer.generation,
                                                        got=generation)
        held = Allocation.objects.filter(consumer_id=consumer.pk)
        # Locked before their inventories are read, in the order every writer
        # locks (consumers, then providers by id).
        _lock_providers(held.values_list('resource_provider_id', flat=True))
        going = set((audit.lacking_inventory(held) if lacking_inventory_only else held)
                    .values_list('pk', flat=True))
        if not going:
            return 0
        kept = collections.defaultdict(dict)
        for pk, provider_uuid, class_name, used in held.values_list(
                'pk', 'resource_provider__uuid', 'resource_class__name', 'used'):
            if pk not in going:
                kept[provider_uuid][class_name] = used
        project_id, user_id, consumer_type = Consumer.objects.filter(pk=consumer.pk).values_list(
            'project__external_id', 'user__external_id', 'consumer_type__name').get()
        _replace([ConsumerAllocations(
            consumer_uuid=consumer_uuid, allocations=dict(kept), project_id=project_id,
            user_id=user_id, generation=generation, consumer_type=consumer_type, repair=True)])
    return len(going)


@retried_write
def reshape(*, inventories, requests, reserved_can_be_total=True):
    """Move inventory and the allocations against it between providers,
    atomically (POST /reshaper).

    `inventories` maps each provider (already checked against the client's
    generation) to its complete new inventories. As in OpenStack Placement
    the new inventories are first merged into the old ones, then the
    allocations are replaced, then the inventories are set exactly, so
    allocations can move off a class that then disappears.
    """
    with transaction.atomic():
        for provider, new_inventories in inventories.items():
            if not new_inventories:
                # Nothing to merge, but the generation the caller checked
                # must still hold: lock the row at that generation.
                _lock_at_generation(provider)
                continue
            interim = {
                inv.resource_class.name: {f: getattr(inv, f) for f in INVENTORY_FIELDS}
                for inv in Inventory.objects.filter(
                    resource_provider_id=provider.pk).select_related('resource_class')
            }
            interim.update(new_inventories)
            provider_services.inventories_replace(
                provider=provider, inventories=interim, reserved_can_be_total=reserved_can_be_total,
                check_usage=False)
        if requests:
            _replace(requests)
        for provider, new_inventories in inventories.items():
            provider.generation = ResourceProvider.objects.values_list(
                'generation', flat=True).get(pk=provider.pk)
            provider_services.inventories_replace(
                provider=provider, inventories=new_inventories,
                reserved_can_be_total=reserved_can_be_total)


# ---- the write itself ----------------------------------------------------------

def _replace(requests):
    _ensure_consumers(requests)
    provider_uuids = {uuid for r in requests for uuid in r.allocations}
    ids_by_uuid = dict(ResourceProvider.objects.filter(
        uuid__in=provider_uuids).values_list('uuid', 'id'))
    for request in requests:
        for provider_uuid in request.allocations:
            if provider_uuid not in ids_by_uuid:
                raise exceptions.ProviderForAllocationNotFound(uuid=provider_uuid)
    class_names = {rc for r in requests for resources in r.allocations.values() for rc in resources}
    class_ids = dict(ResourceClass.objects.filter(name__in=class_names).values_list('name', 'id'))
    for name in class_names:
        if name not in class_ids:
            raise exceptions.ResourceClassNotFound(name=name)
    consumer_ids = [r.consumer.pk for r in requests]
    previous = list(Allocation.objects.filter(consumer_id__in=consumer_ids).values_list(
        'consumer_id', 'resource_provider_id', 'resource_class_id', 'used'))
    # The providers written to, and those of consumers being emptied, get
    # their generation bumped (as in OpenStack Placement; a provider that
    # merely loses a consumer's allocations to another provider does not).
    emptied = {r.consumer.pk for r in requests if not r.allocations}
    bumped_ids = set(ids_by_uuid.values()) | {p for c, p, _, _ in previous if c in emptied}
    # Those it leaves are locked too, so the generations the event log
    # records for them are current until commit.
    locked = _lock_providers(bumped_ids | {p for _, p, _, _ in previous})
    providers = {pk: locked[pk] for pk in bumped_ids}

    wanted = []  # (request, provider, class name, class id, amount)
    for request in requests:
        for provider_uuid, resources in request.allocations.items():
            provider = providers[ids_by_uuid[provider_uuid]]
            for class_name, amount in resources.items():
                wanted.append((request, provider, class_name, class_ids[class_name], amount))
    # Read before the consumers' own allocations go: `used` as it stands.
    inventories = _inventories(wanted)
    Allocation.objects.filter(consumer_id__in=consumer_ids).delete()
    _check_capacity(wanted, inventories, previous)
    Allocation.objects.bulk_create([
        Allocation(resource_provider_id=provider.pk, consumer_id=request.consumer.pk,
                   resource_class_id=class_id, used=amount)
        for request, provider, _name, class_id, amount in wanted
    ])
    _bump_provider_generations(providers.values())
    now = timezone.now()
    for request in requests:
        consumer = request.consumer
        bumped = Consumer.objects.filter(pk=consumer.pk, generation=consumer.generation).update(
            generation=F('generation') + 1, updated_at=now)
        if bumped != 1:
            raise exceptions.ConcurrentUpdate()
        consumer.generation += 1
    if emptied:
        Consumer.objects.filter(pk__in=emptied, allocations__isnull=True).delete()
    _record_events(requests, providers, locked, ids_by_uuid, previous)


def _record_events(requests, bumped, locked, ids_by_uuid, previous):
    """One event per consumer written, naming the providers it now holds
    and those it held, with their generations: a provider bumped by the
    write shows the step once, in the first consumer's event; a provider a
    consumer merely left keeps its generation."""
    held = collections.defaultdict(set)
    for consumer_id, provider_id, _, _ in previous:
        held[consumer_id].add(provider_id)
    stepped = set()
    changes = []
    for request in requests:
        consumer = request.consumer
        if request.created and not request.allocations:
            continue  # emptying a consumer that never held anything changes nothing
        providers = []
        for provider_id in {ids_by_uuid[uuid] for uuid in request.allocations} | held[consumer.pk]:
            provider = locked[provider_id]
            before = provider.generation
            if provider_id in bumped and provider_id not in stepped:
                stepped.add(provider_id)
                before -= 1
            providers.append((provider.uuid, before, provider.generation))
        providers.sort()
        before = None if request.created else consumer.generation - 1
        if request.allocations:
            event_type, after = events.ALLOCATION_UPDATE, consumer.generation
        else:  # emptied: the consumer is gone
            event_type, after = events.ALLOCATION_DELETE, None
        project_id, user_id = _owner(request)
        changes.append((event_type, providers, {
            'allocations': {uuid: {'resources': resources}
                            for uuid, resources in request.allocations.items()},
            'project_id': project_id, 'user_id': user_id, 'consumer_type': request.consumer_type,
        }, (consumer.uuid, before, after)))
    events.record_many(changes)


def _ensure_consumers(requests):
    """Lock or create each consumer, checking generations (1.28+) and
    updating project, user and consumer type when they changed.

    Rows are locked and created in one fixed order (consumers, then owners
    and types, each sorted) so two writers can never deadlock on them.
    """
    uuids = sorted({r.consumer_uuid for r in requests})
    existing = {c.uuid: c for c in Consumer.objects.select_for_update().filter(
        uuid__in=uuids).order_by('uuid')}
    owners = [_owner(r) for r in requests]
    projects = {pid: _get_or_create(Project, external_id=pid)
                for pid in sorted({project for project, _ in owners})}
    users = {uid: _get_or_create(User, external_id=uid) for uid in sorted({u for _, u in owners})}
    types = {name: _get_or_create(ConsumerType, name=name)
             for name in sorted({r.consumer_type for r in requests if r.consumer_type})}
    new = []
    for request, (project_id, user_id) in zip(requests, owners):
        project, user = projects[project_id], users[user_id]
        consumer_type = types.get(request.consumer_type)
        consumer = existing.get(request.consumer_uuid)
        request.created = consumer is None
        if consumer is None:
            if request.generation not in (NOT_CHECKED, None):
                raise exceptions.ConsumerGenerationConflict(expected='null', got=request.generation)
            new.append((request, project, user, consumer_type))
            continue
        if request.generation is not NOT_CHECKED and consumer.generation != request.generation:
            raise exceptions.ConsumerGenerationConflict(
                expected=consumer.generation, got=request.generation)
        changes = {}
        if consumer.project_id != project.pk or consumer.user_id != user.pk:
            changes.update(project_id=project.pk, user_id=user.pk)
        if consumer_type is not None and consumer.consumer_type_id != consumer_type.pk:
            changes['consumer_type_id'] = consumer_type.pk
        if changes:
            Consumer.objects.filter(pk=consumer.pk).update(updated_at=timezone.now(), **changes)
            for name, value in changes.items():
                setattr(consumer, name, value)
        request.consumer = consumer
    for request, project, user, consumer_type in sorted(new, key=lambda n: n[0].consumer_uuid):
        consumer = existing.get(request.consumer_uuid)
        if consumer is None:  # the same new consumer twice in one request
            consumer = existing[request.consumer_uuid] = Consumer.objects.create(
                uuid=request.consumer_uuid, project=project, user=user,
                consumer_type=consumer_type)
        request.consumer = consumer


def _owner(request):
    """(project, user) the consumer is written with; before 1.8 clients gave
    none and the configured placeholders stand in."""
    if request.project_id is not None:
        return request.project_id, request.user_id
    return (settings.PLACEMENT_INCOMPLETE_CONSUMER_PROJECT_ID,
            settings.PLACEMENT_INCOMPLETE_CONSUMER_USER_ID)


def _get_or_create(model, **lookup):
    existing = model.objects.filter(**lookup).first()
    if existing is not None:
        return existing
    with transaction.atomic():  # an IntegrityError here retries the write
        return model.objects.create(**lookup)


def _lock_at_generation(provider):
    """Lock the provider's row if it is still at the generation read, or
    fail as a concurrent update."""
    if not ResourceProvider.objects.select_for_update().filter(
            pk=provider.pk, generation=provider.generation).exists():
        raise exceptions.ProviderConcurrentUpdate()


def _lock_providers(provider_ids):
    """Lock the providers' rows in id order; {id: provider}."""
    return {p.pk: p for p in ResourceProvider.objects.select_for_update().filter(
        pk__in=list(provider_ids)).order_by('pk').only('id', 'uuid', 'generation')}


def _bump_provider_generations(providers):
    providers = list(providers)
    if not providers:
        return
    guard = Q()
    for provider in providers:
        guard |= Q(pk=provider.pk, generation=provider.generation)
    bumped = ResourceProvider.objects.filter(guard).update(
        generation=F('generation') + 1, updated_at=timezone.now())
    if bumped != len(providers):
        raise exceptions.ProviderConcurrentUpdate()
    for provider in providers:
        provider.generation += 1


def _inventories(wanted):
    """{(provider id, class id): Inventory} of what is wanted, `used`
    included (the one count of usage, kept by the database)."""
    if not wanted:
        return {}
    provider_ids = {provider.pk for _, provider, _, _, _ in wanted}
    wanted_class_ids = {class_id for _, _, _, class_id, _ in wanted}
    return {(inv.resource_provider_id, inv.resource_class_id): inv
            for inv in Inventory.objects.filter(resource_provider_id__in=provider_ids,
                                                resource_class_id__in=wanted_class_ids)}


def _check_capacity(wanted, inventories, previous):
    """Refuse allocations that do not fit, as OpenStack Placement judges it
    (providers.rules), on `inventories` as they were before the consumers'
    own previous allocations, which are being replaced, went.

    An allocation that leaves a provider over capacity is still accepted
    when it reduces an existing overage. A repair's allocation that the
    consumer holds now at that amount is kept without being judged again
    (ConsumerAllocations.repair).
    """
    if not wanted:
        return
    replaced = collections.Counter()
    held = collections.Counter()
    for consumer_id, provider_id, class_id, used in previous:
        replaced[provider_id, class_id] += used
        held[consumer_id, provider_id, class_id] += used
    with_inventory = {provider_id for provider_id, _ in inventories}
    missing = sorted({p.uuid for _, p, _, _, _ in wanted if p.pk not in with_inventory})
    if missing:
        names = ', '.join(sorted({name for _, _, name, _, _ in wanted}))
        raise exceptions.InvalidInventory(resource_class=names,
                                          resource_provider=', '.join(missing))
    requested = collections.Counter()
    for request, provider, class_name, class_id, amount in wanted:
        key = (provider.pk, class_id)
        requested[key] += amount
        inventory = inventories.get(key)
        if inventory is None:
            raise exceptions.InvalidInventory(resource_class=class_name,
                                              resource_provider=provider.uuid)
        if request.repair and held[request.consumer.pk, provider.pk, class_id] == amount:
            continue   # kept as it is held
        if not rules.takes(amount, inventory.min_unit, inventory.max_unit,
                           inventory.step_size):
            raise exceptions.InvalidAllocationConstraintsViolated(
                resource_class=class_name, resource_provider=provider.uuid)
        used_before = inventory.used
        used = used_before - replaced[key]
        limit = inventory.capacity
        # requested[key] counts this amount and the request's others on the inventory.
        if not rules.holds(used + requested[key], limit):
            if used + requested[key] <= used_before:
                continue  # over capacity already, but no worse than before
            raise exceptions.InvalidAllocationCapacityExceeded(
                resource_class=class_name, resource_provider=provider.uuid)
