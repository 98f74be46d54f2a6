"""Providers, inventories and resource classes as Placement's JSON."""
from django.db.models import Max
from django.db.models.functions import Coalesce

from placement_site import conditional
from providers.models import INVENTORY_FIELDS


def provider_url(request, provider_uuid):
    return f"{request.META.get('SCRIPT_NAME', '')}/resource_providers/{provider_uuid}"


def provider(request, rp, version):
    url = provider_url(request, rp.uuid)
    rels = ['inventories', 'usages']
    if version.matches((1, 1)):
        rels.append('aggregates')
    if version.matches((1, 6)):
        rels.append('traits')
    if version.matches((1, 11)):
        rels.append('allocations')
    data = {
        'uuid': rp.uuid,
        'name': rp.name,
        'generation': rp.generation,
        'links': [{'rel': 'self', 'href': url}] + [
            {'rel': rel, 'href': f'{url}/{rel}'} for rel in rels],
    }
    if version.matches((1, 14)):
        data['parent_provider_uuid'] = rp.parent_provider_uuid
        data['root_provider_uuid'] = rp.root_provider_uuid
    return data


# ---- ETags (placement_site.conditional) ------------------------------------

def provider_etag(rp):
    """/resource_providers/{uuid}: renaming or moving a provider leaves its
    generation alone (as in Placement), so the ETag names those too."""
    return conditional.etag('provider', rp.uuid, rp.generation, rp.name,
                            rp.parent_provider_uuid, rp.root_provider_uuid)


def generation_etag(rp):
    """Its inventories and traits (/inventories[/{class}], /traits): every
    change to them bumps the provider's generation, which the ETag names."""
    return conditional.etag('provider generation', rp.uuid, rp.generation)


def aggregates_etag(rp, aggregate_uuids):
    """/aggregates: before 1.19 they change without a generation bump, so the
    ETag names them too."""
    return conditional.etag('aggregates', rp.uuid, rp.generation,
                            tuple(sorted(aggregate_uuids)))


def inventory(inv, generation=None):
    data = {name: getattr(inv, name) for name in INVENTORY_FIELDS}
    if generation:
        data['resource_provider_generation'] = generation
    return data


def inventories(invs, generation):
    return {
        'resource_provider_generation': generation,
        'inventories': {inv.resource_class.name: inventory(inv) for inv in invs},
    }


def resource_class_url(request, name):
    return f"{request.META.get('SCRIPT_NAME', '')}/resource_classes/{name}"


def resource_class(request, rc):
    return {'name': rc.name,
            'links': [{'rel': 'self', 'href': resource_class_url(request, rc.name)}]}


def trait_url(request, name):
    return f"{request.META.get('SCRIPT_NAME', '')}/traits/{name}"


class Latest:
    """The newest change among objects seen one by one, or asked of the
    database for a queryset (None when there are none)."""

    def __init__(self):
        self.moment = None

    def seen(self, obj):
        moment = obj.updated_at or obj.created_at
        if self.moment is None or moment > self.moment:
            self.moment = moment
        return obj

    @staticmethod
    def of(queryset):
        return queryset.order_by().aggregate(
            moment=Max(Coalesce('updated_at', 'created_at')))['moment']


def latest(objects):
    """The newest change among objects (None when there are none)."""
    moments = [o.updated_at or o.created_at for o in objects]
    return max(moments) if moments else None
