"""Reads for the dashboards: capacity, usage and utilization across the
cloud, per provider, per tree, per pool, per pod and per owner. Built on
the query vocabulary of providers.querysets (and the pods' selection);
each function issues a fixed number of queries, whatever the number of
providers, consumers or pods. The pages' views read them as reports.<name>."""
from allocations.ui.reports.cloud import (  # noqa: F401
    FlavorFit,
    Host,
    class_summary,
    cloud_counts,
    cloud_flavor_fits,
    cloud_stranded,
    flavor_fits,
    fullest_hosts,
)
from allocations.ui.reports.consumers import (  # noqa: F401
    FormerConsumer,
    consumer_history,
    former_consumer,
    project_bindings,
    project_consumers,
    project_hosts,
    project_pools,
    project_usage,
)
from allocations.ui.reports.pods import (  # noqa: F401
    PodClass,
    PodLine,
    ProjectPod,
    binding_history,
    open_bindings,
    pod_groups,
    pod_lines,
    pods_in_line,
    project_pod,
)
from allocations.ui.reports.pools import (  # noqa: F401
    pool_flavor_fits,
    pool_rows,
    pool_stranded,
    pools,
    pools_sorted,
)
from allocations.ui.reports.rows import (  # noqa: F401
    binding_rows,
    classes_with_inventory,
    consumer_rows,
    event_rows,
    host_rows,
    provider_rows,
    usage_rows,
)
from allocations.ui.reports.trees import (  # noqa: F401
    Counted,
    TreeNode,
    consumers_holding,
    holdings,
    is_sharing,
    provider_tree,
    sharing_relations,
    tree_usage_of,
    utilization_of,
)
from allocations.ui.reports.usage import (  # noqa: F401
    OWNERS,
    Usage,
    owned_allocations,
    owned_consumers,
    owners_wanted,
    top_consumers,
)
