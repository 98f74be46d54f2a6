"""The dashboards' pages, under /ui/."""
from django.urls import path

from allocations.ui import explorer
from allocations.ui import views
from allocations.ui import what_if as what_if_page

app_name = 'ui'
urlpatterns = [
    path('', views.overview, name='overview'),
    path('hosts/', views.host_list, name='hosts'),
    path('providers/', views.provider_list, name='providers'),
    path('providers/<str:uuid>/', views.provider_detail, name='provider'),
    path('trees/<str:uuid>/', views.tree_detail, name='tree'),
    path('consumers/<str:uuid>/', views.consumer_detail, name='consumer'),
    path('projects/<path:external_id>/', views.project_detail, name='project'),
    path('pools/', views.aggregate_list, name='aggregates'),
    path('pools/<str:uuid>/', views.aggregate_detail, name='aggregate'),
    path('pods/', views.pod_list, name='pods'),
    path('pods/<str:uuid>/', views.pod_detail, name='pod'),
    path('usage/', views.usage, name='usage'),
    path('capacity/', views.capacity_report, name='capacity'),
    path('what-if/', what_if_page.what_if, name='what-if'),
    path('explorer/', explorer.explorer, name='explorer'),
    path('audit/', views.audit_page, name='audit'),
]
