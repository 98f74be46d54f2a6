"""Budgets for operator requests (docs/serving.md), so that a heavy page
answers a clear 503 instead of holding a worker, a database connection and
the database's CPU for minutes.

Statements: every query run for a request on the operator pool (with one
pool, for a request to an operator path: placement_site.serving) is cut off
after PLACEMENT_OPERATOR_STATEMENT_TIMEOUT_SECONDS by the database itself:
PostgreSQL's statement_timeout, MariaDB's max_statement_time (MySQL's
max_execution_time), and on SQLite a progress handler that interrupts a
statement past its deadline. The budget is set on a connection before the
request's first query on it (one more round trip on a server, none on
SQLite) and taken off when the request ends (a second), except on the
operator pool, which has no other requests. API requests never pay for it.
Queries read while a streamed answer (an export) is written have it too.

Time: the explorer's candidate search combines request groups in Python,
where no statement timeout reaches (8 isolated groups on 40,000 trees take
tens of seconds); search_time() stops that work when its time is spent.

A query cut off raises OverBudget, not a DatabaseError: code that handles a
database failing (a replica marked down, the scrape's
openstack_placement_up 0) must not take it for one. OverBudgetMiddleware
answers it 503 with Retry-After, in Placement's error format on /capacity,
/metrics and the API's paths, as a page saying what to narrow elsewhere;
one WARNING line in the log, no traceback.
"""
import contextlib
import ctypes
import logging
import sys
import threading
import time

from django.conf import settings
from django.db import DatabaseError
from django.db import connections
from django.http import HttpResponse
from django.template.loader import render_to_string

from placement_site import errors
from placement_site import serving
from placement_site.middleware import is_api_path

LOG = logging.getLogger('placement.budgets')

# Seconds a client should wait before asking again: a page over its budget
# on a busy database may fit once it is quieter.
RETRY_AFTER_SECONDS = 30
# SQLite's virtual-machine steps between two looks at the deadline: a
# fraction of a millisecond.
SQLITE_STEPS = 10_000
# PostgreSQL's query_canceled; MariaDB's max_statement_time and MySQL's
# max_execution_time exceeded.
PG_QUERY_CANCELED = '57014'
MYSQL_CUT_OFF = {1969, 3024}

# What to narrow, by path; pages get PAGE_ADVICE.
ADVICE = {
    '/capacity': 'Ask for less: one aggregate, a coarser group_by, or without resources=.',
    '/capacity/trends': 'Ask for less: fewer days, one aggregate or one resource class.',
    '/metrics': ('PLACEMENT_METRICS_OS_CAPACITY=false leaves out a third of a large '
                 "cloud's scrape."),
}
PAGE_ADVICE = ('Narrow it: filter the list (a pool, a project, a resource class, a name), '
               'show fewer rows or days, or try again when the cloud is less busy.')


class OverBudget(Exception):
    """A query, or the candidate search, ran past its budget and was stopped."""

    what = 'A database query'

    def __init__(self, seconds=None):
        super().__init__(f'{self.what} ran past its budget of {seconds:g} s' if seconds
                         else f'{self.what} ran past its budget')
        self.seconds = seconds


class SearchOverBudget(OverBudget):
    """search_time() raises it in the searching thread (with no arguments)."""

    what = 'The candidate search'


def operator_seconds():
    """The operator budget in seconds (0: none)."""
    return settings.PLACEMENT_OPERATOR_STATEMENT_TIMEOUT_SECONDS


def applies(request):
    """Does every query of this request get the statement budget?"""
    return operator_seconds() > 0 and (settings.PLACEMENT_SERVING_POOL == 'operator'
                                       or serving.is_operator_path(request.path_info))


def cut_off(exc):
    """Is this DatabaseError a statement the budget stopped?"""
    cause = exc.__cause__
    module = type(cause).__module__ if cause is not None else ''
    if module.startswith('psycopg2'):
        return getattr(cause, 'pgcode', None) == PG_QUERY_CANCELED
    if module.startswith('MySQLdb'):
        return bool(cause.args) and cause.args[0] in MYSQL_CUT_OFF
    if module.startswith('sqlite3'):
        return str(cause) == 'interrupted'
    return False


