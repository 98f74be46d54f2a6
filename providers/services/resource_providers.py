"""Creating, updating (renaming, re-parenting) and deleting resource providers."""
import uuid as uuid_lib

from django.db import IntegrityError
from django.db import transaction
from django.utils import timezone

from placement_site import exceptions
from placement_site.retries import retried_write
from placement_site.validation import normalize_uuid
from providers import events
from providers.models import Inventory
from providers.models import ProviderAggregate
from providers.models import ProviderTrait
from providers.models import ResourceProvider
from providers.services.generations import lock_as_read


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
    clashing = list(clashes.values('uuid', 'name'))
    # Like Placement, name the uuid when both clash.
    if any(row['uuid'] == provider_uuid for row in clashing):
        raise exceptions.DuplicateProvider(duplicate=f'uuid: {provider_uuid}')
    if any(row['name'] == name for row in clashing):
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
    subtree_ids, pending = [], [provider.pk]
    while pending:
        pk = pending.pop()
        subtree_ids.append(pk)
        pending.extend(children.get(pk, ()))
    return subtree_ids


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
