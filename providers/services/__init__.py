"""Writes to providers, inventories, traits, aggregates and resource classes.

Each service is one transaction. A change to a provider's inventories,
traits or aggregates starts by claiming its generation with
UPDATE ... SET generation = generation + 1 WHERE id = ? AND generation = ?:
the row stays locked until commit, so concurrent writers serialise, and a
writer that read a stale generation gets ProviderConcurrentUpdate (409).
"""
from providers.services.aggregates import aggregate_ensure, aggregates_replace  # noqa: F401
from providers.services.generations import claim_generation, lock_as_read  # noqa: F401
from providers.services.inventories import (  # noqa: F401
    check_inventories,
    check_inventory_capacity,
    inventories_replace,
    inventory_add,
    inventory_delete,
    inventory_update,
)
from providers.services.pool_labels import pool_label_delete, pool_label_set  # noqa: F401
from providers.services.resource_classes import (  # noqa: F401
    resource_class_create,
    resource_class_delete,
    resource_class_ensure,
    resource_class_rename,
)
from providers.services.resource_providers import (  # noqa: F401
    check_provider_delete,
    provider_create,
    provider_delete,
    provider_update,
    subtree_provider_ids,
)
from providers.services.traits import trait_delete, trait_ensure, traits_replace  # noqa: F401
