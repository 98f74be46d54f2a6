"""Dashboards for cloud admins: the cloud's capacity and usage, providers,
pools, pods, usage by owner, the candidate explorer and the orphan audit;
and a project's own page for its members and readers. Server-rendered, a
fixed number of queries per page; who sees what is placement_site.viewers'."""
import collections

from django.http import Http404
from django.shortcuts import get_object_or_404
from django.shortcuts import redirect
from django.shortcuts import render
from django.utils import timezone

from allocations import audit
from allocations import history
from allocations.models import Consumer
from allocations.models import ConsumerType
from allocations.models import Project
from allocations.ui import exports
from allocations.ui import reports
from allocations.ui import templatetags
from allocations.ui import trend_charts
from allocations.ui.filters import ProviderFilterSet
from allocations.ui.filters import ProviderPages
from allocations.ui.filters import sort_choices
from allocations.ui.filters import sorted_providers
from allocations.ui.forms import CapacityForm
from allocations.ui.forms import LiveListForm
from allocations.ui.forms import UsageFilter
from allocations.ui.paging import Counted
from allocations.ui.paging import page_of
from placement_site import errors
from placement_site import replicas
from placement_site.queries import storable
from placement_site.viewers import cloud_pages
from placement_site.viewers import not_allowed
from placement_site.viewers import requires
from placement_site.viewers import viewer
from providers import books
from providers import capacity
from providers import flavors
from providers import host_fits
from providers.api import capacity as capacity_api
from providers.api import trends as trends_api
from providers.models import Aggregate
from providers.models import ResourceClass
from providers.models import ResourceProvider

TOP_CONSUMERS = 20
# Pages a project's own viewers reach too (each checks the project).
cloud_or_project = requires(lambda v: v.sees_cloud or v.project,
                            'the whole cloud or a project of yours')


@cloud_or_project
@replicas.advisory
def overview(request):
    if not viewer(request).sees_cloud:   # a project's viewer: their project's page
        return redirect('ui:project', viewer(request).project)
    return render(request, 'ui/overview.html', {
        'classes': reports.class_summary(),
        'counts': reports.cloud_counts(),
        'fullest': reports.fullest_hosts(10),
        'flavor_fits': reports.cloud_flavor_fits(),
        'stranded': reports.cloud_stranded(),
        'trend_charts': trend_charts.usage(request),
        'thresholds': {'warning': templatetags.WARNING * 100,
                       'critical': templatetags.CRITICAL * 100},
    })


# ---- providers and pools --------------------------------------------------------

@cloud_pages
@replicas.advisory
def host_list(request):
    """The hosts: a row per provider tree, its books and sorts summed over
    every provider of it (a compute node's VCPU lives on its NUMA nodes),
    fullest first by its fullest class."""
    return _providers_page(request, hosts=True)


@cloud_pages
@replicas.advisory
def provider_list(request):
    """Every provider on its own; "Roots only" makes it the hosts' list."""
    return _providers_page(request, hosts=False)


def _providers_page(request, hosts):
    # max_utilization only where a filter or the sort needs it: a page in
    # name order reads its rows' inventories alone.
    providers = ResourceProvider.objects.select_related('parent_provider', 'root_provider')
    filters = ProviderFilterSet(request.GET, queryset=providers)
    sort = request.GET.get('sort', '-utilization' if hosts else 'name')
    valid = filters.form.is_valid()
    trees = hosts or bool(valid and filters.form.cleaned_data.get('root_only'))
    try:
        matching = filters.qs.roots() if hosts else filters.qs
    except errors.PlacementError as exc:  # Placement's grammar refused (member_of, ...)
        matching, error = providers.none(), exc.detail
    else:
        error = None
    # Every tree: no filter but the rows being roots.
    every_tree = trees and valid and not any(
        value not in (None, '') for name, value in filters.form.cleaned_data.items()
        if name != 'root_only')
    # Counted on the filtered providers, a page found from the inventories
    # where the sort is theirs (ProviderPages).
    pages = ProviderPages(matching, sort, trees=trees, every_tree=every_tree)
    if exports.wanted(request) and hosts:
        # The trees summed, in the page's order (a ranking is read once, as ids).
        order = (pages.ids(0, pages.count()) if pages.ranked else
                 sorted_providers(matching, sort, trees=True).values_list('pk', flat=True))
        return exports.streamed(request, 'hosts', *reports.host_rows(order))
    if exports.wanted(request):
        listed = sorted_providers(matching, sort, trees=trees)
        return exports.streamed(request, 'providers',
                                *reports.provider_rows(listed.with_max_utilization()))
    page = page_of(request, pages)
    usage = (reports.tree_usage_of if trees else reports.utilization_of)(p.pk for p in page)
    return render(request, 'ui/providers.html', {
        'filters': filters, 'page': page, 'sort': sort, 'trees': trees, 'hosts': hosts,
        'error': error, 'sorts': sort_choices(reports.classes_with_inventory()),
        'rows': [(provider, usage.get(provider.pk, [])) for provider in page],
    })


