from django.core.management.base import BaseCommand, CommandError

from tokens.mailroom.drain import drain

MAX_BATCH_SIZE = 10_000


class Command(BaseCommand):
    help = "Mail every due token, once, then exit (for cron). Exits non-zero when the run failed."
    # Run every minute: the system checks (run by manage.py check --deploy and by every other command)
    # would import every page of the site, half of the command's start-up.
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument("--batch-size", type=int, help="tokens claimed per batch (default MAILROOM_BATCH_SIZE)")

    def handle(self, *args, batch_size, **options):
        if batch_size is not None and not 1 <= batch_size <= MAX_BATCH_SIZE:
            # A batch is one SMTP connection and one lease: a huge one would overflow the LIMIT (bigint).
            raise CommandError(f"--batch-size must be between 1 and {MAX_BATCH_SIZE}.")
        result = drain(batch_size=batch_size, on_batch=lambda progress: self.stdout.write(f"  {progress.summary()}"))
        if result.error:
            raise CommandError(f"{result.summary()}; failed: {result.error}")
        self.stdout.write(self.style.SUCCESS(result.summary()))
