"""The Kafka relay: claim due publications, produce each event, mark what the broker acknowledged
(docs/kafka.md, "How the relay publishes").

Any number of relays may run at once:

* A claim leases due rows with FOR UPDATE SKIP LOCKED, so no two relays hold one event, and nothing
  reads by a cursor, so an event whose transaction committed late is claimed when it is visible.
* An account's events are published in order: a row is not due while an earlier event of the same
  account is unpublished, whoever holds it. A batch therefore holds at most one event per account,
  and one message failing cannot let the account's next one overtake it. The claim parks the rows it
  finds held back, so that no later claim walks them; the mark of an account's event unparks the
  account's next, and a sweep unparks what a race left parked.
* A row is marked PUBLISHED only with the broker's acknowledgement (partition and offset), and only by
  the relay that holds its claim. A relay killed between the acknowledgement and the mark leaves the
  claim to lapse: the event is published again, with the same ce_id.
* A broker outage gives the batch back untouched (no attempt counted); the caller waits and tries
  again. An error of one message counts an attempt and makes the row due again later.
"""

import json
import logging
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from django.conf import settings
from django.db import DatabaseError, connection

logger = logging.getLogger(__name__)


def earlier_unpublished(row: str) -> str:
    """SQL: the seq of an unpublished event of ``row``'s account before ``row``, or NULL. An ordered
    subquery, not EXISTS: the planner may answer an EXISTS with a seq scan it expects to stop early
    (when one account has most of the rows); ordered, it takes event_publications_order."""
    return f"""(
        SELECT earlier.event_seq FROM event_publications earlier
        WHERE earlier.ordering_key = {row}.ordering_key AND earlier.event_seq < {row}.event_seq
          AND earlier.status = 'PENDING'
        ORDER BY earlier.event_seq DESC LIMIT 1)"""


# Walks the due index (which leaves parked events out) in seq order, taking up to ``size`` rows no
# other relay holds; of those, claims each with no earlier unpublished event of its account and parks
# the others. Returns the claimed events, then one row with how many were parked (its id NULL).
CLAIM = f"""
WITH walked AS MATERIALIZED (
    SELECT p.ctid AS row_id, {earlier_unpublished("p")} IS NOT NULL AS held
    FROM event_publications p
    WHERE p.status = 'PENDING' AND NOT p.parked AND p.next_attempt_at <= now()
      AND (p.lease_until IS NULL OR p.lease_until < now())
    ORDER BY p.event_seq
    LIMIT %(size)s
    FOR UPDATE OF p SKIP LOCKED
), parked AS (
    UPDATE event_publications p SET parked = true
    WHERE p.ctid = ANY(ARRAY(SELECT row_id FROM walked WHERE held))
    RETURNING 1
), claimed AS (
    UPDATE event_publications p SET claim = %(claim)s, lease_until = now() + %(lease)s
    WHERE p.ctid = ANY(ARRAY(SELECT row_id FROM walked WHERE NOT held))
    RETURNING p.event_id
)
SELECT e.id, e.seq, e.aggregate_type, e.aggregate_id, e.event_type, e.created_at, e.payload::text
FROM claimed JOIN outbox_events e ON e.id = claimed.event_id
UNION ALL
SELECT NULL, count(*), NULL, NULL, NULL, NULL, NULL FROM parked
"""

# Marks what the broker acknowledged (only rows this claim holds), and unparks the first parked event
# of each account published, the published one aside (this statement's snapshot still shows it
# PENDING, and parked if the runtime role parked it meanwhile). Returns how many were marked.
# Neither the mark's unpark nor the sweep waits for a row another transaction holds (SKIP LOCKED):
# each waiting for a row the other had taken, a mark and a sweep deadlocked, and the mark's batch,
# acknowledged, went out again. A row skipped so stays parked until the next sweep.
MARK = """
WITH acknowledged AS (
    SELECT * FROM jsonb_to_recordset(%(rows)s::jsonb) AS a(event_id uuid, partition int, kafka_offset bigint)
), marked AS (
    UPDATE event_publications p SET status = 'PUBLISHED', published_at = now(), kafka_partition = a.partition,
        kafka_offset = a.kafka_offset, claim = NULL, lease_until = NULL, parked = false
    FROM acknowledged a
    WHERE p.event_id = a.event_id AND p.claim = %(claim)s
    RETURNING p.ordering_key, p.event_id
), next_parked AS (
    SELECT n.ctid AS row_id FROM event_publications n
    WHERE n.ctid = ANY(ARRAY(
        SELECT (SELECT x.ctid FROM event_publications x
                WHERE x.ordering_key = m.ordering_key AND x.event_id <> m.event_id AND x.status = 'PENDING'
                  AND x.parked
                ORDER BY x.event_seq LIMIT 1)
        FROM marked m))
    FOR UPDATE SKIP LOCKED
), unparked AS (
    UPDATE event_publications n SET parked = false
    WHERE n.ctid = ANY(ARRAY(SELECT row_id FROM next_parked))
    RETURNING 1
)
SELECT (SELECT count(*) FROM marked), (SELECT count(*) FROM unparked)
"""

