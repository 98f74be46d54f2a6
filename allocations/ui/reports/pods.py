"""Pods in their selection's order, their bindings, and which pod a project
would be bound to."""
from dataclasses import dataclass

from providers import books
from providers.pods import pipeline
from providers.pods import selection
from providers.pods.models import GENERAL_PURPOSE
from providers.pods.models import Pod
from providers.pods.models import PodBinding


@dataclass
class PodClass:
    """One class of a pod's books against the pod's threshold for it, as
    GET /pods shows it: utilization and threshold in percent (None: no
    capacity, no threshold)."""
    usage: books.ClassUsage
    utilization: float
    threshold: float
    reached: bool


@dataclass
class PodLine:
    """A pod, how many tenants are bound to it now, and its books per class."""
    pod: Pod
    tenants: int
    classes: list


def pods_in_line():
    """Every pod, oldest first, with its aggregate and `tenants` (open
    bindings). One query."""
    return Pod.objects.with_aggregate().with_open_binding_counts().in_line()


def pod_lines(pods):
    """PodLine for each pod (annotated with `tenants`, see pods_in_line):
    the books of every pod in two queries (selection.pod_books), the
    thresholds reached as the selection reads them."""
    lines = []
    for candidate in selection.pod_books(pods):
        reached = {name for name, _used, _threshold in candidate.thresholds_reached()}
        lines.append(PodLine(candidate.pod, candidate.pod.tenants, [
            PodClass(usage, candidate.percent(name), candidate.pod.thresholds.get(name),
                     name in reached)
            for name, usage in candidate.classes.items()]))
    return lines


def pod_groups(lines):
    """[(affinity, lines)]: the general-purpose pods ('') first, then one
    group per affinity tag in tag order; a pod with two tags is in both
    groups, as a request of either tag may go to it."""
    groups = {GENERAL_PURPOSE: []}
    for line in lines:
        for affinity in line.pod.tags or [GENERAL_PURPOSE]:
            groups.setdefault(affinity, []).append(line)
    return sorted(groups.items(), key=lambda group: group[0])


def open_bindings(pod):
    """The tenants bound to the pod now, longest bound first (one query)."""
    return PodBinding.objects.open().filter(pod=pod).order_by('started_at', 'id')


def binding_history(pod):
    """Every binding the pod has had, newest first."""
    return PodBinding.objects.filter(pod=pod).order_by('-started_at', '-id')


@dataclass
class ProjectPod:
    """The pod a project's work of one affinity goes to, for the explorer:
    its open binding's pod, or (no binding) the pod a binding request would
    bind it to, a preview; pod None when no pod passes."""
    project_id: str
    affinity: str
    pod: Pod
    binding: PodBinding
    selection: pipeline.Selection

    @property
    def affinity_label(self):
        return selection.describe_affinity(self.affinity)

    @property
    def leaving(self):
        """Why the bound pod no longer passes the selection (its next
        binding request would move the project), or None."""
        if self.binding is None or self.selection.passes(self.pod):
            return None
        _candidate, _filter, why = self.selection.refused[self.pod.pk]
        return why

    @property
    def refusal(self):
        """Why no pod can take the project's work, as a binding request
        would answer it."""
        return str(selection.no_pod_available(self.project_id, self.affinity, self.selection))


def project_pod(project_id, affinity=GENERAL_PURPOSE, resources=None):
    """ProjectPod for the project (read only: nothing is bound)."""
    return ProjectPod(project_id, affinity,
                      *selection.pod_for(project_id, affinity, resources=resources))
