"""HTTP's conditional requests over Placement's generations (ours, not
OpenStack Placement's).

A resource that carries a generation (a provider, its inventories, traits
and aggregates; a consumer's allocations) answers an `ETag` naming its
state. A write sent with `If-Match` is refused with 412, changing nothing,
when that state is no longer the one the client read; a read sent with
`If-None-Match` is answered 304, without a body, while it still is.

An ETag is a digest of what identifies the state (the resource's kind and
identity, its generation, and whatever else its answers show that can
change without a generation bump). It is the same at every microversion,
so a client may read at one and write at another, and it is strong, as
If-Match compares strongly. Requests without the two headers are answered
exactly as Placement answers them, apart from the ETag header itself.
"""
import copy
import hashlib
import re

from placement_site import errors

# One entity tag of a list: optional W/, then a quoted opaque string.
_ENTITY_TAG = re.compile(r'\s*(W/)?"([\x21\x23-\x7e\x80-\xff]*)"\s*(?:,|$)')


def etag(*state):
    """The strong entity tag of a resource in `state`: a tuple of plain
    values (strings, integers, None, and tuples of them)."""
    digest = hashlib.blake2b(repr(state).encode(), digest_size=12).hexdigest()
    return f'"{digest}"'


def _entity_tags(header, value):
    """'*' or the list of (weak, opaque tag) a header holds; 400 when it
    is neither."""
    if value.strip() == '*':
        return '*'
    tags, position = [], 0
    while position < len(value):
        found = _ENTITY_TAG.match(value, position)
        if found is None or found.end() == position:
            raise errors.bad_request(
                f'Invalid {header} header: {value!r}. Expected "*" or a comma-separated list '
                'of quoted entity tags, such as the ETag of an earlier answer.')
        tags.append((bool(found.group(1)), f'"{found.group(2)}"'))
        position = found.end()
    if not tags:
        raise errors.bad_request(f'Invalid {header} header: it is empty.')
    return tags


class Conditions:
    """The conditional headers of one request."""

    def __init__(self, request):
        meta = request.META
        if_match = meta.get('HTTP_IF_MATCH')
        if_none_match = meta.get('HTTP_IF_NONE_MATCH')
        self.if_match = None if if_match is None else _entity_tags('If-Match', if_match)
        self.if_none_match = (None if if_none_match is None
                              else _entity_tags('If-None-Match', if_none_match))

    def __bool__(self):
        return self.if_match is not None or self.if_none_match is not None

    def _matches(self, tags, current, *, weak):
        if current is None:
            return False
        if tags == '*':
            return True
        # If-Match compares strongly: a weak tag never matches there.
        return any(tag == current and (weak or not is_weak) for is_weak, tag in tags)

    def not_modified(self, current):
        """For a read: True when If-None-Match names the current ETag (304)."""
        return (self.if_none_match is not None
                and self._matches(self.if_none_match, current, weak=True))

    def check_write(self, current):
        """For a write: 412 unless the preconditions hold for the resource's
        current ETag (None: the resource does not exist; a function giving
        it, called only when there are preconditions). True when there were
        preconditions and they held: the write must then be of the state
        they were checked against (the body may leave out its generation)."""
        if not self:
            return False
        if callable(current):
            current = current()
        if self.if_match is not None and not self._matches(self.if_match, current, weak=False):
            if current is None:
                detail = 'the resource does not exist.'
            else:
                detail = f'its current ETag is {current}.'
            raise precondition_failed(
                f'If-Match does not name the current state of the resource: {detail} '
                'Read it again, and retry with the new ETag.')
        if self.if_none_match is not None and self._matches(
                self.if_none_match, current, weak=True):
            raise precondition_failed(
                'If-None-Match names the current state of the resource'
                + (' (it exists).' if self.if_none_match == '*' else '.'))
        return True


def conditions(request):
    """The request's Conditions, parsed once (400 when malformed)."""
    found = getattr(request, '_placement_conditions', None)
    if found is None:
        found = request._placement_conditions = Conditions(request)
    return found


def precondition_failed(detail):
    return errors.PlacementError(412, detail, code=errors.CONCURRENT_UPDATE)


def stale_write(request, error):
    """A generation conflict met while writing, as the answer to a request
    with preconditions: 412, since the state they held for has gone."""
    meta = request.META
    if not getattr(error, 'stale', False) or (
            'HTTP_IF_MATCH' not in meta and 'HTTP_IF_NONE_MATCH' not in meta):
        return error
    return precondition_failed(
        f'The resource changed after the preconditions were checked: {error.detail}')


# (id of a schema, generation name) -> (the schema, kept alive; its relaxed copy)
_relaxed = {}


def generation_optional(request, schema, name):
    """`schema`, without `name` (the generation) required when the request
    carries If-Match or If-None-Match: they already say which state it
    writes over."""
    meta = request.META
    if ('HTTP_IF_MATCH' not in meta and 'HTTP_IF_NONE_MATCH' not in meta) or (
            name not in schema.get('required', ())):
        return schema
    key = (id(schema), name)
    if key not in _relaxed:
        relaxed = copy.deepcopy(schema)
        relaxed['required'] = [field for field in schema['required'] if field != name]
        _relaxed[key] = (schema, relaxed)
    return _relaxed[key][1]
