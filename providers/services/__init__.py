"""Writes to providers, inventories, traits, aggregates and resource classes.

Each service is one transaction. A change to a provider's inventories,
traits or aggregates starts by claiming its generation with
UPDATE ... SET generation = generation + 1 WHERE id = ? AND generation = ?:
the row stays locked until commit, so concurrent writers serialise, and a
writer that read a stale generation gets ProviderConcurrentUpdate (409).
"""
from providers.services.aggregates import aggregate_ensure  # noqa: F401
from providers.services.aggregates import aggregates_replace  # noqa: F401
from providers.services.generations import claim_generation  # noqa: F401
from providers.services.generations import lock_as_read  # noqa: F401
from providers.services.inventories import check_inventories  # noqa: F401
from providers.services.inventories import check_inventory_capacity  # noqa: F401
from providers.services.inventories import inventories_replace  # noqa: F401
from providers.services.inventories import inventory_add  # noqa: F401
from providers.services.inventories import inventory_delete  # noqa: F401
from providers.services.inventories import inventory_update  # noqa: F401
from providers.services.pool_labels import pool_label_delete  # noqa: F401
from providers.services.pool_labels import pool_label_set  # noqa: F401
from providers.services.resource_classes import resource_class_create  # noqa: F401
from providers.services.resource_classes import resource_class_delete  # noqa: F401
from providers.services.resource_classes import resource_class_ensure  # noqa: F401
from providers.services.resource_classes import resource_class_rename  # noqa: F401
from providers.services.resource_providers import check_provider_delete  # noqa: F401
from providers.services.resource_providers import provider_create  # noqa: F401
from providers.services.resource_providers import provider_delete  # noqa: F401
from providers.services.resource_providers import provider_update  # noqa: F401
from providers.services.resource_providers import subtree_provider_ids  # noqa: F401
from providers.services.traits import trait_delete  # noqa: F401
from providers.services.traits import trait_ensure  # noqa: F401
from providers.services.traits import traits_replace  # noqa: F401
