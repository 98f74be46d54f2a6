"""manage.py prune_events: delete events the dispatcher has sent, once they
are older than --older-than-days; unsent events are never deleted (they
have yet to go out). Run it from cron to keep the event log bounded."""
from datetime import timedelta

from django.core.management.base import BaseCommand
from django.core.management.base import CommandError
from django.db import transaction
from django.utils import timezone

from providers.models import Event


class Command(BaseCommand):
    help = 'Delete sent events older than a number of days.'

    def add_arguments(self, parser):
        parser.add_argument('--older-than-days', type=float, required=True,
                            help='delete sent events created more than this many days ago')

    def handle(self, *, older_than_days, **options):
        if older_than_days < 0:
            raise CommandError('--older-than-days must not be negative')
        cutoff = timezone.now() - timedelta(days=older_than_days)
        with transaction.atomic():
            # The events' provider rows go with them (ON DELETE CASCADE in Django).
            deleted, by_model = Event.objects.filter(
                sent_at__isnull=False, created_at__lt=cutoff).delete()
        self.stdout.write(f'Deleted {by_model.get("providers.Event", 0)} sent event(s) created '
                          f'before {cutoff:%Y-%m-%d %H:%M:%S} UTC.')
