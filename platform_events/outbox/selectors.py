"""Reads of the outbox: how far an internal consumer (consumers.py) is behind."""

from collections.abc import Collection
from dataclasses import dataclass

from django.db import connection

CONSUMER_LAG = """
SELECT count(*), coalesce(extract(epoch FROM now() - min(behind.created_at)), 0)
FROM (
    SELECT e.created_at
    FROM outbox_events e
    WHERE e.event_type = ANY(%(types)s)
      AND e.seq > coalesce((
          -- The consumer's position: its newest handled event (processed_events_processed, newest first).
          SELECT handled.seq
          FROM processed_events p JOIN outbox_events handled ON handled.id = p.event_id
          WHERE p.consumer_group = %(group)s
          ORDER BY p.processed_at DESC
          LIMIT 1
      ), 0)
    ORDER BY e.seq
    LIMIT %(limit)s
) AS behind
"""


@dataclass(frozen=True)
class ConsumerLag:
    events: int  # of the consumer's types, published after the newest it handled
    seconds: float  # how long the oldest of those has waited; 0 when it is up to date


def consumer_lag(*, group: str, event_types: Collection[str], up_to: int) -> ConsumerLag:
    """How far the consumer ``group`` is behind: the events of its types after its newest handled one,
    counted up to ``up_to``, and the oldest one's wait."""
    with connection.cursor() as cursor:
        cursor.execute(CONSUMER_LAG, {"types": sorted(event_types), "group": group, "limit": up_to})
        behind, waited = cursor.fetchone()
    return ConsumerLag(behind, float(waited))
