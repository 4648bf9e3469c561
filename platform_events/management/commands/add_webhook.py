from django.core.management.base import BaseCommand, CommandError

from platform_events.outbox.models import EventType
from platform_events.webhooks.endpoints import EndpointError, endpoint_create
from platform_events.webhooks.secrets import SecretKeyError


class Command(BaseCommand):
    help = (
        "Add a webhook endpoint for some event types; prints its id and its signing secret, shown this once"
        " and never again (it is stored encrypted)."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "url",
            help="where to POST the events: https:// (http:// and private addresses with WEBHOOKS_ALLOW_PRIVATE_URLS)",
        )
        parser.add_argument(
            "--events",
            default=",".join(EventType.values),
            help="comma-separated event types, e.g. account.suspended (default: every one)",
        )
        parser.add_argument("--owner", default="cli", help="whose endpoint: a partner or a service (default cli)")
        parser.add_argument("--description", default="", help="a note for staff")
        parser.add_argument(
            "--secret", help="a whsec_ secret to use instead of a new one (e.g. when moving an endpoint)"
        )

    def handle(self, *args, url, events, owner, description, secret, **options):
        try:
            endpoint, secret = endpoint_create(
                url=url,
                events=[event.strip() for event in events.split(",") if event.strip()],
                owner=owner,
                description=description,
                secret=secret,
                actor=None,  # the system: audited as the database role, as a psql change is
            )
        except (EndpointError, SecretKeyError) as refusal:
            raise CommandError(str(refusal)) from None
        self.stdout.write(f"id: {endpoint.pk}")
        self.stdout.write(f"secret: {secret}")
        self.stdout.write(
            self.style.WARNING("Keep the secret now: it is not shown again (rotate_webhook_secret makes a new one).")
        )
