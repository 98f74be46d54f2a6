"""The orphan audit (`manage.py placement_audit` and the dashboards' audit
page): allocations and consumers left behind by failed moves, evacuations
and hand-edited databases, which inflate usage and block deleting a
compute service.

Each finding is a selector: a queryset of the rows found, filtered and
counted by the database whatever the size of the cloud, so only the rows
found leave it. What `--delete` removes goes through allocations.services,
as an API write would.

Which servers the cloud still runs is not Placement's to know: the
operator gives the list (`openstack server list --all-projects -f value
-c ID`), and INSTANCE consumers missing from it are orphans.
"""
import array
import bisect
import collections
import datetime
from dataclasses import dataclass

from django.db.models import Count
from django.db.models import Exists
from django.db.models import F
from django.db.models import Max
from django.db.models import Min
from django.db.models import OuterRef
from django.db.models import Q
from django.db.models import QuerySet
from django.db.models import Subquery
from django.db.models import Value
from django.db.models.functions import Coalesce

from allocations import ledger as allocation_ledger
from allocations.models import Allocation
from allocations.models import Consumer
from allocations.models import ConsumerType
from allocations.models import Project
from allocations.models import User
from placement_site.queries import InStrings
from placement_site.queries import count_of
from placement_site.validation import is_uuid_like
from placement_site.validation import normalize_uuid
from providers import ledger
from providers import rules
from providers.ledger.image import facets as image_facets
from providers.models import Inventory
from providers.models import ResourceProvider
from providers.querysets import SHARING_TRAIT

# A consumer written this little before the live list was taken may be a
# server the list does not show yet: it is never judged by the list.
LIVE_LIST_MARGIN = datetime.timedelta(minutes=5)


@dataclass(frozen=True)
class Finding:
    """One kind of trouble. `rows` is what the database found: dicts of the
    paths in `fields`, in a stable order (for paging); `fields` pairs each
    column's name in the output with its path. `deleted` says what
    `--delete` does with the rows ('' when they are only reported)."""
    key: str
    title: str
    meaning: str
    fields: tuple
    rows: QuerySet
    deleted: str = ''
    # The selector the rows are found among, without the joins their columns take:
    # counted rather than the rows (the same number).
    selector: QuerySet = None

    @property
    def columns(self):
        return [name for name, _path in self.fields]

    def count(self):
        """How many rows there are (one query)."""
        return (self.rows if self.selector is None else self.selector).count()

    def listed(self, rows):
        """`rows` (some of self.rows) under the output's column names."""
        return [{name: row[path] for name, path in self.fields} for row in rows]


# ---- the selectors -----------------------------------------------------------------------

def consumers_on_several_trees(among=None):
    """Consumers other than migrations holding allocations in more than one
    provider tree, sharing providers aside (an instance's disk on an NFS
    pool is in the pool's tree by design). During a move nova holds the
    source host with the MIGRATION consumer and the destination with the
    instance, so an instance on two trees is a move that went wrong.
    Consumers of unknown type (written before microversion 1.38) count as
    not migrations. `among`: consumer ids the answer is sought among (none
    of the others is), else every consumer."""
    held = (Allocation.objects
            .exclude(resource_provider__in=ResourceProvider.objects.sharing().values('pk'))
            .order_by().values('consumer_id'))
    consumers = Consumer.objects.exclude(consumer_type__name=ConsumerType.MIGRATION)
    if among is not None:
        held = held.filter(consumer_id__in_ids=among)
        consumers = consumers.filter(pk__in_ids=among)
    # Found by one grouping of every allocation (4 times faster than a count
    # per consumer at 90,000 consumers), a consumer's trees told apart by
    # their lowest and highest root: a hash aggregate, where counting
    # distinct roots sorted each consumer's (1.5 times slower at 180,000
    # consumers). The trees are counted per consumer for those found.
    spread = held.annotate(lowest=Min('resource_provider__root_provider_id'),
                           highest=Max('resource_provider__root_provider_id')).filter(
        lowest__lt=F('highest'))
    trees = held.annotate(n=Count('resource_provider__root_provider_id', distinct=True))
    return (consumers.filter(pk__in=spread.values('consumer_id'))
            .annotate(trees=Subquery(trees.filter(consumer_id=OuterRef('pk')).values('n'))))


def held_on_several_trees(using):
    """The ids of the consumers that hold allocations on more than one
    tree, sharing providers aside, whatever their type, as the dashboards'
    ledger (providers.ledger) holds the trees: kept as the trees change, a
    claim moving it by the trees it wrote. A superset of
    consumers_on_several_trees(), which sought among them says which."""
    return ledger.ledger(using).read(('audit: trees held',), TreesHeld,
                                     lambda fold, image: sorted(fold.several))


