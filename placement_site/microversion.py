"""Placement microversions: the canonical list and header negotiation.

Parsing follows microversion-parse, the library OpenStack services share, so
'latest', malformed values (400) and out-of-range values (406) behave as in
OpenStack Placement.

Version facts are written once, in one idiom, and both the views and the
OpenAPI document read them:
- the microversions a handler serves: placement_site.api.versions on the
  handler (`@versions('1.5', status=405)`), recorded as a Span (span());
- a value that changes with the microversion (a body's or a query string's
  JSON Schema, an answer's field): a ByVersion table, or since() / before()
  for one that is there from a version on / only below one (None: absent).
Small differences inside a handler branch inline on the request's version
(`version.matches((1, 28))`), as Placement's handlers do.
"""
import dataclasses

import microversion_parse

SERVICE_TYPE = 'placement'
HEADER = microversion_parse.STANDARD_HEADER  # 'openstack-api-version'

VERSIONS = [
    '1.0',
    '1.1',   # GET/PUT /resource_providers/{uuid}/aggregates
    '1.2',   # /resource_classes
    '1.3',   # member_of on GET /resource_providers
    '1.4',   # resources on GET /resource_providers
    '1.5',   # DELETE /resource_providers/{uuid}/inventories
    '1.6',   # /traits and /resource_providers/{uuid}/traits
    '1.7',   # PUT /resource_classes/{name} is a bodiless create-or-verify
    '1.8',   # project_id and user_id required on PUT /allocations
    '1.9',   # GET /usages
    '1.10',  # GET /allocation_candidates
    '1.11',  # 'allocations' link on providers
    '1.12',  # dict-shaped PUT /allocations/{consumer_uuid}, project/user in GET
    '1.13',  # POST /allocations for many consumers at once
    '1.14',  # parent and root provider uuids; in_tree filter
    '1.15',  # last-modified and cache-control headers
    '1.16',  # limit on GET /allocation_candidates
    '1.17',  # required traits on GET /allocation_candidates
    '1.18',  # required traits on GET /resource_providers
    '1.19',  # generation in provider aggregates, with conflict detection
    '1.20',  # POST /resource_providers answers 200 with the provider
    '1.21',  # member_of on GET /allocation_candidates
    '1.22',  # forbidden traits (!TRAIT)
    '1.23',  # error codes in error bodies
    '1.24',  # repeated member_of on GET /resource_providers
    '1.25',  # numbered request groups on GET /allocation_candidates
    '1.26',  # reserved may equal total
    '1.27',  # every inventory of a provider in provider_summaries
    '1.28',  # consumer generation
    '1.29',  # nested providers in allocation candidates
    '1.30',  # POST /reshaper
    '1.31',  # in_tree on GET /allocation_candidates
    '1.32',  # forbidden aggregates (!member_of)
    '1.33',  # named request group suffixes
    '1.34',  # mappings in allocation requests
    '1.35',  # root_required on GET /allocation_candidates
    '1.36',  # same_subtree; resourceless request groups
    '1.37',  # re-parenting and un-parenting providers
    '1.38',  # consumer_type on allocations and usages
    '1.39',  # any-of traits (in:) in required
]

MIN_VERSION = VERSIONS[0]
MAX_VERSION = VERSIONS[-1]

Version = microversion_parse.Version


def parse(version_string):
    """'1.28' -> Version(1, 28); TypeError when malformed.

    The version knows the supported range, so matches() works on it as on
    a negotiated one.
    """
    version = microversion_parse.parse_version_string(version_string)
    version.min_version = microversion_parse.parse_version_string(VERSIONS[0])
    version.max_version = microversion_parse.parse_version_string(VERSIONS[-1])
    return version


def negotiate(headers):
    """The version a request asks for (1.0 when it asks for none).

    Raises TypeError for a malformed header and ValueError for a version
    outside 1.0-1.39; the middleware turns these into 400 and 406.
    """
    return microversion_parse.extract_version(headers, SERVICE_TYPE, VERSIONS)


class ByVersion:
    """Values that change with the microversion, such as the JSON Schema of a
    body: the views take the one for their request and the OpenAPI document
    the one for the microversion it describes, so both read one table.

    choices: (minimum version, value) pairs, newest first; oldest: the value
    below every minimum (from `since`, the first version that has one).
    """

    def __init__(self, choices, oldest, since=(1, 0)):
        self.choices = list(choices)
        self.oldest = oldest
        self.since = since

    def at(self, version):
        """What a request at `version` gets."""
        for minimum, value in self.choices:
            if version.matches(minimum):
                return value
        return self.oldest

    def spans(self):
        """(first version, value) pairs, oldest first."""
        return [(self.since, self.oldest)] + [
            (minimum, value) for minimum, value in reversed(self.choices)]

    def map(self, function):
        """The table of function(value) for each value (None stays None)."""
        def apply(value):
            return None if value is None else function(value)
        return ByVersion([(minimum, apply(value)) for minimum, value in self.choices],
                         apply(self.oldest), self.since)


def since(version, value):
    """`value` from `version` on (a (major, minor) tuple), nothing before."""
    return ByVersion([(version, value)], None)


def before(version, value):
    """`value` below `version`, nothing from it on."""
    return ByVersion([(version, None)], value)


@dataclasses.dataclass(frozen=True)
class Span:
    """The microversions from `first` to `last` (Versions), both included:
    those a handler serves."""
    first: Version
    last: Version

    def __contains__(self, version):
        return self.first <= tuple(version) <= self.last


EVERY = Span(parse(MIN_VERSION), parse(MAX_VERSION))


def span(handler):
    """The microversions `handler` serves: those placement_site.api.versions
    gave it, else every one."""
    return getattr(handler, 'microversions', EVERY)
