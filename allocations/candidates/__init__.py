"""Allocation candidates: which combinations of providers can hold a request.

The search follows OpenStack Placement's semantics exactly (the same
candidates for the same data), as a pipeline of named stages
(research.Stage). Like Placement's research_context.py and
allocation_candidate.py it separates research, which asks the database which
providers survive each constraint, from combining, which builds candidates
from those ids in Python. Where each part lives:

  query.py      the request: RequestGroup per suffix, RequestWideParams;
                parse() reads a query string for a microversion (400s).
  research.py   research, one query per constraint through the catalogue's
                query vocabulary (providers.querysets): request-wide
                ROOT_TRAITS (root_required); per group MEMBER_OF, IN_TREE,
                CAPACITY (one per class), REQUIRED_TRAITS, FORBIDDEN_TRAITS,
                FORBIDDEN_AGGREGATES, SHARING (the trees sharing providers
                serve). Records each stage's count; stops at the first stage
                that leaves nothing.
  summaries.py  capacity, usage, max_unit and traits of every provider in the
                trees found (what combining checks and the answer lists).
  matching.py   per group, in Python: PROVIDERS_MATCHING (one provider meets
                a suffixed group), TREES_* (trees and sharing providers
                gather the unsuffixed group), GROUP_CANDIDATES.
  combine.py    COMBINED: products of the groups' requests per tree,
                group_policy, same_subtree, the capacity of the combination,
                the nested rule before 1.29, limit.
  selector.py   select_candidates(): the pipeline, independent of HTTP; the
                API view and the dashboards' explorer call it.
  explain.py    explain_candidates(): the same search, researched in full,
                read as a funnel per group, and why nothing fits.

The number of queries depends on the shape of the request (groups, classes,
trait and member_of sets), never on the number of providers.
"""
from allocations.candidates.explain import explain_candidates
from allocations.candidates.query import CandidateQuery, RequestGroup, RequestWideParams, parse
from allocations.candidates.selector import SearchSettings, select_candidates

__all__ = ['CandidateQuery', 'RequestGroup', 'RequestWideParams', 'SearchSettings', 'parse',
           'select_candidates', 'explain_candidates']
