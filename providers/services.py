"""Writes to providers, inventories, traits, aggregates and resource classes.

Each service is one transaction. A change to a provider's inventories,
traits or aggregates starts by claiming its generation with
UPDATE ... SET generation = generation + 1 WHERE id = ? AND generation = ?:
the row stays locked until commit, so concurrent writers serialise, and a
writer that read a stale generation gets ProviderConcurrentUpdate (409).
"""
import logging
import uuid as uuid_lib

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Max
from django.utils import timezone

from placement_site import exceptions
from placement_site.retries import retried, retried_write
from placement_site.validation import normalize_uuid
from providers import events, querysets, rules
from providers.models import (
    INVENTORY_FIELDS,
    Aggregate,
    Inventory,
    PoolLabel,
    ProviderAggregate,
    ProviderTrait,
    ResourceClass,
    ResourceProvider,
    Trait,
)

LOG = logging.getLogger('placement.inventories')

INVENTORY_DEFAULTS = {
    'reserved': 0,
    'min_unit': 1,
    'max_unit': 2147483647,
    'step_size': 1,
    'allocation_ratio': 1.0,
}


# ---- generations ---------------------------------------------------------

def claim_generation(provider):
    """Bump the provider's generation from the value we read, or fail.

    Must run inside a transaction; the row lock it takes lasts until commit.
    """
    now = timezone.now()
    updated = ResourceProvider.objects.filter(
        pk=provider.pk, generation=provider.generation,
    ).update(generation=F('generation') + 1, updated_at=now)
    if updated != 1:
        raise exceptions.ProviderConcurrentUpdate()
    provider.generation += 1
    provider.updated_at = now


def lock_as_read(provider):
    """Lock the provider's row while it is still as the caller read it (its
    generation, name and place in a tree: what its ETag names), or fail.

    Renaming, moving and deleting a provider do not claim its generation;
    a request with If-Match still must not write over a change it never saw.
    """
    # An UPDATE that changes nothing, not SELECT ... FOR UPDATE: SQLite
    # takes its write lock only for a write.
    if not ResourceProvider.objects.filter(
            pk=provider.pk, generation=provider.generation, name=provider.name,
            parent_provider_id=provider.parent_provider_id,
            root_provider_id=provider.root_provider_id).update(generation=F('generation')):
        raise exceptions.ProviderConcurrentUpdate()


# ---- providers -----------------------------------------------------------

@retried_write
def provider_create(*, name, uuid=None, parent_provider_uuid=None):
    """Create a provider, at the root of a new tree or under a parent."""
    provider_uuid = normalize_uuid(uuid) if uuid else str(uuid_lib.uuid4())
    with transaction.atomic():
        parent = None
        if parent_provider_uuid is not None:
            if parent_provider_uuid == provider_uuid:
                raise exceptions.ObjectActionError(
                    action='create',
                    reason='parent provider UUID cannot be same as UUID. Please set '
                           'parent provider UUID to None if there is no parent.')
            parent = ResourceProvider.objects.filter(uuid=parent_provider_uuid).first()
            if parent is None:
                raise exceptions.ObjectActionError(
                    action='create', reason='parent provider UUID does not exist.')
        _refuse_duplicates(provider_uuid, name)
        provider = ResourceProvider(uuid=provider_uuid, name=name, parent_provider=parent)
        try:
            with transaction.atomic():
                provider.save()
        except IntegrityError:  # a concurrent create won the race
            _refuse_duplicates(provider_uuid, name)
            raise
        provider.root_provider_id = parent.root_provider_id if parent else provider.pk
        ResourceProvider.objects.filter(pk=provider.pk).update(
            root_provider_id=provider.root_provider_id)
        provider.parent_provider_uuid = parent.uuid if parent else None
        provider.root_provider_uuid = (
            ResourceProvider.objects.values_list('uuid', flat=True).get(
                pk=provider.root_provider_id)
            if parent else provider.uuid)
        events.provider_changed(events.PROVIDER_CREATE, provider, before=None, payload={
            'name': provider.name, 'parent_provider_uuid': provider.parent_provider_uuid,
            'root_provider_uuid': provider.root_provider_uuid})
    return provider