# The first parked event of an account with no earlier unpublished one is due: unpark it. The firsts
# are found by skipping from account to account through event_publications_parked (one probe each),
# not by reading every parked row: an account may have hundreds of thousands parked.
PARKED_FIRSTS = """
WITH RECURSIVE firsts AS (
    (SELECT ordering_key, event_seq FROM event_publications
     WHERE status = 'PENDING' AND parked ORDER BY ordering_key, event_seq LIMIT 1)
    UNION ALL
    SELECT following.ordering_key, following.event_seq FROM firsts, LATERAL (
        SELECT ordering_key, event_seq FROM event_publications
        WHERE status = 'PENDING' AND parked AND ordering_key > firsts.ordering_key
        ORDER BY ordering_key, event_seq LIMIT 1) following
)"""

SWEEP = f"""{PARKED_FIRSTS}, due AS (
    SELECT p.ctid AS row_id FROM event_publications p
    JOIN firsts ON p.ordering_key = firsts.ordering_key AND p.event_seq = firsts.event_seq
    WHERE p.status = 'PENDING' AND p.parked AND {earlier_unpublished("firsts")} IS NULL
    FOR UPDATE OF p SKIP LOCKED
)
UPDATE event_publications p SET parked = false WHERE p.ctid = ANY(ARRAY(SELECT row_id FROM due))
"""

RELEASE = "UPDATE event_publications SET claim = NULL, lease_until = NULL WHERE event_id = ANY(%s) AND claim = %s"

REFUSED = """
UPDATE event_publications SET attempts = attempts + 1,
    next_attempt_at = now() + make_interval(secs => least(300, 2 ^ least(attempts, 9))),
    last_error = left(%s, 1024), claim = NULL, lease_until = NULL
WHERE event_id = %s AND claim = %s
"""

# Errors that say the broker (or the way to it) is not there now, not that the message is wrong.
OUTAGE = {
    KafkaError._MSG_TIMED_OUT,
    KafkaError._TIMED_OUT,
    KafkaError._TRANSPORT,
    KafkaError._ALL_BROKERS_DOWN,
    KafkaError._UNKNOWN_TOPIC,
    KafkaError.UNKNOWN_TOPIC_OR_PART,
    KafkaError.LEADER_NOT_AVAILABLE,
    KafkaError.NOT_LEADER_FOR_PARTITION,
    KafkaError.REQUEST_TIMED_OUT,
    KafkaError.NETWORK_EXCEPTION,
}


