from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandError
from django.db import connection, transaction
from django.utils.crypto import get_random_string

from accounts.models import Account
from lifecycle.configuration import env
from lifecycle.roles import ensure_roles

DEMO_DOMAIN = "demo.example.com"


class Command(BaseCommand):
    help = "Load demo accounts in every state (once) and make sure local staff logins exist (admin, support, auditor); print them."

    def add_arguments(self, parser):
        parser.add_argument("--force", action="store_true", help="run even when DEBUG is off")

    def handle(self, *args, force, **options):
        if not settings.DEBUG and not force:
            raise CommandError(
                "seed_demo makes a known admin login and fake accounts; it runs only with DEBUG on (or --force)."
            )
        # The factories live with the tests and depend on factory-boy, a runtime dependency for this reason.
        from lifecycle.factories import AccountFactory

        with transaction.atomic():
            if Account.objects.filter(email__endswith=f"@{DEMO_DOMAIN}").exists():
                self.stdout.write("Demo accounts already loaded.")
            else:
                made = self._make_accounts(AccountFactory)
                self.stdout.write(self.style.SUCCESS(f"Loaded {made} demo accounts."))
            logins = self._ensure_staff()
        for role, (username, password) in logins.items():
            self.stdout.write(self.style.SUCCESS(f"{role} login: {username} / {password}"))

    def _make_accounts(self, factory) -> int:
        plan = [
            ("provisioned", {}, 30),
            ("active", {"active": True}, 100),
            ("suspended", {"suspended": True}, 15),
            ("never-active", {"suspended": True, "was_activated": False}, 5),
        ]
        made = 0
        for label, traits, count in plan:
            for n in range(1, count + 1):
                factory(email=f"{label}{n}@{DEMO_DOMAIN}", login=f"{label}{n}", **traits)
                made += 1
        # Spread the sign-ups over the last 30 days, so the dashboard's chart has something to draw.
        with connection.cursor() as cursor:
            cursor.execute(
                """
                UPDATE accounts SET created_at = created_at - shift, status_changed_at = status_changed_at - shift,
                                    activated_at = activated_at - shift
                FROM (SELECT id, make_interval(days => ((id * 7919) %% 30)::int, mins => ((id * 104729) %% 600)::int) AS shift
                      FROM accounts WHERE email LIKE %s) spread
                WHERE accounts.id = spread.id
                """,
                [f"%@{DEMO_DOMAIN}"],
            )
        return made

    def _ensure_staff(self) -> dict[str, tuple[str, str]]:
        # make run writes DEMO_ADMIN_PASSWORD to .env once, so the logins stay the same between runs.
        password = env.str("DEMO_ADMIN_PASSWORD", default="") or get_random_string(16)
        ensure_roles()
        logins = {}
        for role, username, group in [
            ("Admin", "admin", None),
            ("Support", "support", "Support"),
            ("Auditor", "auditor", "Auditor"),
        ]:
            user, _ = get_user_model().objects.get_or_create(
                username=username, defaults={"email": f"{username}@localhost"}
            )
            user.is_staff = True
            user.is_superuser = group is None
            user.set_password(password)
            user.save()
            if group:
                user.groups.set([Group.objects.get(name=group)])
            logins[role] = (username, password)
        return logins
