"""Placement API: allocations of consumers, allocations on providers, and
usages of providers and projects. One module per resource:

- allocations: /allocations[/{consumer_uuid}], /resource_providers/{uuid}/allocations
- usages: /resource_providers/{uuid}/usages, /usages
- reshaper: /reshaper

Each handler carries its OpenAPI description (placement_site.openapi's
operation()). The URL map imports the views from here.
"""
from allocations.api.views.allocations import AllocationViewSet
from allocations.api.views.allocations import ProviderAllocationsViewSet
from allocations.api.views.reshaper import ReshaperViewSet
from allocations.api.views.usages import ProviderUsagesViewSet
from allocations.api.views.usages import UsageViewSet

__all__ = [
    'AllocationViewSet', 'ProviderAllocationsViewSet', 'ProviderUsagesViewSet',
    'ReshaperViewSet', 'UsageViewSet',
]
