"""Django admin for resource providers, inventories, resource classes, traits
and aggregates.

Every write goes through providers.services, as the API's do, so the admin
keeps the same invariants (no inventory below usage, no deleting a provider
with allocations or children, generations bumped, standard names read-only).
Forms check with the services' rules before saving; a refusal that still
happens while saving (a concurrent change) becomes an error message, and the
admin's transaction is rolled back so nothing changes.
"""
from providers.admin import catalogue  # noqa: F401 (registers)
from providers.admin import events  # noqa: F401 (registers)
from providers.admin import pools  # noqa: F401 (registers)
from providers.admin import resource_providers  # noqa: F401 (registers)
from providers.admin import trends  # noqa: F401 (registers)
