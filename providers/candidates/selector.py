"""select_candidates(): the whole pipeline for a parsed query, independent of
HTTP. The API views (allocations.api.candidates), the dashboards' explorer
and explain_candidates call it. Each stage is a function of what the
earlier ones handed on, and nothing hands anything back:

  research     research.research -> Researched (every read that decides the
               candidates; explaining, every read the explanation needs but
               the near misses' names)
  matching     per group, in the query's order: matching.group_requests
               (pure) -> the group's requests and stage records; a name
               research refused is raised here, unless an earlier group
               has no requests
  summaries    several groups only: summaries.Summaries reads the trees
               their requests use (reads)
  combining    combine.Combination.candidates (pure) -> Combined
  summaries    the answer's: the trees of the candidates kept, with traits
               (reads; for candidates handed on as they are made, read
               before combining: the trees every group reaches)

The CandidateResult holds all of it, complete: writing the answer reads
nothing more, and the explanation only the names of the near misses it
chose (reads.provider_names).
"""
import contextlib
import gc
import itertools
import random
from dataclasses import dataclass

from providers.candidates.combine import Combination
from providers.candidates.findings import Researched
from providers.candidates.findings import Stage
from providers.candidates.findings import StageRecord
from providers.candidates.matching import group_requests
from providers.candidates.matching import iter_tree_requests
from providers.candidates.matching import matched_trees
from providers.candidates.matching import samplable
from providers.candidates.matching import sample_tree_requests
from providers.candidates.query import SearchSettings
from providers.candidates.research import research
from providers.candidates.research import trees_suffice
from providers.candidates.summaries import Summaries
from providers.candidates.summaries import in_trees


@dataclass(frozen=True)
class CandidateResult:
    """What a search found: the documented result the API, the explorer and
    explain read."""
    allocation_requests: object  # matching.AllocationRequests: a list, or when streamed an
                                 # iterator making them as they are read
    summaries: list              # summaries.ProviderSummary of the trees they use (None when
                                 # streamed: summaries_of(the trees the requests used))
    summaries_by_id: dict        # every summary read, by provider id, with the answer's traits
    researched: Researched       # what the research read
    stages: list                 # findings.StageRecord of every stage, in the order they ran
    group_requests: dict = None  # explain only: suffix -> the group's requests, as combined

    @property
    def wide(self):
        """The RequestFindings."""
        return self.researched.wide

    @property
    def findings(self):
        """suffix -> GroupFindings, for the groups researched."""
        return self.researched.groups

    @property
    def streamed(self):
        """Are the requests an iterator, made as they are read? Then every
        provider they use is in summaries_by_id already, with its traits,
        and the answer's summaries are summaries_of(the trees the requests
        used)."""
        return self.summaries is None

    def summaries_of(self, roots):
        """The summaries of every provider in these trees (read already)."""
        return in_trees(self.summaries_by_id, roots)


def select_candidates(query, *, settings=None, explain=False, counted=None, lazy=False):
    """The allocation candidates for a CandidateQuery.

    Unknown resource classes and traits raise ResourceClassNotFound and
    TraitNotFound. With explain=True every constraint is researched even
    once the answer is known to be empty (see research), and, unless
    counted=False, every group's candidates are built to be counted (the
    GROUP_CANDIDATES stage) even where a limit would take only a few. With
    lazy=True, several groups' candidates may come streamed (see
    CandidateResult.streamed) when the answer takes them all.
    """
    settings = settings or SearchSettings.from_django()
    counted = explain if counted is None else counted
    with no_cycle_collection():
        researched = research(query, exhaustive=explain, bounded_by=None if counted else settings)
        combination = Combination(query, researched.wide, settings)
        by_suffix, stages, alive = _matched(query, researched, combination, counted)
        summaries = Summaries(researched.wide)
        if not alive:
            return CandidateResult([], [], summaries.by_id, researched, stages)
        streams = lazy and len(by_suffix) > 1 and combination.streams()
        if len(by_suffix) > 1:
            # Combining checks the capacity of each combination.
            summaries.read_trees(summaries.roots(
                r for requests in by_suffix.values() for r in requests))
            if streams:
                summaries.with_traits(_reached_by_all(researched.wide, by_suffix))
        combined = combination.candidates(by_suffix, researched.groups, summaries.by_id,
                                          lazy=streams)
        stages += combined.records
        answer = None
        if not streams:
            answer = summaries.for_answer(combined.requests, combined.summarized)
        return CandidateResult(combined.requests, answer, summaries.by_id, researched, stages,
                               by_suffix if explain else None)


