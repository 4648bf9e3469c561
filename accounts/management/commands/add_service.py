from django.core.management.base import BaseCommand, CommandError

from accounts.nodes.services import service_add
from platform_events.refusals import Refused


class Command(BaseCommand):
    help = (
        "Add a service that accounts get storage nodes for (tokenserver fills its services table by"
        " migration; here an operator adds one), e.g. add_service sync-1.5 --pattern '{node}/1.5/{uid}'."
    )

    def add_arguments(self, parser):
        parser.add_argument("service", help="its name: lowercase letters, digits, '.', '_', '-' (e.g. sync-1.5)")
        parser.add_argument(
            "--pattern",
            help="the node endpoint's URI template, holding {node} (and {uid}), e.g. '{node}/1.5/{uid}'",
        )

    def handle(self, *args, service, pattern, **options):
        try:
            added = service_add(service=service, pattern=pattern, actor=None)
        except Refused as refusal:
            raise CommandError(str(refusal)) from None
        self.stdout.write(self.style.SUCCESS(f"Service {added.service} added (pattern {added.pattern or 'none'})."))