@cloud_pages
@replicas.advisory
def provider_detail(request, uuid):
    provider = get_object_or_404(
        ResourceProvider.objects.select_related('parent_provider', 'root_provider'), uuid=uuid)
    sharing = reports.is_sharing(provider)
    # A shared pool can serve thousands of consumers: a page at a time.
    consumers = page_of(request, reports.consumers_holding(resource_provider=provider))
    related, related_count = reports.sharing_relations(provider, sharing)
    return render(request, 'ui/provider.html', {
        'provider': provider,
        'tree': reports.provider_tree(provider),
        'inventories': reports.utilization_of([provider.pk]).get(provider.pk, []),
        'traits': provider.traits.order_by('name'),
        'aggregates': provider.aggregates.order_by('uuid'),
        'sharing': sharing,
        'related': related, 'related_count': related_count,
        'held': reports.holdings(consumers, resource_provider=provider),
        'page': consumers,
    })


@cloud_pages
@replicas.advisory
def tree_detail(request, uuid):
    """A host as Horizon's Hypervisors panel shows it: the whole tree's
    books (NUMA nodes, NICs and devices summed), each provider of the tree
    with its own, and the consumers holding any of it, a page at a time."""
    provider = get_object_or_404(ResourceProvider.objects.select_related('root_provider'),
                                 uuid=uuid)
    root = provider.root_provider
    if exports.wanted(request):
        within = {'resource_provider__root_provider_id': root.pk}
        return exports.streamed(request, f'tree-{root.uuid}-consumers',
                                *reports.consumer_rows(reports.consumers_holding(**within),
                                                       **within))
    tree = reports.provider_tree(root, with_inventories=True)
    # The tree's providers, as the tree was read: their allocations by
    # provider, not joined with every provider to find its root.
    providers, nodes = [], [tree]
    while nodes:
        node = nodes.pop()
        providers.append(node.provider.pk)
        nodes.extend(node.children)
    within = {'resource_provider_id__in': sorted(providers)}
    consumers = page_of(request, reports.consumers_holding(**within))
    tree_books = books.tree_books(root.pk)
    related, related_count = reports.sharing_relations(root, False)
    fits = host_fits.host_fits(root.pk)
    return render(request, 'ui/host.html', {
        'root': root, 'provider': provider,
        'books': tree_books.values(), 'classes': tree_books,
        'fits': fits, 'unusable': host_fits.unusable(tree_books, fits),
        'tree': tree,
        'related': related, 'related_count': related_count,
        'held': reports.holdings(consumers, **within),
        'page': consumers,
        'trend_charts': trend_charts.tree(request, root, tree_books),
    })


@cloud_or_project
@replicas.advisory
def consumer_detail(request, uuid):
    """A consumer's allocations and history; for one deleted (by the API,
    or by the orphan audit), what the event log knows of it and its
    history, which ends with its removal."""
    if not storable(uuid):
        raise Http404
    consumer = Consumer.objects.select_related('project', 'user', 'consumer_type').filter(
        uuid=uuid).first()
    former = None
    if consumer is None:
        former = reports.former_consumer(uuid)
        if former is None:
            raise Http404   # no consumer ever had this uuid
        project_id = former.project_id
    else:
        uuid, project_id = consumer.uuid, consumer.project.external_id
    if not viewer(request).sees_project(project_id):
        raise Http404   # as if it were not there: another project's (or an unknown one)
    if exports.wanted(request):
        return exports.streamed(request, f'consumer-{uuid}-history',
                                *reports.event_rows(reports.consumer_history(uuid)))
    allocations = [] if former else reports.holdings([consumer])[0][1]
    page = page_of(request, reports.consumer_history(uuid))
    totals = collections.Counter()
    for allocation in allocations:
        totals[allocation.resource_class.name] += allocation.used
    return render(request, 'ui/consumer.html', {
        'consumer': consumer, 'former': former, 'allocations': allocations,
        'totals': dict(totals), 'page': page, 'changes': history.consumer_changes(page),
    })


