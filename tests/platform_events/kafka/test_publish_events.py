"""manage.py publish_events as processes against the real broker: several relays at once over
thousands of events, commits that land out of order, a relay killed mid-batch, the broker stopped and
started again empty; and the command's one-sentence refusals.

The relay processes' tests run one after another in one xdist worker (the group below): they are the
suite's heaviest Kafka tests, and the outage's waits must not be starved of the machine's cores. Each
test has a broker of its own (the kafka_broker fixture is per test), so stopping one empties no other
test's topics."""

import io
import re
import signal
import subprocess
import threading
import time
from collections import Counter

import pytest
from confluent_kafka.admin import AdminClient
from django.core.management import CommandError, call_command

from tests.platform_events.kafka.test_relay import read_topic
from tests.support import connect, connect_as_owner, database_url_for_tests, start_manage, wait_for

pytestmark = pytest.mark.django_db(transaction=True)

relay_processes = pytest.mark.xdist_group("kafka_relays")

ACCOUNTS = 200
CHANGES = 4  # e-mail changes per account, after its creation


def relay_env(broker, **extra) -> dict:
    return {
        "DATABASE_URL": database_url_for_tests(),
        "KAFKA_BOOTSTRAP_SERVERS": broker.bootstrap,
        "KAFKA_TOPIC_PARTITIONS": "3",
        "KAFKA_BATCH_SIZE": "50",
        **extra,
    }


CHANGE = "UPDATE accounts SET email = 'r{round}.' || login || '@example.com' WHERE id % {writers} = {share}"


def write_events_with_late_commits(
    changes: int = CHANGES, writers: int = 2, long_open: dict[int, int] | None = None
) -> list[tuple[str, int, str]]:
    """ACCOUNTS accounts, then ``changes`` rounds of e-mail changes by ``writers`` connections, each
    changing its share of the accounts (id % writers). In each round the writers take their seqs one
    after another and commit in the reverse order: the seqs taken first commit last. A writer of
    ``long_open`` (writer: rounds) keeps its transaction open over that many rounds while the others
    commit round after round.
    Returns (id, seq, account) of every event."""
    with connect(autocommit=True) as conn:
        conn.execute(
            "INSERT INTO accounts (email, login) SELECT 'u' || n || '@example.com', 'u' || n"
            " FROM generate_series(1, %s) n",
            [ACCOUNTS],
        )
    conns = [connect() for _ in range(writers)]
    try:
        for round_ in range(changes):
            for share, conn in enumerate(conns):
                conn.execute(CHANGE.format(round=round_, writers=writers, share=share))
            for share in reversed(range(writers)):
                if (round_ + 1) % (long_open or {}).get(share, 1) and round_ < changes - 1:
                    continue  # the long-open transaction: its seqs are long taken when it commits
                conns[share].commit()
    finally:
        for conn in conns:
            conn.close()
    with connect(autocommit=True) as conn:
        return conn.execute("SELECT id::text, seq, aggregate_id FROM outbox_events ORDER BY seq").fetchall()


def check_stream(read, events, *, duplicates_at_most: int) -> None:
    """Every event read; each account's in seq order; a repeat only right after its first copy (before
    the account's next event), with the same key, value and headers; repeats only up to a bound."""
    seq_of = {event_id: seq for event_id, seq, _ in events}
    ids = [m["headers"]["ce_id"] for m in read]
    assert set(ids) == set(seq_of)
    assert len(ids) - len(set(ids)) <= duplicates_at_most
    first, last = {}, {}
    for message, event_id in zip(read, ids, strict=True):
        account = message["key"]
        if event_id in first:
            assert last[account] == event_id, f"account {account}: {event_id} repeated after a later event"
            copy = {name: message[name] for name in ("key", "body", "headers")}
            assert copy == first[event_id], f"{event_id} repeated with another key, value or headers"
            continue
        first[event_id] = {name: message[name] for name in ("key", "body", "headers")}
        if account in last:
            assert seq_of[last[account]] < seq_of[event_id], f"account {account}: {event_id} out of order"
        last[account] = event_id


