"""Deleting a custom name of the catalogue: a trait or a resource class."""
from django.db import IntegrityError
from django.db import transaction


def delete_custom(row, users, *, standard, in_use):
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
