"""What the service tests share: refusals that must change nothing."""
from contextlib import contextmanager

import pytest

CONCURRENT = ('Another thread concurrently updated the resource provider data. '
              'Please retry your update')


@pytest.fixture
def refused(db_snapshot):
    """`with refused(Error, message):` the block raises exactly Error with
    that message, and no row of any table changed."""
    @contextmanager
    def refused(error, message):
        before = db_snapshot()
        with pytest.raises(error) as caught:
            yield caught
        assert type(caught.value) is error
        assert str(caught.value) == message
        assert db_snapshot() == before
    return refused
