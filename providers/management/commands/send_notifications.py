"""manage.py send_notifications: send the event log's unsent events as
notifications (PLACEMENT_NOTIFICATIONS_DRIVER, PLACEMENT_TRANSPORT_URL), in
order, marking each sent.

After sending changes it also takes a usage-trend snapshot when the newest
is PLACEMENT_TREND_INTERVAL_MINUTES old (providers.trends).

Runs as a service (a loop that waits --interval seconds when there is
nothing to send or the broker is unreachable), or with --once until nothing
is left (exit status 1 if the broker could not be reached).
"""
import time

from django.core.management.base import BaseCommand
from django.core.management.base import CommandError

from providers import notifications
from providers import trends


class Command(BaseCommand):
    help = 'Send the unsent events of the event log as notifications, in order.'

    def add_arguments(self, parser):
        parser.add_argument('--once', action='store_true',
                            help='send what is pending and stop, instead of running as a service')
        parser.add_argument('--interval', type=float, default=2.0,
                            help='seconds to wait when idle or after a failed send (default 2)')
        parser.add_argument('--batch', type=int, default=100,
                            help='events read per query (default 100)')

    def handle(self, *, once, interval, batch, **options):
        sender = notifications.Sender()
        if not sender.enabled:
            self.stdout.write('Notifications are off (PLACEMENT_NOTIFICATIONS_DRIVER=noop): '
                              'nothing to send.')
            return
        notifications.dispatcher_lock()
        try:
            while True:
                sent, failed = notifications.send_pending(sender, batch=batch)
                if sent:
                    self.stdout.write(f'Sent {sent} notification(s).')
                    # The books changed: keep the usage trends current between timer runs.
                    trends.snapshot_if_due()
                if once:
                    if failed:
                        raise CommandError('Could not send every notification (is the broker '
                                           'up?); the rest stay queued.')
                    return
                if failed:
                    self.stderr.write('Could not send a notification; retrying in '
                                      f'{interval:g} s.')
                if failed or not sent:
                    time.sleep(interval)
                self.stdout.flush()
        except KeyboardInterrupt:
            pass
        finally:
            sender.close()
