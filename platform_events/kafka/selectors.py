"""Reads of the Kafka relay's publication state (platform_events/sql/0022_event_publications.sql): the
figures /metrics shows, and one event's publication for the admin. Nothing here writes: the relay's
moves are relay.py's, and the runtime role may only read the table otherwise.

Each figure costs what waits or what was published lately, never every publication kept: the
unpublished rows through their partial indexes (event_publications_order counts them all, parked or
not; event_publications_due and event_publications_parked, one row an account, find the oldest), the
recent ones through event_publications_published_at (platform_events/sql/0023_kafka_metrics.sql)."""

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import connection

from platform_events.kafka.relay import PARKED_FIRSTS

FIGURES = f"""
SELECT
    (SELECT count(*) FROM (SELECT FROM event_publications WHERE status = 'PENDING' LIMIT %(up_to)s) pending),
    least(
        (SELECT e.created_at FROM event_publications p JOIN outbox_events e ON e.id = p.event_id
         WHERE p.status = 'PENDING' AND NOT p.parked ORDER BY p.event_seq LIMIT 1),
        -- Of the parked, only an account's first can be older than every unparked one. Looked up with the
        -- parked index's conditions, which that first meets, or no index serves the look-up.
        (SELECT e.created_at FROM event_publications p JOIN outbox_events e ON e.id = p.event_id
         WHERE p.status = 'PENDING' AND p.parked
           AND (p.ordering_key, p.event_seq) = ({PARKED_FIRSTS} SELECT ordering_key, event_seq FROM firsts
                                                ORDER BY event_seq LIMIT 1))),
    (SELECT count(*) FROM (SELECT FROM event_publications
                           WHERE status = 'PUBLISHED' AND published_at >= now() - %(window)s
                           LIMIT %(up_to)s) recent)
"""


@dataclass(frozen=True)
class StreamFigures:
    on: bool  # the event_stream row is there: every new event gets a publication row
    unpublished: int  # PENDING publications, counted up to a limit
    oldest_unpublished_at: datetime | None  # when the unpublished event with the lowest seq was written
    published_recently: int  # publications the broker acknowledged within the window, counted up to a limit


OFF = StreamFigures(on=False, unpublished=0, oldest_unpublished_at=None, published_recently=0)


def stream_figures(*, up_to: int, window: timedelta) -> StreamFigures:
    """The relay's figures; all zero while the stream is off (stopping it drops what was unpublished).

    The oldest unpublished event is the one with the lowest seq, the first the relays claim: found
    through the due index in one row, and at least as old as any other waiting (a seq is taken
    when an event is written), a period being published included. A parked event can be the oldest:
    one parked by a race waits for a relay's sweep, and with every relay stopped that is the wait
    the alert is for; of the parked, each account's first is read through their index."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT EXISTS (SELECT FROM event_stream)")
        if not cursor.fetchone()[0]:
            return OFF
        cursor.execute(FIGURES, {"up_to": up_to, "window": window})
        unpublished, oldest, recent = cursor.fetchone()
    return StreamFigures(on=True, unpublished=unpublished, oldest_unpublished_at=oldest, published_recently=recent)


@dataclass(frozen=True)
class Publication:
    """One event's publication, as the admin shows it."""

    status: str  # PENDING or PUBLISHED
    attempts: int  # attempts the broker refused
    next_attempt_at: datetime
    claimed: bool  # a relay holds it now
    last_error: str | None
    published_at: datetime | None
    partition: int | None
    offset: int | None
    held_back_by: int | None = None  # the seq of the account's first unpublished event, when earlier
    topic_prefix: str | None = None  # the stream's, when it was published (or now, while it waits)


# The stream's topic prefix when publication p was published (or now, while it waits): the last start
# or move of the stream audited by then (the trail keeps each, with the prefix after it), else the one
# the stream records now.
TOPIC_PREFIX_OF_P = """coalesce(
    (SELECT a.diff_after ->> 'topic_prefix' FROM audit_events a
     WHERE a.resource_type = 'event_stream' AND a.resource_id = 'kafka'
       AND a.action IN ('event.stream_started', 'event.stream_topics_moved')
       AND a.diff_after ->> 'topic_prefix' IS NOT NULL AND a.occurred_at <= coalesce(p.published_at, now())
     ORDER BY a.occurred_at DESC LIMIT 1),
    (SELECT topic_prefix FROM event_stream))"""


def publication_of(event_id) -> Publication | None:
    """The event's publication, or None when it has none (written while publication was off)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT status, attempts, next_attempt_at, lease_until > now(), last_error, published_at,"
            " kafka_partition, kafka_offset,"
            " (SELECT min(earlier.event_seq) FROM event_publications earlier"
            "  WHERE earlier.ordering_key = p.ordering_key AND earlier.event_seq < p.event_seq"
            "    AND earlier.status = 'PENDING' AND p.status = 'PENDING'),"
            f" {TOPIC_PREFIX_OF_P}"
            " FROM event_publications p WHERE event_id = %s",
            [event_id],
        )
        row = cursor.fetchone()
    if row is None:
        return None
    status, attempts, next_attempt_at, claimed, *rest = row
    return Publication(status, attempts, next_attempt_at, bool(claimed), *rest)
