import logging

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from platform_events.db.listener import listen_until_signalled, poll_seconds_problem
from platform_events.webhooks.dispatch import deliver

logger = logging.getLogger("platform_events.webhooks")


def _deliver_logged() -> None:
    result = deliver()
    if result.claimed:
        logger.info("%s", result.summary())


class Command(BaseCommand):
    help = (
        "Deliver webhooks as soon as they are queued (LISTEN webhook_delivery), polling as a fallback for"
        " retries that come due. Needs a direct connection to PostgreSQL: PgBouncer in transaction mode drops LISTEN."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--poll-seconds", type=float, help="deliver at least this often (default WEBHOOKS_POLL_SECONDS)"
        )

    def handle(self, *args, poll_seconds, **options):
        poll_seconds = poll_seconds if poll_seconds is not None else settings.WEBHOOKS_POLL_SECONDS
        if problem := poll_seconds_problem(poll_seconds):
            raise CommandError(problem)
        self.stdout.write(f"Webhook listener started; polling every {poll_seconds:g}s as a fallback.")
        listen_until_signalled("webhook_delivery", _deliver_logged, poll_seconds=poll_seconds, what="webhook run")
        self.stdout.write("Webhook listener stopped.")
