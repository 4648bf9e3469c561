"""Django's migrate, run as the owner role by default (settings.DATABASES["owner"]): the runtime role
owns nothing and cannot change the schema (docs/security.md, "The database roles"). Once the schema is there, it makes
the audit partitions of this month and the next ones, so that a fresh install never writes audit
rows into the default partition (the daily schedule keeps them ahead from then on)."""

from django.core.management.commands.migrate import Command as DjangoMigrate
from django.db import connections

from platform_events.audit.partitions import MONTHS_AHEAD, ensure_partitions

OWNER_ALIAS = "owner"


class Command(DjangoMigrate):
    help = (
        DjangoMigrate.help
        + f" Runs as the owner role unless --database says otherwise; then makes the audit partitions of this"
        f" month and the next {MONTHS_AHEAD}."
    )

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.set_defaults(database=OWNER_ALIAS)

    def handle(self, *args, **options):
        super().handle(*args, **options)
        using = options["database"]
        if options["plan"] or not _has_partition_function(using):  # a plan only, or migrated back before it
            return
        made = ensure_partitions(using=using)
        if made and options["verbosity"] >= 1:
            self.stdout.write(f"  Made the audit partitions {', '.join(made)}.")


def _has_partition_function(using: str) -> bool:
    with connections[using].cursor() as cursor:
        cursor.execute("SELECT to_regprocedure('audit_ensure_partition(date)') IS NOT NULL")
        return cursor.fetchone()[0]
