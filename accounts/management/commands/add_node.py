from django.core.management.base import BaseCommand, CommandError

from accounts.nodes.services import node_add
from platform_events.refusals import Refused


class Command(BaseCommand):
    help = (
        "Add a storage node to a service (tokenserver's add_node). Only a share of its capacity is open"
        " at first, ceil(capacity x NODE_CAPACITY_RELEASE_RATE), unless --available says otherwise. Audited."
    )

    def add_arguments(self, parser):
        parser.add_argument("service", help="the service's name, e.g. sync-1.5")
        parser.add_argument("node", help="the node's URL, e.g. https://sync-1.example.com")
        parser.add_argument("capacity", type=int, help="how many accounts the node may hold")
        parser.add_argument("--available", type=int, help="slots open now (default: a share of the capacity)")
        parser.add_argument("--current-load", type=int, default=0, help="accounts it holds already (default 0)")
        parser.add_argument("--downed", action="store_true", help="add it down: nobody is sent to it")
        parser.add_argument("--backoff", action="store_true", help="add it in backoff: no new accounts")
        parser.add_argument("--reason", help="why, for the audit trail")

    def handle(self, *args, service, node, capacity, available, current_load, downed, backoff, reason, **options):
        try:
            added = node_add(
                service=service,
                node=node,
                capacity=capacity,
                available=available,
                current_load=current_load,
                downed=downed,
                backoff=backoff,
                actor=None,  # the system: audited as the database role, with the reason
                reason=reason,
            )
        except Refused as refusal:
            raise CommandError(str(refusal)) from None
        self.stdout.write(self.style.SUCCESS(f"Node {added.node} added to {service}: {added.describe()}."))
