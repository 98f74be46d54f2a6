"""Allocation candidates: which combinations of providers can hold a request.

The search follows OpenStack Placement's semantics exactly (the same
candidates for the same data), as a pipeline of named stages
(findings.Stage) that flows one way: each stage is a function of what the
earlier ones handed on, and none asks a later one anything. Like
Placement's research_context.py and allocation_candidate.py it separates
research, which asks the database which providers survive each constraint,
from matching and combining, which build candidates from those ids in
Python.

  query        query.parse: the query string -> CandidateQuery (400s for bad
               input); SearchSettings.
  research     research.research: CandidateQuery -> Researched. Every read
               that decides the candidates: one query per constraint
               (reads.py, over the catalogue's query vocabulary in
               providers.querysets, each compiled once per shape):
               request-wide one query for the names' ids, the sharing
               providers and whether there are trees, then ROOT_TRAITS
               (root_required); per group MEMBER_OF, IN_TREE, CAPACITY (one
               query for every class), REQUIRED_TRAITS, FORBIDDEN_TRAITS,
               FORBIDDEN_AGGREGATES, SHARING (the trees sharing providers
               serve). Stops at the first stage that leaves nothing, or at
               an unknown name (handed on, for the selector to raise in
               Placement's order). Explaining, it reads on, and reads
               what the explanation reads too.
  findings     findings.py: what research hands on, documented and frozen:
               Researched, RequestFindings, a GroupFindings per group,
               StageRecords.
  matching     matching.py, per group, pure: PROVIDERS_MATCHING (one
               provider meets a suffixed group), TREES_* (trees and sharing
               providers gather the unsuffixed group), its allocation
               requests.
  combining    combine.py, pure: COMBINED, products of the groups' requests
               per tree, group_policy, same_subtree, the capacity of the
               combination, the nested rule before 1.29, limit; and how
               many candidates the answer takes (which research reads no
               more trees than).
  summaries    summaries.py: capacity, usage, max_unit and traits of every
               provider in the trees used: read for combining several
               groups (before it) and for the answer (the trees of the
               candidates kept).
  selector     selector.select_candidates: runs the stages above in order,
               independent of HTTP -> CandidateResult, complete: writing the
               answer reads nothing more. The API views and the dashboards'
               explorer call it.
  explain/     explain_candidates: the same search, researched in full, read
               as a funnel per group, suggestions, near misses and why
               nothing fits, from the CandidateResult alone; then the names
               of the few near misses chosen (one query).

The reads are research's and the summaries', each run by the selector
between two stages (and the near misses' names, by explain_candidates). The
number of queries depends on the shape of the request (groups, classes,
trait and member_of sets), never on the number of providers.
"""
from providers.candidates.explain import explain_candidates
from providers.candidates.query import CandidateQuery
from providers.candidates.query import RequestGroup
from providers.candidates.query import RequestWideParams
from providers.candidates.query import SearchSettings
from providers.candidates.query import parse
from providers.candidates.selector import select_candidates
from providers.candidates.selector import stops_at_the_limit

__all__ = ['CandidateQuery', 'RequestGroup', 'RequestWideParams', 'SearchSettings', 'parse',
           'select_candidates', 'stops_at_the_limit', 'explain_candidates']