def _refuse_duplicates(provider_uuid, name, exclude_pk=None):
    clashes = ResourceProvider.objects.filter(uuid=provider_uuid) | \
        ResourceProvider.objects.filter(name=name)
    if exclude_pk is not None:
        clashes = clashes.exclude(pk=exclude_pk)
    found = list(clashes.values('uuid', 'name'))
    # Like Placement, name the uuid when both clash.
    if any(row['uuid'] == provider_uuid for row in found):
        raise exceptions.DuplicateProvider(duplicate=f'uuid: {provider_uuid}')
    if any(row['name'] == name for row in found):
        raise exceptions.DuplicateProvider(duplicate=f'name: {name}')


@retried_write
def provider_update(*, provider, name=None, parent_provider_uuid=..., allow_reparenting=False,
                    as_read=False):
    """Rename and/or move a provider. Moving a subtree updates the root of
    every provider in it. Before 1.37 a provider may only gain a parent.
    as_read: only while it is as `provider` was read (lock_as_read)."""
    with transaction.atomic():
        if as_read:
            lock_as_read(provider)
        updates = {}
        if name is not None and name != provider.name:
            _refuse_duplicates(provider.uuid, name, exclude_pk=provider.pk)
            updates['name'] = name
        subtree_ids, new_root_id = [], None
        changes = {'name': name} if 'name' in updates else {}
        if parent_provider_uuid is not ...:
            current_parent_id = provider.parent_provider_id
            if parent_provider_uuid is not None:
                parent = ResourceProvider.objects.filter(uuid=parent_provider_uuid).first()
                if parent is None:
                    raise exceptions.ObjectActionError(
                        action='create', reason='parent provider UUID does not exist.')
                if (current_parent_id is not None and current_parent_id != parent.pk
                        and not allow_reparenting):
                    raise exceptions.ObjectActionError(
                        action='update',
                        reason='re-parenting a provider is not currently allowed.')
                if current_parent_id != parent.pk:
                    subtree_ids = subtree_provider_ids(provider)
                    if parent.pk in subtree_ids:
                        raise exceptions.ObjectActionError(
                            action='update',
                            reason='creating loop in the provider tree is not allowed.')
                    updates['parent_provider_id'] = parent.pk
                    new_root_id = parent.root_provider_id
                    changes['parent_provider_uuid'] = parent.uuid
            elif current_parent_id is not None:
                if not allow_reparenting:
                    raise exceptions.ObjectActionError(
                        action='update',
                        reason='un-parenting a provider is not currently allowed.')
                subtree_ids = subtree_provider_ids(provider)
                updates['parent_provider_id'] = None
                new_root_id = provider.pk
                changes['parent_provider_uuid'] = None
        if not updates:
            return provider
        updates['updated_at'] = timezone.now()
        try:
            with transaction.atomic():
                ResourceProvider.objects.filter(pk=provider.pk).update(**updates)
        except IntegrityError:
            raise exceptions.DuplicateProvider(duplicate=name)
        if new_root_id is not None:
            ResourceProvider.objects.filter(pk__in=subtree_ids).update(root_provider_id=new_root_id)
        # Renaming or moving a provider leaves its generation alone, as in
        # Placement; read it under the row lock the UPDATE took, not as the
        # caller saw it before.
        provider.generation = ResourceProvider.objects.values_list(
            'generation', flat=True).get(pk=provider.pk)
        events.provider_changed(events.PROVIDER_UPDATE, provider, before=provider.generation,
                                payload=changes)
    return ResourceProvider.objects.with_tree_uuids().get(pk=provider.pk)


