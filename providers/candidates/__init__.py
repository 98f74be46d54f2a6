"""Allocation candidates: which combinations of providers can hold a request.

The search follows OpenStack Placement's semantics exactly (the same
candidates for the same data), as a pipeline of named stages
(findings.Stage) that flows one way. Like Placement's research_context.py
and allocation_candidate.py it separates research, which asks the database
which providers survive each constraint, from combining, which builds
candidates from those ids in Python. Where each part lives:

  query.py      the request: RequestGroup per suffix, RequestWideParams;
                parse() reads a query string for a microversion (400s).
  research.py   research, every read of the search: one query per
                constraint through the catalogue's query vocabulary
                (providers.querysets), each compiled once per shape
                (placement_site.prepared.Prepared): request-wide one query
                for the names' ids, the sharing providers and whether
                there are trees, then ROOT_TRAITS (root_required); per group
                MEMBER_OF, IN_TREE, CAPACITY (one query for every class),
                REQUIRED_TRAITS, FORBIDDEN_TRAITS, FORBIDDEN_AGGREGATES,
                SHARING (the trees sharing providers serve). Stops at the
                first stage that leaves nothing.
  findings.py   what research hands on, documented and frozen:
                RequestFindings, a GroupFindings per group, StageRecords.
  matching.py   per group, pure: PROVIDERS_MATCHING (one provider meets a
                suffixed group), TREES_* (trees and sharing providers
                gather the unsuffixed group), its allocation requests.
  combine.py    COMBINED, pure: products of the groups' requests per tree,
                group_policy, same_subtree, the capacity of the
                combination, the nested rule before 1.29, limit.
  summaries.py  capacity, usage, max_unit and traits of every provider in
                the trees used (read for combining several groups and for
                the answer).
  selector.py   select_candidates(): the pipeline, independent of HTTP; the
                API view and the dashboards' explorer call it. Its
                CandidateResult is what explain reads.
  explain/      explain_candidates(): the same search, researched in full,
                read as a funnel per group, suggestions, near misses and why
                nothing fits.

The number of queries depends on the shape of the request (groups, classes,
trait and member_of sets), never on the number of providers.
"""
from providers.candidates.explain import explain_candidates
from providers.candidates.query import (
    CandidateQuery,
    RequestGroup,
    RequestWideParams,
    SearchSettings,
    parse,
)
from providers.candidates.selector import select_candidates, stops_at_the_limit

__all__ = ['CandidateQuery', 'RequestGroup', 'RequestWideParams', 'SearchSettings', 'parse',
           'select_candidates', 'stops_at_the_limit', 'explain_candidates']
