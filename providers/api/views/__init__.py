"""Placement API: resource providers, inventories, aggregates, traits and
resource classes; and our event log. One module per resource:

- providers: /resource_providers[/{uuid}]
- inventories: /resource_providers/{uuid}/inventories[/{resource_class}]
- provider_aggregates: /resource_providers/{uuid}/aggregates
- provider_traits: /resource_providers/{uuid}/traits
- resource_classes: /resource_classes[/{name}]
- traits: /traits[/{name}]
- events: GET /events
- shared: find_provider, and words the descriptions share

Each handler carries its OpenAPI description (placement_site.openapi's
operation()). The URL map and the allocations app import the views from
here.
"""
from providers.api.views.events import EventViewSet
from providers.api.views.inventories import InventoryViewSet
from providers.api.views.provider_aggregates import ProviderAggregatesViewSet
from providers.api.views.provider_traits import ProviderTraitsViewSet
from providers.api.views.providers import ResourceProviderViewSet
from providers.api.views.resource_classes import ResourceClassViewSet
from providers.api.views.shared import NO_PROVIDER
from providers.api.views.shared import find_provider
from providers.api.views.traits import TraitViewSet

__all__ = [
    'EventViewSet', 'InventoryViewSet',
    'ProviderAggregatesViewSet', 'ProviderTraitsViewSet', 'ResourceClassViewSet',
    'ResourceProviderViewSet', 'TraitViewSet', 'NO_PROVIDER', 'find_provider',
]
