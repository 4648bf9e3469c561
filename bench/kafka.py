"""The Kafka relay against a real broker on loopback (Tansu, tests/kafka_broker.py).

    .venv/bin/python bench/kafka.py [--events 20000] [--repeat 5] [--latency-samples 200]
                                    [--kept 1000000] [--due 20000] [--hot 5000] [--parts rate,claim]

Runs on a scratch database (``<name>_bench``, created and dropped) and one broker started for the run.
Prints, in one run:
- the relay's publishing rate (claim, produce, wait for the acknowledgements, mark) against a bare
  confluent-kafka producer sending the very same messages (topic, key, value, headers, timestamp) to
  the same broker with the same producer settings (idempotent, acks=all), ``--repeat`` rounds measured
  back to back: each side's median and their ratio (the aim is at least 0.7); the CPU time each side
  costs the machine per event (this process, the relay's PostgreSQL backend, the broker: Linux /proc),
  which the waits do not move; and the relay with the broker stubbed out (claim and mark alone: the
  most the relay can reach on this database);
- latency from the commit of a new account to a consumer reading its event, with
  ``manage.py publish_events`` running (woken by NOTIFY), accounts committed one at a time;
- the claim of 100 due events with ``--kept`` events kept (most published, some due), each claim
  rolled back: p50, p99, and its plan;
- the worst case of the per-account hold-back: one account with ``--hot`` unpublished events among
  others: the claim's time before and once the account's held-back events are parked, and how long
  the relay takes to drain the others and that account.
"""

import argparse
import os
import statistics
import sys
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import bench.django_setup  # noqa: F401 (Django set up)

# isort: split
from confluent_kafka import OFFSET_END, Consumer, KafkaException, Producer, TopicPartition
from django.conf import settings
from django.db import connection, connections, transaction

from accounts.services import account_provision
from bench.figures import percentiles, quantile
from bench.scratch import scratch_database
from platform_events.kafka import relay
from tests.kafka_broker import KafkaBroker
from tests.support import database_url_for_tests, start_manage, wait_for

TOPIC = f"{settings.KAFKA_TOPIC_PREFIX}account"
PARTS = ("rate", "latency", "claim", "hot")

# The payload account_event_data() writes, for events made in bulk without accounts behind them.
PAYLOAD = """jsonb_build_object(
    'type', 'account.created', 'timestamp', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
    'data', jsonb_build_object('id', {id}, 'email', 'user' || {n} || '@example.com', 'login', 'user' || {n},
                               'status', 'PROVISIONED'))"""


def owner_sql(*statements: tuple[str, list] | str) -> None:
    with connections["owner"].cursor() as cursor:
        for statement in statements:
            sql, params = (statement, []) if isinstance(statement, str) else statement
            cursor.execute(sql, params)


def empty() -> None:
    owner_sql("TRUNCATE accounts, tokens, outbox_events, webhook_deliveries RESTART IDENTITY CASCADE")


def queue(count: int) -> None:
    """``count`` account.created events, each with its publication row, as sign-ups in bulk make them."""
    empty()
    owner_sql(
        (
            "INSERT INTO accounts (email, login) SELECT 'user' || g || '@example.com', 'user' || g"
            " FROM generate_series(1, %s) g",
            [count],
        ),
        "ANALYZE event_publications",  # as autovacuum would after such an insert
    )


def kept_events() -> list[relay.Event]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id, seq, aggregate_type, aggregate_id, event_type, created_at, payload::text FROM outbox_events"
            " ORDER BY seq"
        )
        return [relay.Event(*row) for row in cursor.fetchall()]


def relay_rate(count: int, producer: Producer) -> float:
    started = time.perf_counter()
    result = relay.publish(producer=producer)
    elapsed = time.perf_counter() - started
    assert (result.published, result.outage) == (count, None), result
    return count / elapsed


def bare_rate(events: list[relay.Event], producer: Producer) -> float:
    """The same messages through a producer of the same settings, one flush at the end."""
    acknowledged = []

    def on_delivery(error, message):
        if error is None:
            acknowledged.append(message.offset())

    started = time.perf_counter()
    for event in events:
        relay.send(producer, event, on_delivery)  # the relay's own message, byte for byte
    producer.flush(60)
    elapsed = time.perf_counter() - started
    assert len(acknowledged) == len(events), (len(acknowledged), len(events))
    return len(events) / elapsed


def stubbed_rate(count: int) -> float:
    """Claim and mark alone: every message acknowledged at once, nothing sent."""
    real_produce = relay.produce
    offsets = iter(range(10**9))
    relay.produce = lambda producer, events: relay.Outcome(acknowledged=[(e, 0, next(offsets)) for e in events])
    try:
        return relay_rate(count, producer=None)
    finally:
        relay.produce = real_produce


