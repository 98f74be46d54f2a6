"""The database's state around a test step: every row (snapshot, unchanged),
the queries a step makes, a command's result."""
import io
from contextlib import contextmanager

from django.apps import apps
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from providers.candidates import summaries
from providers.models import BooksChange
from providers.models import TreeStamp


def snapshot():
    """Every row of every Placement table, for before/after comparisons
    (not the books' change log nor the tree stamps, which only move on:
    providers.change_log, providers.ledger.stamps)."""
    state = {}
    for app_label in ('providers', 'allocations', 'pods'):
        for model in apps.get_app_config(app_label).get_models():
            if model in (BooksChange, TreeStamp):
                continue
            state[model._meta.db_table] = sorted(
                (tuple(sorted(row.items())) for row in model.objects.values()), key=repr)
    return state


def without_event_log(state):
    """A snapshot without the event log, which keeps the history of what
    was undone."""
    return {table: rows for table, rows in state.items()
            if table not in ('events', 'event_providers')}


@contextmanager
def unchanged():
    """`with unchanged():` the block changes no row of any table (as
    snapshot() sees them)."""
    before = snapshot()
    yield
    assert snapshot() == before


def count_queries(action):
    """How many SQL queries action() makes, with no provider's traits
    remembered (providers.candidates.summaries)."""
    summaries.forget_traits()
    with CaptureQueriesContext(connection) as captured:
        action()
    return len(captured)


def command_result(name, *args):
    """(exit code, output) of `manage.py NAME ARGS`, run in-process."""
    out = io.StringIO()
    try:
        call_command(name, *args, stdout=out)
        code = 0
    except SystemExit as exit:
        code = exit.code
    return code, out.getvalue()
