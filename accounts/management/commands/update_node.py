from argparse import BooleanOptionalAction

from django.core.management.base import BaseCommand, CommandError

from accounts.nodes.services import NODE_FIELDS, node_update
from platform_events.refusals import Refused


class Command(BaseCommand):
    help = (
        "Change a storage node's capacity, open slots or load, or take it down or into backoff and back"
        " (tokenserver's update_node). Audited with the fields changed."
    )

    def add_arguments(self, parser):
        parser.add_argument("service", help="the service's name, e.g. sync-1.5")
        parser.add_argument("node", help="the node's URL")
        parser.add_argument("--capacity", type=int, help="how many accounts the node may hold")
        parser.add_argument("--available", type=int, help="slots open now")
        parser.add_argument("--current-load", type=int, help="accounts it holds")
        parser.add_argument("--downed", action=BooleanOptionalAction, help="down: nobody is sent to it")
        parser.add_argument("--backoff", action=BooleanOptionalAction, help="in backoff: no new accounts")
        parser.add_argument("--reason", help="why, for the audit trail")

    def handle(self, *args, service, node, reason, **options):
        fields = {name: options[name] for name in NODE_FIELDS if options[name] is not None}
        if not fields:
            raise CommandError(
                "Nothing to change: give --capacity, --available, --current-load, --downed or --backoff."
            )
        try:
            updated = node_update(service=service, node=node, actor=None, reason=reason, **fields)
        except Refused as refusal:
            raise CommandError(str(refusal)) from None
        self.stdout.write(self.style.SUCCESS(f"Node {updated.node} of {service}: {updated.describe()}."))
