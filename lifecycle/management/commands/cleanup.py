from django.core.management.base import BaseCommand, CommandError

from lifecycle.ops.retention import apply_retention, retention_rules
from platform_events.db.locks import advisory_lock

MAX_BATCH_SIZE = 100_000


class Command(BaseCommand):
    help = (
        "Delete what the retention rules no longer keep (abandoned sign-ups, old tokens, mail runs, rate-limit"
        " counts, sessions, access log, task results), in batches. Daily in qcluster; for cron too."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="count what each rule would delete, delete nothing")
        parser.add_argument("--batch-size", type=int, default=1000, help="rows deleted per transaction (default 1000)")
        parser.add_argument(
            "--only",
            action="append",
            metavar="RULE",
            help=f"apply only this rule (repeatable): {', '.join(rule.name for rule in retention_rules())}",
        )

    def handle(self, *args, dry_run, batch_size, only, **options):
        if not 1 <= batch_size <= MAX_BATCH_SIZE:
            raise CommandError(f"--batch-size must be between 1 and {MAX_BATCH_SIZE}.")
        rules = retention_rules()
        names = [rule.name for rule in rules]
        if unknown := sorted(set(only or []) - set(names)):
            raise CommandError(f"--only: no rule named {', '.join(unknown)}; the rules are {', '.join(names)}.")
        rules = [rule for rule in rules if not only or rule.name in only]
        if dry_run:
            for rule in rules:
                self.stdout.write(f"{rule.name}: would delete {rule.count()} (keeps {rule.keeps})")
            return
        with advisory_lock("cleanup") as acquired:
            if not acquired:
                raise CommandError("Another cleanup is running; not starting a second one.")
            self.stdout.write(self.style.SUCCESS(apply_retention(rules, batch_size=batch_size, say=self.stdout.write)))
