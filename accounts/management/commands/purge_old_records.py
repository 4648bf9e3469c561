from datetime import timedelta

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from accounts.nodes.purge import PurgeStopped, UidRange, purge_old_records
from platform_events.quantities import quantity
from platform_events.refusals import Refused

MAX_PER_LOOP = 10_000
# Ten years: a longer grace period purges nothing in this system's life, and past Python's dates it was a traceback.
MAX_GRACE_PERIOD = 10 * 365 * 86400


class Command(BaseCommand):
    help = (
        "Delete replaced node assignments past a grace period, after telling their storage node to delete"
        " the data (tokenserver's purge_old_records, one run). Rows on downed nodes wait unless --force."
        " The delete requests are signed with NODE_SECRET; without it, rows on up nodes are kept."
    )

    def add_arguments(self, parser):
        parser.add_argument("--service", help="one service (default: every service)")
        parser.add_argument(
            "--grace-period", type=int, default=86400, help="seconds since replacement to wait (default 86400)"
        )
        parser.add_argument("--max-per-loop", type=int, default=10, help="rows per batch (default 10)")
        parser.add_argument(
            "--max-records", type=int, default=0, help="stop after this many rows with data on a node (default 0: all)"
        )
        parser.add_argument(
            "--request-timeout", type=float, default=60.0, help="seconds to wait for a node's answer (default 60)"
        )
        parser.add_argument("--dry-run", action="store_true", help="count what would be done; send and change nothing")
        parser.add_argument("--force", action="store_true", help="purge rows on downed nodes too")
        parser.add_argument(
            "--override-node", help="with --force: send downed nodes' deletes to this node (where the data was copied)"
        )
        # tokenserver's options: several purgers split a backlog, each its own range of uids.
        parser.add_argument("--range-start", type=int, default=0, help="the first uid to purge (default 0)")
        parser.add_argument("--range-end", type=int, help="purge uids below this one (default: no end)")

    def handle(
        self,
        *args,
        grace_period,
        max_per_loop,
        max_records,
        request_timeout,
        override_node,
        range_start,
        range_end,
        **options,
    ):
        if not 0 <= grace_period <= MAX_GRACE_PERIOD:
            raise CommandError(f"--grace-period must be 0 or more seconds, at most {MAX_GRACE_PERIOD} (ten years).")
        if not 1 <= max_per_loop <= MAX_PER_LOOP:
            raise CommandError(f"--max-per-loop must be between 1 and {MAX_PER_LOOP}.")
        if max_records < 0:
            raise CommandError("--max-records must be 0 (no limit) or more.")
        if not 0 < request_timeout <= 3600:
            raise CommandError("--request-timeout must be more than 0 and at most 3600 seconds.")
        if range_start < 0:
            raise CommandError("--range-start must be 0 or more (a uid).")
        if range_end is not None and range_end <= range_start:
            raise CommandError(
                f"--range-end must be above --range-start ({range_start}): the range is the uids from --range-start"
                " up to, not including, --range-end."
            )
        if override_node and not options["force"]:
            raise CommandError("--override-node applies to rows on downed nodes: give --force too.")
        if not settings.NODE_SECRET:
            self.stdout.write(
                self.style.WARNING(
                    "NODE_SECRET is not set: rows on up nodes are kept, since their nodes cannot be told to delete"
                    " the data. Set NODE_SECRET (the nodes' shared secret) to purge them."
                )
            )
        try:
            counts = purge_old_records(
                service=options["service"],
                node_secret=settings.NODE_SECRET,
                grace_period=timedelta(seconds=grace_period),
                max_per_loop=max_per_loop,
                max_records=max_records,
                request_timeout=request_timeout,
                dry_run=options["dry_run"],
                force=options["force"],
                override_node=override_node,
                uids=UidRange(range_start, range_end),
                progress=self.stdout.write,
            )
        except PurgeStopped as stopped:
            raise CommandError(
                f"{stopped} Done before it: {stopped.counts.describe()}. Each row is purged whole or not at all;"
                " run it again."
            ) from None
        except Refused as refusal:
            raise CommandError(str(refusal)) from None
        style = self.style.WARNING if counts.failed or counts.skipped_no_secret else self.style.SUCCESS
        ended = " Stopped at --max-records." if counts.reached_max_records else ""
        self.stdout.write(
            style(
                f"Done in {quantity(counts.batches, 'batch', 'batches')}: {counts.describe()}.{ended}{' Dry run: nothing changed, nothing sent.' if counts.dry_run else ''}"
            )
        )
