"""The request: GET /allocation_candidates' query string for a microversion,
validated and parsed into request groups and request-wide parameters, and
the settings the search runs with.

Independent of HTTP: it takes a QueryDict, so the API view and the
dashboards' explorer parse the same way. Bad input raises Placement's 400
(placement_site.errors).
"""
import copy
import re
from dataclasses import dataclass
from dataclasses import field

from django.conf import settings as django_settings

from placement_site import errors
from placement_site import microversion
from placement_site.api import validated_query
from placement_site.validation import GROUP_SUFFIX
from placement_site.validation import GROUP_SUFFIX_1_33
from providers import querystring


@dataclass
class RequestGroup:
    """One request group: the unsuffixed group may spread over a tree and
    sharing providers; a suffixed group needs a single provider."""
    suffix: str = ''
    resources: dict = field(default_factory=dict)       # class name -> amount
    required_traits: list = field(default_factory=list)  # list of any-of sets of names
    forbidden_traits: set = field(default_factory=set)
    member_of: list = field(default_factory=list)        # list of any-of sets of uuids
    forbidden_aggs: set = field(default_factory=set)
    in_tree: str = None

    @property
    def use_same_provider(self):
        return bool(self.suffix)


@dataclass
class RequestWideParams:
    limit: int = None
    group_policy: str = None
    root_required: set = field(default_factory=set)
    root_forbidden: set = field(default_factory=set)
    same_subtrees: list = field(default_factory=list)   # list of sets of suffixes


@dataclass
class CandidateQuery:
    """A parsed request: its groups by suffix ('' for the unsuffixed group,
    in the order the suffixes first appear), the request-wide parameters,
    and whether nested trees may be combined (microversion 1.29)."""
    groups: dict
    params: RequestWideParams = field(default_factory=RequestWideParams)
    nested_aware: bool = True


@dataclass(frozen=True)
class SearchSettings:
    """The deployment's settings the search runs with."""
    randomize: bool = False
    max_candidates: int = -1
    strategy: str = 'depth-first'

    @classmethod
    def from_django(cls):
        return cls(
            randomize=django_settings.PLACEMENT_RANDOMIZE_ALLOCATION_CANDIDATES,
            max_candidates=django_settings.PLACEMENT_MAX_ALLOCATION_CANDIDATES,
            strategy=django_settings.PLACEMENT_ALLOCATION_CANDIDATES_GENERATION_STRATEGY,
        )


# ---- query schemas per microversion -------------------------------------------

QUERY_1_10 = {
    'type': 'object',
    'properties': {'resources': {'type': 'string'}},
    'required': ['resources'],
    'additionalProperties': False,
}
QUERY_1_16 = copy.deepcopy(QUERY_1_10)
QUERY_1_16['properties']['limit'] = {
    # Always a string in a query; integers are accepted too.
    'type': ['integer', 'string'], 'pattern': '^[1-9][0-9]*$', 'minimum': 1, 'minLength': 1,
}
QUERY_1_17 = copy.deepcopy(QUERY_1_16)
QUERY_1_17['properties']['required'] = {'type': ['string']}
QUERY_1_21 = copy.deepcopy(QUERY_1_17)
QUERY_1_21['properties']['member_of'] = {'type': ['string']}


def _grouped(suffix_pattern, kinds):
    return {f'^{kind}({suffix_pattern})?$': {'type': 'string'} for kind in kinds}


QUERY_1_25 = copy.deepcopy(QUERY_1_21)
for _name in ('resources', 'required', 'member_of'):
    del QUERY_1_25['properties'][_name]
del QUERY_1_25['required']
QUERY_1_25['patternProperties'] = _grouped(GROUP_SUFFIX, ('resources', 'required', 'member_of'))
QUERY_1_25['properties']['group_policy'] = {'type': 'string', 'enum': ['none', 'isolate']}
QUERY_1_31 = copy.deepcopy(QUERY_1_25)
QUERY_1_31['patternProperties'].update(_grouped(GROUP_SUFFIX, ('in_tree',)))
QUERY_1_33 = copy.deepcopy(QUERY_1_31)
QUERY_1_33['patternProperties'] = _grouped(
    GROUP_SUFFIX_1_33, ('resources', 'required', 'member_of', 'in_tree'))
QUERY_1_35 = copy.deepcopy(QUERY_1_33)
QUERY_1_35['properties']['root_required'] = {'type': ['string']}
QUERY_1_36 = copy.deepcopy(QUERY_1_35)
QUERY_1_36['properties']['same_subtree'] = {'type': ['string']}

QUERY_BY_VERSION = microversion.ByVersion([
    ((1, 36), QUERY_1_36), ((1, 35), QUERY_1_35), ((1, 33), QUERY_1_33), ((1, 31), QUERY_1_31),
    ((1, 25), QUERY_1_25), ((1, 21), QUERY_1_21), ((1, 17), QUERY_1_17), ((1, 16), QUERY_1_16)],
    QUERY_1_10, since=(1, 10))

_KEY = re.compile(rf'^(resources|required|member_of|in_tree)({GROUP_SUFFIX})?$')
_KEY_1_33 = re.compile(rf'^(resources|required|member_of|in_tree)({GROUP_SUFFIX_1_33})?$')


