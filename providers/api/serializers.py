"""Providers, inventories and resource classes as Placement's JSON."""
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
    return {'name': rc.name, 'links': [{'rel': 'self', 'href': resource_class_url(request, rc.name)}]}


def trait_url(request, name):
    return f"{request.META.get('SCRIPT_NAME', '')}/traits/{name}"


def latest(objects):
    """The newest change among objects (None when there are none)."""
    moments = [o.updated_at or o.created_at for o in objects]
    return max(moments) if moments else None
