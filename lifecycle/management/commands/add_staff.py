import sys

from django.core.management.base import BaseCommand, CommandError

from lifecycle.backoffice.roles import ROLES
from lifecycle.backoffice.staff import StaffRefused, generated_password, staff_add

# The role as typed (support) -> its group (Support).
ROLE_CHOICES = {name.lower(): name for name in ROLES}


class Command(BaseCommand):
    help = (
        "Make a staff login in one role and print its password once (generated), or take the password from stdin."
        " Roles: "
        + " ".join(f"{typed} ({role.may})." for typed, role in zip(ROLE_CHOICES, ROLES.values(), strict=True))
        + " A superuser, who may do everything, is made by manage.py createsuperuser."
    )
    stealth_options = ("stdin",)

    def add_arguments(self, parser):
        parser.add_argument("login", help="the username to sign in with")
        parser.add_argument("--role", required=True, metavar="ROLE", help=f"one of {', '.join(ROLE_CHOICES)}")
        parser.add_argument(
            "--password-stdin",
            action="store_true",
            help="read the password from the first line of stdin (checked like any staff password) instead of making one",
        )
        parser.add_argument("--reason", help="why, for the audit trail (default: manage.py add_staff)")

    def handle(self, *args, login, role, password_stdin, reason, **options):
        if role.lower() not in ROLE_CHOICES:
            raise CommandError(f"--role: no role named {role!r}; the roles are {', '.join(ROLE_CHOICES)}.")
        password = self._read_password(options.get("stdin") or sys.stdin) if password_stdin else generated_password()
        try:
            user = staff_add(
                login=login,
                role=ROLE_CHOICES[role.lower()],
                password=password,
                actor=None,  # the operator at the shell: audited as the database role, with the reason
                reason=reason or "manage.py add_staff",
            )
        except StaffRefused as refusal:
            raise CommandError(str(refusal)) from None
        group = ROLE_CHOICES[role.lower()]
        self.stdout.write(self.style.SUCCESS(f"Made staff login {user.username} ({group}: {ROLES[group].may})."))
        if not password_stdin:
            self.stdout.write(f"Password, shown once: {password}")
        self.stdout.write(
            "They sign in to the back-office (/admin/) and can change it there (Change password, top right)."
        )

    def _read_password(self, stdin) -> str:
        line = stdin.readline().rstrip("\r\n")
        if not line:
            raise CommandError("--password-stdin: no password on stdin (the first line is the password).")
        return line