# ---- statements ----------------------------------------------------------------

def _session_sql(connection, raw, seconds):
    """(SQL giving the session's statements `seconds`, SQL taking it off)."""
    if connection.vendor == 'postgresql':
        return f'SET statement_timeout = {round(seconds * 1000)}', 'RESET statement_timeout'
    if 'MariaDB' in raw.get_server_info():
        return (f'SET SESSION max_statement_time = {seconds:g}',
                'SET SESSION max_statement_time = DEFAULT')
    return (f'SET SESSION max_execution_time = {round(seconds * 1000)}',
            'SET SESSION max_execution_time = DEFAULT')


def _run(raw, sql):
    # On the driver's connection: the budget is the connection's set-up,
    # not one of the request's queries (tests/query_counts.json counts those).
    cursor = raw.cursor()
    try:
        cursor.execute(sql)
    finally:
        cursor.close()


class StatementBudget:
    """An execute wrapper, on each of the thread's database connections,
    that gives the connection the budget before its first query and turns a
    query cut off into OverBudget."""

    def __init__(self, seconds):
        self.seconds = seconds
        self.deadline = None   # SQLite's, for the statement under way
        self.armed = {}        # alias -> (connection, the driver's connection armed)

    def __call__(self, execute, sql, params, many, context):
        connection = context['connection']
        if self.armed.get(connection.alias, (None, None))[1] is not connection.connection:
            self._arm(connection)
        self.deadline = time.monotonic() + self.seconds
        try:
            return execute(sql, params, many, context)
        except DatabaseError as exc:
            if cut_off(exc):
                raise OverBudget(self.seconds) from exc
            raise

    def past_deadline(self):
        """SQLite's progress handler: true interrupts the statement."""
        return self.deadline is not None and time.monotonic() > self.deadline

    def _arm(self, connection):
        raw = connection.connection
        if connection.vendor == 'sqlite':
            raw.set_progress_handler(self.past_deadline, SQLITE_STEPS)
        else:
            try:
                _run(raw, _session_sql(connection, raw, self.seconds)[0])
            except connection.Database.Error:
                return   # a transaction that failed already: the query fails as it would
        self.armed[connection.alias] = (connection, raw)

    def release(self, *, keep_session):
        """Take the budget off every connection still open (a server
        session's too, unless `keep_session`)."""
        for connection, raw in self.armed.values():
            if connection.connection is not raw:
                continue   # closed since: the budget went with it
            if connection.vendor == 'sqlite':
                raw.set_progress_handler(None, 0)
            elif not keep_session:
                try:
                    _run(raw, _session_sql(connection, raw, self.seconds)[1])
                except connection.Database.Error:
                    pass   # a failed transaction, whose rollback undoes the SET too
        self.armed.clear()
        self.deadline = None


@contextlib.contextmanager
def statement_budget(seconds):
    """Every query on this thread, on any database, gets `seconds`."""
    budget = StatementBudget(seconds)
    with contextlib.ExitStack() as wrappers:
        for alias in connections:
            wrappers.enter_context(connections[alias].execute_wrapper(budget))
        try:
            yield budget
        finally:
            budget.release(keep_session=settings.PLACEMENT_SERVING_POOL == 'operator')


class StatementBudgetMiddleware:
    """Outer (Django's session and authentication queries are the request's
    too): the budget on for the request, and while a streamed answer is
    written."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if not applies(request):
            return self.get_response(request)
        with statement_budget(operator_seconds()):
            response = self.get_response(request)
        if response.streaming:
            response.streaming_content = _streamed(request, response,
                                                   response.streaming_content, operator_seconds())
        return response


def _streamed(request, response, chunks, seconds):
    """A streamed answer's chunks, read under the budget, each chunk's
    reading given the whole of it. A query cut off ends the answer with a
    line saying so (a compressed one is left cut short: its reader fails)."""
    with statement_budget(seconds) as budget:
        try:
            for chunk in chunks:
                yield chunk
                budget.deadline = None
        except (OverBudget, DatabaseError) as exc:
            if not isinstance(exc, OverBudget) and not cut_off(exc):
                raise
            note(request, exc)
            if not response.has_header('Content-Encoding'):
                yield (f'\n# stopped: a query ran past its budget of {seconds:g} s; '
                       'narrow the list\n').encode()


class OverBudgetMiddleware:
    """Innermost, so that it sees a view's OverBudget before the API's
    fault wrapper makes it a 500."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if isinstance(exception, OverBudget) or (
                isinstance(exception, DatabaseError) and cut_off(exception)):
            return over_budget(request, exception)
        return None


