"""What allocations adds to the dashboards' image of the cloud
(providers.ledger): each tree's allocations with their consumers' owners,
and the owners' usage summed from them, kept in step as trees change.

Tree stamps (providers.ledger.stamps) step when an allocation is written
or a consumer changes owners (on every tree it holds), and the books'
change log (providers.changes) sees allocations written without inventory
behind them too, so the image reads again exactly the trees whose
allocations changed.
"""
import array
import typing

from providers.ledger import stamps

# The tables whose writes step tree stamps, beside providers' own.
STAMPED = [
    stamps.through_provider('allocations'),
    stamps.Watched('consumers', 'rp.root_provider_id',
                   'allocations a JOIN resource_providers rp ON rp.id = a.resource_provider_id',
                   'a.consumer_id = {row}.id', columns=('project_id', 'user_id', 'consumer_type_id')),
]
# ... and the books' change log (allocations on a provider without inventory
# of their class touch no inventory row).
CHANGES_WATCHED = {'allocations': None}


class Allocations:
    """The ledger facet: each tree's allocations as one flat array of
    (consumer, owner, provider, class, used) five at a time, an owner being
    an index into `owners` ((project id, user id, consumer type id or -1),
    each held once per process)."""
    key = 'allocations'
    FIELDS = 5
    # (project, user, type) -> index, and back: shared by every image of the process.
    owners: typing.ClassVar[dict] = {}
    owner_list: typing.ClassVar[list] = []

    @classmethod
    def owner(cls, project, user, consumer_type):
        key = (project, user, -1 if consumer_type is None else consumer_type)
        index = cls.owners.get(key)
        if index is None:
            index = cls.owners[key] = len(cls.owner_list)
            cls.owner_list.append(key)
        return index

    @classmethod
    def read(cls, rows, roots, present):
        """{root: array} of the trees `roots` (None: all), rows:
        providers.ledger.image.streamed; `present`: the roots the image found."""
        where, params = '', []
        if roots is not None:
            where = f' WHERE rp.root_provider_id IN ({", ".join(["%s"] * len(roots))})'
            params = list(roots)
        found = {}
        for root, consumer, project, user, consumer_type, provider, class_id, used in rows(
                'SELECT rp.root_provider_id, a.consumer_id, c.project_id, c.user_id, '
                'c.consumer_type_id, a.resource_provider_id, a.resource_class_id, a.used '
                'FROM allocations a JOIN consumers c ON c.id = a.consumer_id '
                f'JOIN resource_providers rp ON rp.id = a.resource_provider_id{where}', params):
            if root in present:
                rows = found.get(root)
                if rows is None:
                    rows = found[root] = array.array('q')
                rows.extend((consumer, cls.owner(project, user, consumer_type), provider,
                             class_id, used))
        return found
