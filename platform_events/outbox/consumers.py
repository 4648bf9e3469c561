"""Internal consumers of the outbox, with exactly-once effects (docs/events.md, "Internal consumers").

A consumer is a group name, the event types it takes, and a handler. ``consume()`` hands it every
event of those types it has not processed yet, oldest first, each in a transaction of its own that
records (group, event) in processed_events together with the handler's own writes: a redelivered
event, or one two workers reach at once, has one effect (the second insert waits for the first
transaction and then finds the record). A handler that raises rolls its event back, which is taken
up again on the next pass; the aggregate's later events wait for it in this pass, so each account's
events reach the handler in order. No other guard is needed for that: events are read in seq order,
and an account's events commit in seq order (platform_events/sql/0010_outbox.sql), so a pass meets
an account's earlier event first: handled, being handled by another worker (whose commit the insert
waits for), or failed.

Each pass first registers the group and its types (outbox_consumer_register(), audited when new or
changed): from then on an event of those types is kept until the group has recorded it, and the
database takes a record only of such an event (platform_events/sql/0019_outbox_trail.sql).

    ASSIGNMENTS = Consumer("node-assignments", {"account.deleted", "account.password_changed"}, handle)
    consume(ASSIGNMENTS)
"""

import json
import logging
import uuid
from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import datetime

from django.db import connection, transaction

logger = logging.getLogger(__name__)

CANDIDATES = """
SELECT e.id, e.seq, e.aggregate_type, e.aggregate_id, e.event_type, e.created_at, e.payload::text
FROM outbox_events e
WHERE e.event_type = ANY(%(types)s) AND e.seq > %(after)s
  AND NOT EXISTS (SELECT FROM processed_events p WHERE p.consumer_group = %(group)s AND p.event_id = e.id)
ORDER BY e.seq
LIMIT %(size)s
"""

RECORD = """
INSERT INTO processed_events (consumer_group, event_id) VALUES (%s, %s) ON CONFLICT DO NOTHING RETURNING 1
"""


@dataclass(frozen=True)
class Event:
    id: uuid.UUID
    seq: int
    aggregate_type: str
    aggregate_id: str
    type: str
    created_at: datetime
    data: dict


@dataclass(frozen=True)
class Consumer:
    group: str
    event_types: Collection[str]
    handler: Callable[[Event], None]

    def __post_init__(self):
        if not 0 < len(self.group) <= 64:
            raise ValueError("A consumer group's name is 1 to 64 characters.")
        if not self.event_types:
            raise ValueError(f"Consumer group {self.group!r} takes no event types.")


@dataclass
class ConsumeResult:
    handled: int = 0
    already_processed: int = 0  # another worker, or an earlier run, had them
    failed: int = 0
    waiting: int = 0  # held back behind an earlier event of their aggregate


def consume(consumer: Consumer, *, batch_size: int = 100) -> ConsumeResult:
    """Hand ``consumer`` every unprocessed event of its types, oldest first; returns what happened."""
    result = ConsumeResult()
    types = sorted(consumer.event_types)
    # Registered (audited when new or changed): an event of these types stays until the group records it.
    with connection.cursor() as cursor:
        cursor.execute("SELECT outbox_consumer_register(%s, %s)", [consumer.group, types])
    after = 0
    while True:
        with connection.cursor() as cursor:
            cursor.execute(CANDIDATES, {"types": types, "group": consumer.group, "after": after, "size": batch_size})
            rows = cursor.fetchall()
        if not rows:
            return result
        held_back: set[tuple[str, str]] = set()
        for event_id, seq, aggregate_type, aggregate_id, event_type, created_at, payload in rows:
            after = seq
            aggregate = (aggregate_type, aggregate_id)
            if aggregate in held_back:
                result.waiting += 1
                continue
            event = Event(
                event_id, seq, aggregate_type, aggregate_id, event_type, created_at, json.loads(payload)["data"]
            )
            outcome = _process(consumer, event)
            if outcome == "handled":
                result.handled += 1
            elif outcome == "already":
                result.already_processed += 1
            else:
                held_back.add(aggregate)
                result.failed += 1


def _process(consumer: Consumer, event: Event) -> str:
    """Whether the event was handled now, "already" by another, or "failed" (rolled back)."""
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            # Another worker handling this event now holds the key: this insert waits for its commit.
            cursor.execute(RECORD, [consumer.group, event.id])
            if cursor.fetchone() is None:
                return "already"
            consumer.handler(event)
    except Exception:
        logger.exception(
            "consumer %s failed on event %s (%s); it is retried on the next pass", consumer.group, event.id, event.type
        )
        return "failed"
    return "handled"
