"""select_candidates(): the whole pipeline for a parsed query, independent of
HTTP. The API view (allocations.api.candidates) and the dashboards' explorer
both call it. It flows one way:

  research (request-wide)    research.Research.request_wide -> RequestFindings
  for each group, in order:
    research                 research.Research.group -> GroupFindings
    matching                 matching.group_requests (pure) -> requests
  summaries of the trees     summaries.Summaries.load_for (several groups only)
  combining                  combine.Combination.candidates (pure) -> Combined
  provider summaries         summaries.Summaries.for_answer

Research and the summaries are the only reads; every stage's records are
gathered here, in order.
"""
import contextlib
import gc
import itertools
import random
from dataclasses import dataclass

from providers.candidates.combine import Combination, Combined
from providers.candidates.findings import RequestFindings, Stage, StageRecord
from providers.candidates.matching import (
    group_requests,
    iter_tree_requests,
    matched_trees,
    samplable,
    sample_tree_requests,
)
from providers.candidates.query import SearchSettings
from providers.candidates.research import NoCandidates, Research, trees_suffice
from providers.candidates.summaries import Summaries


@dataclass
class CandidateResult:
    """What a search found: the documented result the API, the explorer and
    explain read."""
    allocation_requests: list    # matching.AllocationRequest (lazy: maybe an iterator)
    summaries: list              # summaries.ProviderSummary of the trees they use
    summaries_by_id: dict        # every summary loaded, by provider id
    wide: RequestFindings        # what the research found for the whole request
    findings: dict               # suffix -> GroupFindings, for the groups researched
    stages: list                 # findings.StageRecord of every stage, in order
    of_trees: object = None      # lazy: the summaries of the trees given (one read)
    provider_roots: object = None  # lazy: research.Research.provider_roots
    group_requests: dict = None  # explain only: suffix -> the group's requests, as combined

    @property
    def streamed(self):
        """Are the requests an iterator, made as they are read? Then every
        provider they use is in summaries_by_id already, `summaries` is
        None, and the answer's summaries are of_trees(the trees the
        requests used), read once they all were."""
        return self.summaries is None


def select_candidates(query, *, settings=None, explain=False, counted=None, lazy=False):
    """The allocation candidates for a CandidateQuery.

    Unknown resource classes and traits raise ResourceClassNotFound and
    TraitNotFound. With explain=True every constraint is researched even
    once the answer is known to be empty (see research.Research), and, unless
    counted=False, every group's candidates are built to be counted (the
    GROUP_CANDIDATES stage) even where a limit would take only a few. With
    lazy=True, several groups' candidates may come streamed (see
    CandidateResult.streamed) when nothing needs them all first.
    """
    search = _Search(query, settings or SearchSettings.from_django(), explain,
                     explain if counted is None else counted, lazy)
    with no_cycle_collection():
        try:
            combined = search.run()
        except NoCandidates:
            combined = Combined([], None, [])
        requests = combined.requests
        summaries = search.summaries
        answer = None
        if isinstance(requests, list):
            answer = summaries.for_answer(requests, combined.summarized)
        research = search.research
        return CandidateResult(requests, answer, summaries.by_id, research.wide,
                               search.findings, research.records, summaries.of_trees,
                               research.provider_roots,
                               search.by_suffix if explain else None)


def stops_at_the_limit(query, result, settings=None):
    """Would the search for the query (without explain) read only the trees
    its limit takes? Then which candidates it answers is its own choice,
    and an explained search (which reads them all) may list others."""
    if len(query.groups) != 1 or not result.findings:
        return False
    stop_at = Combination(query, result.wide,
                          settings or SearchSettings.from_django()).stop_at()
    found = next(iter(result.findings.values()))
    return trees_suffice(query, result.wide, found, stop_at)


class _Search:
    """One run of the pipeline: the order of the stages and the records."""

    def __init__(self, query, settings, explain, counted, lazy=False):
        self.query = query
        self.lazy = lazy
        self.settings = settings
        self.counted = counted
        self.research = Research(query, exhaustive=explain)
        self.records = self.research.records   # research's, then every later stage's
        self.summaries = Summaries(self.research.wide)
        self.findings = {}
        self.by_suffix = None   # each group's requests, once they are combined

    def run(self):
        query, research = self.query, self.research
        wide = research.request_wide()
        self.summaries = Summaries(wide)
        combination = Combination(query, wide, self.settings)
        one_group = len(query.groups) == 1
        if one_group and not self.counted:
            research.tree_limit = combination.stop_at()
        by_suffix = {}
        spread = None  # the unsuffixed group's findings, matched after the others
        for suffix, group in query.groups.items():
            found = self.findings[suffix] = research.group(group)
            if not found.alive:  # explaining: research the other groups still
                continue
            if one_group and not self.counted and combination.stop_at() >= 0:
                # One group and a limit: build only the requests the limit takes.
                requests = iter(self.matched(wide, found, one_group=True, lazy=True))
                first = next(requests, None)
                if first is None:
                    research.dead_end()
                    continue
                by_suffix[suffix] = itertools.chain([first], requests)
                continue
            if self._spread_later(found):
                spread = found
                continue
            count = combination.sample_size()
            if one_group and not self.counted and count is not None and samplable(found):
                # A random `limit` of them, built alone.
                trees = self.matched_trees(wide, found, one_group=True)
                requests, total = sample_tree_requests(wide, found, trees, count, random)
            else:
                requests = self.matched(wide, found, one_group=one_group)
                total = len(requests)
            self._found_requests(found, by_suffix, requests, total)
        if spread is not None and research.alive:
            # Its requests only matter in trees every other group reaches.
            anchors = set.intersection(*({r.anchor for r in requests}
                                         for requests in by_suffix.values()))
            trees = self.matched_trees(wide, spread, one_group=False)
            requests = list(iter_tree_requests(wide, spread, trees, anchors=anchors))
            self._found_requests(spread, by_suffix, requests, len(requests))
            by_suffix = {s: by_suffix[s] for s in query.groups if s in by_suffix}  # query order
        if not research.alive:
            return Combined([], None, [])
        self.by_suffix = by_suffix
        if len(by_suffix) > 1:
            # Combining checks the capacity of each combination.
            self.summaries.load_for(r for requests in by_suffix.values() for r in requests)
        combined = combination.candidates(by_suffix, self.findings, self.summaries.by_id,
                                          lazy=self.lazy and combination.streams())
        self.records.extend(combined.records)
        return combined

    def matched(self, wide, found, **options):
        requests, records = group_requests(wide, found, **options)
        self.records.extend(records)
        return requests

    def matched_trees(self, wide, found, **options):
        trees, records = matched_trees(wide, found, **options)
        self.records.extend(records)
        return trees

    def _found_requests(self, found, by_suffix, requests, total):
        self.records.append(StageRecord(Stage.GROUP_CANDIDATES, found.suffix, total))
        if not requests:
            self.research.dead_end()
            return
        by_suffix[found.suffix] = requests

    def _spread_later(self, found):
        """Match the unsuffixed group after the suffixed ones? Its tree
        requests can be many (every tree with disk, say) where the other
        groups reach a few trees; not when every group's candidates are
        counted."""
        return (found.suffix == '' and found.tree_mode and len(self.query.groups) > 1
                and not self.counted)


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