class TreesHeld:
    """A fold over the ledger's trees (providers.ledger.live): for each
    consumer, how many trees hold its allocations on providers that do
    not share, as two sorted arrays (16 bytes a consumer: the cloud's
    consumers, where a dict would take a hundred each), and the consumers
    on more than one."""
    # Past this many consumers in the changed trees, built again instead.
    MOVED_AT_MOST = 5000

    def __init__(self):
        self.consumers = array.array('q')   # consumer ids, ascending
        self.trees = array.array('q')       # how many trees hold each one's allocations
        self.several = set()

    def build(self, image):
        counted = collections.Counter()
        for holding in _holding_per_tree(image, image.trees.values()):
            counted.update(holding)
        self.consumers = array.array('q', sorted(counted))
        self.trees = array.array('q', (counted[consumer] for consumer in self.consumers))
        self.several = {consumer for consumer, trees in counted.items() if trees > 1}

    def update(self, old, new, roots):
        gone = list(_holding_per_tree(old, [old.trees[r] for r in roots if r in old.trees]))
        came = list(_holding_per_tree(new, [new.trees[r] for r in roots if r in new.trees]))
        if sum(map(len, gone)) + sum(map(len, came)) > self.MOVED_AT_MOST:
            return False   # many trees changed at once: built afresh when next read
        for holding, step in [*((h, -1) for h in gone), *((h, 1) for h in came)]:
            for consumer in holding:
                self._step(consumer, step)
        return True

    def _step(self, consumer, step):
        at = bisect.bisect_left(self.consumers, consumer)
        if at < len(self.consumers) and self.consumers[at] == consumer:
            trees = self.trees[at] + step
            if trees:
                self.trees[at] = trees
            else:
                del self.consumers[at]
                del self.trees[at]
        else:
            trees = step
            self.consumers.insert(at, consumer)
            self.trees.insert(at, trees)
        if trees > 1:
            self.several.add(consumer)
        else:
            self.several.discard(consumer)

    def estimated_size(self):
        return 1000 + 16 * len(self.consumers) + 100 * len(self.several)


def _holding_per_tree(image, trees):
    """For each tree: the consumers holding allocations on its providers
    that do not share (allocations.ledger's rows: consumer, owner,
    provider, class, used)."""
    index = list(image_facets()).index(allocation_ledger.Allocations.key)
    step = allocation_ledger.Allocations.FIELDS
    bit = image.trait_bit(SHARING_TRAIT)
    for tree in trees:
        rows = tree.facets[index]
        if not rows:
            continue
        sharing = () if bit is None else {p.id for p in tree.providers if p.traits >> bit & 1}
        yield {rows[at] for at in range(0, len(rows), step) if rows[at + 2] not in sharing}


def lacking_inventory(allocations=None):
    """Allocations (of `allocations`, else all) of a class their provider
    has no inventory of: Placement refuses to delete inventory in use, so
    the database was changed behind it, or a reshape was cut short."""
    inventory = Inventory.objects.filter(resource_provider_id=OuterRef('resource_provider_id'),
                                         resource_class_id=OuterRef('resource_class_id'))
    return (Allocation.objects if allocations is None else allocations).filter(~Exists(inventory))


def consumers_without_owner():
    """Consumers whose project or user has an empty external id: their
    usage counts for nobody (GET /usages, quotas). Those owners are found
    in their own tables, not by joining both to every consumer."""
    return Consumer.objects.filter(
        Q(project__in=Project.objects.filter(external_id='').values('pk'))
        | Q(user__in=User.objects.filter(external_id='').values('pk')))


def inventories_over_capacity():
    """Inventories whose allocations exceed (total - reserved) *
    allocation_ratio (providers.rules)."""
    return Inventory.objects.over_capacity().annotate(capacity=rules.capacity_sql())


def instances_not_live(live_uuids, listed_at):
    """INSTANCE consumers holding allocations that are not among
    `live_uuids` (normalized uuids, not empty), leaving out those written
    since LIVE_LIST_MARGIN before `listed_at`, when the list was taken."""
    judged_before = listed_at - LIVE_LIST_MARGIN
    return (Consumer.objects
            .filter(consumer_type__name=ConsumerType.INSTANCE, created_at__lt=judged_before)
            .filter(Q(updated_at__isnull=True) | Q(updated_at__lt=judged_before))
            .filter(Exists(Allocation.objects.filter(consumer_id=OuterRef('pk'))))
            .exclude(InStrings(F('uuid'), sorted(live_uuids))))


# ---- the findings, as the command and the page show them ----------------------------------

def _consumer_rows(consumers, *more):
    """The consumers' rows as findings about consumers show them (a
    consumer without a type is 'unknown', as the API reports it)."""
    return consumers.annotate(
        type_name=Coalesce('consumer_type__name', Value(ConsumerType.UNKNOWN)),
    ).values('uuid', 'type_name', 'project__external_id', 'user__external_id', 'generation',
             *more).order_by('pk')


CONSUMER_FIELDS = (('consumer_uuid', 'uuid'), ('consumer_type', 'type_name'),
                   ('project_id', 'project__external_id'), ('user_id', 'user__external_id'),
                   ('generation', 'generation'))

