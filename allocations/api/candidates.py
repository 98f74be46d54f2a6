"""GET /allocation_candidates: query parsing, the view and its answer."""
import contextlib
import copy
import gc
import re

from django.conf import settings
from django.utils import timezone

from allocations import candidates, explain
from placement_site import errors, microversion, querystring
from placement_site.api import PlacementViewSet, accept_json, query_params, versions
from placement_site.validation import GROUP_SUFFIX, GROUP_SUFFIX_1_33
from providers import exceptions

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

_SCHEMAS = [((1, 36), QUERY_1_36), ((1, 35), QUERY_1_35), ((1, 33), QUERY_1_33),
            ((1, 31), QUERY_1_31), ((1, 25), QUERY_1_25), ((1, 21), QUERY_1_21),
            ((1, 17), QUERY_1_17), ((1, 16), QUERY_1_16)]

_KEY = re.compile(rf'^(resources|required|member_of|in_tree)({GROUP_SUFFIX})?$')
_KEY_1_33 = re.compile(rf'^(resources|required|member_of|in_tree)({GROUP_SUFFIX_1_33})?$')


def query_schema(version):
    return microversion.for_version(version, _SCHEMAS, QUERY_1_10)


# ---- parsing --------------------------------------------------------------------

def parse_request_wide(request):
    get = request.GET
    params = candidates.RequestWideParams()
    if 'limit' in get:
        params.limit = int(get.getlist('limit')[0])
    if 'group_policy' in get:
        params.group_policy = get.getlist('group_policy')[0]
    root_required = get.getlist('root_required')
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
    for value in get.getlist('same_subtree'):
        suffixes = {part.strip() for part in value.split(',')}
        if '' in suffixes:
            raise errors.bad_request(
                'Empty string (unsuffixed group) can not be specified in `same_subtree` ',
                code=errors.QUERYPARAM_BAD_VALUE)
        params.same_subtrees.append(suffixes)
    return params


def parse_groups(request, version, params):
    """The request groups by suffix ('' for the unsuffixed group), in the
    order their suffixes first appear in the query string."""
    pattern = _KEY_1_33 if version.matches((1, 33)) else _KEY
    groups = {}
    for key, values in request.GET.lists():
        match = pattern.match(key)
        if not match:
            continue
        kind, suffix = match.group(1), match.group(2) or ''
        group = groups.setdefault(suffix, candidates.RequestGroup(suffix=suffix))
        if kind == 'resources':
            group.resources = querystring.parse_resources(values[-1])
        elif kind == 'required':
            group.required_traits, group.forbidden_traits = querystring.required_traits(
                request, version, suffix)
        elif kind == 'member_of':
            group.member_of, group.forbidden_aggs = querystring.member_of(request, version, suffix)
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


def search_settings():
    return candidates.SearchSettings(
        randomize=settings.PLACEMENT_RANDOMIZE_ALLOCATION_CANDIDATES,
        max_candidates=settings.PLACEMENT_MAX_ALLOCATION_CANDIDATES,
        strategy=settings.PLACEMENT_ALLOCATION_CANDIDATES_GENERATION_STRATEGY,
    )


def parsed_search(request, version):
    """Validate the query and build the search (400 for bad input)."""
    query_params(request, query_schema(version))
    params = parse_request_wide(request)
    groups = parse_groups(request, version, params)
    if not params.group_policy and sum(g.use_same_provider for g in groups.values()) > 1:
        raise errors.bad_request('The "group_policy" parameter is required when specifying more '
                                 'than one "resources{N}" parameter.')
    return candidates.CandidateSearch(groups, params, nested_aware=version.matches((1, 29)),
                                      settings=search_settings())


def run_search(search):
    try:
        return search.run()
    except exceptions.ResourceClassNotFound as exc:
        raise errors.bad_request(f'Invalid resource class in resources parameter: {exc}')
    except exceptions.TraitNotFound as exc:
        raise errors.bad_request(str(exc))


# ---- the answer ------------------------------------------------------------------

def answer_body(result, groups, version):
    summaries = result.summaries_by_id

    def uuid(provider_id):
        return summaries[provider_id].uuid

    requests = []
    for request in result.allocation_requests:
        by_provider = {}
        for provider_id, class_name, amount in request.resources:
            by_provider.setdefault(uuid(provider_id), {})[class_name] = amount
        if version.matches((1, 12)):
            entry = {'allocations': {u: {'resources': r} for u, r in by_provider.items()}}
            if version.matches((1, 34)):
                entry['mappings'] = {suffix: [uuid(p) for p in providers]
                                     for suffix, providers in request.mappings.items()}
        else:
            entry = {'allocations': [{'resource_provider': {'uuid': u}, 'resources': r}
                                     for u, r in by_provider.items()]}
        requests.append(entry)
    requested = {name for g in groups.values() for name in g.resources}
    all_classes = version.matches((1, 27))
    with_traits = version.matches((1, 17))
    with_tree = version.matches((1, 29))
    provider_summaries = {}
    for summary in result.summaries:
        entry = {'resources': {
            name: {'capacity': capacity, 'used': used}
            for name, (capacity, used, _max_unit) in summary.resources.items()
            if all_classes or name in requested}}
        if with_traits:
            entry['traits'] = summary.traits
        if with_tree:
            entry['parent_provider_uuid'] = (
                summaries[summary.parent_id].uuid if summary.parent_id else None)
            entry['root_provider_uuid'] = summaries[summary.root_id].uuid
        provider_summaries[summary.uuid] = entry
    return {'allocation_requests': requests, 'provider_summaries': provider_summaries}


@contextlib.contextmanager
def no_cycle_collection():
    """A large search allocates hundreds of thousands of small objects, none
    in reference cycles; collecting cycles meanwhile only walks them again
    and again (a third of the CPU time on a big answer)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class AllocationCandidatesViewSet(PlacementViewSet):
    """/allocation_candidates"""

    @versions('1.10')
    @accept_json
    def list(self, request):
        self.authorize('placement:allocation_candidates:list')
        search = parsed_search(request, self.version)
        with no_cycle_collection():
            result = run_search(search)
            return self.respond(answer_body(result, search.groups, self.version),
                                last_modified=timezone.now())


class ExplainViewSet(PlacementViewSet):
    """/explain/allocation_candidates: the same query string as
    GET /allocation_candidates, answered with how many providers survive each
    constraint and, when nothing fits, what eliminated them. Without an
    OpenStack-API-Version header the latest microversion's rules apply."""

    @accept_json
    def list(self, request):
        version = self.version
        if microversion.HEADER not in {k.lower() for k in request.headers}:
            version = microversion.parse(microversion.MAX_VERSION)
        if not version.matches((1, 10)):
            raise errors.not_found()
        self.authorize('placement:allocation_candidates:list')
        search = parsed_search(request, version)
        result = run_search(search)
        funnels = explain.explain_search(search)
        body = {
            'microversion': str(version),
            'allocation_candidates': len(result.allocation_requests),
            'groups': [{
                'suffix': funnel.group,
                'unit': funnel.unit,
                'total': funnel.total,
                'funnel': [{'constraint': step.constraint, 'remaining': step.remaining,
                            'eliminated': step.eliminated} for step in funnel.steps],
            } for funnel in funnels],
            'search_stages': [{'group': stage.group, 'stage': stage.name,
                               'detail': stage.detail, 'remaining': stage.remaining}
                              for stage in result.stages],
            'explanation': explain.summary(funnels, result.allocation_requests),
        }
        return self.respond(body, cache_headers=False)
