from django.core.management.base import BaseCommand, CommandError

from tokens.mailroom.drain import drain


class Command(BaseCommand):
    help = "Mail every due token, once, then exit (for cron). Exits non-zero when the run failed."

    def add_arguments(self, parser):
        parser.add_argument("--batch-size", type=int, help="tokens claimed per batch (default MAILROOM_BATCH_SIZE)")

    def handle(self, *args, batch_size, **options):
        if batch_size is not None and batch_size < 1:
            raise CommandError("--batch-size must be at least 1.")
        result = drain(batch_size=batch_size, on_batch=lambda progress: self.stdout.write(f"  {progress.summary()}"))
        if result.error:
            raise CommandError(f"{result.summary()}; failed: {result.error}")
        self.stdout.write(self.style.SUCCESS(result.summary()))
