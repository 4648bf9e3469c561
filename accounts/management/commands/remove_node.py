from django.core.management.base import BaseCommand, CommandError

from accounts.nodes.selectors import node_live_assignments_count
from accounts.nodes.services import node_remove
from platform_events.db.refusals import LifecycleError


class Command(BaseCommand):
    help = (
        "Remove a storage node (tokenserver's remove_node): its live assignments are replaced, so that its"
        " accounts get another node when next seen, and the node is deleted. Audited."
    )

    def add_arguments(self, parser):
        parser.add_argument("service", help="the service's name, e.g. sync-1.5")
        parser.add_argument("node", help="the node's URL")
        parser.add_argument("--reason", help="why, for the audit trail")
        parser.add_argument("--dry-run", action="store_true", help="count the assignments; change nothing")

    def handle(self, *args, service, node, reason, dry_run, **options):
        try:
            if dry_run:
                count = node_live_assignments_count(service=service, node=node)
                self.stdout.write(
                    f"Node {node} of {service} would be removed, {count} assignments replaced; nothing changed."
                )
                return
            count = node_remove(service=service, node=node, actor=None, reason=reason)
        except LifecycleError as refusal:
            raise CommandError(str(refusal)) from None
        self.stdout.write(self.style.SUCCESS(f"Node {node} removed from {service}; {count} assignments replaced."))
