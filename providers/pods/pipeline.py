"""The pod selection's machinery: filters and weighers as settings name
them (PLACEMENT_POD_FILTERS, PLACEMENT_POD_WEIGHERS), run over the pods as
a scheduler runs its filters and weighers over hosts.

Filters refuse pods, in order, each saying why; each weigher's weights of
the pods left are normalised to 0..1, multiplied by its multiplier and
summed; the highest total wins, ties going to the older pod. The standard
filters and weighers, and the pods' books they read, are in
providers.pods.selection. This module reads nothing from the database,
so the system checks (providers.pods.checks) can build the pipeline
before any model is loaded.
"""
import math
from dataclasses import dataclass

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string

# Where the filters and weighers named without a dotted path live.
STANDARD = 'providers.pods.selection'


class PodFilter:
    """Keeps the pods a request may go to. `refusal` says why a pod may not
    (None: it may); a binding whose pod a filter refuses ends with the
    filter's `end_reason`."""
    end_reason = None

    def refusal(self, candidate, request):
        raise NotImplementedError


class PodWeigher:
    """Raw weights of the pods left (higher is better); the pipeline
    normalises them to 0..1 and applies the weigher's multiplier."""

    def weights(self, candidates, request):
        raise NotImplementedError


def normalise(values):
    """Values scaled to 0..1 (all 0 when they are all equal)."""
    low, high = min(values, default=0), max(values, default=0)
    if high == low:
        return [0.0] * len(values)
    return [(v - low) / (high - low) for v in values]


@dataclass
class Ranked:
    candidate: object   # selection.PodBooks
    weight: float


@dataclass
class Selection:
    """The outcome for one request: the pods that passed, best first, and
    for each refused pod (id) the filter that refused it and why."""
    ranked: list
    refused: dict

    @property
    def best(self):
        return self.ranked[0].candidate.pod if self.ranked else None

    def passes(self, pod):
        return pod.pk not in self.refused

    def refusal_text(self):
        """Why no pod passed: one clause per pod, in line order."""
        return '; '.join(f'{c.pod.name} {why}' for c, _f, why in self.refused.values())


def _named(name, kind):
    """An instance of the filter or weigher class `name`: a dotted path, or
    the name of one of providers.pods.selection's, resolved when the
    pipeline is built (as Django resolves middleware names)."""
    path = name if '.' in name else f'{STANDARD}.{name}'
    try:
        cls = import_string(path)
    except ImportError as exc:
        raise ImproperlyConfigured(f'Unknown pod {kind} {name!r}: {exc}') from exc
    base = PodFilter if kind == 'filter' else PodWeigher
    if not (isinstance(cls, type) and issubclass(cls, base)):
        raise ImproperlyConfigured(f'Pod {kind} {name!r} is not a {base.__name__}')
    return cls()


def configured_filters():
    """The filters of PLACEMENT_POD_FILTERS, in order."""
    return [_named(name, 'filter') for name in settings.PLACEMENT_POD_FILTERS]


def configured_weighers():
    """(weigher, multiplier) for each of PLACEMENT_POD_WEIGHERS (Name[:multiplier])."""
    weighers = []
    for entry in settings.PLACEMENT_POD_WEIGHERS:
        name, _, multiplier = entry.partition(':')
        try:
            multiplier = float(multiplier) if multiplier else 1.0
        except ValueError:
            multiplier = math.nan
        if not math.isfinite(multiplier):
            raise ImproperlyConfigured(
                f'Pod weigher {entry!r}: the multiplier must be a finite number')
        weighers.append((_named(name.strip(), 'weigher'), multiplier))
    return weighers


def select(request, candidates, *, filters=None, weighers=None):
    """Run the pipeline over `candidates` (PodBooks, in line order)."""
    filters = configured_filters() if filters is None else filters
    weighers = configured_weighers() if weighers is None else weighers
    passed, refused = [], {}
    for candidate in candidates:
        for pod_filter in filters:
            why = pod_filter.refusal(candidate, request)
            if why is not None:
                refused[candidate.pod.pk] = (candidate, pod_filter, why)
                break
        else:
            passed.append(candidate)
    totals = [0.0] * len(passed)
    for weigher, multiplier in weighers:
        if passed and multiplier:
            for i, weight in enumerate(normalise(weigher.weights(passed, request))):
                totals[i] += multiplier * weight
    order = sorted(range(len(passed)), key=lambda i: (
        -totals[i], passed[i].pod.created_at, passed[i].pod.pk))
    return Selection([Ranked(passed[i], totals[i]) for i in order], refused)
