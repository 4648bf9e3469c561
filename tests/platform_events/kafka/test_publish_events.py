"""manage.py publish_events as processes against the real broker: several relays at once, commits that
land out of order, a relay killed mid-batch; and the command's one-sentence refusals."""

import io
import signal
import threading

import pytest
from django.core.management import CommandError, call_command

from tests.platform_events.kafka.test_relay import read_topic
from tests.support import connect, connect_as_owner, database_url_for_tests, start_manage, wait_for

pytestmark = pytest.mark.django_db(transaction=True)

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


def write_events_with_late_commits() -> list[tuple[str, int, str]]:
    """ACCOUNTS accounts, then CHANGES rounds of e-mail changes; in each round the first half's
    transaction takes its seqs first and commits after the second half's. Returns (id, seq, account)."""
    with connect(autocommit=True) as conn:
        conn.execute(
            "INSERT INTO accounts (email, login) SELECT 'u' || n || '@example.com', 'u' || n"
            " FROM generate_series(1, %s) n",
            [ACCOUNTS],
        )
    for round_ in range(CHANGES):
        with connect() as early, connect() as late:
            change = "UPDATE accounts SET email = 'r{r}.' || login || '@example.com' WHERE id % 2 = {half}"
            early.execute(change.format(r=round_, half=0))  # seqs taken first...
            late.execute(change.format(r=round_, half=1))
            late.commit()
            early.commit()  # ...committed last
    with connect(autocommit=True) as conn:
        return conn.execute("SELECT id::text, seq, aggregate_id FROM outbox_events ORDER BY seq").fetchall()


def check_stream(read, events, *, duplicates_at_most: int) -> None:
    """Every event read; each account's in seq order (the first copy of each); repeats only up to a bound."""
    seq_of = {event_id: seq for event_id, seq, _ in events}
    ids = [m["headers"]["ce_id"] for m in read]
    assert set(ids) == set(seq_of)
    assert len(ids) - len(set(ids)) <= duplicates_at_most
    seen, last = set(), {}
    for message, event_id in zip(read, ids, strict=True):
        if event_id in seen:
            continue
        seen.add(event_id)
        account = message["key"]
        assert last.get(account, -1) < seq_of[event_id], f"account {account}: {event_id} out of order"
        last[account] = seq_of[event_id]


def all_published() -> bool:
    with connect(autocommit=True) as conn:
        return conn.execute("SELECT count(*) FROM event_publications WHERE status = 'PENDING'").fetchone() == (0,)


def stop(processes) -> None:
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in processes:
        process.wait(timeout=30)


def test_four_relays_publish_every_event_once_each_account_in_order(kafka_broker, tmp_path):
    with connect(autocommit=True) as conn:
        conn.execute("SELECT event_stream_start()")
    logs = [open(tmp_path / f"relay{n}.log", "w") for n in range(4)]  # noqa: SIM115
    relays = [start_manage("publish_events", stdout=log, **relay_env(kafka_broker)) for log in logs]
    try:
        writer = threading.Thread(target=lambda: events.extend(write_events_with_late_commits()))
        events: list = []
        writer.start()
        writer.join()
        wait_for(all_published, timeout=120, interval=0.5, message="every event published")
    finally:
        stop(relays)
        for log in logs:
            log.close()

    read = read_topic(kafka_broker.bootstrap, len(events))
    assert len(events) == ACCOUNTS * (1 + CHANGES)
    check_stream(read, events, duplicates_at_most=0)


# Holds a relay's mark (the UPDATE to PUBLISHED) on an advisory lock the test holds, and fails it once
# the test says the relay is dead: a relay killed between the broker's acknowledgement and its mark.
HOLD_MARK = """
CREATE TABLE test_mark_hold (relay_dead boolean NOT NULL);
INSERT INTO test_mark_hold VALUES (false);
CREATE FUNCTION test_mark_hold() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
BEGIN
    IF NEW.status = 'PUBLISHED' THEN
        PERFORM pg_advisory_xact_lock_shared(4242);
        IF (SELECT relay_dead FROM test_mark_hold) THEN
            RAISE EXCEPTION 'the relay was killed before its mark';
        END IF;
    END IF;
    RETURN NEW;
END;
$$;
CREATE TRIGGER test_mark_hold BEFORE UPDATE ON event_publications FOR EACH ROW EXECUTE FUNCTION test_mark_hold();
"""
RELEASE_MARK = (
    "DROP TRIGGER test_mark_hold ON event_publications; DROP FUNCTION test_mark_hold(); DROP TABLE test_mark_hold"
)


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
            killed = start_manage("publish_events", stdout=log, **env)
            held = "SELECT count(*) > 0 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
            wait_for(lambda: owner.execute(held).fetchone()[0], timeout=60, message="the relay's mark waiting")
            killed.send_signal(signal.SIGKILL)
            killed.wait(timeout=30)
            owner.execute("UPDATE test_mark_hold SET relay_dead = true")
            owner.execute("SELECT pg_advisory_unlock(4242)")
        finally:
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


@pytest.fixture
def relay_settings(settings, kafka_broker):
    settings.KAFKA_BOOTSTRAP_SERVERS = kafka_broker.bootstrap
    settings.KAFKA_TOPIC_PARTITIONS = 1
    settings.KAFKA_MESSAGE_TIMEOUT_SECONDS = 3
    return settings


def pending() -> int:
    with connect(autocommit=True) as conn:
        return conn.execute("SELECT count(*) FROM event_publications WHERE status = 'PENDING'").fetchone()[0]


def test_a_running_relay_looks_its_topics_up_once_not_at_every_pass(relay_settings, monkeypatch):
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


def test_a_relay_whose_broker_came_back_empty_publishes_again(relay_settings, kafka_broker):
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
