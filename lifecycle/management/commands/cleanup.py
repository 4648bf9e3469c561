from argparse import RawDescriptionHelpFormatter
from textwrap import fill

from django.core.management.base import BaseCommand, CommandError, DjangoHelpFormatter

from lifecycle.ops.retention import apply_retention, retention_rules
from platform_events.db.locks import advisory_lock

MAX_BATCH_SIZE = 100_000


class RuleListFormatter(DjangoHelpFormatter, RawDescriptionHelpFormatter):
    """Django's order of options, and the description's lines as written: one paragraph per rule."""


class Command(BaseCommand):
    @property
    def help(self) -> str:
        # Each rule from the registry itself, so the help names every rule there is.
        rules = "\n".join(
            fill(
                f"{rule.name}: keeps {rule.keeps}",
                width=79,
                initial_indent="  ",
                subsequent_indent="    ",
                break_on_hyphens=False,
            )
            for rule in retention_rules()
        )
        return (
            "Delete what the retention rules no longer keep, in batches. Daily in qcluster; for cron\n"
            f"too. The rules, in the order they are applied (--only takes their names):\n{rules}"
        )

    def create_parser(self, prog_name, subcommand, **kwargs):
        return super().create_parser(prog_name, subcommand, formatter_class=RuleListFormatter, **kwargs)

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="count what each rule would delete, delete nothing")
        parser.add_argument("--batch-size", type=int, default=1000, help="rows deleted per transaction (default 1000)")
        parser.add_argument(
            "--only", action="append", metavar="RULE", help="apply only the rule of this name (repeatable)"
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
