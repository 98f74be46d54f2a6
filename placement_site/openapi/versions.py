"""One document per microversion.

Operations, parameters, bodies and answers change with the microversion, so
the document describes one: GET /api/schema/?version=1.20 (latest without
it). The document reads the version facts where the views declare them
(placement_site.microversion): the microversions an operation exists at from
the handler's @versions, and what changes from ByVersion tables, which may
stand anywhere in a schema (None where a part is absent). This module keeps
the version being described, and at_version() resolves the tables for it.
"""
import contextlib
import contextvars

from placement_site import microversion

_DOCUMENT_VERSION = contextvars.ContextVar('openapi_document_version', default=None)


def document_version():
    """The microversion the document being generated describes."""
    return _DOCUMENT_VERSION.get() or microversion.parse(microversion.MAX_VERSION)


@contextlib.contextmanager
def describing(version):
    """Generate the document of `version` (a Version) inside the block."""
    token = _DOCUMENT_VERSION.set(version)
    try:
        yield
    finally:
        _DOCUMENT_VERSION.reset(token)


_ABSENT = object()


def at_version(node, version):
    """`node` (a schema, or a ByVersion of them) as it is at `version` (a
    Version or a (major, minor) tuple): each ByVersion in it replaced by its
    value there, a property or item that is None there left out (and from
    `required`). None when `node` itself is absent."""
    found = _resolved(node, microversion.parse('%d.%d' % tuple(version)))
    return None if found is _ABSENT else found


def _resolved(node, version):
    if isinstance(node, microversion.ByVersion):
        value = node.at(version)
        return _ABSENT if value is None else _resolved(value, version)
    if isinstance(node, dict):
        result = {}
        for key, value in node.items():
            value = _resolved(value, version)
            if value is not _ABSENT:
                result[key] = value
        properties = result.get('properties')
        if isinstance(properties, dict) and isinstance(result.get('required'), list):
            result['required'] = [name for name in result['required'] if name in properties]
            if not result['required']:
                del result['required']
        return result
    if isinstance(node, list):
        values = [_resolved(value, version) for value in node]
        return [value for value in values if value is not _ABSENT]
    return node


def value_at(table, version):
    """A ByVersion's value at `version`; anything else is the same at every one."""
    return table.at(version) if isinstance(table, microversion.ByVersion) else table


def values(table):
    """Every value a ByVersion has (at some microversion), or [table]."""
    if isinstance(table, microversion.ByVersion):
        return [value for _, value in table.spans()]
    return [table]