def subtree_provider_ids(provider):
    """Ids of the provider and all its descendants (one query per tree)."""
    children = {}
    for pk, parent_id in ResourceProvider.objects.filter(
            root_provider_id=provider.root_provider_id).values_list('pk', 'parent_provider_id'):
        children.setdefault(parent_id, []).append(pk)
    found, pending = [], [provider.pk]
    while pending:
        pk = pending.pop()
        found.append(pk)
        pending.extend(children.get(pk, ()))
    return found


@retried_write
def provider_delete(*, provider, as_read=False):
    """Delete a provider with its inventories, traits and aggregate links.

    Refused while it has child providers or allocations. as_read: only
    while it is as `provider` was read (lock_as_read).
    """
    with transaction.atomic():
        if as_read:
            lock_as_read(provider)
        locked = ResourceProvider.objects.select_for_update().filter(pk=provider.pk).first()
        if locked is None:
            raise exceptions.ResourceProviderNotFound(uuid=provider.uuid)
        check_provider_delete(provider)
        events.provider_changed(events.PROVIDER_DELETE, provider, before=locked.generation,
                                payload={'name': locked.name})
        Inventory.objects.filter(resource_provider_id=provider.pk).delete()
        ProviderTrait.objects.filter(resource_provider_id=provider.pk).delete()
        ProviderAggregate.objects.filter(resource_provider_id=provider.pk).delete()
        # A root points at itself; clear that before deleting the row.
        ResourceProvider.objects.filter(pk=provider.pk).update(root_provider=None)
        ResourceProvider.objects.filter(pk=provider.pk).delete()


def check_provider_delete(provider):
    """Raise what provider_delete would refuse (children, allocations);
    reads only."""
    if ResourceProvider.objects.filter(parent_provider_id=provider.pk).exists():
        raise exceptions.CannotDeleteParentProvider()
    if provider.allocations.exists():
        raise exceptions.ProviderInUse()


# ---- inventories ---------------------------------------------------------

def check_inventory_capacity(provider, resource_class, record, *, reserved_can_be_total):
    """Refuse an inventory whose capacity, truncated to a whole number as
    Placement does, is negative (or zero before 1.26)."""
    usable = rules.whole_capacity(record['total'], record['reserved'], record['allocation_ratio'])
    if usable < 0 or (usable == 0 and not reserved_can_be_total):
        error = (exceptions.InvalidInventoryCapacityReservedCanBeTotal if reserved_can_be_total
                 else exceptions.InvalidInventoryCapacity)
        raise error(resource_class=resource_class, resource_provider=provider.uuid)


def _usage_by_class(provider, class_ids):
    """{class id: used} of what the provider's consumers hold: its
    inventories' `used`, the one count of usage (kept by the database)."""
    if provider.pk is None:  # not created yet (the admin checks before saving)
        return {}
    return dict(Inventory.objects.filter(
        resource_provider_id=provider.pk, resource_class_id__in=list(class_ids)).values_list(
        'resource_class_id', 'used'))


def _over_capacity(provider, records_by_id, names_by_id):
    """(class name, used, capacity) of each class whose allocations the new
    records leave over capacity, by class id."""
    used = _usage_by_class(provider, records_by_id)
    exceeded = []
    for class_id, record in sorted(records_by_id.items()):
        in_use = used.get(class_id, 0)
        limit = rules.capacity(record['total'], record['reserved'], record['allocation_ratio'])
        if in_use > limit:
            exceeded.append((names_by_id[class_id], in_use, limit))
    return exceeded


def _check_overcommit(provider, records_by_id, names_by_id, *, warn):
    """Placement's rule: an inventory may shrink below what its consumers
    hold (nova-compute reports what the hypervisor has, and that report must
    not fail forever); the change goes through with a warning and the
    provider is over capacity. PLACEMENT_REFUSE_OVERCOMMITTED_INVENTORY
    refuses it instead (the resource-pool design's rule)."""
    exceeded = _over_capacity(provider, records_by_id, names_by_id)
    if exceeded and settings.PLACEMENT_REFUSE_OVERCOMMITTED_INVENTORY:
        name, used, limit = exceeded[0]
        raise exceptions.InventoryBelowUsage(resource_class=name, resource_provider=provider.uuid,
                                             used=used, capacity=limit)
    for name, used, limit in exceeded if warn else ():
        LOG.warning('Resource provider %s is now over-capacity for %s: %s used, capacity %s',
                    provider.uuid, name, used, limit)