def check_marks(read, *, published_before: set[str] = frozenset()) -> None:
    """Every PUBLISHED row names, by partition and offset, the message of its event that was read
    (those of ``published_before`` excepted: marked before a broker that lost them)."""
    at = {(m["partition"], m["offset"]): m["headers"]["ce_id"] for m in read}
    with connect(autocommit=True) as conn:
        marks = conn.execute(
            "SELECT event_id::text, kafka_partition, kafka_offset FROM event_publications WHERE status = 'PUBLISHED'"
        ).fetchall()
    wrong = [
        (event_id, partition, offset)
        for event_id, partition, offset in marks
        if event_id not in published_before and at.get((partition, offset)) != event_id
    ]
    assert not wrong, f"{len(wrong)} marked PUBLISHED where the broker holds no such message: {wrong[:3]}"


def listening(log: str) -> bool:
    """Whether the relay whose output is in the file ``log`` listens for new events."""
    with open(log) as lines:
        return "listening on event_publication" in lines.read()


def published_ids() -> set[str]:
    with connect(autocommit=True) as conn:
        rows = conn.execute("SELECT event_id::text FROM event_publications WHERE status = 'PUBLISHED'").fetchall()
    return {event_id for (event_id,) in rows}


def published_count() -> int:
    with connect(autocommit=True) as conn:
        return conn.execute("SELECT count(*) FROM event_publications WHERE status = 'PUBLISHED'").fetchone()[0]


def all_published() -> bool:
    with connect(autocommit=True) as conn:
        return conn.execute("SELECT count(*) FROM event_publications WHERE status = 'PENDING'").fetchone() == (0,)


def stop(processes) -> None:
    """SIGTERM, and SIGKILL for a relay that did not stop (stuck on a lock in a failing test)."""
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in processes:
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)


# The relay processes named "held" (PGAPPNAME) have their claims logged, and their marks (the UPDATE to
# PUBLISHED) held on an advisory lock the test holds; a mark fails once the test says the relay is dead:
# a relay killed between the broker's acknowledgement and its mark. Other relays are left alone.
HOLD_MARK = """
CREATE TABLE test_mark_hold (relay_dead boolean NOT NULL);
INSERT INTO test_mark_hold VALUES (false);
CREATE TABLE test_held_claims (
    n bigserial PRIMARY KEY, relay int NOT NULL DEFAULT pg_backend_pid(), claim uuid NOT NULL, event_id uuid NOT NULL
);
CREATE FUNCTION test_mark_hold() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
BEGIN
    IF current_setting('application_name') = 'held' THEN
        IF NEW.status = 'PUBLISHED' THEN
            PERFORM pg_advisory_xact_lock_shared(4242);
            IF (SELECT relay_dead FROM test_mark_hold) THEN
                RAISE EXCEPTION 'the relay was killed before its mark';
            END IF;
        ELSIF NEW.claim IS NOT NULL AND NEW.claim IS DISTINCT FROM OLD.claim THEN
            INSERT INTO test_held_claims (claim, event_id) VALUES (NEW.claim, NEW.event_id);
        END IF;
    END IF;
    RETURN NEW;
END;
$$;
CREATE TRIGGER test_mark_hold BEFORE UPDATE ON event_publications FOR EACH ROW EXECUTE FUNCTION test_mark_hold();
"""
RELEASE_MARK = (
    "DROP TRIGGER test_mark_hold ON event_publications; DROP FUNCTION test_mark_hold();"
    " DROP TABLE test_mark_hold, test_held_claims"
)
# How many "held" relays wait on the test's advisory lock, their mark acknowledged and not yet made.
HELD = """
SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid)
WHERE l.locktype = 'advisory' AND NOT l.granted AND a.application_name = 'held'
"""
# The last claim of each "held" relay, and its events: the batches they hold while their marks wait.
HELD_CLAIMS = "SELECT DISTINCT ON (relay) claim FROM test_held_claims ORDER BY relay, n DESC"
HELD_BATCHES = f"SELECT event_id::text FROM test_held_claims WHERE claim IN ({HELD_CLAIMS})"
# How many rows those claims still hold: not yet marked (nor given back).
STILL_HELD = f"SELECT count(*) FROM event_publications WHERE claim IN ({HELD_CLAIMS})"


