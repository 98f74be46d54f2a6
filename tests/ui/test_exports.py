"""The dashboards' exports are paced (allocations.ui.exports.chunks): an
export works PLACEMENT_EXPORT_DUTY of its time and waits the rest between
chunks, so its database work leaves room for the claims."""
import pytest

from allocations.ui import exports
from providers.models import ResourceClass


class Clock:
    """time.monotonic and time.sleep for exports, moved by hand."""

    def __init__(self):
        self.now, self.slept = 100.0, []

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        self.slept.append(seconds)
        self.now += seconds


@pytest.fixture
def clock(monkeypatch):
    found = Clock()
    monkeypatch.setattr(exports.time, 'monotonic', found.monotonic)
    monkeypatch.setattr(exports.time, 'sleep', found.sleep)
    return found


@pytest.mark.parametrize('duty, waits', [(0.5, [2.0, 3.0]), (0.25, [6.0, 9.0]), (1.0, [])])
def test_an_export_waits_its_share_after_each_chunk(db, settings, clock, duty, waits):
    settings.PLACEMENT_EXPORT_DUTY = duty
    every = ResourceClass.objects.order_by('id')
    read = []
    for index, chunk in enumerate(exports.chunks(every, size=3)):
        read += chunk
        if index < 2:
            clock.now += (2.0, 3.0)[index]   # writing the chunk took this long
    assert read == list(every)   # every row, in order
    assert len(read) > 6
    assert clock.slept[:2] == pytest.approx(waits)
