from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from platform_events.db.listener import poll_seconds_problem
from tokens.mailroom.listener import listen_and_drain


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
        if problem := poll_seconds_problem(poll_seconds):
            raise CommandError(problem)
        self.stdout.write(f"Mailroom listener started; polling every {poll_seconds:g}s as a fallback.")
        listen_and_drain(poll_seconds=poll_seconds)
        self.stdout.write("Mailroom listener stopped.")
