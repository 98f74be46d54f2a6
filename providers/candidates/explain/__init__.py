"""Why does (or doesn't) an allocation-candidates request fit?

explain_candidates() runs the search itself (select_candidates with
explain=True, so every constraint is researched even when the answer is
empty, and research reads what the explanation needs too: every provider's
root, and the inventories of the groups' classes when a resource step
eliminates some) and reads its documented result (selector.CandidateResult,
findings.Researched); the explanation itself reads nothing. Once the near
misses are chosen, one query names them.

For each request group, a funnel: starting from every provider, how many
are left after each constraint of the group in turn, and so how many each
constraint eliminated. A suffixed group needs one provider to satisfy it
all, so its funnel counts providers. The unsuffixed group may spread over a
tree and sharing providers, so when the cloud has trees or sharing providers
its funnel counts trees (root providers): a tree passes a resource
constraint when one of its providers, or a sharing provider in one of its
aggregates, can take the amount, and a required trait when one of the
providers able to take a requested class has it (as Placement reads
`required` in the unsuffixed group: on the providers of the resources, not
anywhere in the tree).

A resource step names what stopped each tree (provider) it eliminated:
the one limit whose change alone would let it take the amount (max_unit,
min_unit, step_size, capacity), a split of what a tree has free across its
providers, or no inventory of the class (limits.py, from the inventories
research read). When every group fits on its own but no combination does,
which rule of combining stops each tree (combining.py).

Beyond the funnels:
- suggestions: when trees have a required trait of the unsuffixed group
  only on their root while the resources come from its children (a
  NUMA-modelled compute node), the request with the trait moved to
  root_required, and how many trees it would fit;
- near misses: for a group that fits fewer than NEARLY_EMPTY trees
  (providers), or than the limit asked, the closest of those that meet
  every constraint but one resource class, which limit stops them, by how
  much, and the least change that would let them fit.

Each has its module: funnel.py, limits.py, combining.py, suggestions.py,
near_misses.py, and wording.py (labels and sentences, each limit's once).
"""
import collections
from dataclasses import dataclass
from dataclasses import field

from providers.candidates.explain import combining
from providers.candidates.explain import funnel
from providers.candidates.explain import limits
from providers.candidates.explain import near_misses
from providers.candidates.explain import suggestions
from providers.candidates.explain.funnel import Funnel
from providers.candidates.explain.funnel import Step
from providers.candidates.explain.wording import STAGE_LABELS
from providers.candidates.explain.wording import cause_rows
from providers.candidates.explain.wording import label
from providers.candidates.explain.wording import summary
from providers.candidates.reads import provider_names
from providers.candidates.selector import select_candidates

__all__ = ['STAGE_LABELS', 'Explanation', 'Funnel', 'Step', 'cause_rows', 'explain_candidates',
           'summary']


@dataclass
class Explanation:
    result: object      # the selector's CandidateResult
    funnels: list       # a Funnel per request group
    suggestions: list = field(default_factory=list)
    near_misses: list = field(default_factory=list)
    blocked: dict = field(default_factory=dict)  # combining.blocked_trees

    @property
    def why(self):
        """For an empty answer, why (see summary)."""
        return summary(self.funnels, self.result.allocation_requests, self.blocked)

    @property
    def closest(self):
        """A sentence per group with near misses."""
        by_group = collections.defaultdict(list)
        for miss in self.near_misses:
            by_group[miss.group].append(miss.text)
        return [f"{label(funnel)}, closest: {'; '.join(by_group[funnel.group])}"
                for funnel in self.funnels if by_group.get(funnel.group)]

    @property
    def sentences(self):
        return self.why + self.closest + [s.text for s in self.suggestions]


def explain_candidates(query, *, settings=None, suggest_root_required=True, counted=True):
    """The candidates for a CandidateQuery, with a Funnel per group, the
    suggestions and the near misses. suggest_root_required=False before
    microversion 1.35, which has no root_required. counted=False builds
    only the candidates a limit takes, not every group's to count them (the
    search stages' GROUP_CANDIDATES): the funnels do not need them."""
    result = select_candidates(query, settings=settings, explain=True, counted=counted)
    params, wide, researched = query.params, result.wide, result.researched
    roots_of = researched.provider_roots   # every provider's, read by the research
    inventories = limits.Offers(researched)
    explained = []
    for suffix in query.groups:
        findings = researched.groups[suffix]
        constraints = funnel.constraints(findings, params, wide, roots_of, inventories)
        explained.append((findings, constraints, funnel.funnel(findings, constraints, roots_of)))
    suggested = []
    if suggest_root_required:
        for findings, constraints, funneled in explained:
            suggested += suggestions.root_trait_suggestions(findings, params, constraints,
                                                            funneled, roots_of)
    misses = near_misses.near_misses(explained, roots_of, inventories, asked=params.limit)
    if misses:
        # Named once chosen: a few providers' names, not every provider's.
        misses = near_misses.named(misses, provider_names(
            {m.tree_id for m in misses} | {m.provider_id for m in misses}))
    return Explanation(result, [funneled for _, _, funneled in explained], suggested, misses,
                       combining.blocked_trees(query, result, settings))
