from datetime import timedelta

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from accounts.selectors import abandoned_sign_ups_count
from accounts.services import accounts_sweep_abandoned
from platform_events.db.locks import advisory_lock

MAX_DAYS = 36_500
MAX_BATCH_SIZE = 100_000


class Command(BaseCommand):
    help = "Delete sign-ups that never activated, so unverified accounts do not pile up (seed 003). For cron."

    def add_arguments(self, parser):
        parser.add_argument(
            "--older-than-days", type=int, default=7, help="age of the sign-up and of its last token (default 7)"
        )
        parser.add_argument(
            "--batch-size", type=int, default=1000, help="accounts deleted per transaction (default 1000)"
        )
        parser.add_argument("--dry-run", action="store_true", help="count what would be deleted, delete nothing")

    def handle(self, *args, older_than_days, batch_size, dry_run, **options):
        if older_than_days < 1:
            raise CommandError("--older-than-days must be at least 1: tokens of younger sign-ups may still be in use.")
        if older_than_days > MAX_DAYS:  # the cut-off date would fall before year 1
            raise CommandError(f"--older-than-days must be at most {MAX_DAYS} (100 years).")
        if not 1 <= batch_size <= MAX_BATCH_SIZE:
            raise CommandError(f"--batch-size must be between 1 and {MAX_BATCH_SIZE}.")
        created_before = timezone.now() - timedelta(days=older_than_days)
        if dry_run:
            count = abandoned_sign_ups_count(created_before=created_before)
            self.stdout.write(f"Would delete {count} sign-up(s) never activated since {created_before:%Y-%m-%d %H:%M}.")
            return
        with advisory_lock("sweep_signups") as acquired:
            if not acquired:
                raise CommandError("Another sweep_signups is running; not starting a second one.")
            deleted = accounts_sweep_abandoned(
                created_before=created_before,
                batch_size=batch_size,
                on_progress=lambda done: self.stdout.write(f"  {done} deleted so far"),
            )
        self.stdout.write(
            self.style.SUCCESS(f"Deleted {deleted} sign-up(s) never activated since {created_before:%Y-%m-%d %H:%M}.")
        )
