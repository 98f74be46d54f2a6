"""Custom resource classes: created, renamed and deleted."""

from django.db import IntegrityError
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from placement_site import exceptions
from placement_site.retries import retried_write
from providers.models import Inventory
from providers.models import ResourceClass
from providers.services.custom_names import delete_custom


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
    delete_custom(resource_class, Inventory.objects.filter(resource_class_id=resource_class.pk),
                   standard=exceptions.ResourceClassCannotDeleteStandard,
                   in_use=exceptions.ResourceClassInUse)
