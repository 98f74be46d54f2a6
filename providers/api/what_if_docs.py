"""OpenAPI description of POST /capacity/what-if (not part of OpenStack
Placement): how many more fit before and after a change, nothing written."""
from drf_spectacular.utils import extend_schema_view

from placement_site.openapi import (
    Component,
    closed,
    operation,
    request_body,
    resources_map,
)
from providers.api import what_if as views

WHAT_IF_REQUEST = request_body(
    'WhatIfRequest', views.WHAT_IF_BODY,
    'The change: `add_hosts` (`count` trees alike: the root\'s `inventories` with '
    'Placement\'s inventory fields and defaults, `traits`, the `aggregates` it joins (an '
    'unknown uuid is a new pool), `children` with their own inventories and traits, such as '
    'NUMA nodes; named `<name>-1`, `<name>-2`, ...), `remove_hosts` (the trees whose root is '
    'in one of `aggregates` or whose root\'s name matches one of the glob `names`, a sharing '
    'provider\'s tree excepted; and the trees whose root is named or has the uuid in `hosts`, '
    'whatever they are; each removed host\'s consumers go with it, their allocations '
    'elsewhere too), `set_inventories` (`allocation_ratio` and/or `reserved` of '
    '`resource_class` on every provider having it, or on a pool\'s providers with '
    '`aggregate`). Removals come first, then the settings, then the hosts added. '
    '`resources`: count this request shape (Placement\'s grammar) rather than the configured '
    'flavors.')

_FITS = closed({
    'type': 'object',
    'properties': {
        'before': {'type': 'integer', 'minimum': 0,
                   'description': 'How many more fit now: GET /capacity\'s `fits`.'},
        'after': {'type': 'integer', 'minimum': 0,
                  'description': 'How many more would fit once the change is made: what GET '
                                 '/capacity would answer then.'},
        'before_exact': {'type': 'boolean'},
        'after_exact': {'type': 'boolean',
                        'description': 'False when the count is a lower bound (GET '
                                       '/capacity\'s `fits_exact`).'},
    },
    'required': ['before', 'after', 'before_exact', 'after_exact'],
})

WHAT_IF = Component('WhatIf', closed({
    'type': 'object',
    'properties': {
        'shapes': {'type': 'array', 'items': {
            'type': 'object',
            'properties': {
                'name': {'type': 'string', 'description': 'The flavor\'s name, or the '
                                                          '`resources` asked.'},
                'resources': resources_map('The shape.', {'type': 'integer', 'minimum': 1}),
            },
            'required': ['name', 'resources'],
        }},
        'changes': {
            'type': 'object',
            'properties': {
                'hosts_added': {'type': 'integer', 'minimum': 0},
                'hosts_removed': {'type': 'array', 'items': {'type': 'string'},
                                  'description': 'The removed trees\' root names.'},
                'consumers_removed': {'type': 'integer', 'minimum': 0,
                                      'description': 'Consumers with allocations on the '
                                                     'removed hosts.'},
                'inventories_changed': {'type': 'integer', 'minimum': 0},
            },
            'required': ['hosts_added', 'hosts_removed', 'consumers_removed',
                         'inventories_changed'],
        },
        'groups': {'type': 'array', 'items': {
            'type': 'object',
            'properties': {
                'group': {'type': 'string',
                          'description': '`cloud`, then each pool\'s aggregate uuid.'},
                'name': {'type': ['string', 'null'],
                         'description': 'The pool\'s name (as GET /capacity names it); null '
                                        'for the cloud and a new pool.'},
                'fits': {'type': 'object', 'additionalProperties': _FITS,
                         'description': 'Per shape (by name): before and after.'},
            },
            'required': ['group', 'name', 'fits'],
        }},
    },
    'required': ['shapes', 'changes', 'groups'],
}))

extend_schema_view(
    create=operation(
        'whatIfCapacity', tag='Capacity', summary='How many more fit after a change',
        description='Not part of OpenStack Placement. How many more of each configured flavor '
                    '(PLACEMENT_CAPACITY_FLAVORS), or of the `resources` shape, fit in the '
                    'whole cloud and in each pool now and once hosts are added, hosts '
                    'removed, or allocation ratios or reserved amounts changed, counted as '
                    'GET /capacity counts `fits`. Nothing is written. Admin or service '
                    '(`placement:capacity:show`).',
        request=WHAT_IF_REQUEST,
        responses={200: (WHAT_IF, 'Before and after, the cloud first, then each pool.')},
        cached=[],
        errors={400: 'An unknown resource class, trait, aggregate (to remove or set on) or '
                     'host; a malformed `resources`; a reserved amount or ratio the inventory '
                     'update would refuse.'},
    ),
)(views.WhatIfViewSet)
