from itertools import combinations

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from lifecycle.configuration import env
from lifecycle.demo.data import STAFF, demo_accounts_loaded, ensure_staff_logins, load_demo_accounts
from platform_events.quantities import quantity


class Command(BaseCommand):
    help = (
        "Load demo accounts in every state (once) and make the local staff logins (admin, support, auditor, integrator, privacy) that are"
        " missing, each with its own password, printed once. Never resets an existing login's password."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--force", action="store_true", help="run even when DEBUG is off (existing logins untouched)"
        )

    def handle(self, *args, force, **options):
        if not settings.DEBUG and not force:
            raise CommandError(
                "seed_demo makes a known admin login and fake accounts; it runs only with DEBUG on (or --force)."
            )
        # make run writes DEMO_*_PASSWORD to .env once: each login its own (Support must not know the admin's).
        passwords = {role: env.str(variable, default="") for role, _, _, variable in STAFF}
        given = [(variable, passwords[role]) for role, _, _, variable in STAFF if passwords[role]]
        for (variable, password), (other, other_password) in combinations(given, 2):
            if password == other_password:
                raise CommandError(f"{variable} and {other} hold the same password: each staff login needs its own.")
        with transaction.atomic():
            if demo_accounts_loaded():
                self.stdout.write("Demo accounts already loaded.")
            else:
                self.stdout.write(self.style.SUCCESS(f"Loaded {quantity(load_demo_accounts(), 'demo account')}."))
            logins = ensure_staff_logins(passwords)
        for role, (username, password) in logins.items():
            if password is None:
                self.stdout.write(f"{role} login: {username} (exists; password unchanged, see .env for the first one)")
            else:
                self.stdout.write(self.style.SUCCESS(f"{role} login: {username} / {password}"))
