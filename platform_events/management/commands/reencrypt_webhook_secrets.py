from django.core.management.base import BaseCommand, CommandError

from platform_events.db.locks import advisory_lock
from platform_events.quantities import quantity
from platform_events.webhooks.endpoints import REENCRYPT_BATCH, reencrypt_secrets
from platform_events.webhooks.secrets import SecretKeyError, current_key_id


class Command(BaseCommand):
    help = (
        "Re-encrypt every webhook secret held under an older key of WEBHOOK_SECRET_KEYS with the current"
        " one, in batches; run it after adding a new key, before removing the old one."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--batch-size",
            type=int,
            default=REENCRYPT_BATCH,
            help=f"endpoints per transaction (default {REENCRYPT_BATCH})",
        )

    def handle(self, *args, batch_size, **options):
        if not 1 <= batch_size <= 10_000:
            raise CommandError("--batch-size must be between 1 and 10000.")
        with advisory_lock("reencrypt_webhook_secrets") as acquired:
            if not acquired:
                raise CommandError("Another reencrypt_webhook_secrets is running; not starting a second one.")
            try:
                done = reencrypt_secrets(
                    batch_size=batch_size,
                    progress=lambda count: self.stdout.write(f"{quantity(count, 'endpoint')} re-encrypted"),
                )
            except SecretKeyError as refusal:
                raise CommandError(str(refusal)) from None
        self.stdout.write(
            self.style.SUCCESS(f"Done: {quantity(done, 'endpoint')} re-encrypted under key {current_key_id()}.")
        )
