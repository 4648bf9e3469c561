"""Django's migrate, run as the owner role by default (settings.DATABASES["owner"]): the runtime role
owns nothing and cannot change the schema (README, "Security")."""

from django.core.management.commands.migrate import Command as DjangoMigrate

OWNER_ALIAS = "owner"


class Command(DjangoMigrate):
    help = DjangoMigrate.help + " Runs as the owner role unless --database says otherwise."

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.set_defaults(database=OWNER_ALIAS)