SEVERAL_TREES = 'several_trees'
WITHOUT_INVENTORY = 'without_inventory'
WITHOUT_OWNER = 'without_owner'
OVER_CAPACITY = 'over_capacity'
NOT_LIVE = 'not_live'


def findings(live_uuids=None, listed_at=None, from_ledger=False):
    """Every finding, in the order they are reported; the live list's
    only when a list is given. `from_ledger`: where the dashboards' ledger
    serves the read (a page's), the consumers on several trees are sought
    among those it holds on several (held_on_several_trees), not among
    every consumer: the same rows, without grouping every allocation."""
    among = None
    if from_ledger and allocation_ledger.serves(Allocation.objects.db):
        among = held_on_several_trees(Allocation.objects.db)
    findings = [
        Finding(SEVERAL_TREES, 'Consumers on more than one tree',
                'Consumers that are not migrations hold allocations in more than one '
                'provider tree (sharing providers aside): a move or evacuation that went '
                'wrong left the source host held. Ask nova which host the server is on '
                '(openstack server show) and write its allocations again on that host '
                'alone (PUT /allocations/{uuid} at its generation).',
                CONSUMER_FIELDS + (('trees', 'trees'),),
                _consumer_rows(consumers_on_several_trees(among), 'trees'),
                selector=consumers_on_several_trees(among)),
        Finding(WITHOUT_INVENTORY, 'Allocations without inventory',
                'Allocations of a resource class their provider has no inventory of any '
                'more: the database was changed behind Placement or a reshape was cut '
                'short. The provider\'s usage and capacity do not count them, the '
                'project\'s usage does.',
                (('consumer_uuid', 'consumer__uuid'), ('generation', 'consumer__generation'),
                 ('provider_uuid', 'resource_provider__uuid'),
                 ('provider_name', 'resource_provider__name'),
                 ('resource_class', 'resource_class__name'), ('used', 'used')),
                lacking_inventory().values(
                    'consumer__uuid', 'consumer__generation', 'resource_provider__uuid',
                    'resource_provider__name', 'resource_class__name', 'used',
                ).order_by('consumer_id', 'pk'),
                deleted='these allocations (the consumer keeps its others)',
                selector=lacking_inventory()),
        Finding(WITHOUT_OWNER, 'Consumers without project or user',
                'Consumers whose project or user id is empty: their usage counts for no '
                'project (GET /usages, quotas). Write their allocations again with the '
                'right project_id and user_id.',
                CONSUMER_FIELDS, _consumer_rows(consumers_without_owner()),
                selector=consumers_without_owner()),
        Finding(OVER_CAPACITY, 'Usage over capacity',
                'Inventories whose allocations exceed (total - reserved) * '
                'allocation_ratio, after an inventory change Placement accepted: nothing '
                'more of the class fits there until enough is freed.',
                (('provider_uuid', 'resource_provider__uuid'),
                 ('provider_name', 'resource_provider__name'),
                 ('resource_class', 'resource_class__name'), ('used', 'used'),
                 ('capacity', 'capacity'), ('total', 'total'), ('reserved', 'reserved'),
                 ('allocation_ratio', 'allocation_ratio')),
                inventories_over_capacity().values(
                    'resource_provider__uuid', 'resource_provider__name',
                    'resource_class__name', 'used', 'capacity', 'total', 'reserved',
                    'allocation_ratio').order_by('resource_provider_id', 'resource_class_id'),
                selector=inventories_over_capacity()),
    ]
    if live_uuids is not None:
        findings.append(Finding(
            NOT_LIVE, 'Instances not in the live list',
            'INSTANCE consumers holding allocations that the given list of live servers '
            'does not name: servers deleted, or moved away, while nova could not free '
            'their allocations.',
            CONSUMER_FIELDS + (('allocations', 'allocation_count'), ('created_at', 'created_at')),
            _consumer_rows(instances_not_live(live_uuids, listed_at).annotate(
                allocation_count=count_of(Allocation, 'consumer')),
                'allocation_count', 'created_at'),
            deleted="all the consumer's allocations, and the consumer",
            selector=instances_not_live(live_uuids, listed_at)))
    return findings


# ---- the live list ------------------------------------------------------------------------

class BadLiveList(ValueError):
    pass


def read_live_list(lines):
    """The normalized uuids of a live list: one per line, blank lines and
    `#` comments ignored. Anything else is refused (BadLiveList naming the
    line), and so is a list without a uuid: a list of names, or an empty
    one, would make every instance an orphan."""
    uuids = set()
    for number, line in enumerate(lines, 1):
        text = line.split('#', 1)[0].strip()
        if not text:
            continue
        if not is_uuid_like(text):
            raise BadLiveList(f'line {number} is not a uuid: {text[:80]!r}')
        uuids.add(normalize_uuid(text))
    if not uuids:
        raise BadLiveList('the list names no server: refusing to judge every instance an orphan')
    return uuids
