"""The names admins give pools."""

from django.db import transaction

from placement_site.retries import retried
from placement_site.retries import retried_write
from providers.models import PoolLabel


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