def _refuse_deleting_used(provider, class_ids, names_by_id):
    used = _usage_by_class(provider, class_ids)
    # By class id, as Placement lists them: standard classes first.
    in_use = [names_by_id[c] for c in sorted(class_ids) if used.get(c)]
    if in_use:
        raise exceptions.InventoryInUse(resource_classes=', '.join(in_use),
                                        resource_provider=provider.uuid)


def _wanted_inventories(provider, inventories, reserved_can_be_total):
    """({class id: record with defaults}, {class id: name}) of a complete set
    of inventories, each checked for a usable capacity."""
    # Classes first: a key that names no class (the schema lets any key
    # outside the class-name pattern through, as Placement's does) is a 400
    # whatever its value.
    ids = querysets.resource_class_ids(list(inventories))
    wanted, names_by_id = {}, {}
    for name, record in inventories.items():
        record = {**INVENTORY_DEFAULTS, **record}
        check_inventory_capacity(provider, name, record,
                                 reserved_can_be_total=reserved_can_be_total)
        wanted[ids[name]] = record
        names_by_id[ids[name]] = name
    return wanted, names_by_id


@retried_write
def inventories_replace(*, provider, inventories, reserved_can_be_total=True, check_usage=True):
    """Make the provider's inventories exactly `inventories`
    ({class name: record}): add, update and delete as needed.

    The caller has checked the generation the client sent against
    `provider.generation`; the claim below detects a writer in between.
    check_usage=False lets a reshape shrink inventory below usage, even
    under PLACEMENT_REFUSE_OVERCOMMITTED_INVENTORY, for the moment before it
    replaces the allocations.
    """
    wanted, names_by_id = _wanted_inventories(provider, inventories, reserved_can_be_total)
    with transaction.atomic():
        claim_generation(provider)
        existing = {inv.resource_class_id: inv
                    for inv in Inventory.objects.filter(resource_provider_id=provider.pk)}
        names_by_id.update(ResourceClass.objects.filter(
            pk__in=list(existing)).values_list('id', 'name'))
        to_delete = [class_id for class_id in existing if class_id not in wanted]
        if to_delete:
            _refuse_deleting_used(provider, to_delete, names_by_id)
            Inventory.objects.filter(resource_provider_id=provider.pk,
                                     resource_class_id__in=to_delete).delete()
        to_update = {c: r for c, r in wanted.items() if c in existing}
        if check_usage:
            _check_overcommit(provider, to_update, names_by_id, warn=True)
        now = timezone.now()
        changed = []
        for class_id, record in to_update.items():
            inventory = existing[class_id]
            if any(getattr(inventory, f) != record[f] for f in INVENTORY_FIELDS):
                for field in INVENTORY_FIELDS:
                    setattr(inventory, field, record[field])
                inventory.updated_at = now
                changed.append(inventory)
        if changed:
            Inventory.objects.bulk_update(changed, INVENTORY_FIELDS + ('updated_at',))
        added = {class_id: record for class_id, record in wanted.items()
                 if class_id not in existing}
        Inventory.objects.bulk_create([
            Inventory(resource_provider_id=provider.pk, resource_class_id=class_id, **record)
            for class_id, record in added.items()
        ])
        event_type = (events.INVENTORY_DELETE if existing and not wanted
                      else events.INVENTORY_UPDATE)
        events.provider_changed(event_type, provider, before=provider.generation - 1, payload={
            'added': {names_by_id[c]: events.inventory_record(r) for c, r in added.items()},
            'updated': {names_by_id[i.resource_class_id]: events.inventory_record(i)
                        for i in changed},
            'removed': [names_by_id[c] for c in sorted(to_delete)]})
    return list(Inventory.objects.filter(resource_provider_id=provider.pk)
                .select_related('resource_class'))


