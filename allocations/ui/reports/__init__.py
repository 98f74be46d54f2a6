"""Reads for the dashboards: capacity, usage and utilization across the
cloud, per provider, per tree, per pool, per pod and per owner. Built on
the query vocabulary of providers.querysets (and the pods' selection);
each function issues a fixed number of queries, whatever the number of
providers, consumers or pods. The pages' views read them as reports.<name>."""
from allocations.ui.reports.cloud import FlavorFit  # noqa: F401
from allocations.ui.reports.cloud import Host  # noqa: F401
from allocations.ui.reports.cloud import class_summary  # noqa: F401
from allocations.ui.reports.cloud import cloud_counts  # noqa: F401
from allocations.ui.reports.cloud import cloud_flavor_fits  # noqa: F401
from allocations.ui.reports.cloud import cloud_stranded  # noqa: F401
from allocations.ui.reports.cloud import flavor_fits  # noqa: F401
from allocations.ui.reports.cloud import fullest_hosts  # noqa: F401
from allocations.ui.reports.consumers import FormerConsumer  # noqa: F401
from allocations.ui.reports.consumers import consumer_history  # noqa: F401
from allocations.ui.reports.consumers import former_consumer  # noqa: F401
from allocations.ui.reports.consumers import project_bindings  # noqa: F401
from allocations.ui.reports.consumers import project_consumers  # noqa: F401
from allocations.ui.reports.consumers import project_hosts  # noqa: F401
from allocations.ui.reports.consumers import project_pools  # noqa: F401
from allocations.ui.reports.consumers import project_usage  # noqa: F401
from allocations.ui.reports.pods import PodClass  # noqa: F401
from allocations.ui.reports.pods import PodLine  # noqa: F401
from allocations.ui.reports.pods import ProjectPod  # noqa: F401
from allocations.ui.reports.pods import binding_history  # noqa: F401
from allocations.ui.reports.pods import open_bindings  # noqa: F401
from allocations.ui.reports.pods import pod_groups  # noqa: F401
from allocations.ui.reports.pods import pod_lines  # noqa: F401
from allocations.ui.reports.pods import pods_in_line  # noqa: F401
from allocations.ui.reports.pods import project_pod  # noqa: F401
from allocations.ui.reports.pools import pool_flavor_fits  # noqa: F401
from allocations.ui.reports.pools import pool_rows  # noqa: F401
from allocations.ui.reports.pools import pool_stranded  # noqa: F401
from allocations.ui.reports.pools import pools  # noqa: F401
from allocations.ui.reports.pools import pools_sorted  # noqa: F401
from allocations.ui.reports.rows import binding_rows  # noqa: F401
from allocations.ui.reports.rows import classes_with_inventory  # noqa: F401
from allocations.ui.reports.rows import consumer_rows  # noqa: F401
from allocations.ui.reports.rows import event_rows  # noqa: F401
from allocations.ui.reports.rows import host_rows  # noqa: F401
from allocations.ui.reports.rows import provider_rows  # noqa: F401
from allocations.ui.reports.rows import usage_rows  # noqa: F401
from allocations.ui.reports.trees import Counted  # noqa: F401
from allocations.ui.reports.trees import TreeNode  # noqa: F401
from allocations.ui.reports.trees import consumers_holding  # noqa: F401
from allocations.ui.reports.trees import holdings  # noqa: F401
from allocations.ui.reports.trees import is_sharing  # noqa: F401
from allocations.ui.reports.trees import provider_tree  # noqa: F401
from allocations.ui.reports.trees import sharing_relations  # noqa: F401
from allocations.ui.reports.trees import tree_usage_of  # noqa: F401
from allocations.ui.reports.trees import utilization_of  # noqa: F401
from allocations.ui.reports.usage import OWNERS  # noqa: F401
from allocations.ui.reports.usage import Usage  # noqa: F401
from allocations.ui.reports.usage import owned_allocations  # noqa: F401
from allocations.ui.reports.usage import owned_consumers  # noqa: F401
from allocations.ui.reports.usage import owners_wanted  # noqa: F401
from allocations.ui.reports.usage import top_consumers  # noqa: F401
