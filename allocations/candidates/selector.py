"""select_candidates(): the whole pipeline for a parsed query, independent of
HTTP. The API view (allocations.api.candidates) and the dashboards' explorer
both call it.

  research (request-wide)    research.Research.request_wide
  for each group, in order:
    research                 research.Research.group
    matching                 matching.group_requests
  combining                  combine.Combination.candidates
  provider summaries         summaries.Summaries.for_answer
"""
import contextlib
import gc
import itertools
import random
from dataclasses import dataclass

from django.conf import settings as django_settings

from allocations.candidates.combine import Combination
from allocations.candidates.matching import (group_requests, iter_tree_requests,
                                             sample_tree_requests)
from allocations.candidates.research import NoCandidates, Research, Stage
from allocations.candidates.summaries import Summaries


@dataclass
class SearchSettings:
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


@dataclass
class CandidateResult:
    allocation_requests: list    # matching.AllocationRequest
    summaries: list              # summaries.ProviderSummary of the trees they use
    summaries_by_id: dict        # every summary loaded, by provider id
    research: Research           # what each stage found and left

    @property
    def stages(self):
        return self.research.records


def select_candidates(query, *, settings=None, explain=False, counted=None):
    """The allocation candidates for a CandidateQuery.

    Unknown resource classes and traits raise ResourceClassNotFound and
    TraitNotFound. With explain=True every constraint is researched even
    once the answer is known to be empty (see research.Research), and, unless
    counted=False, every group's candidates are built to be counted (the
    GROUP_CANDIDATES stage) even where a limit would take only a few.
    """
    settings = settings or SearchSettings.from_django()
    research = Research(query, exhaustive=explain)
    summaries = Summaries()
    combination = Combination(query, research, summaries, settings)
    counted = explain if counted is None else counted
    with no_cycle_collection():
        try:
            requests = _search(query, research, summaries, combination, counted)
        except NoCandidates:
            requests = []
        return CandidateResult(requests, summaries.for_answer(requests, combination.summarized),
                               summaries.by_id, research)


def _search(query, research, summaries, combination, counted):
    research.request_wide()
    by_suffix = {}
    spread = None  # the unsuffixed group's findings, matched after the others
    for suffix, group in query.groups.items():
        found = research.group(group)
        if not found.alive:  # explaining: research the other groups still
            continue
        if _lazy(query, combination, counted):
            # One group and a limit: build only the requests the limit takes.
            requests = iter(group_requests(research, found, summaries, lazy=True))
            first = next(requests, None)
            if first is None:
                research.dead_end(found)
            by_suffix[suffix] = itertools.chain([first], requests)
            continue
        if _spread_later(query, found, counted):
            spread = found
            continue
        sampled = _sampled(query, research, combination, found, summaries, counted)
        if sampled is not None:  # a random `limit` of them, built alone
            requests, total = sampled
        else:
            requests = group_requests(research, found, summaries)
            total = len(requests)
        _found_requests(research, found, by_suffix, requests, total)
    if spread is not None and research.alive:
        # Its requests only matter in trees every other group reaches.
        anchors = set.intersection(*({r.anchor for r in requests}
                                     for requests in by_suffix.values()))
        requests = list(iter_tree_requests(research, spread, summaries, anchors=anchors))
        _found_requests(research, spread, by_suffix, requests, len(requests))
        by_suffix = {s: by_suffix[s] for s in query.groups if s in by_suffix}  # query order
    if not research.alive:
        return []
    return combination.candidates(by_suffix)


def _found_requests(research, found, by_suffix, requests, total):
    research.record(Stage.GROUP_CANDIDATES, found.suffix, total)
    if not requests:
        research.dead_end(found)
        return
    by_suffix[found.suffix] = requests


def _spread_later(query, found, counted):
    """Match the unsuffixed group after the suffixed ones? Its tree
    requests can be many (every tree with disk, say) where the other groups
    reach a few trees; not when every group's candidates are counted."""
    return found.suffix == '' and found.tree_mode and len(query.groups) > 1 and not counted


def _sampled(query, research, combination, found, summaries, counted):
    """The only group's requests drawn at random as the limit wants them
    (see matching.sample_tree_requests), or None."""
    count = combination.sample_size()
    if count is None or len(query.groups) != 1 or counted or not found.tree_mode:
        return None
    return sample_tree_requests(research, found, summaries, count, random)


def _lazy(query, combination, counted):
    """Can the only group's requests be generated as they are taken? Not
    when they are counted, or without an early stop."""
    return len(query.groups) == 1 and not counted and combination.stop_at() >= 0


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
