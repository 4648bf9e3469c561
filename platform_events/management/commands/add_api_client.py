from django.core.management.base import BaseCommand, CommandError

from platform_events.api.clients import ApiClientError, api_client_create
from platform_events.api.models import ApiScope


class Command(BaseCommand):
    help = (
        "Add an API client with some scopes; prints its key alone on stdout, shown this once and never"
        " again (only its digest is stored). What else it says goes to stderr."
    )

    def add_arguments(self, parser):
        parser.add_argument("name", help="who calls the API with this key (a partner or a service)")
        parser.add_argument("--scopes", required=True, help=f"comma-separated, of: {','.join(ApiScope.values)}")

    def handle(self, *args, name, scopes, **options):
        try:
            client, key = api_client_create(
                name=name,
                scopes=[scope.strip() for scope in scopes.split(",") if scope.strip()],
                actor=None,  # the system: audited as the database role, as a psql change is
            )
        except ApiClientError as refusal:
            raise CommandError(str(refusal)) from None
        # The key alone on stdout, so that KEY=$(manage.py add_api_client ...) holds nothing else.
        self.stdout.write(key)
        self.stderr.write(f"API client {client.name!r} added (id {client.pk}), scopes {', '.join(client.scopes)}.")
        self.stderr.write(
            self.style.WARNING("Keep the key now: it is not shown again (if it is lost, revoke it and add another).")
        )