def check_inventories(*, provider, inventories, reserved_can_be_total=True):
    """Raise what inventories_replace would refuse for `inventories`
    (unknown class, bad capacity, deleting inventory in use, and, under
    PLACEMENT_REFUSE_OVERCOMMITTED_INVENTORY, shrinking it below usage),
    with the same rules; reads only."""
    wanted, names_by_id = _wanted_inventories(provider, inventories, reserved_can_be_total)
    existing = dict(Inventory.objects.filter(resource_provider_id=provider.pk).values_list(
        'resource_class_id', 'resource_class__name'))
    names_by_id.update(existing)
    to_delete = [class_id for class_id in existing if class_id not in wanted]
    if to_delete:
        _refuse_deleting_used(provider, to_delete, names_by_id)
    _check_overcommit(provider, {c: r for c, r in wanted.items() if c in existing}, names_by_id,
                      warn=False)


def _one_inventory(provider, resource_class, record, reserved_can_be_total):
    """(the record with defaults, its class id) of one inventory, checked
    for a usable capacity."""
    record = {**INVENTORY_DEFAULTS, **record}
    class_id = querysets.resource_class_ids([resource_class])[resource_class]
    check_inventory_capacity(provider, resource_class, record,
                             reserved_can_be_total=reserved_can_be_total)
    return record, class_id


@retried_write
def inventory_add(*, provider, resource_class, record, reserved_can_be_total=True):
    """Add one inventory the provider does not have yet."""
    record, class_id = _one_inventory(provider, resource_class, record, reserved_can_be_total)
    with transaction.atomic():
        claim_generation(provider)
        if Inventory.objects.filter(resource_provider_id=provider.pk,
                                    resource_class_id=class_id).exists():
            raise exceptions.ConcurrentUpdate(
                f'Inventory of class {resource_class} already exists on provider {provider.uuid}')
        inventory = Inventory.objects.create(
            resource_provider_id=provider.pk, resource_class_id=class_id, **record)
        events.provider_changed(events.INVENTORY_CREATE, provider, before=provider.generation - 1,
                                payload={'added': {resource_class: events.inventory_record(record)},
                                         'updated': {}, 'removed': []})
    return inventory


@retried_write
def inventory_update(*, provider, resource_class, record, reserved_can_be_total=True):
    """Change one inventory the provider has."""
    record, class_id = _one_inventory(provider, resource_class, record, reserved_can_be_total)
    with transaction.atomic():
        claim_generation(provider)
        inventory = Inventory.objects.filter(resource_provider_id=provider.pk,
                                             resource_class_id=class_id).first()
        if inventory is None:
            raise exceptions.InventoryNotFound(resource_class=resource_class)
        _check_overcommit(provider, {class_id: record}, {class_id: resource_class}, warn=True)
        for field in INVENTORY_FIELDS:
            setattr(inventory, field, record[field])
        inventory.updated_at = timezone.now()
        inventory.save()
        events.provider_changed(events.INVENTORY_UPDATE, provider, before=provider.generation - 1,
                                payload={'added': {}, 'removed': [],
                                         'updated': {
                                             resource_class: events.inventory_record(record)}})
    return inventory


@retried_write
def inventory_delete(*, provider, resource_class):
    """Delete one inventory; refused while consumers hold some of it."""
    class_id = querysets.resource_class_ids([resource_class])[resource_class]
    with transaction.atomic():
        claim_generation(provider)
        _refuse_deleting_used(provider, [class_id], {class_id: resource_class})
        deleted, _ = Inventory.objects.filter(resource_provider_id=provider.pk,
                                              resource_class_id=class_id).delete()
        if not deleted:
            raise exceptions.NotFound(f'No inventory of class {resource_class} found for delete')
        events.provider_changed(events.INVENTORY_DELETE, provider, before=provider.generation - 1,
                                payload={'added': {}, 'updated': {}, 'removed': [resource_class]})