def cpu_seconds(pid: int) -> float:
    """User and system CPU time a process of this machine has used (Linux /proc/<pid>/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class CpuUse:
    """The CPU time used while the block runs by this process (Python and librdkafka's threads), the
    runtime connection's PostgreSQL backend and the broker: what a side costs the machine, waits aside."""

    PARTS = ("python", "postgres", "broker")

    def __init__(self, broker_pid: int):
        self.broker_pid = broker_pid

    def now(self) -> dict[str, float]:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            backend = cursor.fetchone()[0]
        return {"python": time.process_time(), "postgres": cpu_seconds(backend), "broker": cpu_seconds(self.broker_pid)}

    def __enter__(self) -> "CpuUse":
        self.started = self.now()
        return self

    def __exit__(self, *exc) -> None:
        ended = self.now()
        self.used = {part: ended[part] - self.started[part] for part in self.PARTS}


def publishing(events: int, repeat: int, broker_pid: int) -> None:
    print(f"relay: {events:,} events of {events:,} accounts, batches of {settings.KAFKA_BATCH_SIZE}")
    rounds = []
    cpu = {"relay": [], "bare": []}
    for round_ in range(repeat):
        queue(events)
        messages = kept_events()
        rates = {}
        # The order turned each round, so a slower minute of the shared machine weighs on both sides.
        for name in ("relay", "bare") if round_ % 2 == 0 else ("bare", "relay"):
            producer = relay.new_producer()
            producer.list_topics(timeout=10)  # connected before the clock starts, on both sides
            with CpuUse(broker_pid) as use:
                if name == "relay":
                    rates[name] = relay_rate(events, producer)
                else:
                    rates[name] = bare_rate(messages, producer)
            cpu[name].append(use.used)
        ours, bare = rates["relay"], rates["bare"]
        rounds.append((ours / bare, ours, bare))
        print(f"  round {round_ + 1}: relay {ours:8,.0f}/s, bare producer {bare:8,.0f}/s ({ours / bare:.2f}x)")
    ours = statistics.median(r[1] for r in rounds)
    bare = statistics.median(r[2] for r in rounds)
    ratios = sorted(r[0] for r in rounds)
    print(f"relay to the broker                {ours:9,.0f} events/s       (median of {len(rounds)} rounds)")
    print(
        f"bare confluent-kafka producer      {bare:9,.0f} messages/s     relay / bare = {ours / bare:.2f}x"
        f" (medians; rounds {ratios[0]:.2f}-{ratios[-1]:.2f}x)"
    )
    totals = {}
    for name, label in (("relay", "relay"), ("bare", "bare producer")):
        parts = {part: statistics.median(u[part] for u in cpu[name]) * 1e6 / events for part in CpuUse.PARTS}
        totals[name] = sum(parts.values())
        print(
            f"CPU an event, {label + ':':14} {totals[name]:6.1f} µs (medians: Python and librdkafka"
            f" {parts['python']:.1f}, PostgreSQL backend {parts['postgres']:.1f}, broker {parts['broker']:.1f})"
        )
    print(
        f"  bare / relay CPU = {totals['bare'] / totals['relay']:.2f}x: the relay's rate over the bare producer's"
        " where both are bound by the CPU"
    )
    queue(events)
    stubbed = stubbed_rate(events)
    print(f"claim + mark, broker stubbed       {stubbed:9,.0f} events/s       relay / stubbed = {ours / stubbed:.2f}x")


class Arrivals:
    """A consumer in a thread of its own, reading every partition of the topic from its end and noting
    when each key's first message arrived. Messages stamped before it started are passed over: the
    broker may resolve "the end" after earlier rounds' messages of the same keys (account ids start
    again at 1 in each round) are delivered, which would read as arrivals before their commit."""

    def __init__(self):
        self.times: dict[str, float] = {}
        self.since_ms = time.time() * 1000
        self.stopping = threading.Event()
        self.consumer = Consumer(
            {
                "bootstrap.servers": settings.KAFKA_BOOTSTRAP_SERVERS,
                "group.id": "bench",
                "enable.auto.commit": False,
                "fetch.wait.max.ms": 5,  # the broker answers a fetch at once when a message is there
            }
        )
        partitions = self.consumer.list_topics(TOPIC, timeout=10).topics[TOPIC].partitions
        self.consumer.assign([TopicPartition(TOPIC, p, OFFSET_END) for p in partitions])
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        while not self.stopping.is_set():
            message = self.consumer.poll(0.05)
            if message is None:
                continue
            if message.error():
                raise KafkaException(message.error())
            if message.timestamp()[1] >= self.since_ms:
                self.times.setdefault(message.key().decode(), time.time())

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(timeout=10)
        self.consumer.close()


def latencies(arrivals: Arrivals, samples: int, prefix: str) -> list[float]:
    found = []
    for n in range(samples):
        account = account_provision(email=f"{prefix}{n}@example.com", login=f"{prefix}{n}", actor=None)
        committed = time.time()
        key = str(account.id)
        wait_for(
            lambda key=key: key in arrivals.times, timeout=30, interval=0.0005, message="the event at the consumer"
        )
        found.append(arrivals.times[key] - committed)
        time.sleep(0.05)  # a modest rate: one account every ~60 ms
    return found


def latency(samples: int) -> None:
    empty()
    relay.Topics().ensure({TOPIC})
    arrivals = Arrivals()
    env = {"DATABASE_URL": database_url_for_tests(), "KAFKA_BOOTSTRAP_SERVERS": settings.KAFKA_BOOTSTRAP_SERVERS}
    publisher = start_manage("publish_events", "--poll-seconds", "300", **env)
    try:
        started = publisher.stdout.readline()
        assert started.startswith("Kafka relay started"), started + publisher.stdout.read()
        latencies(arrivals, 3, prefix="warm")
        found = latencies(arrivals, samples, prefix="listen")
        print(f"commit -> consumer, publish_events      {percentiles(found)}")
    finally:
        publisher.terminate()
        publisher.wait(timeout=30)
        arrivals.stop()


def keep(kept: int, due: int, accounts: int) -> None:
    """``kept`` events of ``accounts`` accounts (at random), the last ``due`` of them still to publish,
    written set-based as the owner."""
    empty()
    started = time.perf_counter()
    owner_sql(
        "SELECT setseed(0.34)",
        (
            "INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload, created_at)"
            " SELECT 'account', a.id, 'account.created', " + PAYLOAD.format(id="a.id", n="a.g") + ","
            " now() - make_interval(secs => %(kept)s - a.g)"
            " FROM (SELECT g, md5(floor(random() * %(accounts)s)::text)::uuid::text AS id"
            "       FROM generate_series(1, %(kept)s) g) a",
            {"kept": kept, "accounts": accounts},
        ),
        (
            "INSERT INTO event_publications (event_id, event_seq, ordering_key, status, published_at, kafka_partition,"
            " kafka_offset, created_at)"
            " SELECT e.id, e.seq, e.aggregate_type || ':' || e.aggregate_id, s.status,"
            " CASE s.status WHEN 'PUBLISHED' THEN e.created_at + interval '20 ms' END,"
            " CASE s.status WHEN 'PUBLISHED' THEN e.seq %% 6 END, CASE s.status WHEN 'PUBLISHED' THEN e.seq / 6 END,"
            " e.created_at"
            " FROM outbox_events e, LATERAL (SELECT CASE WHEN e.seq > %s THEN 'PENDING' ELSE 'PUBLISHED' END AS status) s",
            [kept - due],
        ),
        "ANALYZE outbox_events",
        "ANALYZE event_publications",
    )
    print(f"  {kept:,} events kept ({due:,} due) written in {time.perf_counter() - started:.0f} s")


def claim_times(size: int, samples: int) -> tuple[list[float], str]:
    """The relay's claim of ``size`` as the runtime role, each rolled back: durations, and what the last
    one did (rows claimed and parked: the two make ``size`` while that many are due)."""
    found, claimed = [], ""
    params = {"size": size, "claim": uuid.uuid4(), "lease": "60 seconds"}
    for n in range(samples + 5):
        with transaction.atomic():
            with connection.cursor() as cursor:
                started = time.perf_counter()
                cursor.execute(relay.CLAIM, params)
                *events, (_, parked, *_) = cursor.fetchall()
                elapsed = time.perf_counter() - started
                claimed = f"{len(events)} claimed, {parked} parked"
            transaction.set_rollback(True)
        if n >= 5:  # the first few read the pages in
            found.append(elapsed)
    return found, claimed


def claim_plan(size: int) -> str:
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(
                "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) " + relay.CLAIM,
                {"size": size, "claim": uuid.uuid4(), "lease": "60 seconds"},
            )
            plan = "\n".join(f"    {line}" for (line,) in cursor.fetchall())
        transaction.set_rollback(True)
    return plan


def claiming(kept: int, due: int, samples: int) -> None:
    print(f"claim of 100 due events with {kept:,} kept:")
    keep(kept, due, accounts=max(1, kept // 10))
    found, claimed = claim_times(100, samples)
    print(f"claim of 100, rolled back               {percentiles(found)}   ({claimed})")
    print(claim_plan(100))


def hot_account(hot: int, others: int, samples: int) -> None:
    """One account's ``hot`` events first, then ``others`` events of as many accounts: the first claims
    park the account's events they walk past (held back by its earlier one), each mark unparks the
    account's next, and every batch after that walks what it can publish."""
    print(f"one account with {hot:,} unpublished events, then {others:,} events of {others:,} accounts:")
    empty()
    owner_sql(
        (
            "INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload)"
            " SELECT 'account', CASE WHEN g <= %(hot)s THEN 'hot' ELSE g::text END, 'account.created', "
            + PAYLOAD.format(id="g::text", n="g")
            + " FROM generate_series(1, %(hot)s + %(others)s) g",
            {"hot": hot, "others": others},
        ),
        (
            "INSERT INTO event_publications (event_id, event_seq, ordering_key)"
            " SELECT id, seq, aggregate_type || ':' || aggregate_id FROM outbox_events"
        ),
        "ANALYZE outbox_events",
        "ANALYZE event_publications",
    )
    found, claimed = claim_times(100, samples)
    print(f"claim of 100 before any parking, rolled back {percentiles(found)}   ({claimed})")
    producer = relay.new_producer()
    producer.list_topics(timeout=10)
    topics = relay.Topics()
    batches, claims, parking, parked_claims = 0, [], 0, None
    started = time.time()
    relay.sweep()
    while True:
        before = time.perf_counter()
        result = relay.publish_batch(producer, topics)
        claims.append((time.perf_counter() - before, result.claimed))
        assert result.outage is None, result
        if result.claimed == 0 and result.parked == 0:
            break
        batches += 1
        parking += result.parked > 0
        if parking and result.parked == 0 and parked_claims is None:  # the account's waiting ones parked
            parked_claims, claimed = claim_times(100, samples)
            print(f"claim of 100 once parked, rolled back    {percentiles(parked_claims)}   ({claimed})")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT extract(epoch FROM max(published_at) FILTER (WHERE ordering_key <> 'account:hot')),"
            " extract(epoch FROM max(published_at) FILTER (WHERE ordering_key = 'account:hot')),"
            " count(*) FILTER (WHERE status = 'PENDING') FROM event_publications"
        )
        others_done, hot_done, left = cursor.fetchone()
    assert left == 0, left
    ones = [seconds for seconds, claimed in claims if claimed == 1]
    print(
        f"drained in {batches:,} batches ({parking} of them parked events): the others in"
        f" {float(others_done) - started:.1f} s, the account's {hot:,} in {float(hot_done) - started:.1f} s"
        f" ({hot / (float(hot_done) - started):,.0f} events/s)"
    )
    if ones:
        print(
            f"  a batch of one (claim, produce, acknowledgement, mark): median {statistics.median(ones) * 1000:.1f} ms,"
            f" p99 {quantile(sorted(ones), 0.99) * 1000:.1f} ms"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20_000, help="events published per round")
    parser.add_argument("--repeat", type=int, default=5, help="relay/bare pairs; the median is reported")
    parser.add_argument("--latency-samples", type=int, default=200)
    parser.add_argument("--kept", type=int, default=1_000_000, help="events kept for the claim's figure")
    parser.add_argument("--due", type=int, default=20_000, help="of those, still to publish (the newest)")
    parser.add_argument("--claims", type=int, default=500, help="claims timed")
    parser.add_argument("--hot", type=int, default=5_000, help="unpublished events of the one busy account")
    parser.add_argument("--others", type=int, default=20_000, help="events of other accounts beside it")
    parser.add_argument("--parts", default=",".join(PARTS), help=f"which figures, of {','.join(PARTS)}")
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    if not parts or parts - set(PARTS):
        parser.error(f"--parts takes some of {', '.join(PARTS)}, separated by commas.")

    with KafkaBroker() as broker, scratch_database():
        settings.KAFKA_BOOTSTRAP_SERVERS = broker.bootstrap
        with connection.cursor() as cursor:
            cursor.execute("SELECT version()")
            print(cursor.fetchone()[0].split(" on ")[0], f"- broker Tansu (in memory) at {broker.bootstrap}")
        relay.start_stream()
        if "rate" in parts:
            publishing(args.events, args.repeat, broker.process.pid)
        if "latency" in parts:
            latency(args.latency_samples)
        if "claim" in parts:
            claiming(args.kept, args.due, args.claims)
        if "hot" in parts:
            hot_account(args.hot, args.others, args.claims)


if __name__ == "__main__":
    main()
