import logging
import signal

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from platform_events.db.listener import listen_and_run
from platform_events.webhooks.dispatch import deliver

MAX_POLL_SECONDS = 86_400
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
        if not 0 < poll_seconds <= MAX_POLL_SECONDS:  # also refuses nan (a busy loop) and inf
            raise CommandError(f"--poll-seconds must be more than 0 and at most {MAX_POLL_SECONDS} (a day).")
        stop = []
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: stop.append(True))
        self.stdout.write(f"Webhook listener started; polling every {poll_seconds:g}s as a fallback.")
        listen_and_run(
            "webhook_delivery",
            _deliver_logged,
            poll_seconds=poll_seconds,
            stopping=lambda: bool(stop),
            what="webhook run",
        )
        self.stdout.write("Webhook listener stopped.")
