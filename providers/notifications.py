"""Change notifications: the event log sent as OpenStack versioned
notifications through oslo.messaging.

Events are written with the changes (providers.events); this module sends
the unsent ones in id order and stamps each as sent once the notifier has
taken it. A broker outage therefore loses nothing: the events wait in the
database and go out, in order, when it is back. A crash between sending and
stamping sends that event again (at least once, never lost).

Order: every change that bumps a provider's generation writes its event
while it holds the provider's row lock, so a later change to the same
provider always has a higher event id; sending in id order keeps each
provider's notifications in order.
"""
import logging
import threading
import warnings

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import connection
from django.utils import timezone
from oslo_config import cfg
from oslo_context import context as oslo_context

from providers import events
from providers.models import Event

with warnings.catch_warnings():
    # oslo.messaging imports oslo.service, which imports eventlet, which
    # warns that it is deprecated; we use neither.
    warnings.simplefilter('ignore')
    import oslo_messaging

LOG = logging.getLogger('placement.notifications')
PUBLISHER_ID = 'placement'
PAYLOAD_VERSION = '1.0'
# Connection attempts per send before the dispatcher gives up on the broker
# for a while (oslo.messaging's default, -1, would block forever).
SEND_RETRY = 1
# oslo.messaging logs, rather than raises, a notification it could not send.
_NOTIFIER_LOGGER = 'oslo_messaging.notify.messaging'
# Any number, as long as no one else uses it: only one dispatcher sends.
_DISPATCHER_LOCK = 0x706c6163


def payload_name(event_type):
    return 'AllocationPayload' if event_type.startswith('allocation.') else \
        'ResourceProviderPayload'


def notification(event):
    """(context, event type, payload) of an event, as a versioned
    notification: the payload is a versioned object in OpenStack's form."""
    # A context object, not a dict: oslo.messaging drops a dict context.
    context = oslo_context.RequestContext(
        user_id=event.user_id, project_id=event.project_id,
        request_id=event.request_id, overwrite=False)
    payload = {
        'placement_object.name': payload_name(event.event_type),
        'placement_object.namespace': 'placement',
        'placement_object.version': PAYLOAD_VERSION,
        # The event as GET /events shows it; its id lets a consumer drop a
        # notification it has already seen (delivery is at least once).
        'placement_object.data': {key: value for key, value in events.describe(event).items()
                                  if key != 'sent_at'},
    }
    return context, event.event_type, payload


class _Failures(logging.Handler):
    """The errors oslo.messaging logs while a notification is sent."""

    def __init__(self):
        super().__init__(logging.ERROR)
        self.reasons = []
        self.thread = threading.get_ident()

    def emit(self, record):
        if threading.get_ident() == self.thread:
            cause = record.exc_info[1] if record.exc_info else None
            self.reasons.append(str(cause) if cause else record.getMessage())


class Sender:
    """An oslo.messaging Notifier for the configured driver, which tells
    whether each notification went out."""

    def __init__(self, driver=None, transport_url=None, topics=None):
        self.driver = driver or settings.PLACEMENT_NOTIFICATIONS_DRIVER
        url = transport_url or settings.PLACEMENT_TRANSPORT_URL
        if self.driver == 'messagingv2' and not url:
            raise ImproperlyConfigured(
                'PLACEMENT_NOTIFICATIONS_DRIVER=messagingv2 needs PLACEMENT_TRANSPORT_URL')
        conf = cfg.ConfigOpts()
        conf([], project='placement', default_config_files=[], default_config_dirs=[])
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')  # eventlet's deprecation, as above
            # 'log' and 'noop' never touch the transport.
            self.transport = oslo_messaging.get_notification_transport(
                conf, url=url if self.driver == 'messagingv2' else 'fake://')
            self.notifier = oslo_messaging.Notifier(
                self.transport, publisher_id=PUBLISHER_ID, driver=self.driver,
                topics=topics or settings.PLACEMENT_NOTIFICATIONS_TOPICS, retry=SEND_RETRY)

    @property
    def enabled(self):
        return self.driver != 'noop'

    def send(self, event):
        """Send one event; True once the notifier has taken it."""
        context, event_type, payload = notification(event)
        failures = _Failures()
        notifier_log = logging.getLogger(_NOTIFIER_LOGGER)
        notifier_log.addHandler(failures)
        # Its traceback would repeat on every retry; we log the reason once.
        notifier_log.propagate = False
        try:
            self.notifier.info(context, event_type, payload)
        finally:
            notifier_log.removeHandler(failures)
            notifier_log.propagate = True
        if failures.reasons:
            LOG.warning('Could not send event %s (%s): %s', event.pk, event_type,
                        failures.reasons[-1])
            return False
        return True

    def close(self):
        self.transport.cleanup()


def send_pending(sender, *, batch=100):
    """Send unsent events in id order, stamping each as sent, until none is
    left or one fails (the rest wait, to keep the order).

    Returns (sent, failed).
    """
    sent = 0
    while True:
        pending = list(Event.objects.unsent().order_by('pk').prefetch_related('providers')[:batch])
        if not pending:
            return sent, False
        for event in pending:
            if not sender.send(event):
                return sent, True
            Event.objects.filter(pk=event.pk).update(sent_at=timezone.now())
            sent += 1


def dispatcher_lock():
    """On PostgreSQL and MySQL, wait to become the only dispatcher (a second
    one is a hot standby); on SQLite run one dispatcher per database."""
    with connection.cursor() as cursor:
        if connection.vendor == 'postgresql':
            cursor.execute('SELECT pg_advisory_lock(%s)', [_DISPATCHER_LOCK])
        elif connection.vendor == 'mysql':
            # Named locks are the server's, not the database's: named after
            # the database. GET_LOCK waits at most its timeout (1 = taken).
            while True:
                cursor.execute("SELECT GET_LOCK(CONCAT(LEFT(DATABASE(), 40), %s), 3600)",
                               [f'.dispatcher.{_DISPATCHER_LOCK:x}'])
                if cursor.fetchone()[0] == 1:
                    return
