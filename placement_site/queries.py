"""Small query helpers shared by every app."""
from django.db.models import Count, OuterRef, Subquery
from django.db.models.functions import Coalesce


def storable(value):
    """Can this string be stored and looked up? (PostgreSQL refuses NUL.)"""
    return '\x00' not in value


def count_of(model, field):
    """How many `model` rows point at the outer row through `field`, as a
    subquery: several counts on one row never multiply each other."""
    rows = (model.objects.filter(**{field: OuterRef('pk')}).order_by()
            .values(field).annotate(n=Count('*')).values('n'))
    return Coalesce(Subquery(rows), 0)
