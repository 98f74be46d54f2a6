"""URL map: Placement's paths exactly (no trailing slashes) at the root, then
the API docs, the admin and the catch-all 404."""
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include
from django.urls import path
from django.urls import re_path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularSwaggerSplitView

from allocations.api import candidates as candidate_views
from allocations.api import explain as explain_views
from allocations.api import views as allocation_views
from placement_site import keystone_signin
from placement_site import openapi
from placement_site import views as site_views
from placement_site.middleware import inline_styles_allowed
from placement_site.static import serve_static
from providers import metrics as provider_metrics
from providers.api import capacity as capacity_views
from providers.api import pool_labels as pool_label_views
from providers.api import trends as trend_views
from providers.api import views as provider_views
from providers.api import what_if as what_if_views
from providers.pods import views as pod_views


def route(pattern, viewset, actions, name):
    # The order of `actions` is the order of the Allow header on a 405.
    return path(pattern, viewset.as_view(actions), name=name)


P = provider_views
A = allocation_views
urlpatterns = [
    route('', site_views.RootViewSet, {'get': 'retrieve'}, 'root'),
    route('resource_providers', P.ResourceProviderViewSet,
          {'get': 'list', 'post': 'create'}, 'resource-providers'),
    route('resource_providers/<str:uuid>', P.ResourceProviderViewSet,
          {'get': 'retrieve', 'delete': 'destroy', 'put': 'update'}, 'resource-provider'),
    route('resource_providers/<str:uuid>/inventories', P.InventoryViewSet,
          {'get': 'list', 'post': 'create', 'put': 'replace', 'delete': 'destroy_all'},
          'inventories'),
    route('resource_providers/<str:uuid>/inventories/<str:resource_class>', P.InventoryViewSet,
          {'get': 'retrieve', 'put': 'update', 'delete': 'destroy'}, 'inventory'),
    route('resource_providers/<str:uuid>/usages', A.ProviderUsagesViewSet,
          {'get': 'retrieve'}, 'provider-usages'),
    route('resource_providers/<str:uuid>/aggregates', P.ProviderAggregatesViewSet,
          {'get': 'retrieve', 'put': 'update'}, 'provider-aggregates'),
    route('resource_providers/<str:uuid>/allocations', A.ProviderAllocationsViewSet,
          {'get': 'retrieve'}, 'provider-allocations'),
    route('resource_providers/<str:uuid>/traits', P.ProviderTraitsViewSet,
          {'get': 'retrieve', 'put': 'update', 'delete': 'destroy'}, 'provider-traits'),
    route('resource_classes', P.ResourceClassViewSet,
          {'get': 'list', 'post': 'create'}, 'resource-classes'),
    route('resource_classes/<str:name>', P.ResourceClassViewSet,
          {'get': 'retrieve', 'put': 'update', 'delete': 'destroy'}, 'resource-class'),
    route('traits', P.TraitViewSet, {'get': 'list'}, 'traits'),
    route('traits/<str:name>', P.TraitViewSet,
          {'get': 'retrieve', 'put': 'update', 'delete': 'destroy'}, 'trait'),
    route('allocations', A.AllocationViewSet, {'post': 'create'}, 'allocations'),
    route('allocations/<str:consumer_uuid>', A.AllocationViewSet,
          {'get': 'retrieve', 'put': 'update', 'delete': 'destroy'}, 'consumer-allocations'),
    route('usages', A.UsageViewSet, {'get': 'list'}, 'usages'),
    route('reshaper', A.ReshaperViewSet, {'post': 'create'}, 'reshaper'),
    route('allocation_candidates', candidate_views.AllocationCandidatesViewSet,
          {'get': 'list'}, 'allocation-candidates'),
    # Not part of OpenStack Placement: why a request does or does not fit.
    route('explain/allocation_candidates', explain_views.ExplainViewSet,
          {'get': 'list'}, 'explain-allocation-candidates'),
    # Not part of OpenStack Placement: usage trends (before any other capacity/ path).
    route('capacity/trends', trend_views.UsageTrendViewSet, {'get': 'list'}, 'capacity-trends'),
    # Not part of OpenStack Placement: capacity before and after a change, nothing written.
    route('capacity/what-if', what_if_views.WhatIfViewSet, {'post': 'create'}, 'capacity-what-if'),
    # Not part of OpenStack Placement: the change log notifications are sent from.
    route('events', P.EventViewSet, {'get': 'list'}, 'events'),
    # Not part of OpenStack Placement: pods and the tenants bound to them.
    route('pods', pod_views.PodViewSet, {'get': 'list', 'post': 'create'}, 'pods'),
    route('pods/<str:uuid>', pod_views.PodViewSet,
          {'get': 'retrieve', 'put': 'update', 'delete': 'destroy'}, 'pod'),
    route('pod_bindings', pod_views.PodBindingViewSet,
          {'get': 'list', 'post': 'create'}, 'pod-bindings'),
    route('pod_bindings/<str:uuid>', pod_views.PodBindingViewSet,
          {'get': 'retrieve', 'delete': 'destroy'}, 'pod-binding'),
    # Not part of OpenStack Placement: capacity and "how many more fit" per group.
    route('capacity', capacity_views.CapacityViewSet, {'get': 'list'}, 'capacity'),
    # Not part of OpenStack Placement: the names admins give pools.
    route('pool_labels/<str:uuid>', pool_label_views.PoolLabelViewSet,
          {'get': 'retrieve', 'put': 'update', 'delete': 'destroy'}, 'pool-label'),

    path('ui/', include('allocations.ui.urls')),
    path('accounts/login/', keystone_signin.SignInView.as_view(), name='login'),
    path('accounts/scope/', keystone_signin.switch_scope, name='switch-scope'),
    path('accounts/logout/', auth_views.LogoutView.as_view(next_page='login'), name='logout'),
    path('accounts/', RedirectView.as_view(url='/ui/')),
    path('api/schema/', openapi.DocumentView.as_view(), name='schema'),
    path('api/docs/', inline_styles_allowed(SpectacularSwaggerSplitView.as_view(url_name='schema')),
         name='api-docs'),
    path('admin/', admin.site.urls),
    re_path(r'^static/(?P<path>.*)$', serve_static, name='static'),
    path('metrics', provider_metrics.scrape, name='metrics'),  # Prometheus, not Placement's
    # Browsers ask for it on every page: the dashboards' icon, not an API 401.
    path('favicon.ico', RedirectView.as_view(url='/static/img/favicon.svg', permanent=True)),
    re_path(r'^.*$', site_views.not_found),
]

# The admin's "View site" leads to the dashboards, not the API's version document.
admin.site.site_url = '/ui/'
# Its models are on the index page: the sidebar's 300 px go to the lists and
# inlines, which at 1440 px had columns cut off beside it.
admin.site.enable_nav_sidebar = False

# A database that is away answers 503, even when Django's own middleware met it.
handler500 = site_views.server_error