# ---- traits ----------------------------------------------------------------

@retried_write
def traits_replace(*, provider, trait_names, as_read=False):
    """Make the provider's traits exactly `trait_names` (all must exist).
    Unchanged traits leave the generation alone; as_read: even then, only
    while the provider is as `provider` was read (lock_as_read)."""
    wanted_names = querysets.trait_ids(trait_names)
    wanted = set(wanted_names.values())
    existing_names = dict(ProviderTrait.objects.filter(
        resource_provider_id=provider.pk).values_list('trait__name', 'trait_id'))
    existing = set(existing_names.values())
    if wanted == existing:
        if as_read:
            with transaction.atomic():
                lock_as_read(provider)
        return
    with transaction.atomic():
        claim_generation(provider)
        ProviderTrait.objects.filter(resource_provider_id=provider.pk,
                                     trait_id__in=existing - wanted).delete()
        ProviderTrait.objects.bulk_create(
            [ProviderTrait(resource_provider_id=provider.pk, trait_id=trait_id)
             for trait_id in wanted - existing])
        added = sorted(name for name, i in wanted_names.items() if i not in existing)
        removed = sorted(name for name, i in existing_names.items() if i not in wanted)
        events.provider_changed(events.TRAIT_UPDATE, provider, before=provider.generation - 1,
                                payload={'added': added, 'removed': removed})


@retried_write
def trait_ensure(*, name):
    """Create a custom trait unless it exists. Returns (trait, created)."""
    trait = Trait.objects.filter(name=name).first()
    if trait is not None:
        return trait, False
    try:
        with transaction.atomic():
            return Trait.objects.create(name=name), True
    except IntegrityError:  # created concurrently
        return Trait.objects.get(name=name), False


@retried_write
def trait_delete(*, trait):
    """Delete a custom trait no provider carries."""
    _delete_custom(trait, ProviderTrait.objects.filter(trait_id=trait.pk),
                   standard=exceptions.TraitCannotDeleteStandard, in_use=exceptions.TraitInUse)


def _delete_custom(row, users, *, standard, in_use):
    """Delete a custom name (a trait, a resource class) that no row of
    `users` refers to: a standard name is refused with `standard`, one in
    use with `in_use`, also when a user arrives meanwhile (the foreign key
    refuses the delete)."""
    if not row.is_custom:
        raise standard(name=row.name)
    with transaction.atomic():
        if users.exists():
            raise in_use(name=row.name)
        try:
            with transaction.atomic():
                type(row).objects.filter(pk=row.pk).delete()
        except IntegrityError:
            raise in_use(name=row.name)


# ---- aggregates --------------------------------------------------------------

@retried_write
def aggregates_replace(*, provider, aggregate_uuids, bump_generation=True):
    """Make the provider's aggregates exactly `aggregate_uuids`, creating
    unknown aggregates. Before microversion 1.19 OpenStack Placement did not
    bump the generation for this, and neither do we then."""
    wanted_uuids = set(aggregate_uuids)
    with transaction.atomic():
        if bump_generation:
            claim_generation(provider)
        known = dict(Aggregate.objects.filter(uuid__in=wanted_uuids).values_list('uuid', 'id'))
        for agg_uuid in wanted_uuids - set(known):
            known[agg_uuid] = aggregate_ensure(agg_uuid)
        wanted = {known[u] for u in wanted_uuids}
        existing_uuids = dict(ProviderAggregate.objects.filter(
            resource_provider_id=provider.pk).values_list('aggregate__uuid', 'aggregate_id'))
        existing = set(existing_uuids.values())
        ProviderAggregate.objects.filter(resource_provider_id=provider.pk,
                                         aggregate_id__in=existing - wanted).delete()
        ProviderAggregate.objects.bulk_create(
            [ProviderAggregate(resource_provider_id=provider.pk, aggregate_id=agg_id)
             for agg_id in wanted - existing], ignore_conflicts=True)
        added = sorted(u for u in wanted_uuids if known[u] not in existing)
        removed = sorted(u for u, i in existing_uuids.items() if i not in wanted)
        if not (bump_generation or added or removed):
            return  # the same set again before 1.19: nothing changed
        # One event per change: an add, a remove, or (both, or neither, as
        # when the same set is written again at a new generation) an update.
        event_type = (events.AGGREGATE_ADD if added and not removed else
                      events.AGGREGATE_REMOVE if removed and not added else
                      events.AGGREGATE_UPDATE)
        events.provider_changed(
            event_type, provider,
            before=provider.generation - 1 if bump_generation else provider.generation,
            payload={'added': added, 'removed': removed})


