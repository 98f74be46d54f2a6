"""POST /capacity/what-if (not part of OpenStack Placement): how many more
of each configured flavor (or a `resources` shape) fit, cloud-wide and per
pool, before and after hosts are added, hosts removed, or allocation
ratios and reserved amounts changed; nothing is written
(providers.what_if). Admin or service, as GET /capacity."""
import copy

from placement_site import exceptions, snapshots
from placement_site.api import PlacementViewSet, json_body
from placement_site.errors import worded
from placement_site.validation import (
    MAX_INT,
    NAME_PATTERN,
    SQL_SP_FLOAT_MAX,
    UUID_PATTERN,
)
from providers import querysets, querystring, what_if
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


class WhatIfViewSet(PlacementViewSet):
    """POST /capacity/what-if: before and after; writes nothing."""

    @snapshots.snapshot_reads
    def create(self, request):
        self.authorize(POLICY)
        return self.respond(answer(json_body(request, WHAT_IF_BODY)), cache_headers=False)
