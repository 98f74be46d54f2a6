"""The grammars of Placement's structured query parameters (resources,
required, root_required, member_of) as the document gives them.

Regular expressions for the parsers in providers.querystring: resource
classes are standard (os-resource-classes) or CUSTOM_; trait names are
checked against the traits that exist, so the grammar only says upper case,
digits and underscore. Amounts are plain numbers below 10**9 (the parser,
Python's int(), also takes leading zeros, signs and larger numbers; the
document asks clients for the plain form). `required` and `member_of`
take more with later microversions: ByVersion tables.
"""
import os_resource_classes

from placement_site.microversion import ByVersion
from placement_site.openapi.schemas import UUID_KEY

_CLASS = '(?:{}|CUSTOM_[A-Z0-9_]+)'.format('|'.join(os_resource_classes.STANDARDS))
_AMOUNT = '[1-9][0-9]{0,8}'
_TRAIT = '[A-Z0-9_]+'
_AGGREGATE = UUID_KEY[1:-1]


def _list_of(item):
    return f'{item}(?:,{item})*'


RESOURCES_GRAMMAR = {'type': 'string', 'pattern': f'^{_list_of(f"{_CLASS}:{_AMOUNT}")}$',
                     'example': 'VCPU:2,MEMORY_MB:1024'}
REQUIRED_GRAMMAR = ByVersion([
    # in:T1,T2 requires any of them
    ((1, 39), {'type': 'string',
               'pattern': f'^(?:{_list_of(f"!?{_TRAIT}")}|in:{_list_of(_TRAIT)})$'}),
    # !TRAIT forbids
    ((1, 22), {'type': 'string', 'pattern': f'^{_list_of(f"!?{_TRAIT}")}$'}),
], {'type': 'string', 'pattern': f'^{_list_of(_TRAIT)}$'})
ROOT_REQUIRED_GRAMMAR = {'type': 'string', 'pattern': f'^{_list_of(f"!?{_TRAIT}")}$'}
MEMBER_OF_GRAMMAR = ByVersion([
    # !AGG and !in:AGG1,AGG2 forbid
    ((1, 32), {'type': 'string',
               'pattern': f'^!?(?:{_AGGREGATE}|in:{_list_of(_AGGREGATE)})$'}),
], {'type': 'string', 'pattern': f'^(?:{_AGGREGATE}|in:{_list_of(_AGGREGATE)})$'})
