"""The flavors whose "how many more fit" the dashboards count
(PLACEMENT_CAPACITY_FLAVORS): request shapes named as an operator names
them, parsed with `resources=`'s grammar; a bad setting stops the server at
start."""
import functools
from dataclasses import dataclass

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from placement_site import errors
from providers import querystring


@dataclass(frozen=True)
class Flavor:
    name: str
    resources: dict   # class name -> amount

    @property
    def query(self):
        """The shape as `resources=` writes it."""
        return ','.join(f'{name}:{amount}' for name, amount in self.resources.items())


def parse_flavors(text):
    """'small=VCPU:1,MEMORY_MB:2048;medium=...' -> [Flavor]; ValueError
    naming the bad part. Amounts follow `resources=`'s grammar."""
    flavors = []
    for part in (p.strip() for p in text.split(';')):
        if not part:
            continue
        name, sep, shape = (s.strip() for s in part.partition('='))
        if not sep or not name or not shape:
            raise ValueError(f'{part!r} is not name=RESOURCE_CLASS:amount,...')
        if name in {f.name for f in flavors}:
            raise ValueError(f'flavor {name!r} is named twice')
        try:
            resources = querystring.parse_resources(shape)
        except errors.PlacementError as exc:
            raise ValueError(f'flavor {name!r}: {exc.detail}') from None
        flavors.append(Flavor(name, resources))
    return flavors


@functools.lru_cache(maxsize=4)
def _flavors_of(text):
    try:
        return tuple(parse_flavors(text))
    except ValueError as exc:
        raise ImproperlyConfigured(
            f'PLACEMENT_CAPACITY_FLAVORS (placement.conf: [capacity] flavors): {exc} '
            '(expected name=RC:amount,RC:amount;name=...)')


def configured_flavors():
    """settings.PLACEMENT_CAPACITY_FLAVORS, parsed once per value."""
    return _flavors_of(settings.PLACEMENT_CAPACITY_FLAVORS)


# A bad value stops the server at start, not at the first dashboard visit.
configured_flavors()