def release_held_relay(owner, relays, logs) -> None:
    """After the test, also when it failed: the held mark let go, every relay stopped, the hold removed."""
    owner.execute("SELECT pg_advisory_unlock_all()")
    stop(relays)
    owner.execute(RELEASE_MARK)
    for log in logs:
        log.close()


def kill_held_relay(owner, process) -> None:
    """SIGKILL the held relay and let its waiting mark fail, as the dead process's would never come."""
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    owner.execute("UPDATE test_mark_hold SET relay_dead = true")
    owner.execute("SELECT pg_advisory_unlock(4242)")


@relay_processes
@pytest.mark.attack
def test_four_relays_one_killed_mid_batch_publish_every_event_in_order_repeating_only_the_batch_it_held(
    kafka_broker, tmp_path
):
    """5,000 events of 200 accounts, written by four connections whose commits land out of seq order
    (two of them keep theirs open over eight and three rounds), while four relays publish. One relay is stopped in the
    mark of its first batch (acknowledged, not marked), its lease lapses, and it is killed once the
    others have published a thousand events."""
    with connect(autocommit=True) as conn:
        conn.execute("SELECT event_stream_start()")
    env = relay_env(kafka_broker, KAFKA_MESSAGE_TIMEOUT_SECONDS="1", KAFKA_LEASE_SECONDS="2")
    events: list = []
    writer = threading.Thread(
        target=lambda: events.extend(write_events_with_late_commits(changes=24, writers=4, long_open={0: 8, 2: 3}))
    )
    logs = [open(tmp_path / f"relay{n}.log", "w") for n in range(4)]  # noqa: SIM115
    with connect_as_owner(autocommit=True) as owner:
        owner.execute(HOLD_MARK)
        relays = [
            start_manage("publish_events", stdout=log, **env, PGAPPNAME="held" if n == 0 else f"relay{n}")
            for n, log in enumerate(logs)
        ]
        try:
            wait_for(lambda: all(listening(log.name) for log in logs), timeout=60, message="the relays listening")
            owner.execute("SELECT pg_advisory_lock(4242)")
            writer.start()
            wait_for(lambda: owner.execute(HELD).fetchone()[0], timeout=60, message="the held relay's mark waiting")
            wait_for(lambda: published_count() >= 1000, timeout=120, interval=0.1, message="a fifth published")
            in_flight = {event_id for (event_id,) in owner.execute(HELD_BATCHES)}
            kill_held_relay(owner, relays[0])
            writer.join(timeout=120)
            wait_for(all_published, timeout=120, interval=0.5, message="every event published after the kill")
        finally:
            release_held_relay(owner, relays, logs)

    assert len(events) == ACCOUNTS * 25
    assert in_flight, "the killed relay held a batch"
    read = read_topic(kafka_broker.bootstrap, len(events) + len(in_flight))
    check_stream(read, events, duplicates_at_most=len(in_flight))
    copies = Counter(m["headers"]["ce_id"] for m in read)
    assert {event_id: n for event_id, n in copies.items() if n > 1} == dict.fromkeys(in_flight, 2)
    check_marks(read)


