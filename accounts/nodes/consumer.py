"""The node-assignments consumer of the outbox: tokenserver's process_account_events over our events.

An account deleted: its assignments are retired (every live row replaced and given the tombstone
generation), so that no client of it is served again and purge_old_records reclaims the rows. A
password changed (set, reset or recovered): the live rows' generation rises to the change's time in
milliseconds less one, which locks out clients holding older credentials while the first client with
the new ones (generation at or after the change) is accepted (tokenserver's update_generation_number,
without its side effect of giving a node to an account that had none). Each event has its effect
once, recorded in processed_events with it (platform_events/outbox/consumers.py).
"""

from datetime import UTC, datetime, timedelta

from accounts.nodes.services import assignments_retire, generation_raise
from platform_events.outbox.consumers import Consumer, Event, consume

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
DELETED = "account.deleted"
PASSWORD_CHANGED = "account.password_changed"


def generation_for(changed_at: datetime) -> int:
    """The generation a password change sets: its time in milliseconds, less one (tokenserver)."""
    return (changed_at - EPOCH) // timedelta(milliseconds=1) - 1


def handle(event: Event) -> None:
    account_id = int(event.aggregate_id)
    if event.type == DELETED:
        assignments_retire(account_id=account_id)
    elif event.type == PASSWORD_CHANGED:
        changed_at = datetime.fromisoformat(event.data["password_changed_at"])
        generation_raise(account_id=account_id, generation=generation_for(changed_at))


ASSIGNMENTS = Consumer("node-assignments", {DELETED, PASSWORD_CHANGED}, handle)


def process_account_events() -> str:
    """One pass over the events not yet processed (the schedule's task and the cron command)."""
    result = consume(ASSIGNMENTS)
    return (
        f"{result.handled} handled, {result.already_processed} already processed,"
        f" {result.failed} failed (retried next pass), {result.waiting} waiting behind them"
    )
