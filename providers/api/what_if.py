"""POST /capacity/what-if (not part of OpenStack Placement): how many more
of each configured flavor (or a `resources` shape) fit, cloud-wide and per
pool, before and after hosts are added, hosts removed, or allocation
ratios and reserved amounts changed; nothing is written
(providers.what_if). Admin or service, as GET /capacity."""
import copy

from placement_site import exceptions
from placement_site import snapshots
from placement_site.api import PlacementViewSet
from placement_site.api import json_body
from placement_site.errors import worded
from placement_site.openapi import Component
from placement_site.openapi import closed
from placement_site.openapi import operation
from placement_site.openapi import request_body
from placement_site.openapi import resources_map
from placement_site.validation import MAX_INT
from placement_site.validation import NAME_PATTERN
from placement_site.validation import SQL_SP_FLOAT_MAX
from placement_site.validation import UUID_PATTERN
from providers import querysets
from providers import querystring
from providers import what_if
from providers.api.capacity import POLICY
from providers.schemas import TRAIT_NAME

MAX_HOSTS = 1000
_UUID = {'type': 'string', 'pattern': UUID_PATTERN}
_NAMES = {'type': 'array', 'items': TRAIT_NAME, 'maxItems': 64}
_RATIO = {'type': 'number', 'minimum': 0, 'maximum': SQL_SP_FLOAT_MAX}
INVENTORY = {
    'type': 'object',
    'properties': {
        'total': {'type': 'integer', 'minimum': 1, 'maximum': MAX_INT},
        'reserved': {'type': 'integer', 'minimum': 0, 'maximum': MAX_INT},
        'min_unit': {'type': 'integer', 'minimum': 1, 'maximum': MAX_INT},
        'max_unit': {'type': 'integer', 'minimum': 1, 'maximum': MAX_INT},
        'step_size': {'type': 'integer', 'minimum': 1, 'maximum': MAX_INT},
        'allocation_ratio': _RATIO,
    },
    'required': ['total'],
    'additionalProperties': False,
}
# Keyed by class names as Placement's own inventories are: the document
# publishes the real names (placement_site.openapi).
INVENTORIES = {'type': 'object', 'patternProperties': {NAME_PATTERN: INVENTORY},
               'additionalProperties': False, 'maxProperties': 16}
HOSTS = {
    'type': 'object',
    'properties': {
        'count': {'type': 'integer', 'minimum': 1, 'maximum': MAX_HOSTS},
        'name': {'type': 'string', 'minLength': 1, 'maxLength': 200},
        'inventories': INVENTORIES,
        'traits': _NAMES,
        'aggregates': {'type': 'array', 'items': _UUID, 'maxItems': 64},
        'children': {'type': 'array', 'maxItems': 8, 'items': {
            'type': 'object',
            'properties': {'inventories': INVENTORIES, 'traits': _NAMES},
            'required': ['inventories'],
            'additionalProperties': False,
        }},
    },
    'required': ['count', 'inventories'],
    'additionalProperties': False,
}
REMOVAL = {
    'type': 'object',
    'properties': {
        'aggregates': {'type': 'array', 'items': _UUID, 'maxItems': 64},
        'names': {'type': 'array', 'items': {'type': 'string', 'minLength': 1,
                                             'maxLength': 200}, 'maxItems': 64},
        'hosts': {'type': 'array', 'items': {'type': 'string', 'minLength': 1,
                                             'maxLength': 200}, 'maxItems': MAX_HOSTS},
    },
    'additionalProperties': False,
}
SETTING = {
    'type': 'object',
    'properties': {
        'resource_class': {'type': 'string', 'pattern': NAME_PATTERN},
        'aggregate': _UUID,
        'allocation_ratio': _RATIO,
        'reserved': {'type': 'integer', 'minimum': 0, 'maximum': MAX_INT},
    },
    'required': ['resource_class'],
    'anyOf': [{'required': ['allocation_ratio']}, {'required': ['reserved']}],
    'additionalProperties': False,
}
WHAT_IF_BODY = {
    'type': 'object',
    'properties': {
        # VCPU:4,MEMORY_MB:8192: Placement's grammar, as GET /capacity's resources.
        'resources': {'type': 'string', 'minLength': 1},
        'add_hosts': {'type': 'array', 'items': HOSTS, 'maxItems': 16},
        'remove_hosts': REMOVAL,
        'set_inventories': {'type': 'array', 'items': SETTING, 'maxItems': 64},
    },
    'additionalProperties': False,
}


def change_of(body):
    """what_if.Change of a validated body."""
    removal = body.get('remove_hosts', {})
    return what_if.Change(
        add=tuple(what_if.NewHosts(
            hosts['count'], copy.deepcopy(hosts['inventories']), tuple(hosts.get('traits', ())),
            tuple(hosts.get('aggregates', ())),
            tuple((child['inventories'], tuple(child.get('traits', ())))
                  for child in hosts.get('children', ())),
            hosts.get('name', f'new{index}' if index else 'new'))
            for index, hosts in enumerate(body.get('add_hosts', ()))),
        remove=what_if.Removal(tuple(removal.get('aggregates', ())),
                               tuple(removal.get('names', ())), tuple(removal.get('hosts', ()))),
        settings=tuple(what_if.Setting(s['resource_class'], s.get('aggregate'),
                                       s.get('allocation_ratio'), s.get('reserved'))
                       for s in body.get('set_inventories', ())))


def shapes_of(body):
    """[(name, {class name: amount})] of `resources` (its text names it),
    None for the configured flavors; Placement's 400s for a bad one."""
    text = body.get('resources')
    if text is None:
        return None
    shape = querystring.parse_resources(text)
    with worded(exceptions.unknown_class_in('resources')):
        querysets.resource_class_ids(list(shape))
    return [(text, shape)]


def fits_body(before, after):
    return {'before': before.count, 'after': after.count,
            'before_exact': before.exact, 'after_exact': after.exact}


def outcome_body(outcome):
    return {
        'shapes': [{'name': name, 'resources': resources} for name, resources in outcome.shapes],
        'changes': {'hosts_added': outcome.hosts_added, 'hosts_removed': outcome.hosts_removed,
                    'consumers_removed': outcome.consumers_removed,
                    'inventories_changed': outcome.inventories_changed},
        'groups': [{'group': group.key, 'name': group.name,
                    'fits': {name: fits_body(before, after) for (name, _), before, after in zip(
                        outcome.shapes, group.before, group.after)}}
                   for group in outcome.groups],
    }


def answer(body):
    """outcome_body of a validated body; a 400 for a change the cloud does
    not allow (the dashboards' page asks through it too)."""
    return outcome_body(what_if.what_if(change_of(body), shapes_of(body)))


# ---- the body and answer the operation describes -------------------------------------

WHAT_IF_REQUEST = request_body(
    'WhatIfRequest', WHAT_IF_BODY,
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


class WhatIfViewSet(PlacementViewSet):
    """POST /capacity/what-if: before and after; writes nothing."""

    @operation(
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
    )
    @snapshots.snapshot_reads
    def create(self, request):
        self.authorize(POLICY)
        return self.respond(answer(json_body(request, WHAT_IF_BODY)), cache_headers=False)
