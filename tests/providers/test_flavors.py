"""PLACEMENT_CAPACITY_FLAVORS (providers.flavors): request shapes parsed
with `resources=`'s grammar, a bad setting a clear configuration error."""
import pytest
from django.core.exceptions import ImproperlyConfigured

from providers import flavors

pytestmark = pytest.mark.any_database


@pytest.mark.parametrize('value, message', [
    ('small', "'small' is not name=RESOURCE_CLASS:amount,..."),
    ('small=', "'small=' is not name=RESOURCE_CLASS:amount,..."),
    ('small=VCPU:0', "flavor 'small': Requested resource VCPU requires amount >= 1. Got: 0."),
    ('small=VCPU', "flavor 'small': Badly formed resources parameter."),
    ('a=VCPU:1;a=VCPU:2', "flavor 'a' is named twice"),
])
def test_a_bad_flavor_setting_is_a_clear_configuration_error(settings, value, message):
    with pytest.raises(ValueError) as caught:
        flavors.parse_flavors(value)
    assert str(caught.value).startswith(message)
    settings.PLACEMENT_CAPACITY_FLAVORS = value
    with pytest.raises(ImproperlyConfigured) as caught:
        flavors.configured_flavors()
    assert str(caught.value).startswith(
        f'PLACEMENT_CAPACITY_FLAVORS (placement.conf: [capacity] flavors): {message}')


def test_flavors_parse_with_spaces_and_a_trailing_separator():
    assert flavors.parse_flavors(' a = VCPU:1,MEMORY_MB:512 ; b=DISK_GB:5; ') == [
        flavors.Flavor('a', {'VCPU': 1, 'MEMORY_MB': 512}), flavors.Flavor('b', {'DISK_GB': 5})]