@retried_write
def aggregate_ensure(agg_uuid):
    """The id of the aggregate, created if it is new (a concurrent creator
    may win: then theirs)."""
    try:
        with transaction.atomic():
            return Aggregate.objects.create(uuid=agg_uuid).pk
    except IntegrityError:
        return Aggregate.objects.get(uuid=agg_uuid).pk


# ---- pool labels ----------------------------------------------------------------

def pool_label_set(*, aggregate, name):
    """Name the pool (an aggregate) `name`, replacing its label if it has
    one; a label set meanwhile by another writer is replaced too (rerun).
    Nothing of Placement's changes: no generation moves."""
    def write():
        PoolLabel.objects.update_or_create(aggregate=aggregate, defaults={'name': name})
    retried(write)


@retried_write
def pool_label_delete(*, aggregate):
    """Take the pool's label away (if it has one): it is named by its pod
    or sharing provider again."""
    with transaction.atomic():
        PoolLabel.objects.filter(aggregate=aggregate).delete()


# ---- resource classes -----------------------------------------------------------

@retried_write
def resource_class_create(*, name):
    """Create a custom resource class (CUSTOM_*), numbered from 10000."""
    if ResourceClass.objects.filter(name=name).exists():
        raise exceptions.ResourceClassExists(name=name)
    for _attempt in range(100):
        try:
            with transaction.atomic():
                highest = ResourceClass.objects.aggregate(top=Max('id'))['top'] or 0
                next_id = max(highest + 1, ResourceClass.MIN_CUSTOM_ID)
                return ResourceClass.objects.create(id=next_id, name=name)
        except IntegrityError:
            if ResourceClass.objects.filter(name=name).exists():
                raise exceptions.ResourceClassExists(name=name)
            # another class took the id: try the next one
    raise exceptions.ConcurrentUpdate(f'Could not allocate an id for resource class {name}')


@retried_write
def resource_class_ensure(*, name):
    """Create a custom resource class unless it exists. Returns (rc, created)."""
    existing = ResourceClass.objects.filter(name=name).first()
    if existing is not None:
        return existing, False
    try:
        return resource_class_create(name=name), True
    except exceptions.ResourceClassExists:
        return ResourceClass.objects.get(name=name), False


@retried_write
def resource_class_rename(*, resource_class, name):
    """Rename a custom resource class (microversions 1.2 to 1.6)."""
    if not resource_class.is_custom:
        raise exceptions.ResourceClassCannotUpdateStandard(name=resource_class.name)
    if ResourceClass.objects.filter(name=name).exclude(pk=resource_class.pk).exists():
        raise exceptions.ResourceClassExists(name=name)
    try:
        with transaction.atomic():
            ResourceClass.objects.filter(pk=resource_class.pk).update(
                name=name, updated_at=timezone.now())
    except IntegrityError:
        raise exceptions.ResourceClassExists(name=name)
    resource_class.refresh_from_db()
    return resource_class


@retried_write
def resource_class_delete(*, resource_class):
    """Delete a custom resource class no inventory uses."""
    _delete_custom(resource_class, Inventory.objects.filter(resource_class_id=resource_class.pk),
                   standard=exceptions.ResourceClassCannotDeleteStandard,
                   in_use=exceptions.ResourceClassInUse)
