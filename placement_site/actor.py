"""Who is making the change being written: the request id, user and project
of the API request (or the admin's staff user) currently served. The event
log stamps every change with it; code outside a request (management
commands, tests) writes as nobody in particular."""
import contextlib
import contextvars
from dataclasses import dataclass


@dataclass(frozen=True)
class Actor:
    request_id: str = None
    user_id: str = None
    project_id: str = None


NOBODY = Actor()
_CURRENT = contextvars.ContextVar('placement_actor', default=NOBODY)


def current():
    return _CURRENT.get()


@contextlib.contextmanager
def acting(actor):
    """Attribute the changes made inside the block to `actor`."""
    token = _CURRENT.set(actor)
    try:
        yield actor
    finally:
        _CURRENT.reset(token)
