from django.core.management.base import BaseCommand, CommandError

from accounts.nodes.command_arguments import account_id_named
from accounts.nodes.models import MAX_GENERATION
from accounts.nodes.selectors import current_record
from accounts.nodes.services import assignment_allocate, assignment_current, assignment_update
from platform_events.refusals import Refused


class Command(BaseCommand):
    help = (
        "Give an account a storage node for a service, the one named or the least-loaded one; an account"
        " that has one already is moved to the node named (tokenserver's allocate_user). Audited."
    )

    def add_arguments(self, parser):
        parser.add_argument("service", help="the service's name, e.g. sync-1.5")
        parser.add_argument("account", help="the account's id, login or e-mail")
        parser.add_argument("node", nargs="?", help="the node's URL (default: the least-loaded node)")
        parser.add_argument("--reason", help="why, for the audit trail")

    def handle(self, *args, service, account, node, reason, **options):
        account_id = account_id_named(account)
        try:
            record = current_record(service=service, account_id=account_id)
            if record is not None and record.generation >= MAX_GENERATION:
                raise CommandError(f"Account {account_id}'s assignments are retired (the account was deleted).")
            if record is None or record.replaced_at is not None:
                # A new assignment; one that had keys before keeps them (its numbers never go back).
                made = assignment_allocate(
                    service=service,
                    account_id=account_id,
                    node=node,
                    generation=record.generation if record else 0,
                    client_state=record.client_state if record else "",
                    keys_changed_at=record.keys_changed_at if record else None,
                    actor=None,  # the system, audited as the database role: an operator's placement
                    reason=reason,
                    routine=False,
                )
                self.stdout.write(self.style.SUCCESS(f"Account {account_id} allocated to {made.node} for {service}."))
                return
            if node is None or node == record.node:
                self.stdout.write(
                    f"Account {account_id} is on {record.node or 'no node'} for {service} already; nothing changed."
                )
                return
            moved = assignment_update(
                assignment_current(service=service, account_id=account_id),
                node=node,
                actor=None,
                reason=reason,
                routine=False,
            )
        except Refused as refusal:
            raise CommandError(str(refusal)) from None
        self.stdout.write(
            self.style.SUCCESS(f"Account {account_id} moved from {record.node} to {moved.node} for {service}.")
        )
