"""manage.py snapshot_usage: take one snapshot of capacity and use per
resource class, for the whole cloud and for every pool, and delete those
older than PLACEMENT_TREND_RETENTION_DAYS. Run it from cron or a systemd
timer (docs/trends.md); the dashboards' charts and GET /capacity/trends
read the snapshots."""
from django.core.management.base import BaseCommand

from providers import trends


class Command(BaseCommand):
    help = 'Snapshot capacity and usage per resource class for the cloud and every pool.'

    def add_arguments(self, parser):
        parser.add_argument('--if-due', action='store_true',
                            help='only if the newest snapshot is PLACEMENT_TREND_INTERVAL_MINUTES '
                                 'old or older (as the notification dispatcher decides)')

    def handle(self, *, if_due, **options):
        written = trends.snapshot_if_due() if if_due else trends.snapshot_take()
        if written is None:
            self.stdout.write('A recent snapshot exists; none taken.')
        else:
            self.stdout.write(f'Took a snapshot: {written} row(s).')
