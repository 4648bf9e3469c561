from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.utils.crypto import get_random_string

from lifecycle.configuration import env
from lifecycle.demo import demo_accounts_loaded, ensure_staff_logins, load_demo_accounts


class Command(BaseCommand):
    help = "Load demo accounts in every state (once) and make sure local staff logins exist (admin, support, auditor); print them."

    def add_arguments(self, parser):
        parser.add_argument("--force", action="store_true", help="run even when DEBUG is off")

    def handle(self, *args, force, **options):
        if not settings.DEBUG and not force:
            raise CommandError(
                "seed_demo makes a known admin login and fake accounts; it runs only with DEBUG on (or --force)."
            )
        # make run writes DEMO_ADMIN_PASSWORD to .env once, so the logins stay the same between runs.
        password = env.str("DEMO_ADMIN_PASSWORD", default="") or get_random_string(16)
        with transaction.atomic():
            if demo_accounts_loaded():
                self.stdout.write("Demo accounts already loaded.")
            else:
                self.stdout.write(self.style.SUCCESS(f"Loaded {load_demo_accounts()} demo accounts."))
            logins = ensure_staff_logins(password)
        for role, (username, password) in logins.items():
            self.stdout.write(self.style.SUCCESS(f"{role} login: {username} / {password}"))
