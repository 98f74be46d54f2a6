"""Builders the pod tests share: pods of fresh providers, filled with real
allocations through the services."""
import uuid as uuid_lib

import pytest

from providers.pods import services
from tests.support.factories import add_allocation
from tests.support.factories import add_provider


class Cloud:
    """Pods made one after another (so their creation times are in order),
    each of new providers in its own aggregate."""

    def __init__(self):
        self.members = {}   # pod name -> [providers]

    def pod(self, name, *members, **fields):
        """A pod whose members have the inventories given (default: one
        compute node of 16 VCPU); fields as pod_create takes them."""
        aggregate = str(uuid_lib.uuid4())
        self.members[name] = [
            add_provider(f'{name}-cn{i}', inventories=inventories, aggregates=[aggregate])
            for i, inventories in enumerate(members or [{'VCPU': {'total': 16}}])]
        return services.pod_create(name=name, aggregate_uuid=aggregate, **fields)

    def fill(self, name, member=0, **amounts):
        """A new consumer holding `amounts` on one of the pod's members."""
        add_allocation(self.members[name][member], **amounts)


@pytest.fixture
def cloud(db):
    return Cloud()