@relay_processes
def test_a_relay_killed_between_the_acknowledgement_and_its_mark_loses_nothing_and_repeats_only_that_batch(
    kafka_broker, tmp_path
):
    with connect(autocommit=True) as conn:
        conn.execute("SELECT event_stream_start()")
    events = write_events_with_late_commits()
    env = relay_env(kafka_broker, KAFKA_BATCH_SIZE="150", KAFKA_MESSAGE_TIMEOUT_SECONDS="1", KAFKA_LEASE_SECONDS="2")
    with connect_as_owner(autocommit=True) as owner, open(tmp_path / "relays.log", "w") as log:
        owner.execute(HOLD_MARK)
        try:
            owner.execute("SELECT pg_advisory_lock(4242)")
            killed = start_manage("publish_events", stdout=log, **env, PGAPPNAME="held")
            wait_for(lambda: owner.execute(HELD).fetchone()[0], timeout=60, message="the relay's mark waiting")
            kill_held_relay(owner, killed)
        finally:
            owner.execute("SELECT pg_advisory_unlock_all()")
            owner.execute(RELEASE_MARK)
        with connect(autocommit=True) as conn:
            assert conn.execute("SELECT count(*) FROM event_publications WHERE status = 'PUBLISHED'").fetchone() == (0,)
        survivor = start_manage("publish_events", stdout=log, **env)
        try:
            wait_for(all_published, timeout=120, interval=0.5, message="every event published after the kill")
        finally:
            stop([survivor])

    read = read_topic(kafka_broker.bootstrap, len(events) + 150)
    check_stream(read, events, duplicates_at_most=150)  # the batch the killed relay held, no more
    assert len(read) - len({m["headers"]["ce_id"] for m in read}) == 150  # each of them, once more


WAITED = re.compile(r"kafka: broker unavailable \(.*\); waited ([0-9.]+) s before trying again$")


@relay_processes
@pytest.mark.attack
def test_a_broker_stopped_and_started_again_empty_holds_every_event_until_it_is_back(kafka_broker, tmp_path):
    """Two relays over 1,000 events; the broker stops with part of them published and a batch of each
    relay acknowledged and not yet marked; 200 more are written during the 10 s outage; it comes back
    without its messages and topics."""
    with connect(autocommit=True) as conn:
        conn.execute("SELECT event_stream_start()")
    events = write_events_with_late_commits()
    env = relay_env(
        kafka_broker,
        KAFKA_BATCH_SIZE="25",
        KAFKA_MESSAGE_TIMEOUT_SECONDS="1",
        KAFKA_LEASE_SECONDS="2",
        PGAPPNAME="held",
    )
    paths = [tmp_path / f"relay{n}.log" for n in range(2)]
    logs = [open(path, "w") for path in paths]  # noqa: SIM115
    with connect_as_owner(autocommit=True) as owner:
        owner.execute(HOLD_MARK)
        relays = [start_manage("publish_events", stdout=log, **env) for log in logs]
        try:
            wait_for(lambda: published_count() >= 100, timeout=60, interval=0.05, message="some published")
            owner.execute("SELECT pg_advisory_lock(4242)")
            wait_for(lambda: owner.execute(HELD).fetchone()[0] == 2, timeout=60, message="both relays' marks waiting")
            with connect(autocommit=True) as conn:
                (acknowledged,) = conn.execute(
                    "SELECT count(*) FROM event_publications WHERE status = 'PUBLISHED' OR claim IS NOT NULL"
                ).fetchone()
            before = read_topic(kafka_broker.bootstrap, acknowledged)  # all the broker acknowledged so far
            kafka_broker.process.kill()  # a crash: gone at once, and its messages and topics with it
            kafka_broker.stop()
            owner.execute("SELECT pg_advisory_unlock(4242)")  # the marks of what it acknowledged go through
            wait_for(lambda: not owner.execute(STILL_HELD).fetchone()[0], timeout=60, message="the held marks made")
            published_before = published_ids()
            check_marks(before)  # nothing marked that the broker did not hold
            with connect(autocommit=True) as conn:
                conn.execute("UPDATE accounts SET email = 'outage.' || login || '@example.com'")
            time.sleep(10)  # the outage
            assert published_ids() == published_before  # nothing marked while no broker acknowledged anything
            with connect(autocommit=True) as conn:
                events = conn.execute("SELECT id::text, seq, aggregate_id FROM outbox_events ORDER BY seq").fetchall()
            kafka_broker.start()
            wait_for(all_published, timeout=120, interval=0.5, message="every event published after the outage")
        finally:
            release_held_relay(owner, relays, logs)

    assert len(events) == ACCOUNTS * (2 + CHANGES)
    assert 0 < len(published_before) < ACCOUNTS * (1 + CHANGES), "the outage came with events still to publish"
    due = [event for event in events if event[0] not in published_before]
    read = read_topic(kafka_broker.bootstrap, len(due))
    check_stream(read, due, duplicates_at_most=0)  # every one of them, once, each account's in order
    check_marks(read, published_before=published_before)
    topics = AdminClient({"bootstrap.servers": kafka_broker.bootstrap}).list_topics(timeout=10).topics
    assert len(topics["lifecycle.account"].partitions) == 3  # made again by a relay, not by a produce
    for path in paths:
        log = path.read_text()
        assert "Traceback" not in log
        waits = [float(match[1]) for line in log.splitlines() if (match := WAITED.search(line))]
        assert len(waits) >= 2 and waits[-1] > waits[0], f"no backoff in {log}"