@cloud_or_project
@replicas.advisory
def project_detail(request, external_id):
    """A project's page: its usage per class, its consumers and where they
    sit, its pools, its pod bindings and how many more of each flavor fit
    in those pods. The whole cloud's viewers see every project's; a
    project's own viewers theirs alone."""
    if not viewer(request).sees_project(external_id):
        return not_allowed(request, f'project {external_id}')
    project = Project.objects.filter(external_id=external_id).first()
    if project is None:
        if viewer(request).sees_cloud:
            raise Http404
        # Its own viewer's project, holding nothing yet (no row to filter by).
        return render(request, 'ui/project.html', {
            'project': Project(external_id=external_id), 'usage': {}, 'held': [],
            'page': page_of(request, Consumer.objects.none()), 'hosts': [], 'host_count': 0,
            'pools': [], 'bindings': [], 'flavors': flavors.configured_flavors()})
    listed = reports.project_consumers(project)
    if exports.wanted(request):
        return exports.streamed(request, 'project-consumers', *reports.consumer_rows(listed))
    consumers = page_of(request, listed)
    hosts, host_count = reports.project_hosts(project)
    bindings = list(reports.project_bindings(project))
    fits = reports.pool_flavor_fits(binding.pod.aggregate for binding in bindings)
    return render(request, 'ui/project.html', {
        'project': project, 'usage': reports.project_usage(project),
        'held': reports.holdings(consumers), 'page': consumers,
        'hosts': hosts, 'host_count': host_count, 'pools': reports.project_pools(project),
        'bindings': [(binding, fits[binding.pod.aggregate.pk]) for binding in bindings],
        'flavors': flavors.configured_flavors(),
        'trend_charts': trend_charts.project(request, project),
    })


@cloud_pages
@replicas.advisory
def aggregate_list(request):
    sort = request.GET.get('sort', 'name')
    listed = reports.pools_sorted(sort)
    if exports.wanted(request):
        return exports.streamed(request, 'pools', *reports.pool_rows(listed))
    page = page_of(request, listed)
    books = reports.pools(page)
    fits = reports.pool_flavor_fits(page)
    return render(request, 'ui/aggregates.html', {
        'page': page, 'flavors': flavors.configured_flavors(), 'sort': sort,
        'rows': [(aggregate, books[aggregate.pk], fits[aggregate.pk]) for aggregate in page],
    })


@cloud_pages
@replicas.advisory
def aggregate_detail(request, uuid):
    aggregate = get_object_or_404(Aggregate.objects.with_names(), uuid=uuid)
    # Every provider the pool's books count: the members and the trees of member roots.
    providers = ResourceProvider.objects.in_pool_of(aggregate)
    listed = providers.select_related('parent_provider', 'root_provider').order_by('name', 'uuid')
    if exports.wanted(request):
        return exports.streamed(request, f'pool-{aggregate.uuid}-members',
                                *reports.provider_rows(listed.with_max_utilization()))
    # A pool of thousands of compute nodes: its providers a page at a time.
    page = page_of(request, listed)
    ids = [p.pk for p in page]
    sharing = set(ResourceProvider.objects.filter(pk__in=ids).sharing().values_list(
        'pk', flat=True))
    usage = reports.utilization_of(ids)
    return render(request, 'ui/aggregate.html', {
        'aggregate': aggregate,
        'pool': reports.pools([aggregate])[aggregate.pk],
        'flavor_fits': reports.pool_flavor_fits([aggregate])[aggregate.pk],
        'stranded': reports.pool_stranded(aggregate),
        'rows': [(p, p.pk in sharing, usage.get(p.pk, [])) for p in page],
        'page': page,
        'trend_charts': trend_charts.usage(request, aggregate),
    })


# ---- the capacity report ------------------------------------------------------------------

@requires(lambda v: v.may_read(capacity_api.POLICY), 'the capacity report')
@replicas.advisory
def capacity_report(request):
    """GET /capacity's answer a page of groups at a time (the 40,000 trees
    of group_by=root too), its export every group, in the API's CSV
    columns; and the cloud's or a pool's capacity trend over a range."""
    form = CapacityForm(request.GET)
    if not form.is_valid():
        return render(request, 'ui/capacity.html', {'form': form}, status=400)
    asked = form.cleaned_data['asked']
    if exports.wanted(request):
        groups = capacity.capacity(asked.group_by, wanted=asked.wanted, class_ids=asked.class_ids)
        return exports.streamed(request, f'capacity-by-{asked.group_by}', capacity_api.CSV_COLUMNS,
                                (row for group in groups
                                 for row in capacity_api.group_rows(asked.group_by, group)))
    page = page_of(request, capacity.CapacityPages(asked.group_by, wanted=asked.wanted,
                                                   class_ids=asked.class_ids))
    # The trend of one pool of the page (its row's "trend" link), else the cloud's.
    chosen = request.GET.get('pool', '')
    pool = Aggregate.objects.filter(uuid=chosen).first() if chosen and storable(chosen) else None
    class_ids = None if asked.class_ids is None else sorted(asked.class_ids)
    return render(request, 'ui/capacity.html', {
        'form': form, 'asked': asked, 'page': page,
        'trend_charts': (trend_charts.capacity(request, pool, class_ids)
                         if viewer(request).may_read(trends_api.POLICY) else None),
    })


