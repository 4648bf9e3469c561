from django.core.management.base import BaseCommand

from lifecycle.backoffice.roles import ROLES, ensure_roles


class Command(BaseCommand):
    help = f"Create the staff groups ({', '.join(ROLES)}) with exactly their permissions. Runs after every migrate too."

    def handle(self, *args, **options):
        ensure_roles()
        self.stdout.write(self.style.SUCCESS(f"Roles up to date: {', '.join(ROLES)}."))
