import json
import os
import socket
from datetime import UTC, datetime

from django.core.management.base import BaseCommand, CommandError

from accounts.nodes.selectors import assignments_count
from platform_events.refusals import Refused


class Command(BaseCommand):
    help = (
        "Count the live node assignments made by a time (default: last midnight, UTC), in one service or"
        " all, and print one JSON line as tokenserver's count_users does: op sync_count_users, total_users."
    )

    def add_arguments(self, parser):
        parser.add_argument("--service", help="one service (default: all)")
        parser.add_argument(
            "--timestamp", help="count those made by then: milliseconds since 1970, or ISO-8601 (naive is UTC)"
        )
        parser.add_argument("--output", help="append the line to this file (default or '-': standard output)")

    def handle(self, *args, service, timestamp, output, **options):
        as_of = parse_time(timestamp) if timestamp else last_midnight()
        try:
            total = assignments_count(service=service, as_of=as_of)
        except Refused as refusal:
            raise CommandError(str(refusal)) from None
        # tokenserver's line, for the dashboards that read it (a heka filter's fields).
        line = json.dumps(
            {
                "hostname": socket.gethostname(),
                "pid": os.getpid(),
                "op": "sync_count_users",
                "total_users": total,
                "time": as_of.isoformat(),
                "v": 0,
            }
        )
        if output in (None, "-"):
            self.stdout.write(line)
            return
        try:
            with open(output, "a") as file:
                file.write(line + "\n")
        except OSError as error:
            raise CommandError(f"Cannot write to {output}: {error.strerror}.") from None


def parse_time(text: str) -> datetime:
    """--timestamp's value: epoch milliseconds (tokenserver's form) or ISO-8601, naive meaning UTC."""
    text = text.strip()
    try:
        if text.isascii() and text.isdigit():
            return datetime.fromtimestamp(int(text) / 1000, UTC)
        parsed = datetime.fromisoformat(text)
    except (ValueError, OverflowError, OSError):
        raise CommandError(
            f"--timestamp {text!r} is not a time: give milliseconds since 1970 or ISO-8601 (2026-01-31T00:00:00Z)."
        ) from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def last_midnight() -> datetime:
    return datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
