"""System checks: a misnamed filter or weigher, or a multiplier that is not
a number, in PLACEMENT_POD_FILTERS / PLACEMENT_POD_WEIGHERS stops `manage.py
check` and the server's start, instead of failing binding requests."""
from django.core import checks
from django.core.exceptions import ImproperlyConfigured

from providers.pods import pipeline


@checks.register()
def pod_selection_pipeline(app_configs, **kwargs):
    try:
        pipeline.configured_filters()
        pipeline.configured_weighers()
    except ImproperlyConfigured as exc:
        return [checks.Error(str(exc), id='pods.E001',
                             hint='See PLACEMENT_POD_FILTERS and PLACEMENT_POD_WEIGHERS '
                                  '(README, docs/pods.md).')]
    return []
