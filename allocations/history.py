"""Used over time on one provider tree, replayed from the event log.

Every allocation write records an event per consumer with the consumer's
allocations after it and every provider it holds or held
(allocations.services._record_events, providers.events). So what a
consumer held on a tree right before an event is what its previous event
left there, or nothing when the event created the consumer.
Walking back from now, each event takes its change off the tree's current
`used`: the points of a step line, exact for every moment the log covers.

The log may not reach back to the start of the range: events pruned
(`manage.py prune_events`), or rows written outside the services (as
load_scale writes them). A consumer whose earlier state is unknown ends the
history at its event: `starts` says from when the line is known.
"""
import collections
import dataclasses
from dataclasses import dataclass
from datetime import timedelta

from django.db.models import Exists
from django.db.models import OuterRef
from django.utils import timezone

from providers import events
from providers import trends
from providers.models import Event
from providers.models import EventProvider
from providers.models import ResourceProvider

ALLOCATION_EVENTS = (events.ALLOCATION_UPDATE, events.ALLOCATION_DELETE)
UNKNOWN = None
HOUR = timedelta(hours=1)


@dataclass(frozen=True)
class History:
    """A tree's trends (providers.trends.ClassTrend, capacity as it is now)
    and `starts`: the earliest moment the replay knows, None when the log
    covers the whole range."""
    trends: list
    starts: object


def tree_history(root, books, *, since):
    """History of the tree under `root` (a ResourceProvider) from `since`:
    `books` its current books ({class name: ClassUsage}, books.tree_books).
    Two queries: the tree's providers, and every allocation event of the
    consumers that ever held any of it (a consumer's earlier events tell
    what an event changed)."""
    uuids = list(ResourceProvider.objects.filter(root_provider=root).values_list('uuid', flat=True))
    mentions = EventProvider.objects.filter(provider_uuid__in=uuids)
    consumers = mentions.filter(event__event_type__in=ALLOCATION_EVENTS).values(
        'event__consumer_uuid')
    rows = Event.objects.filter(
        event_type__in=ALLOCATION_EVENTS, consumer_uuid__in=consumers,
    ).annotate(concerns=Exists(mentions.filter(event=OuterRef('pk')))).order_by('id').values_list(
        'created_at', 'consumer_uuid', 'consumer_generation_before', 'concerns', 'payload')
    held = set(uuids)
    changes = _changes(rows, lambda payload: _on(payload, held))
    now = timezone.now()
    used = collections.Counter({name: usage.used for name, usage in books.items()})
    steps, starts = _replayed(changes, used, since)
    class_trends = []
    for name, usage in books.items():
        points = [trends.Point(at, usage.total, usage.reserved, usage.capacity, amounts[name],
                               usage.providers) for at, amounts in steps]
        points.append(trends.Point(now, usage.total, usage.reserved, usage.capacity, usage.used,
                                   usage.providers))
        class_trends.append(trends.ClassTrend(name, points, trends.forecast(_hourly(points))))
    return History(class_trends, starts)


def _hourly(points):
    """The step line read every hour over the forecast's window, as
    snapshots would have seen it: a least-squares line through the events'
    own times would weigh a burst of claims (a tree filled in a minute) as
    much as weeks of quiet."""
    last = points[-1]
    at = max(points[0].taken_at, last.taken_at - trends.FORECAST_WINDOW)
    sampled, index = [], 0
    while at < last.taken_at:
        while index + 1 < len(points) and points[index + 1].taken_at <= at:
            index += 1
        sampled.append(dataclasses.replace(points[index], taken_at=at))
        at += HOUR
    return sampled + [last]


def _on(payload, providers):
    """{class name: amount} a consumer holds on the providers, per an event."""
    held = collections.Counter()
    for uuid, allocation in (payload.get('allocations') or {}).items():
        if uuid in providers:
            held.update(allocation.get('resources') or {})
    return held


