"""The OpenAPI document's shared pieces: the microversion header, the token,
Placement's error bodies, named schemas, and `operation()`, which turns one
Placement operation's facts into drf-spectacular's `extend_schema`.

The views validate bodies against JSON Schemas and answer plain dicts, so
the document is written, not introspected: each handler carries its
operation (`@operation(...)` above it, as drf-spectacular's `@extend_schema`
goes on a view), and the extensions of this package let drf-spectacular read
Placement's views (microversions in a header, tokens checked by the
middleware) and publish JSON Schemas as components. The version facts come
from the views: the microversions an operation exists at from its handler's
@versions, request bodies and query parameters from the ByVersion tables
the view validates with (placement_site.microversion).

One module per idea; the names the views use are re-exported here, so they
import from `placement_site.openapi`:
- versions: one document per microversion (describing, at_version)
- schemas: JSON Schema in the document (Component and its extension,
  openapi_schema, keyed_maps, closed, the shared small schemas)
- viewsets: the token and the views as the generator sees them (extensions)
- headers: the microversion header and the answers' headers
- errors: Placement's error answers
- operations: one operation (operation(), OperationSchema, link)
- parameters: path and query parameters (and member_of, required)
- grammars: the grammars of the structured query parameters
- document: serving one microversion's document (DocumentView, describe_version)

Importing the package imports every module, which registers the
drf-spectacular extensions.
"""
from placement_site.openapi import viewsets  # noqa: F401 (it registers on import)
from placement_site.openapi.document import DocumentView
from placement_site.openapi.document import describe_version
from placement_site.openapi.grammars import MEMBER_OF_GRAMMAR
from placement_site.openapi.grammars import REQUIRED_GRAMMAR
from placement_site.openapi.grammars import RESOURCES_GRAMMAR
from placement_site.openapi.grammars import ROOT_REQUIRED_GRAMMAR
from placement_site.openapi.operations import link
from placement_site.openapi.operations import operation
from placement_site.openapi.parameters import MEMBER_OF
from placement_site.openapi.parameters import PROVIDER_UUID
from placement_site.openapi.parameters import RESOURCES
from placement_site.openapi.parameters import member_of_parameter
from placement_site.openapi.parameters import paging_parameters
from placement_site.openapi.parameters import path
from placement_site.openapi.parameters import query
from placement_site.openapi.parameters import required_parameter
from placement_site.openapi.schemas import CLASS_NAME_SCHEMA
from placement_site.openapi.schemas import CUSTOM_NAME_SCHEMA
from placement_site.openapi.schemas import GENERATION
from placement_site.openapi.schemas import LINKS
from placement_site.openapi.schemas import TRAIT_NAME_SCHEMA
from placement_site.openapi.schemas import UUID
from placement_site.openapi.schemas import UUID_KEY
from placement_site.openapi.schemas import Component
from placement_site.openapi.schemas import closed
from placement_site.openapi.schemas import keyed_maps
from placement_site.openapi.schemas import openapi_schema
from placement_site.openapi.schemas import request_body
from placement_site.openapi.schemas import resources_map
from placement_site.openapi.versions import at_version
from placement_site.openapi.versions import describing

__all__ = [
    'CLASS_NAME_SCHEMA', 'CUSTOM_NAME_SCHEMA', 'GENERATION', 'LINKS', 'MEMBER_OF',
    'MEMBER_OF_GRAMMAR', 'PROVIDER_UUID', 'REQUIRED_GRAMMAR', 'RESOURCES',
    'RESOURCES_GRAMMAR', 'ROOT_REQUIRED_GRAMMAR', 'TRAIT_NAME_SCHEMA', 'UUID', 'UUID_KEY',
    'Component', 'DocumentView', 'at_version', 'closed', 'describe_version', 'describing',
    'keyed_maps', 'link', 'member_of_parameter', 'openapi_schema', 'operation', 'paging_parameters',
    'path', 'query',
    'request_body', 'required_parameter', 'resources_map',
]
