"""Dashboards for cloud admins: the cloud's capacity and usage, providers
and pools. Server-rendered, staff only, a fixed number of queries per page."""
import collections

import os_traits
from django.contrib.admin.views.decorators import staff_member_required
from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404, render

from allocations.models import Allocation, Consumer
from providers import reports
from providers.filters import ProviderFilterSet, ordering
from providers.models import Aggregate, ResourceProvider
from providers.templatetags import placement_ui

staff_only = staff_member_required(login_url='login')
PAGE_SIZE = 50


@staff_only
def overview(request):
    return render(request, 'ui/overview.html', {
        'classes': reports.class_summary(),
        'counts': reports.cloud_counts(),
        'fullest': reports.fullest_inventories(10),
        'thresholds': {'warning': placement_ui.WARNING * 100, 'critical': placement_ui.CRITICAL * 100},
    })


@staff_only
def provider_list(request):
    providers = ResourceProvider.objects.select_related('parent_provider', 'root_provider') \
        .annotate(max_utilization=reports.max_utilization_subquery())
    filters = ProviderFilterSet(request.GET, queryset=providers)
    sort = request.GET.get('sort', 'name')
    page = Paginator(filters.qs.distinct().order_by(*ordering(sort)), PAGE_SIZE).get_page(
        request.GET.get('page'))
    usage = reports.utilization_of(p.pk for p in page)
    return render(request, 'ui/providers.html', {
        'filters': filters, 'page': page, 'sort': sort,
        'rows': [(provider, usage.get(provider.pk, [])) for provider in page],
    })


@staff_only
def provider_detail(request, uuid):
    provider = get_object_or_404(
        ResourceProvider.objects.select_related('parent_provider', 'root_provider'), uuid=uuid)
    sharing = reports.is_sharing(provider)
    # A shared pool can serve thousands of consumers: a page at a time.
    consumers = Paginator(Consumer.objects.filter(allocations__resource_provider=provider)
                          .distinct().order_by('uuid').values_list('pk', flat=True),
                          PAGE_SIZE).get_page(request.GET.get('page'))
    allocations = Allocation.objects.filter(
        resource_provider=provider, consumer_id__in=list(consumers)).select_related(
        'resource_class', 'consumer__project', 'consumer__user', 'consumer__consumer_type',
    ).order_by('consumer__uuid', 'resource_class_id')
    by_consumer = collections.OrderedDict()
    for allocation in allocations:
        by_consumer.setdefault(allocation.consumer, []).append(allocation)
    return render(request, 'ui/provider.html', {
        'provider': provider,
        'tree': reports.provider_tree(provider),
        'inventories': reports.utilization_of([provider.pk]).get(provider.pk, []),
        'traits': provider.traits.order_by('name'),
        'aggregates': provider.aggregates.order_by('uuid'),
        'sharing': sharing,
        'related': reports.sharing_relations(provider, sharing),
        'by_consumer': by_consumer,
        'page': consumers,
    })


@staff_only
def aggregate_list(request):
    page = Paginator(reports.aggregates_with_counts(), PAGE_SIZE).get_page(request.GET.get('page'))
    books = reports.pools(page)
    return render(request, 'ui/aggregates.html', {
        'page': page, 'rows': [(aggregate, books[aggregate.pk]) for aggregate in page],
    })


@staff_only
def aggregate_detail(request, uuid):
    aggregate = get_object_or_404(Aggregate, uuid=uuid)
    members = list(ResourceProvider.objects.filter(provideraggregate__aggregate=aggregate)
                   .select_related('parent_provider').order_by('name'))
    sharing = set(ResourceProvider.objects.filter(
        provideraggregate__aggregate=aggregate,
        providertrait__trait__name=os_traits.MISC_SHARES_VIA_AGGREGATE).values_list('pk', flat=True))
    usage = reports.utilization_of(p.pk for p in members)
    return render(request, 'ui/aggregate.html', {
        'aggregate': aggregate,
        'pool': reports.pools([aggregate])[aggregate.pk],
        'rows': [(p, p.pk in sharing, usage.get(p.pk, [])) for p in members],
    })