def _changes(rows, holding):
    """[(at, change: Counter or UNKNOWN)] in event order: what each event
    added to the consumer's holding (`holding(payload)`). A consumer's first
    event in the log either created it (it held nothing before), or does
    not concern the tree (it held nothing there before either, as an event
    names every provider the consumer held), or leaves the change UNKNOWN."""
    last = {}
    changes = []
    for at, consumer, generation_before, concerns, payload in rows:
        now = holding(payload)
        if consumer in last:
            before = last[consumer]
        elif generation_before is None or not concerns:
            before = collections.Counter()
        else:
            before = UNKNOWN
        last[consumer] = now
        if before is UNKNOWN:
            changes.append((at, UNKNOWN))
        else:
            change = collections.Counter(now)
            change.subtract(before)
            changes.append((at, change))
    return changes


def _replayed(changes, used, since):
    """([(at, {class: used from then})] oldest first, starts): the step
    line back from `used` (now) through the changes of the range (from
    `since`), and from when it is known (None: all of it)."""
    steps = []
    running = collections.Counter(used)
    for at, change in reversed(changes):
        if at < since:
            break
        if change is not UNKNOWN and not any(change.values()):
            continue   # the event changed nothing here (the consumer elsewhere)
        steps.append((at, dict(running)))
        if change is UNKNOWN:
            return list(reversed(steps)), at
        running.subtract(change)
    steps.append((since, dict(running)))
    return list(reversed(steps)), None


# ---- a consumer's history, event by event ----------------------------------

@dataclass(frozen=True)
class ClassChange:
    """What the consumer holds of a class, summed over its providers,
    before and after an event (None: not known)."""
    name: str
    before: object
    after: int


@dataclass(frozen=True)
class ConsumerChange:
    """What one allocation event changed for its consumer: the providers
    (names, or uuids of deleted ones) it left, took and kept, and every
    class whose amount changed. `known` is False when the log does not
    hold what the consumer held before (pruned, or written outside the
    services): then `kept` and `classes` tell the state after only."""
    event: object
    known: bool
    created: bool
    left: list
    took: list
    kept: list
    classes: list

    @property
    def moved(self):
        return bool(self.left and self.took)

    @property
    def deleted(self):
        return self.event.event_type == events.ALLOCATION_DELETE


def consumer_changes(events):
    """[ConsumerChange] of `events`, one consumer's, newest first (a page of
    reports.consumer_history). An event's payload holds the consumer's
    allocations after it; before it is what the next older event left, read
    from the page, or, for the page's oldest, from the one event before it.
    At most two queries, however many events: that one event, and the
    providers' names."""
    events = list(events)
    held = [_by_provider(e.payload) for e in events]
    oldest = events[-1] if events else None
    earlier = UNKNOWN
    if oldest is not None:
        if oldest.consumer_generation_before is None:
            earlier = {}   # it created the consumer
        else:
            payload = Event.objects.filter(
                consumer_uuid=oldest.consumer_uuid, event_type__in=ALLOCATION_EVENTS,
                pk__lt=oldest.pk).order_by('-pk').values_list('payload', flat=True).first()
            earlier = UNKNOWN if payload is None else _by_provider(payload)
    befores = held[1:] + [earlier]
    uuids = {uuid for state in held + [earlier or {}] for uuid in state}
    names = dict(ResourceProvider.objects.filter(uuid__in=uuids).values_list('uuid', 'name'))
    return [_change(event, before, after, lambda uuid: names.get(uuid, uuid))
            for event, before, after in zip(events, befores, held)]


def _by_provider(payload):
    """{provider uuid: {class: amount}} of an event's payload."""
    return {uuid: dict(allocation.get('resources') or {})
            for uuid, allocation in (payload.get('allocations') or {}).items()}


def _totals(state):
    totals = collections.Counter()
    for resources in state.values():
        totals.update(resources)
    return totals


def _change(event, before, after, name):
    after_totals = _totals(after)
    if before is UNKNOWN:
        return ConsumerChange(event, False, False, [], [], sorted(map(name, after)),
                              [ClassChange(c, None, n) for c, n in sorted(after_totals.items())])
    before_totals = _totals(before)
    classes = [ClassChange(c, before_totals.get(c, 0), after_totals.get(c, 0))
               for c in sorted(set(before_totals) | set(after_totals))
               if before_totals.get(c, 0) != after_totals.get(c, 0)]
    return ConsumerChange(
        event, True, event.consumer_generation_before is None,
        left=sorted(name(u) for u in before if u not in after),
        took=sorted(name(u) for u in after if u not in before),
        kept=sorted(name(u) for u in after if u in before),
        classes=classes)