def test_without_a_broker_configured_the_command_says_so(settings):
    settings.KAFKA_BOOTSTRAP_SERVERS = ""
    with pytest.raises(CommandError, match=r"^KAFKA_BOOTSTRAP_SERVERS is unset: set it to the broker's host:port"):
        call_command("publish_events", "--once")


def test_without_a_broker_the_procfile_process_waits_quietly_and_stops_on_sigterm():
    """Off is a state: the process does not exit (honcho would stop the others with it, a platform
    would restart it in a loop), says why it waits, warns when the database's switch is on, and
    stops cleanly when told."""
    with connect(autocommit=True) as conn:
        conn.execute("SELECT event_stream_start()")
    relay_process = start_manage("publish_events", DATABASE_URL=database_url_for_tests(), KAFKA_BOOTSTRAP_SERVERS="")
    lines = []
    wait_for(
        lambda: lines.append(relay_process.stdout.readline()) or "wait for a relay" in "".join(lines),
        timeout=60,
        message="the relay's warning",
    )
    assert "Publication to Kafka is off (KAFKA_BOOTSTRAP_SERVERS unset); the relay waits" in "".join(lines)
    assert relay_process.poll() is None
    relay_process.send_signal(signal.SIGTERM)
    assert relay_process.wait(timeout=30) == 0
    assert "Traceback" not in "".join(lines) + relay_process.stdout.read()


def test_a_configuration_the_client_refuses_is_one_sentence(settings, tmp_path):
    (tmp_path / "ca.pem").write_text("not a certificate\n")
    settings.KAFKA_BOOTSTRAP_SERVERS = "127.0.0.1:1"
    settings.KAFKA_SECURITY = {"security.protocol": "ssl", "ssl.ca.location": str(tmp_path / "ca.pem")}
    with pytest.raises(CommandError, match=r"^The Kafka client refused its configuration: "):
        call_command("publish_events", "--once")


def test_a_period_a_broker_lost_is_published_again_in_order_with_the_same_ids(settings, kafka_broker):
    """The broker acknowledged, then lost everything (restarted empty): --again makes the period due
    from its first event, and the relay sends it all again, each account in order, ids unchanged."""
    settings.KAFKA_BOOTSTRAP_SERVERS = kafka_broker.bootstrap
    settings.KAFKA_TOPIC_PARTITIONS = 3
    with connect(autocommit=True) as conn:
        started = conn.execute("SELECT event_stream_start()").fetchone()[0]
        for n in range(3):
            conn.execute("INSERT INTO accounts (email, login) VALUES (%s, %s)", [f"again{n}@example.com", f"again{n}"])
            conn.execute("UPDATE accounts SET email = 'new.' || email WHERE login = %s", [f"again{n}"])
    call_command("publish_events", "--once", stdout=io.StringIO())
    first = read_topic(kafka_broker.bootstrap, 6)
    kafka_broker.stop()
    kafka_broker.start()  # empty
    out = io.StringIO()
    call_command("publish_events", "--since", started.isoformat(), "--again", stdout=out)
    assert out.getvalue() == "6 kept events queued for publication again.\n"
    call_command("publish_events", "--once", stdout=io.StringIO())
    second = read_topic(kafka_broker.bootstrap, 6)
    ids = [m["headers"]["ce_id"] for m in first]
    assert len(set(ids)) == 6 and sorted(m["headers"]["ce_id"] for m in second) == sorted(ids)
    by_account = {}
    for message in second:
        by_account.setdefault(message["key"], []).append(message["headers"]["ce_sequence"])
    assert all(seqs == sorted(seqs) and len(seqs) == 2 for seqs in by_account.values())


