from django.core.management.base import BaseCommand, CommandError

from accounts.nodes.command_arguments import account_id_named
from accounts.nodes.services import assignment_reset
from platform_events.quantities import quantity
from platform_events.refusals import Refused


class Command(BaseCommand):
    help = (
        "Reset an account's node assignment for a service: its live assignment is replaced and a fresh one"
        " made (a new uid, on the least-loaded node) with the same keys, so its client starts on fresh storage"
        " at its next sync; the old data is purged after the grace period. A generation or keys_changed_at"
        " more than a day ahead of the clock, which would refuse the real client for good, is lowered to the"
        " account's highest real one first. Audited with the reason."
    )

    def add_arguments(self, parser):
        parser.add_argument("service", help="the service's name, e.g. sync-1.5")
        parser.add_argument("account", help="the account's id, login or e-mail")
        parser.add_argument("--reason", required=True, help="why, for the audit trail")
        parser.add_argument("--dry-run", action="store_true", help="say what would be replaced; change nothing")

    def handle(self, *args, service, account, reason, dry_run, **options):
        if not reason.strip():
            raise CommandError("--reason must say why the assignment is reset (it goes into the audit trail).")
        account_id = account_id_named(account)
        try:
            done = assignment_reset(service=service, account_id=account_id, actor=None, reason=reason, dry_run=dry_run)
        except Refused as refusal:
            raise CommandError(str(refusal)) from None
        old = f"uid {done.replaced_uid} on {done.replaced_node or 'no node'}" if done.replaced_uid else "no live row"
        if done.lowered:
            rows = quantity(done.lowered, "row")
            lowered = "would be lowered" if dry_run else "lowered"
            self.stdout.write(
                f"Account {account_id} for {service}: numbers from the future {lowered} on {rows}, to its highest"
                " real ones."
            )
        if done.unretired:
            rows = quantity(done.unretired, "row")
            back = "would get" if dry_run else "got"
            self.stdout.write(
                f"Account {account_id} for {service}: {rows} retired by its deprovisioning {back} back the generation"
                " they had."
            )
        if dry_run:
            self.stdout.write(f"Account {account_id} for {service}: {old} would be replaced; nothing changed.")
        elif done.fresh is None:
            self.stdout.write(
                self.style.WARNING(
                    f"Account {account_id} for {service}: {old} replaced; no node has room now, so its next sync"
                    " gets a fresh one."
                )
            )
        else:
            self.stdout.write(
                self.style.SUCCESS(
                    f"Account {account_id} for {service}: {old} replaced by uid {done.fresh.uid} on {done.fresh.node}."
                )
            )
