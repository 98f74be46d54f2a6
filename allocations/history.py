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

from django.db.models import Exists, OuterRef
from django.utils import timezone

from providers import events, trends
from providers.models import Event, EventProvider, ResourceProvider

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
    found = []
    for name, usage in books.items():
        points = [trends.Point(at, usage.total, usage.reserved, usage.capacity, amounts[name],
                               usage.providers) for at, amounts in steps]
        points.append(trends.Point(now, usage.total, usage.reserved, usage.capacity, usage.used,
                                   usage.providers))
        found.append(trends.ClassTrend(name, points, trends.forecast(_hourly(points))))
    return History(found, starts)


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
    found = []
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
            found.append((at, UNKNOWN))
        else:
            change = collections.Counter(now)
            change.subtract(before)
            found.append((at, change))
    return found


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