def test_refused_arguments_leave_publication_as_it_was(settings, kafka_broker):
    settings.KAFKA_BOOTSTRAP_SERVERS = kafka_broker.bootstrap
    for args, sentence in [
        (["--again"], r"^--again needs --since: it publishes a period again\."),
        (["--until", "2026-01-01"], r"^--until needs --since"),
        (["--since", "2026-02-01", "--until", "2026-01-01"], r"^A period to publish starts before it ends"),
    ]:
        with pytest.raises(CommandError, match=sentence):
            call_command("publish_events", *args)
    with connect(autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM event_stream").fetchone() == (0,)  # not switched on


def test_a_period_needs_a_valid_start(settings, kafka_broker):
    settings.KAFKA_BOOTSTRAP_SERVERS = kafka_broker.bootstrap
    with pytest.raises(CommandError, match=r"^'yesterday' is no date or time"):
        call_command("publish_events", "--since", "yesterday")
    with pytest.raises(CommandError, match=r"^A period to publish starts before it ends; 2030-01-01 is not before now"):
        call_command("publish_events", "--since", "2030-01-01")


def pending() -> int:
    with connect(autocommit=True) as conn:
        return conn.execute("SELECT count(*) FROM event_publications WHERE status = 'PENDING'").fetchone()[0]


def test_a_running_relay_looks_its_topics_up_once_not_at_every_pass(kafka_settings, monkeypatch):
    """Each wake-up would otherwise open an admin connection to the broker (some 50 ms of latency)."""
    from platform_events.kafka import relay
    from platform_events.management.commands.publish_events import Relay

    lookups = []
    real = relay.AdminClient

    def counting(config):
        lookups.append(1)
        return real(config)

    monkeypatch.setattr(relay, "AdminClient", counting)
    relay.start_stream()
    worker = Relay()
    for login in ("first", "second"):
        with connect(autocommit=True) as conn:
            conn.execute("INSERT INTO accounts (email, login) VALUES (%s, %s)", [f"{login}@example.com", login])
        worker.run_pass()
    assert pending() == 0
    assert len(lookups) == 1


def test_a_relay_whose_broker_came_back_empty_publishes_again(kafka_settings, kafka_broker):
    """librdkafka's producer that lived through the outage stays stuck once the broker is back empty
    (its every message timed out): the relay starts a new one after an outage."""
    from platform_events.kafka import relay
    from platform_events.management.commands.publish_events import Relay

    relay.start_stream()
    worker = Relay()
    with connect(autocommit=True) as conn:
        conn.execute("INSERT INTO accounts (email, login) VALUES ('before@example.com', 'before')")
    worker.run_pass()
    assert pending() == 0
    kafka_broker.stop()
    with connect(autocommit=True) as conn:
        conn.execute("INSERT INTO accounts (email, login) VALUES ('during@example.com', 'during')")
    worker.run_pass()  # the outage: given back, a new producer
    assert pending() == 1
    kafka_broker.start()
    wait_for(lambda: worker.run_pass() or pending() == 0, timeout=90, interval=0.1, message="published after")
    assert [m["value"]["data"]["login"] for m in read_topic(kafka_broker.bootstrap, 1)] == ["during"]
