"""Reads for the dashboards: capacity, usage and utilization across the
cloud, per provider, per tree, per pool, per pod and per owner. Built on
the query vocabulary of providers.querysets (and the pods' selection);
each function issues a fixed number of queries, whatever the number of
providers, consumers or pods. The pages' views read them as reports.<name>."""
from allocations.ui.reports.cloud import class_summary
from allocations.ui.reports.cloud import cloud_counts
from allocations.ui.reports.cloud import cloud_flavor_fits
from allocations.ui.reports.cloud import cloud_stranded
from allocations.ui.reports.cloud import fullest_hosts
from allocations.ui.reports.consumers import consumer_history
from allocations.ui.reports.consumers import former_consumer
from allocations.ui.reports.consumers import project_bindings
from allocations.ui.reports.consumers import project_consumers
from allocations.ui.reports.consumers import project_hosts
from allocations.ui.reports.consumers import project_pools
from allocations.ui.reports.consumers import project_usage
from allocations.ui.reports.pods import binding_history
from allocations.ui.reports.pods import open_bindings
from allocations.ui.reports.pods import pod_groups
from allocations.ui.reports.pods import pod_lines
from allocations.ui.reports.pods import pods_in_line
from allocations.ui.reports.pods import project_pod
from allocations.ui.reports.pools import pool_flavor_fits
from allocations.ui.reports.pools import pool_rows
from allocations.ui.reports.pools import pool_stranded
from allocations.ui.reports.pools import pools
from allocations.ui.reports.pools import pools_sorted
from allocations.ui.reports.rows import binding_rows
from allocations.ui.reports.rows import classes_with_inventory
from allocations.ui.reports.rows import consumer_rows
from allocations.ui.reports.rows import event_rows
from allocations.ui.reports.rows import host_rows
from allocations.ui.reports.rows import provider_rows
from allocations.ui.reports.rows import usage_rows
from allocations.ui.reports.trees import consumers_holding
from allocations.ui.reports.trees import holdings
from allocations.ui.reports.trees import is_sharing
from allocations.ui.reports.trees import provider_tree
from allocations.ui.reports.trees import sharing_relations
from allocations.ui.reports.trees import tree_usage_of
from allocations.ui.reports.trees import utilization_of
from allocations.ui.reports.usage import OWNERS
from allocations.ui.reports.usage import Usage
from allocations.ui.reports.usage import top_consumers

__all__ = [
    'OWNERS', 'Usage', 'binding_history', 'binding_rows', 'class_summary',
    'classes_with_inventory', 'cloud_counts', 'cloud_flavor_fits', 'cloud_stranded',
    'consumer_history', 'consumer_rows', 'consumers_holding', 'event_rows', 'former_consumer',
    'fullest_hosts', 'holdings', 'host_rows', 'is_sharing', 'open_bindings', 'pod_groups',
    'pod_lines', 'pods_in_line', 'pool_flavor_fits', 'pool_rows', 'pool_stranded', 'pools',
    'pools_sorted', 'project_bindings', 'project_consumers', 'project_hosts', 'project_pod',
    'project_pools', 'project_usage', 'provider_rows', 'provider_tree', 'sharing_relations',
    'top_consumers', 'tree_usage_of', 'usage_rows', 'utilization_of',
]
