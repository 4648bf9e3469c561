import signal

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from tokens.mailroom.listener import listen_and_drain

MAX_POLL_SECONDS = 86_400


class Command(BaseCommand):
    help = (
        "Mail tokens as soon as they are inserted (LISTEN token_insert), polling as a fallback. "
        "Needs a direct connection to PostgreSQL: PgBouncer in transaction mode drops LISTEN."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--poll-seconds", type=float, help="drain at least this often (default MAILROOM_POLL_SECONDS)"
        )

    def handle(self, *args, poll_seconds, **options):
        poll_seconds = poll_seconds if poll_seconds is not None else settings.MAILROOM_POLL_SECONDS
        if not 0 < poll_seconds <= MAX_POLL_SECONDS:  # also refuses nan (a busy loop) and inf
            raise CommandError(f"--poll-seconds must be more than 0 and at most {MAX_POLL_SECONDS} (a day).")
        stop = []
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: stop.append(True))
        self.stdout.write(f"Mailroom listener started; polling every {poll_seconds:g}s as a fallback.")
        listen_and_drain(poll_seconds=poll_seconds, stopping=lambda: bool(stop))
        self.stdout.write("Mailroom listener stopped.")