def over_budget(request, exception):
    """The 503 for a request stopped by its budget: Placement's error
    format on /metrics and the API's paths (/capacity among them), a page
    elsewhere. Rendering it reads nothing from the database (whose
    transaction a statement cut off may have failed)."""
    note(request, exception)
    path = request.path_info
    budget = getattr(exception, 'seconds', None) or operator_seconds()
    what = exception.what if isinstance(exception, OverBudget) else OverBudget.what
    if is_api_path(path) or path == '/metrics':
        if request.META.get('HTTP_ACCEPT', '*/*') == '*/*':
            request.META['HTTP_ACCEPT'] = 'application/json'   # as the API's default
        response = errors.render(request, errors.PlacementError(
            503, f'{what} took longer than its budget of {budget:g} s '
                 f'(PLACEMENT_OPERATOR_STATEMENT_TIMEOUT_SECONDS) and was stopped. '
                 f'{ADVICE.get(path, "")}'.strip()))
    else:
        response = HttpResponse(render_to_string('over_budget.html', {
            'what': what, 'seconds': budget, 'advice': PAGE_ADVICE}), status=503)
    return unavailable(response)


def unavailable(response):
    """A 503 over budget as every one is sent: with Retry-After, and logged
    as one WARNING line (note()), not as Django's ERROR."""
    response['Retry-After'] = str(RETRY_AFTER_SECONDS)
    response._has_been_logged = True
    return response


def note(request, exception):
    LOG.warning('Over budget, stopped %s %s (%s): %s', request.method, request.path,
                getattr(request, 'placement_request_id', None) or '-',
                str(exception.__cause__ or exception).strip().splitlines()[0])


# ---- time ----------------------------------------------------------------------

@contextlib.contextmanager
def search_time(seconds, modules):
    """Stop this thread's work in `modules` with SearchOverBudget once
    `seconds` have passed. Only code that reads nothing and holds no lock
    may be listed (the candidate search's matching and combining, pure
    functions of what was read): the exception is raised wherever that
    code is, between two of its steps, by a watching thread."""
    if not seconds:
        yield
        return
    watch = _Watch(threading.get_ident(), seconds, {module.__file__ for module in modules})
    watcher = threading.Thread(target=watch.run, name='search-time', daemon=True)
    watcher.start()
    try:
        yield
    finally:
        watch.finish()


class _Watch:
    POLL_SECONDS = 0.005

    def __init__(self, thread_id, seconds, files):
        self.thread_id, self.seconds, self.files = thread_id, seconds, files
        self.finished = threading.Event()
        self.lock = threading.Lock()   # between raising and finishing
        self.done = self.fired = False

    def run(self):
        if self.finished.wait(self.seconds):
            return
        while True:
            with self.lock:
                if self.done:
                    return
                frame = sys._current_frames().get(self.thread_id)
                if frame is not None and frame.f_code.co_filename in self.files:
                    _raise_in(self.thread_id, SearchOverBudget)
                    self.fired = True
                    return
            if self.finished.wait(self.POLL_SECONDS):
                return

    def finish(self):
        """In the watched thread, leaving: no exception may reach it later."""
        self.finished.set()
        with self.lock:
            self.done = True
            if self.fired:
                _raise_in(self.thread_id, None)   # withdrawn if not raised yet


def _raise_in(thread_id, exception_type):
    """Raise `exception_type` in the thread at its next step (None: withdraw
    one not raised yet)."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(
        ctypes.c_ulong(thread_id), ctypes.py_object(exception_type) if exception_type else None)
