from django.core.management.base import BaseCommand, CommandError

from platform_events.api.clients import ApiClientError, api_client_name_problem, api_client_revoke
from platform_events.api.models import ApiClient


class Command(BaseCommand):
    help = "Revoke an API client's key for good, with the reason (kept in the audit trail)."

    def add_arguments(self, parser):
        parser.add_argument("name", help="the client's name (any case)")
        parser.add_argument("--reason", required=True, help="why, for the audit trail")
        parser.add_argument("--dry-run", action="store_true", help="say what would be revoked; change nothing")

    def handle(self, *args, name, reason, dry_run, **options):
        name = name.strip()
        # A name no client can have (a command line's stray bytes among them) is not looked up.
        client = None if api_client_name_problem(name) else ApiClient.objects.filter(name__iexact=name).first()
        if client is None:
            raise CommandError(f"No API client is named {name!r}.")
        try:
            # A dry run is refused as the real run would be, by the same service; audited as the database role.
            revoked = api_client_revoke(client=client, reason=reason, actor=None, dry_run=dry_run)
        except ApiClientError as refusal:
            raise CommandError(str(refusal)) from None
        if dry_run:
            state = "would be revoked" if revoked else "is revoked already"
            self.stdout.write(f"API client {client.name!r} (key {client.key_prefix}...) {state}; nothing changed.")
            return
        if not revoked:
            self.stdout.write(f"API client {client.name!r} was revoked already, at {client.revoked_at.isoformat()}.")
            return
        self.stdout.write(self.style.SUCCESS(f"API client {client.name!r} revoked: its key no longer works."))
