"""Writes to providers, inventories, traits, aggregates and resource classes.

Each service is one transaction. A change to a provider's inventories,
traits or aggregates starts by claiming its generation with
UPDATE ... SET generation = generation + 1 WHERE id = ? AND generation = ?:
the row stays locked until commit, so concurrent writers serialise, and a
writer that read a stale generation gets ProviderConcurrentUpdate (409).
"""
from providers.services.aggregates import aggregate_ensure
from providers.services.aggregates import aggregates_replace
from providers.services.generations import claim_generation
from providers.services.inventories import check_inventories
from providers.services.inventories import inventories_replace
from providers.services.inventories import inventory_add
from providers.services.inventories import inventory_delete
from providers.services.inventories import inventory_update
from providers.services.pool_labels import pool_label_delete
from providers.services.pool_labels import pool_label_set
from providers.services.resource_classes import resource_class_create
from providers.services.resource_classes import resource_class_delete
from providers.services.resource_classes import resource_class_ensure
from providers.services.resource_classes import resource_class_rename
from providers.services.resource_providers import check_provider_delete
from providers.services.resource_providers import provider_create
from providers.services.resource_providers import provider_delete
from providers.services.resource_providers import provider_update
from providers.services.resource_providers import subtree_provider_ids
from providers.services.traits import trait_delete
from providers.services.traits import trait_ensure
from providers.services.traits import traits_replace

__all__ = [
    'aggregate_ensure', 'aggregates_replace', 'check_inventories', 'check_provider_delete',
    'claim_generation', 'inventories_replace', 'inventory_add', 'inventory_delete',
    'inventory_update', 'pool_label_delete', 'pool_label_set', 'provider_create', 'provider_delete',
    'provider_update', 'resource_class_create', 'resource_class_delete', 'resource_class_ensure',
    'resource_class_rename', 'subtree_provider_ids', 'trait_delete', 'trait_ensure',
    'traits_replace',
]
