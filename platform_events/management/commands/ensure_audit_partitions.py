from django.core.management.base import BaseCommand, CommandError

from platform_events.audit.partitions import MONTHS_AHEAD, PartitionsBusy, ensure_partitions


class Command(BaseCommand):
    help = (
        "Make the monthly audit_events partitions of this month and the next ones (idempotent; also daily in qcluster)."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--months-ahead", type=int, default=MONTHS_AHEAD, help=f"months after this one (default {MONTHS_AHEAD})"
        )

    def handle(self, *args, months_ahead, **options):
        if not 0 <= months_ahead <= 120:
            raise CommandError("--months-ahead must be between 0 and 120.")
        try:
            made = ensure_partitions(months_ahead=months_ahead)
        except PartitionsBusy as busy:
            raise CommandError(str(busy)) from None
        if made:
            self.stdout.write(self.style.SUCCESS(f"Made {', '.join(made)}."))
        else:
            self.stdout.write("Every partition already exists.")
