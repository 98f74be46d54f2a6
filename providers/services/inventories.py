"""Writing a provider's inventories: replaced whole or one class at a time,
refused where the rule book or the allocations forbid it."""
import logging

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from placement_site import exceptions
from placement_site.retries import retried_write
from providers import events
from providers import querysets
from providers import rules
from providers.models import INVENTORY_DEFAULTS
from providers.models import INVENTORY_FIELDS
from providers.models import Inventory
from providers.models import ResourceClass
from providers.services.generations import claim_generation

LOG = logging.getLogger('placement.inventories')


def check_inventory_capacity(provider, resource_class, record, *, reserved_can_be_total):
    """Refuse an inventory whose capacity, truncated to a whole number as
    Placement does, is negative (or zero before 1.26)."""
    if not rules.valid_capacity(record['total'], record['reserved'], record['allocation_ratio'],
                                reserved_can_be_total=reserved_can_be_total):
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
        if not rules.holds(in_use, limit):
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
