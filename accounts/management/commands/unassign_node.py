from django.core.management.base import BaseCommand, CommandError

from accounts.nodes.services import node_unassign
from platform_events.quantities import quantity
from platform_events.refusals import Refused


class Command(BaseCommand):
    help = (
        "Replace every live assignment on a storage node, so that its accounts get another node when next"
        " seen (tokenserver's unassign_node); the node stays. Audited (node.unassigned, with the count)."
    )
    # remove_node is this command with another service and other words.
    act = staticmethod(node_unassign)
    would = "Node {node} of {service}: {assignments} would be replaced; nothing changed."
    done = "Node {node} of {service}: {assignments} replaced; they move when next seen."

    def add_arguments(self, parser):
        parser.add_argument("service", help="the service's name, e.g. sync-1.5")
        parser.add_argument("node", help="the node's URL")
        parser.add_argument("--reason", help="why, for the audit trail")
        parser.add_argument("--dry-run", action="store_true", help="count the assignments; change nothing")

    def handle(self, *args, service, node, reason, dry_run, **options):
        try:
            # A dry run is refused as the real run would be, by the same service.
            count = self.act(service=service, node=node, actor=None, reason=reason, dry_run=dry_run)
        except Refused as refusal:
            raise CommandError(str(refusal)) from None
        said = (self.would if dry_run else self.done).format(
            node=node, service=service, assignments=quantity(count, "assignment")
        )
        self.stdout.write(said if dry_run else self.style.SUCCESS(said))