# ---- parsing --------------------------------------------------------------------

def parse(query, version):
    """A CandidateQuery from a QueryDict, with Placement's 400s for bad input."""
    validated_query(query, QUERY_BY_VERSION.at(version))
    params = _request_wide(query)
    groups = _groups(query, version, params)
    if not params.group_policy and sum(g.use_same_provider for g in groups.values()) > 1:
        raise errors.bad_request('The "group_policy" parameter is required when specifying more '
                                 'than one "resources{N}" parameter.')
    return CandidateQuery(groups, params, nested_aware=version.matches((1, 29)))


def _request_wide(query):
    params = RequestWideParams()
    if 'limit' in query:
        try:
            params.limit = int(query.getlist('limit')[0])
        except ValueError as exc:  # digits past Python's int conversion limit
            raise errors.bad_request(f'Invalid query string parameters: limit: {exc}')
    if 'group_policy' in query:
        params.group_policy = query.getlist('group_policy')[0]
    root_required = query.getlist('root_required')
    if root_required:
        if len(root_required) > 1:
            raise errors.bad_request("Query parameter 'root_required' may be specified only once.",
                                     code=errors.ILLEGAL_DUPLICATE_QUERYPARAM)
        required, forbidden = querystring.parse_traits(
            root_required[0], allow_forbidden=True, allow_any_of=False)
        required = {name for any_of in required for name in any_of}
        conflicts = forbidden & required
        if conflicts:
            raise errors.bad_request(
                'Conflicting required and forbidden traits found in root_required: '
                + ', '.join(conflicts), code=errors.QUERYPARAM_BAD_VALUE)
        params.root_required, params.root_forbidden = required, forbidden
    for value in query.getlist('same_subtree'):
        suffixes = {part.strip() for part in value.split(',')}
        if '' in suffixes:
            raise errors.bad_request(
                'Empty string (unsuffixed group) can not be specified in `same_subtree` ',
                code=errors.QUERYPARAM_BAD_VALUE)
        params.same_subtrees.append(suffixes)
    return params


def _groups(query, version, params):
    """The request groups by suffix, in the order their suffixes first
    appear in the query string."""
    pattern = _KEY_1_33 if version.matches((1, 33)) else _KEY
    groups = {}
    for key, values in query.lists():
        match = pattern.match(key)
        if not match:
            continue
        kind, suffix = match.group(1), match.group(2) or ''
        group = groups.setdefault(suffix, RequestGroup(suffix=suffix))
        if kind == 'resources':
            group.resources = querystring.parse_resources(values[-1])
        elif kind == 'required':
            group.required_traits, group.forbidden_traits = querystring.required_traits(
                query, version, suffix)
        elif kind == 'member_of':
            group.member_of, group.forbidden_aggs = querystring.member_of(query, version, suffix)
        else:
            group.in_tree = querystring.parse_in_tree(values[-1])
    if version.matches((1, 36)):
        _check_resourceless(groups, params)
    else:
        _check_orphans(groups)
    if version.matches((1, 22)):
        _check_forbidden(groups)
    return groups


def _check_resourceless(groups, params):
    resourceless = [s for s, g in groups.items() if not g.resources]
    in_subtrees = set().union(*params.same_subtrees)
    if len(resourceless) == len(groups):
        raise errors.bad_request('There must be at least one resources or resources[$S] parameter.',
                                 code=errors.QUERYPARAM_MISSING_VALUE)
    bad = [s for s in resourceless if s not in in_subtrees]
    if bad:
        raise errors.bad_request(
            'Resourceless suffixed group request should be specified in `same_subtree` query '
            f'param: bad group(s) - {bad}.', code=errors.QUERYPARAM_BAD_VALUE)
    unknown = [s for s in in_subtrees if s not in groups]
    if unknown:
        raise errors.bad_request(
            f'Real suffixes should be specified in `same_subtree`: {unknown} not found in '
            f'{list(groups)}.', code=errors.QUERYPARAM_BAD_VALUE)


def _check_orphans(groups):
    orphans = [f'required{s}' for s, g in groups.items() if g.required_traits and not g.resources]
    if orphans:
        raise errors.bad_request(
            'All traits parameters must be associated with resources.  Found the following '
            f"orphaned traits keys: {', '.join(orphans)}")
    orphans = [f'member_of{s}' for s, g in groups.items()
               if not g.resources and (g.member_of or g.forbidden_aggs)]
    if orphans:
        raise errors.bad_request(
            'All member_of parameters must be associated with resources. Found the following '
            f"orphaned member_of keys: {', '.join(orphans)}")
    if not all(g.resources for g in groups.values()):
        raise errors.bad_request('All request groups must specify resources.')
    if not groups:
        raise errors.bad_request(
            'At least one request group (`resources` or `resources{$S}`) is required.')


def _check_forbidden(groups):
    conflicts = []
    for suffix, group in groups.items():
        for any_of in group.required_traits:
            if all(name in group.forbidden_traits for name in any_of):
                conflicts.append(f"required{suffix}: ({', '.join(sorted(any_of))})")
    if conflicts:
        raise errors.bad_request(
            'Conflicting required and forbidden traits found in the following traits keys: '
            + ', '.join(sorted(conflicts)))
