"""The dashboards' pages, under /ui/."""
from django.urls import path

from allocations.ui import views

app_name = 'ui'
urlpatterns = [
    path('', views.overview, name='overview'),
    path('providers/', views.provider_list, name='providers'),
    path('providers/<str:uuid>/', views.provider_detail, name='provider'),
    path('pools/', views.aggregate_list, name='aggregates'),
    path('pools/<str:uuid>/', views.aggregate_detail, name='aggregate'),
    path('pods/', views.pod_list, name='pods'),
    path('pods/<str:uuid>/', views.pod_detail, name='pod'),
    path('usage/', views.usage, name='usage'),
    path('explorer/', views.explorer, name='explorer'),
]