def _matched(query, researched, combination, counted):
    """Matching, group by group in the query's order: ({suffix: the group's
    requests}, the stage records in the order the stages ran, may any
    candidate come?). The unsuffixed group spreading over trees is matched
    after the others when they are not counted (see _spread_later). Raises
    the name research refused unless an earlier group has no requests (or
    an earlier stage left nothing)."""
    wide, findings_by_suffix = researched.wide, researched.groups
    one_group = len(query.groups) == 1
    records = list(researched.wide_records)
    researched_so_far = len(records)   # how many of research's records are in `records`
    alive = True   # no group so far without requests, and research left something
    by_suffix = {}
    spread = None  # the unsuffixed group's findings, matched after the others
    for suffix in query.groups:
        if alive and suffix == researched.refused_by:
            raise researched.refused
        findings = findings_by_suffix.get(suffix)
        if findings is None:     # research stopped before it: nothing is left
            return {}, records + list(researched.records[researched_so_far:]), False
        records += findings.records
        researched_so_far += len(findings.records)
        if not (alive and findings.alive):
            alive = False    # explaining: every group's research is recorded still
            continue
        if one_group and not counted and combination.stop_at() >= 0:
            # One group and a limit: build only the requests the limit takes.
            requests, matching_records = group_requests(wide, findings, one_group=True, lazy=True)
            records += matching_records
            requests = iter(requests)
            first = next(requests, None)
            if first is None:
                alive = False
                continue
            by_suffix[suffix] = itertools.chain([first], requests)
            continue
        if _spread_later(query, findings, counted):
            spread = findings
            continue
        count = combination.sample_size()
        if one_group and not counted and count is not None and samplable(findings):
            # A random `limit` of them, built alone.
            trees, matching_records = matched_trees(wide, findings, one_group=True)
            requests, total = sample_tree_requests(wide, findings, trees, count, random)
        else:
            requests, matching_records = group_requests(wide, findings, one_group=one_group)
            total = len(requests)
        records += matching_records
        records.append(StageRecord(Stage.GROUP_CANDIDATES, suffix, total))
        if not requests:
            alive = False
            continue
        by_suffix[suffix] = requests
    if spread is not None and alive:
        # Its requests only matter in trees every other group reaches.
        anchors = set.intersection(*({r.anchor for r in requests}
                                     for requests in by_suffix.values()))
        trees, matching_records = matched_trees(wide, spread, one_group=False)
        requests = list(iter_tree_requests(wide, spread, trees, anchors=anchors))
        records += matching_records
        records.append(StageRecord(Stage.GROUP_CANDIDATES, spread.suffix, len(requests)))
        alive = bool(requests)
        by_suffix[spread.suffix] = requests
        by_suffix = {s: by_suffix[s] for s in query.groups if s in by_suffix}  # query order
    return by_suffix, records, alive


def _spread_later(query, findings, counted):
    """Match the unsuffixed group after the suffixed ones? Its tree
    requests can be many (every tree with disk, say) where the other
    groups reach a few trees; not when every group's candidates are
    counted."""
    return (findings.suffix == '' and findings.tree_mode and len(query.groups) > 1
            and not counted)


def _reached_by_all(wide, by_suffix):
    """The trees that the requests of every group reach, with those of the
    sharing providers they use: all the trees several groups' candidates
    can use."""
    anchors = set.intersection(*({r.anchor for r in requests} for requests in by_suffix.values()))
    sharing = wide.sharing_roots
    if not sharing:
        return anchors
    return anchors | {sharing[p] for requests in by_suffix.values() for r in requests
                      if r.anchor in anchors for p, _, _ in r.resources if p in sharing}


def stops_at_the_limit(query, result, settings=None):
    """Would the search for the query (without explain) read only the trees
    its limit takes? Then which candidates it answers is its own choice,
    and an explained search (which reads them all) may list others."""
    if len(query.groups) != 1 or not result.findings:
        return False
    stop_at = Combination(query, result.wide,
                          settings or SearchSettings.from_django()).stop_at()
    findings = next(iter(result.findings.values()))
    return trees_suffice(query, result.wide, findings.group, findings.tree_mode, stop_at)


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