@dataclass
class Event:
    id: uuid.UUID
    seq: int
    aggregate_type: str
    aggregate_id: str
    type: str
    created_at: datetime
    body: str  # the webhook payload: {"type", "timestamp", "data"}

    def topic(self) -> str:
        return settings.KAFKA_TOPIC_PREFIX + self.aggregate_type

    def headers(self) -> list[tuple[str, bytes]]:
        """The CloudEvents Kafka binding's binary mode: the attributes as ce_* headers."""
        return [
            ("ce_specversion", b"1.0"),
            ("ce_id", str(self.id).encode()),
            ("ce_type", self.type.encode()),
            ("ce_source", settings.KAFKA_EVENT_SOURCE.encode()),
            ("ce_subject", self.aggregate_id.encode()),
            # Always with its microseconds (isoformat() drops ".000000") and in UTC, as the docs promise.
            ("ce_time", self.created_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ").encode()),
            ("ce_sequence", f"{self.seq:020d}".encode()),
            ("ce_partitionkey", self.aggregate_id.encode()),
            ("content-type", b"application/json"),
        ]


@dataclass
class BatchResult:
    claimed: int = 0
    published: int = 0
    refused: int = 0
    lost_claims: int = 0  # acknowledged, but another relay took the claim over meanwhile
    parked: int = 0  # walked past by the claim, held back by an earlier event of the account
    outage: str | None = None  # the broker's error when the batch was given back
    fatal: bool = False  # the producer can send no more: replace it


@dataclass
class Outcome:
    acknowledged: list[tuple[Event, int, int]] = field(default_factory=list)  # (event, partition, offset)
    refused: list[tuple[Event, KafkaError]] = field(default_factory=list)
    undelivered: list[tuple[Event, KafkaError | None]] = field(default_factory=list)  # an outage


def connection_config() -> dict:
    """Where the broker is and how to reach it (TLS, SASL): the producer's and the admin client's alike."""
    return {"bootstrap.servers": settings.KAFKA_BOOTSTRAP_SERVERS, **settings.KAFKA_SECURITY}


def producer_config() -> dict:
    return {
        **connection_config(),
        # Neither is a setting: without them a retry could duplicate or reorder an account's events.
        "enable.idempotence": True,
        "acks": "all",
        # The Java client's partitioner: another producer keyed by the account id picks the same partition.
        "partitioner": "murmur2_random",
        # A topic is made by the relay (KAFKA_CREATE_TOPICS, KAFKA_TOPIC_PARTITIONS), never by a produce:
        # the broker's auto-creation would give it the broker's default partition count.
        "allow.auto.create.topics": False,
        "message.timeout.ms": settings.KAFKA_MESSAGE_TIMEOUT_SECONDS * 1000,
        "linger.ms": 5,
        # A request goes out at once: with Nagle's algorithm on, a small request can wait for the broker's
        # (delayed, up to 40 ms on Linux) ACK of the one before it.
        "socket.nagle.disable": True,
        # librdkafka's own lines (a refused connection during an outage) go to logging, not to stderr.
        "logger": logging.getLogger("platform_events.kafka.librdkafka"),
    }


class ClientRefused(Exception):
    """The Kafka client refused its configuration (a CA file that holds no certificate, say)."""


def new_producer() -> Producer:
    try:
        return Producer(producer_config())
    except KafkaException as error:
        raise ClientRefused(f"The Kafka client refused its configuration: {error.args[0].str()}.") from None


class Topics:
    """The topics this relay knows exist; a missing one is created (KAFKA_CREATE_TOPICS) or reported."""

    def __init__(self):
        self.known: set[str] = set()

    def forget(self) -> None:
        """After an outage: the broker may have come back without them."""
        self.known.clear()

    def ensure(self, names: set[str]) -> None:
        missing = names - self.known
        if not missing:
            return
        admin = AdminClient({**connection_config(), "logger": logging.getLogger(f"{__name__}.admin")})
        present = set(admin.list_topics(timeout=settings.KAFKA_MESSAGE_TIMEOUT_SECONDS).topics)
        for name in sorted(missing - present):
            if not settings.KAFKA_CREATE_TOPICS:
                raise KafkaException(
                    KafkaError(
                        KafkaError.UNKNOWN_TOPIC_OR_PART,
                        f"topic {name} does not exist and KAFKA_CREATE_TOPICS is off: create it on the broker",
                    )
                )
            new = NewTopic(name, num_partitions=settings.KAFKA_TOPIC_PARTITIONS, replication_factor=-1)
            try:
                admin.create_topics([new])[name].result(timeout=settings.KAFKA_MESSAGE_TIMEOUT_SECONDS)
                logger.info("kafka topic %s created with %s partitions", name, settings.KAFKA_TOPIC_PARTITIONS)
            except KafkaException as error:
                if error.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                    raise
        self.known |= missing


class Claimed(NamedTuple):
    claim: uuid.UUID
    events: list[Event]
    parked: int


def claim_batch(size: int) -> Claimed:
    claim = uuid.uuid4()
    with connection.cursor() as cursor:
        cursor.execute(CLAIM, {"size": size, "claim": claim, "lease": timedelta(seconds=settings.KAFKA_LEASE_SECONDS)})
        *rows, (_, parked, *_) = cursor.fetchall()
    return Claimed(claim, [Event(*row) for row in rows], parked)


def sweep() -> int:
    """Unpark each account's first parked event that nothing holds back any more; how many."""
    with connection.cursor() as cursor:
        cursor.execute(SWEEP)
        return cursor.rowcount


def fatal(error: KafkaError) -> bool:
    """The producer's own failure (its idempotence state is lost): it sends nothing more."""
    return error.fatal() or error.code() == KafkaError._FATAL


def send(producer: Producer, event: Event, on_delivery) -> None:
    """Queue one event's message (topic, key, the webhook body, ce_* headers, its time); when the
    local queue is full, let some delivery reports in first."""
    while True:
        try:
            producer.produce(
                event.topic(),
                key=event.aggregate_id.encode(),
                value=event.body.encode(),
                headers=event.headers(),
                timestamp=int(event.created_at.timestamp() * 1000),
                on_delivery=on_delivery,
            )
            return
        except BufferError:
            producer.poll(0.1)


def produce(producer: Producer, events: list[Event]) -> Outcome:
    """Send every event and wait for each one's delivery report."""
    outcome = Outcome()
    # By position in ``events``: librdkafka may call a report while it raises a fatal error, and then
    # no Python code (a UUID's __hash__) may run in it.
    reported: set[int] = set()

    def settle(position: int, event: Event, error: KafkaError) -> None:
        reported.add(position)
        # A fatal error is the producer's, not the event's: an outage for the batch, and the caller
        # makes a new producer.
        if error.code() in OUTAGE or error.retriable() or fatal(error):
            outcome.undelivered.append((event, error))
        else:
            outcome.refused.append((event, error))

    def report(position: int, event: Event):
        def on_delivery(error, message):
            if error is None:
                reported.add(position)
                outcome.acknowledged.append((event, message.partition(), message.offset()))
            else:
                settle(position, event, error)

        return on_delivery

    for position, event in enumerate(events):
        try:
            send(producer, event, report(position, event))
        except KafkaException as error:
            # Refused before it left (larger than message.max.bytes, say): that message alone, as the
            # broker's refusal of it would be; the batch's others go out.
            settle(position, event, error.args[0])
    failure = None
    try:
        producer.flush(settings.KAFKA_MESSAGE_TIMEOUT_SECONDS + 5)
    except (KafkaException, SystemError) as error:
        # librdkafka raises the idempotent producer's fatal error out of flush() (a broker restarted
        # empty no longer knows the producer's id): what it refused meanwhile is no fault of the events.
        # The Python client sometimes surfaces that moment as a SystemError (a call that returned
        # without its exception): the producer is as unusable.
        if isinstance(error, SystemError):
            failure = KafkaError(KafkaError._FATAL, f"the Kafka client failed: {error}", fatal=True)
        elif fatal(error.args[0]):
            failure = error.args[0]
        else:
            raise
        outcome.undelivered += [(event, failure) for event, _ in outcome.refused]
        outcome.refused = []
    # A report that never came (the flush ran out) is an outage too: the claim is given back.
    outcome.undelivered += [(event, failure) for position, event in enumerate(events) if position not in reported]
    return outcome


def record(claim: uuid.UUID, outcome: Outcome, result: BatchResult) -> None:
    """Mark the acknowledged, count the refused, give the undelivered back: all after the reports."""
    with connection.cursor() as cursor:
        if outcome.acknowledged:
            rows = [
                {"event_id": str(event.id), "partition": partition, "kafka_offset": offset}
                for event, partition, offset in outcome.acknowledged
            ]
            cursor.execute(MARK, {"rows": json.dumps(rows), "claim": claim})
            marked, _ = cursor.fetchone()
            result.published += marked
            result.lost_claims += len(rows) - marked
        for event, error in outcome.refused:
            cursor.execute(REFUSED, [f"{error.name()}: {error.str()}", event.id, claim])
            result.refused += cursor.rowcount
            logger.warning("kafka: event %s refused by the broker: %s", event.id, error.str())
        if outcome.undelivered:
            cursor.execute(RELEASE, [[event.id for event, _ in outcome.undelivered], claim])


def publish_batch(producer: Producer, topics: Topics, size: int | None = None) -> BatchResult:
    """Claim one batch, produce it, record what the broker said."""
    result = BatchResult()
    claim, events, result.parked = claim_batch(size or settings.KAFKA_BATCH_SIZE)
    result.claimed = len(events)
    if not events:
        return result
    try:
        topics.ensure({event.topic() for event in events})
    except KafkaException as error:
        topics.forget()
        record(claim, Outcome(undelivered=[(event, None) for event in events]), result)
        result.outage = error.args[0].str()
        return result
    outcome = produce(producer, events)
    record(claim, outcome, result)
    if outcome.undelivered:
        topics.forget()
        first = next((error for _, error in outcome.undelivered if error is not None), None)
        result.fatal = any(error is not None and fatal(error) for _, error in outcome.undelivered)
        result.outage = first.str() if first else "no delivery report within the message timeout"
    return result


class StreamRefusal(Exception):
    """The database refused a change of the stream (one sentence): a period that ends before it
    starts, a stream that is off, another relay's topics."""


class StreamElsewhere(StreamRefusal):
    """The stream publishes to topics named with another prefix than this relay's."""


def start_stream() -> datetime:
    """Switch publication on for this relay's topics (audited the first time), or join the stream on:
    from now on every event gets a row. A stream recorded with another topic prefix is refused."""
    return _stream_function("event_stream_start(%s)", [settings.KAFKA_TOPIC_PREFIX], refusal=StreamElsewhere)


def move_topics() -> str | None:
    """Record KAFKA_TOPIC_PREFIX as the stream's topics from now on (audited); the prefix it had."""
    return _stream_function("event_stream_move_topics(%s)", [settings.KAFKA_TOPIC_PREFIX])


def stop_stream() -> int:
    """Publication off for good (audited): no more rows; how many unpublished ones were dropped."""
    return _stream_function("event_stream_stop()", [])


def queue_period(since: datetime, until: datetime | None, *, again: bool = False) -> int:
    """Give the kept events written in [since, until or now) publication rows (audited); ``again``:
    their published ones too, after a broker lost them. How many were queued."""
    function = "event_publications_republish" if again else "event_publications_backfill"
    return _stream_function(f"{function}(%s, coalesce(%s, now()))", [since, until])


def _stream_function(call: str, params: list, *, refusal: type[StreamRefusal] = StreamRefusal):
    """One of the stream's owner functions; its refusals (LP004) as one sentence."""
    with connection.cursor() as cursor:
        try:
            cursor.execute(f"SELECT {call}", params)
        except DatabaseError as error:
            if getattr(error.__cause__, "sqlstate", None) != "LP004":
                raise
            raise refusal(_sentence(error)) from None
        return cursor.fetchone()[0]


def _stream_prefix() -> str | None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT topic_prefix FROM event_stream")
        row = cursor.fetchone()
    return row[0] if row else None


def _sentence(error: DatabaseError) -> str:
    text = str(error).split("platform_events: ", 1)[-1].strip().splitlines()[0]
    return text[:1].upper() + text[1:] + "."


# A pass sweeps when it starts and then every so many batches, so that under a steady load an event
# parked by a race still becomes due within a few seconds.
SWEEP_EVERY = 100


def publish(
    *, max_batches: int | None = None, producer: Producer | None = None, topics: Topics | None = None
) -> BatchResult:
    """Publish until nothing is due, an outage, or ``max_batches``: one pass of the relay. Nothing is
    claimed while the stream is recorded with other topics than this relay's. A running relay passes
    its ``topics`` from pass to pass: looking them up costs a broker connection (~50 ms)."""
    recorded = _stream_prefix()
    if recorded is not None and recorded != settings.KAFKA_TOPIC_PREFIX:
        raise StreamElsewhere(
            f"The event stream publishes to topics prefixed {recorded!r}, not {settings.KAFKA_TOPIC_PREFIX!r}:"
            f" set KAFKA_TOPIC_PREFIX={recorded} here, or move the stream with manage.py publish_events"
            " --move-topics once every relay is stopped."
        )
    producer = producer or new_producer()
    topics = topics if topics is not None else Topics()
    total = BatchResult()
    batches = 0
    while max_batches is None or batches < max_batches:
        if batches % SWEEP_EVERY == 0:
            sweep()
        result = publish_batch(producer, topics)
        batches += 1
        for name in ("claimed", "published", "refused", "lost_claims", "parked"):
            setattr(total, name, getattr(total, name) + getattr(result, name))
        if result.outage:
            total.outage, total.fatal = result.outage, result.fatal
            break
        if result.claimed == 0 and result.parked == 0:
            break
    return total


class Backoff:
    """The wait after an outage: 0.5 s doubling to 30 s, reset by a batch that got through."""

    def __init__(self, first: float = 0.5, most: float = 30.0):
        self.first, self.most, self.next = first, most, first

    def wait(self) -> float:
        delay = self.next
        self.next = min(self.most, self.next * 2)
        time.sleep(delay)
        return delay

    def reset(self) -> None:
        self.next = self.first
