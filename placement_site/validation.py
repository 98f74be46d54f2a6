"""Value checks shared by body schemas, query strings and path parameters."""
import uuid

import jsonschema

UUID_PATTERN = '^[0-9a-fA-F-]{36}$'
# Resource class and trait names: upper case, digits, underscore.
NAME_PATTERN = '^[A-Z0-9_]+$'
CUSTOM_NAME_PATTERN = '^CUSTOM_[A-Z0-9_]+$'
CONSUMER_TYPE_PATTERN = NAME_PATTERN
CONSUMER_TYPE_QUERY_PATTERN = f'{NAME_PATTERN}|^all|^unknown$'
# Request group suffixes: numbers before 1.33, names from 1.33.
GROUP_SUFFIX = r'[1-9][0-9]*'
GROUP_SUFFIX_1_33 = r'[a-zA-Z0-9_-]{1,64}'

# A list read a page at a time (placement_site.api.page_after_marker): the
# last row's id as the marker, and how many rows.
PAGE_MARKER = {'type': 'string', 'pattern': '^[0-9]{1,18}$'}
PAGE_LIMIT = {'type': 'string', 'pattern': '^[1-9][0-9]{0,17}$'}

# Largest values the database columns hold.
MAX_INT = 2147483647
SQL_SP_FLOAT_MAX = 3.40282e+38


def is_uuid_like(value):
    """True for anything Python's UUID accepts in its canonical hex forms:
    with or without dashes, any case, optionally in braces or as urn:uuid:.
    """
    if not isinstance(value, str):
        return False
    try:
        parsed = uuid.UUID(value)
    except (TypeError, ValueError, AttributeError):
        return False
    compact = value.lower().replace('urn:', '').replace('uuid:', '')
    compact = compact.strip('{}').replace('-', '')
    return parsed.hex == compact


def normalize_uuid(value):
    """The dashed lower-case form of a UUID-like string."""
    return str(uuid.UUID(value))


# Bodies accept any UUID-like string; query strings use jsonschema's stricter
# built-in check (dashes required), as OpenStack Placement does.
FORMAT_CHECKER = jsonschema.FormatChecker()
QUERY_FORMAT_CHECKER = jsonschema.FormatChecker()


@FORMAT_CHECKER.checks('uuid')
def _check_uuid(instance):
    if not isinstance(instance, str):
        return True  # 'format' only constrains strings
    return is_uuid_like(instance)