# ---- pods ------------------------------------------------------------------------------

@cloud_pages
@replicas.advisory
def pod_list(request):
    return render(request, 'ui/pods.html', {
        'groups': reports.pod_groups(reports.pod_lines(reports.pods_in_line())),
        'warning': templatetags.WARNING * 100, 'critical': templatetags.CRITICAL * 100,
    })


@cloud_pages
@replicas.advisory
def pod_detail(request, uuid):
    pod = get_object_or_404(reports.pods_in_line(), uuid=uuid)
    (line,) = reports.pod_lines([pod])
    if exports.wanted(request):
        return exports.streamed(request, f'pod-{pod.name}-bindings',
                                *reports.binding_rows(reports.binding_history(pod)))
    return render(request, 'ui/pod.html', {
        'pod': pod, 'line': line,
        'bound': reports.open_bindings(pod),
        'page': page_of(request, reports.binding_history(pod)),
    })


# ---- usage by owner ----------------------------------------------------------------

@cloud_pages
@replicas.advisory
def usage(request):
    form = UsageFilter(request.GET or None)
    filters = form.cleaned_data if form.is_valid() else {}
    owners = {key: filters.get(key) for key in reports.OWNERS}
    usage = reports.Usage.read(owners)
    by_project = usage.rows(['project'])
    classes = _classes_in(by_project)
    # VCPU unless the owners hold none (a storage-only project): then the
    # first class they do hold, so the box is not empty.
    top_class = (filters.get('top_class') or '').upper() or (
        'VCPU' if 'VCPU' in classes or not classes else classes[0])
    if exports.wanted(request):
        keys = USAGE_TABLES.get(request.GET.get('table'), ['project'])
        return exports.streamed(request, 'usage-by-' + '-and-'.join(keys),
                                *reports.usage_rows(usage.rows(keys), keys, classes))
    # Each table a page at a time (?project_page=, ?type_page=, ?user_page=):
    # a cloud has thousands of projects.
    return render(request, 'ui/usage.html', {
        'form': form,
        'classes': classes,
        'by_project': page_of(request, by_project, 'project_page'),
        'by_type': page_of(request, usage.rows(USAGE_TABLES['type']), 'type_page'),
        'by_user': page_of(request, usage.rows(USAGE_TABLES['user']), 'user_page'),
        'top_class': top_class,
        'top': reports.top_consumers(owners, top_class, TOP_CONSUMERS),
        'top_limit': TOP_CONSUMERS,
        'consumer_types': ConsumerType.objects.order_by('name'),
    })


# The usage page's tables by the owners they group by (?table= of an export).
USAGE_TABLES = {'project': ['project'], 'type': ['project', 'consumer_type'],
                'user': ['project', 'user']}


def _classes_in(rows):
    names = {name for row in rows for name in row['usages']}
    return list(ResourceClass.objects.filter(name__in=names).order_by('id')
                .values_list('name', flat=True))


# ---- the orphan audit -------------------------------------------------------------------

LIVE_ROWS = 500   # instances not in a posted live list shown (the command lists them all)


@cloud_pages
@replicas.advisory
def audit_page(request):
    """allocations.audit's findings: a count of each and one finding's rows
    a page at a time. The live list comes in a POST (a cloud's servers are
    too many for a link); its answer shows the first LIVE_ROWS orphans.
    Nothing here deletes: that is `manage.py placement_audit --delete`."""
    form = LiveListForm(request.POST or None)
    live = form.cleaned_data['servers'] if form.is_valid() else None
    findings = audit.findings(live, timezone.now(), from_ledger=True)
    counts = {finding.key: finding.count() for finding in findings}
    chosen = audit.NOT_LIVE if live is not None else request.GET.get('finding')
    shown = next((f for f in findings if f.key == chosen), None) or next(
        (f for f in findings if counts[f.key]), findings[0])
    # Paged by the count just read, not counted again (none: no rows read).
    page = shown.rows[:min(LIVE_ROWS, counts[shown.key])] if live is not None else page_of(
        request, Counted(shown.rows, lambda: counts[shown.key]))
    return render(request, 'ui/audit.html', {
        'findings': [(finding, counts[finding.key]) for finding in findings],
        'shown': shown, 'page': page, 'form': form, 'live': live,
        # With the row's class, to print its amounts in their unit.
        'rows': [[(column, row[column], row.get('resource_class')) for column in shown.columns]
                 for row in shown.listed(page)],
        'live_rows': LIVE_ROWS, 'margin_minutes': int(audit.LIVE_LIST_MARGIN.total_seconds() / 60),
    })
