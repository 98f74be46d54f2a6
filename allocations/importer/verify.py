"""The check of a finished copy: ours against the source, table by table,
tree by tree and usage by usage."""
from django.db import connection
from django.db.models import Sum

from allocations.importer.source import RESOURCE_CLASSES
from allocations.importer.source import TABLES
from allocations.models import Allocation
from allocations.usage_totals import miscounted
from providers.models import ResourceClass
from providers.models import ResourceProvider


def verify(source, survey_):
    """Differences between ours and the source: rows per table, provider
    trees, usage per provider and class (the allocations' sums, and
    Inventory.used as the triggers keep it). Empty when the copy is right."""
    problems = []
    for table in TABLES:
        ours = table.model.objects.count()
        if table is RESOURCE_CLASSES:  # ours may know classes the source does not
            names = {row[0] for row in source.query('SELECT name FROM resource_classes')}
            ours = ResourceClass.objects.filter(name__in=names).count()
        if ours != survey_.counts[table.name]:
            problems.append(f'{table.name}: {ours} rows here, {survey_.counts[table.name]} in '
                            'the source')
    rootless = ResourceProvider.objects.filter(root_provider__isnull=True).count()
    if rootless:
        problems.append(f'{rootless} resource providers without a root')
    source_trees = {row[0]: (row[1], row[2]) for row in source.query(
        'SELECT id, root_provider_id, parent_provider_id FROM resource_providers')}
    our_trees = {pid: (root, parent) for pid, root, parent in ResourceProvider.objects
                 .values_list('id', 'root_provider_id', 'parent_provider_id')}
    if source_trees != our_trees:
        wrong = sorted(k for k in source_trees.keys() | our_trees.keys()
                       if source_trees.get(k) != our_trees.get(k))
        problems.append(f'{len(wrong)} resource providers with another root or parent than '
                        f'in the source (ids {", ".join(map(str, wrong[:10]))})')
    source_usage = {(rp, rc): int(used) for rp, rc, used in source.query(
        'SELECT resource_provider_id, resource_class_id, SUM(used) FROM allocations '
        'GROUP BY resource_provider_id, resource_class_id')}
    our_usage = {(rp, rc): used for rp, rc, used in Allocation.objects
                 .values_list('resource_provider_id', 'resource_class_id')
                 .annotate(used=Sum('used')).values_list('resource_provider_id',
                                                         'resource_class_id', 'used')}
    if source_usage != our_usage:
        problems.append('usage per provider and class differs from the source for '
                        f'{len(source_usage.items() ^ our_usage.items())} (provider, class) pairs')
    wrong_used = miscounted(connection)
    if wrong_used:
        problems.append(f'{len(wrong_used)} inventories whose used is not the sum of their '
                        'allocations')
    return problems
