from django.core.management.base import BaseCommand, CommandError

from platform_events.webhooks.dispatch import deliver

MAX_BATCH_SIZE = 10_000


class Command(BaseCommand):
    help = (
        "Deliver every due webhook once, then exit (for cron; any number may run at once). What fails is"
        " retried on its schedule by a later run."
    )

    def add_arguments(self, parser):
        parser.add_argument("--batch-size", type=int, help="deliveries claimed per batch (default WEBHOOKS_BATCH_SIZE)")

    def handle(self, *args, batch_size, **options):
        if batch_size is not None and not 1 <= batch_size <= MAX_BATCH_SIZE:
            raise CommandError(f"--batch-size must be between 1 and {MAX_BATCH_SIZE}.")
        result = deliver(batch_size=batch_size, on_batch=lambda progress: self.stdout.write(f"  {progress.summary()}"))
        self.stdout.write(self.style.SUCCESS(result.summary()))
