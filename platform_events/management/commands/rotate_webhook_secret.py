from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from platform_events.webhooks.endpoints import EndpointError, endpoint_rotate_secret
from platform_events.webhooks.models import WebhookSubscription
from platform_events.webhooks.secrets import SecretKeyError


class Command(BaseCommand):
    help = (
        "Give a webhook endpoint a new signing secret and print it, shown this once; the old one keeps"
        " signing too until the overlap ends (WEBHOOKS_SECRET_OVERLAP_HOURS, or --overlap-hours)."
    )

    def add_arguments(self, parser):
        parser.add_argument("id", help="the endpoint's id")
        parser.add_argument("--overlap-hours", type=int, help="how long the old secret stays valid")

    def handle(self, *args, id, overlap_hours, **options):
        try:
            endpoint = WebhookSubscription.objects.get(pk=id)
        except (WebhookSubscription.DoesNotExist, ValidationError):
            raise CommandError(f"No webhook endpoint has the id {id!r}.") from None
        try:
            secret = endpoint_rotate_secret(endpoint, overlap_hours=overlap_hours, actor=None)
        except (EndpointError, SecretKeyError) as refusal:
            raise CommandError(str(refusal)) from None
        self.stdout.write(f"id: {endpoint.pk}")
        self.stdout.write(f"secret: {secret}")
        self.stdout.write(f"The previous secret stays valid until {endpoint.previous_secret_until.isoformat()}.")
        self.stdout.write(self.style.WARNING("Keep the secret now: it is not shown again."))
