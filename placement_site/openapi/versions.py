"""One document per microversion.

Operations, parameters, bodies and answers change with the microversion, so
the document describes one: GET /api/schema/?version=1.20 (latest without
it). Parts of the docs that exist only in some microversions say so with
`x-since` / `x-until` (first / last version, 'X.Y'), and parts that change
with `versioned()`; at_version() resolves both for the version described.
This module keeps the version being described and that resolution.
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


def version_tuple(text):
    """'X.Y' as (X, Y), to compare with a Version."""
    major, minor = text.split('.')
    return int(major), int(minor)


def versioned(*spans):
    """A part that changes with the microversion: ('X.Y', value) pairs, oldest
    first, each value holding from its version on (absent before the first)."""
    return {'x-by-version': [[since, value] for since, value in spans]}


_MISSING = object()


def at_version(node, version):
    """`node` (a schema, parameter or operation) as it is at `version`."""
    version = tuple(version)
    if isinstance(node, dict):
        if 'x-by-version' in node:
            chosen = _MISSING
            for since, value in node['x-by-version']:
                if version >= version_tuple(since):
                    chosen = value
            return _MISSING if chosen is _MISSING else at_version(chosen, version)
        if 'x-since' in node and version < version_tuple(node['x-since']):
            return _MISSING
        if 'x-until' in node and version > version_tuple(node['x-until']):
            return _MISSING
        result = {}
        for key, value in node.items():
            if key in ('x-since', 'x-until'):
                continue
            value = at_version(value, version)
            if value is not _MISSING:
                result[key] = value
        properties = result.get('properties')
        if isinstance(properties, dict) and isinstance(result.get('required'), list):
            result['required'] = [name for name in result['required'] if name in properties]
            if not result['required']:
                del result['required']
        return result
    if isinstance(node, list):
        values = [at_version(value, version) for value in node]
        return [value for value in values if value is not _MISSING]
    return node
