"""Parsers for Placement's structured query parameters.

Shared by GET /resource_providers and GET /allocation_candidates; the error
texts are OpenStack Placement's.
"""
from placement_site import errors
from placement_site.validation import is_uuid_like

_RESOURCES_FORM = ('Badly formed resources parameter. Expected resources query string '
                   'parameter in form: ?resources=VCPU:2,MEMORY_MB:1024. Got: {}.')


def parse_resources(value):
    """'VCPU:2,MEMORY_MB:1024' -> {'VCPU': 2, 'MEMORY_MB': 1024}."""
    if value.strip() == '':
        raise errors.bad_request(_RESOURCES_FORM.format('empty string'))
    result = {}
    for item in value.split(','):
        try:
            name, amount = item.split(':')
        except ValueError:
            raise errors.bad_request(_RESOURCES_FORM.format(item))
        try:
            amount = int(amount)
        except ValueError:
            raise errors.bad_request(
                f'Requested resource {name} expected positive integer amount. Got: {amount}.')
        if amount < 1:
            raise errors.bad_request(
                f'Requested resource {name} requires amount >= 1. Got: {amount}.')
        result[name] = amount
    return result


def parse_traits(value, *, allow_forbidden, allow_any_of):
    """One 'required' value -> (list of any-of sets, set of forbidden).

    'A,B,!C' requires A and B and forbids C (forbidding from 1.22);
    'in:A,B' requires A or B (from 1.39).
    """
    if value.startswith('in:'):
        if not allow_any_of:
            raise errors.bad_request(
                "Invalid query string parameters: The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' "
                f'only supported since microversion 1.39. Got: {value}')
        any_of = {name.strip() for name in value[3:].split(',')}
        if not all(any_of):
            raise errors.bad_request(
                "Invalid query string parameters: Expected 'required' parameter value of "
                f'the form: in:HW_CPU_X86_VMX,CUSTOM_MAGIC. Got an empty trait in: {value}')
        if any(name.startswith('!') for name in any_of):
            raise errors.bad_request(
                "Invalid query string parameters: The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' "
                f'does not support forbidden traits. Got: {value}')
        return [any_of], set()
    names = [name.strip() for name in value.split(',')]
    # '!!FOO' forbids FOO: Placement strips every leading '!'.
    forbidden = {name.lstrip('!') for name in names if name.startswith('!')}
    if not all(names) or not all(forbidden):
        form = 'HW_CPU_X86_VMX,!CUSTOM_MAGIC' if allow_forbidden else 'HW_CPU_X86_VMX,CUSTOM_MAGIC'
        raise errors.bad_request(
            "Invalid query string parameters: Expected 'required' parameter value of the "
            f'form: {form}. Got an empty trait in: {value}')
    if forbidden and not allow_forbidden:
        raise errors.bad_request(
            "Invalid query string parameters: Expected 'required' parameter value of the "
            f'form: HW_CPU_X86_VMX,CUSTOM_MAGIC. Got: {value}')
    return [{name} for name in names if not name.startswith('!')], forbidden


def required_traits(query, version, suffix=''):
    """All 'required<suffix>' parameters of the query (a QueryDict) ->
    (list of any-of sets, forbidden set).

    Before 1.39 only the last of repeated parameters counts.
    """
    values = query.getlist('required' + suffix)
    if not version.matches((1, 39)):
        values = values[-1:]
    required, forbidden = [], set()
    for value in values:
        any_of, not_wanted = parse_traits(value, allow_forbidden=version.matches((1, 22)),
                                          allow_any_of=version.matches((1, 39)))
        required += any_of
        forbidden |= not_wanted
    return required, forbidden


def parse_member_of(value):
    """One member_of value -> (set of aggregates any of which is required,
    set of forbidden aggregates)."""
    if ',' in value and not (value.startswith('in:') or value.startswith('!in:')):
        raise errors.bad_request(
            "Multiple values for 'member_of' must be prefixed with the 'in:' or '!in:' "
            f'keyword using the valid microversion. Got: {value}')
    required, forbidden = set(), set()
    if value.startswith('!in:'):
        forbidden = set(value[4:].split(','))
    elif value.startswith('!'):
        forbidden = {value[1:]}
    elif value.startswith('in:'):
        required = set(value[3:].split(','))
    else:
        required = {value}
    for aggregate in sorted(required | forbidden):
        if not is_uuid_like(aggregate):
            raise errors.bad_request(
                "Invalid query string parameters: Expected 'member_of' parameter to contain "
                f'valid UUID(s). Got: {aggregate}')
    return required, forbidden


def member_of(query, version, suffix=''):
    """All 'member_of<suffix>' parameters of the query (a QueryDict) ->
    (list of any-of sets, forbidden).

    Repeating member_of needs 1.24; forbidding ('!') needs 1.32.
    """
    values = query.getlist('member_of' + suffix)
    if not version.matches((1, 24)) and len(values) > 1:
        raise errors.bad_request(f'Multiple member_of{suffix} parameters are not supported')
    required, forbidden = [], set()
    for value in values:
        any_of, not_in = parse_member_of(value)
        if any_of:
            required.append(any_of)
        if not_in:
            if not version.matches((1, 32)):
                raise errors.bad_request(
                    f'Forbidden member_of{suffix} parameters are not supported in the '
                    'specified microversion')
            forbidden |= not_in
    return required, forbidden


def parse_in_tree(value):
    value = value.strip()
    if not is_uuid_like(value):
        raise errors.bad_request(
            "Invalid query string parameters: Expected 'in_tree' parameter to be a format "
            f'of uuid. Got: {value}')
    return value
