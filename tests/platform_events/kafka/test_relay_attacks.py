"""Attacks on the Kafka relay (platform_events/kafka/relay.py) with a real broker (tests/kafka_broker.py)
and the real test database: odd events, odd configurations, and what the runtime role may do to the
publication state by hand."""

import io
import json
import re
import uuid
from datetime import UTC, datetime, timedelta, timezone

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from django.core.management import call_command

from platform_events.kafka import relay
from platform_events.management.commands.publish_events import Relay
from tests.platform_events.kafka.test_relay import append_events, read_topic
from tests.platform_events.outbox.test_triggers import activate, provision
from tests.support import analyze, connect, connect_as_owner

pytestmark = [pytest.mark.attack, pytest.mark.django_db(transaction=True)]


def append(conn, aggregate_id: str, data: dict, event_type: str = "account.updated") -> None:
    """An event as the database's triggers append it (outbox_append_many(), the owner's)."""
    conn.execute(
        "SELECT outbox_append_many('account', ARRAY[%s], %s, ARRAY[%s::jsonb])",
        [aggregate_id, event_type, json.dumps(data)],
    )


def test_an_event_larger_than_a_message_may_be_is_refused_alone_and_the_others_go_out(kafka_settings):
    relay.start_stream()
    with connect(autocommit=True) as conn:
        jane = provision(conn, "jane")
    with connect_as_owner(autocommit=True) as owner:
        append(owner, "huge", {"blob": "x" * 2_000_000})
    with connect(autocommit=True) as conn:
        john = provision(conn, "john")
        activate(conn, jane)

    result = relay.publish()

    assert (result.published, result.refused, result.outage) == (3, 1, None)
    with connect(autocommit=True) as conn:
        rows = conn.execute(
            "SELECT p.ordering_key, p.status, p.attempts, p.last_error, p.claim FROM event_publications p"
            " ORDER BY p.event_seq"
        ).fetchall()
    huge = [row for row in rows if row[0] == "account:huge"]
    assert [(status, attempts, claim) for _, status, attempts, _, claim in huge] == [("PENDING", 1, None)]
    assert "MSG_SIZE_TOO_LARGE" in huge[0][3]
    read = read_topic(kafka_settings.KAFKA_BOOTSTRAP_SERVERS, 3)
    assert sorted(m["key"] for m in read) == sorted([str(jane), str(jane), str(john)])


def test_an_event_whose_transaction_rolled_back_is_never_published_nor_waited_for(kafka_settings):
    relay.start_stream()
    with connect() as conn:
        provision(conn, "ghost")
        conn.rollback()
    with connect(autocommit=True) as conn:
        jane = provision(conn, "jane")

    result = relay.publish()

    assert (result.claimed, result.published, result.outage) == (1, 1, None)
    assert [m["key"] for m in read_topic(kafka_settings.KAFKA_BOOTSTRAP_SERVERS, 1)] == [str(jane)]
    assert relay.publish().claimed == 0  # nothing left behind to claim again and again


def test_an_aggregate_id_of_odd_characters_is_the_key_and_subject_as_it_is(kafka_settings):
    odd = "ünï cödé:/\t\"😀'%s\\"
    relay.start_stream()
    with connect_as_owner(autocommit=True) as owner:
        append(owner, odd, {"id": odd})
        append(owner, odd, {"id": odd, "n": 2})

    result = relay.publish()

    assert (result.published, result.outage) == (2, None)
    read = read_topic(kafka_settings.KAFKA_BOOTSTRAP_SERVERS, 2)
    assert [(m["key"], m["headers"]["ce_subject"], m["value"]["data"]) for m in read] == [
        (odd, odd, {"id": odd}),
        (odd, odd, {"id": odd, "n": 2}),
    ]


def jane_published_then_activated_under(kafka_settings, prefix: str) -> None:
    """Jane's creation published to the stream's topics; her activation written once this process's
    KAFKA_TOPIC_PREFIX is ``prefix``."""
    relay.start_stream()
    with connect(autocommit=True) as conn:
        jane = provision(conn, "jane")
    relay.publish()
    kafka_settings.KAFKA_TOPIC_PREFIX = prefix
    with connect(autocommit=True) as conn:
        activate(conn, jane)


def test_a_relay_with_another_topic_prefix_does_not_take_the_streams_events(kafka_settings):
    jane_published_then_activated_under(kafka_settings, "staging.")

    with pytest.raises(
        relay.StreamElsewhere, match=r"^The event stream publishes to topics prefixed 'lifecycle\.', not"
    ):
        relay.publish()
    with pytest.raises(relay.StreamElsewhere, match=r"prefixed 'lifecycle\.', not 'staging\.': set KAFKA_TOPIC_PREFIX"):
        relay.start_stream()

    kafka_settings.KAFKA_TOPIC_PREFIX = "lifecycle."
    relay.publish()
    read = read_topic(kafka_settings.KAFKA_BOOTSTRAP_SERVERS, 2)
    assert [m["value"]["type"] for m in read] == ["account.created", "account.activated"]


def test_the_stream_moves_to_other_topics_only_when_told_and_says_so_in_the_trail(kafka_settings):
    jane_published_then_activated_under(kafka_settings, "renamed.")
    out = io.StringIO()
    call_command("publish_events", "--move-topics", stdout=out)
    assert "prefixed 'renamed.' from now on (they were 'lifecycle.')" in out.getvalue()
    relay.publish()
    assert [m["value"]["type"] for m in read_topic(kafka_settings.KAFKA_BOOTSTRAP_SERVERS, 1)] == ["account.created"]
    moved = read_topic(kafka_settings.KAFKA_BOOTSTRAP_SERVERS, 1, topic="renamed.account")
    assert [m["value"]["type"] for m in moved] == ["account.activated"]
    with connect(autocommit=True) as conn:
        trail = conn.execute(
            "SELECT diff_before::text, diff_after::text FROM audit_events WHERE action = 'event.stream_topics_moved'"
        ).fetchall()
    assert [tuple(map(json.loads, row)) for row in trail] == [
        ({"topic_prefix": "lifecycle."}, {"topic_prefix": "renamed."})
    ]


def test_a_running_relay_with_other_topics_says_why_once_and_publishes_nothing(kafka_settings, caplog):
    from platform_events.management.commands.publish_events import Relay

    relay.start_stream()
    with connect(autocommit=True) as conn:
        provision(conn, "jane")
    kafka_settings.KAFKA_TOPIC_PREFIX = "staging."
    worker = Relay()
    worker.run_pass()
    worker.run_pass()
    said = [r.getMessage() for r in caplog.records if "publishing nothing" in r.getMessage()]
    assert len(said) == 1 and "prefixed 'lifecycle.', not 'staging.'" in said[0]
    with connect(autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM event_publications WHERE status = 'PENDING'").fetchone() == (1,)


class FailingForGood:
    """A real producer that fails for good after ``sent`` messages, as librdkafka's idempotent producer
    does after a fatal error (a fenced producer id, a sequence the broker cannot accept): every later
    message is refused with _FATAL."""

    def __init__(self, sent: int):
        self.real, self.sent = relay.new_producer(), sent

    def produce(self, *args, **kwargs):
        if self.sent == 0:
            raise KafkaException(KafkaError(KafkaError._FATAL, "Fatal error: producer fenced", fatal=True))
        self.sent -= 1
        return self.real.produce(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.real, name)


def test_a_producer_failed_for_good_counts_no_attempt_and_is_replaced(kafka_settings):
    """A fatal error is the producer's: counted against the events, it would put off every one of them
    again and again; kept, the producer would refuse every message from then on."""
    relay.start_stream()
    with connect(autocommit=True) as conn:
        for login in ("jane", "john", "joan"):
            provision(conn, login)
    worker = Relay()
    worker.producer = FailingForGood(sent=1)
    worker.backoff = relay.Backoff(first=0.01)

    worker.run_pass()

    with connect(autocommit=True) as conn:
        states = conn.execute("SELECT status, attempts, claim FROM event_publications ORDER BY event_seq")
        assert states.fetchall() == [("PUBLISHED", 0, None), ("PENDING", 0, None), ("PENDING", 0, None)]
    assert isinstance(worker.producer, Producer)  # a new one
    worker.run_pass()
    assert len(read_topic(kafka_settings.KAFKA_BOOTSTRAP_SERVERS, 3)) == 3


def test_a_webhook_test_event_is_never_published_not_even_with_its_period(kafka_settings, webhook_settings):
    """Staff's test event to one endpoint is no account's event: no row when sent, none when its period
    is published or published again, nothing on any topic."""
    from tests.platform_events.webhooks.test_dispatch import make_endpoint

    relay.start_stream()
    endpoint, _ = make_endpoint("http://127.0.0.1:9/hook")
    with connect(autocommit=True) as conn:
        conn.execute("SELECT webhook_send_test(%s)", [endpoint.pk])
        jane = provision(conn, "jane")
        assert conn.execute("SELECT event_publications_backfill('-infinity', 'infinity')").fetchone() == (0,)
        assert conn.execute("SELECT event_publications_republish('-infinity', 'infinity')").fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM event_publications").fetchone() == (1,)

    assert relay.publish().published == 1
    assert [m["key"] for m in read_topic(kafka_settings.KAFKA_BOOTSTRAP_SERVERS, 2, wait_rounds=10)] == [str(jane)]


def test_a_wrong_key_password_is_not_repeated_in_the_clients_refusal(settings, tmp_path):
    """librdkafka loads the client key as the relay starts: its refusal of a key the password does not
    open says so without the password."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    from tests.platform_events.kafka.test_relay import self_signed_pem

    key = ec.generate_private_key(ec.SECP256R1())
    (tmp_path / "key.pem").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"the-right-one"),
        )
    )
    settings.KAFKA_BOOTSTRAP_SERVERS = "127.0.0.1:1"
    settings.KAFKA_SECURITY = {
        "security.protocol": "ssl",
        "ssl.certificate.location": self_signed_pem(tmp_path),
        "ssl.key.location": str(tmp_path / "key.pem"),
        "ssl.key.password": "kattack-Wrong-91d2",
    }
    with pytest.raises(relay.ClientRefused) as refusal:
        relay.new_producer()
    assert "kattack-Wrong-91d2" not in str(refusal.value)
    assert str(refusal.value).startswith("The Kafka client refused its configuration: ")
    assert "\n" not in str(refusal.value)


def test_a_relay_process_behind_an_event_too_large_retries_it_slowly_and_publishes_the_rest(kafka_broker, tmp_path):
    """The listener with an event no broker will take: the others go out at once, the large one is
    tried again 1 s, 2 s, 4 s later (no busy loop, no traceback), and holds only its own account back."""
    import signal

    from tests.support import database_url_for_tests, start_manage, wait_for

    with connect(autocommit=True) as conn:
        conn.execute("SELECT event_stream_start()")
    with connect_as_owner(autocommit=True) as owner:
        append(owner, "huge", {"blob": "x" * 2_000_000})
        append(owner, "huge", {"n": 2})
    with connect(autocommit=True) as conn:
        jane = provision(conn, "jane")
    log = tmp_path / "relay.log"
    with log.open("w") as out:
        process = start_manage(
            "publish_events",
            stdout=out,
            DATABASE_URL=database_url_for_tests(),
            KAFKA_BOOTSTRAP_SERVERS=kafka_broker.bootstrap,
            KAFKA_TOPIC_PARTITIONS="1",
        )
        try:
            wait_for(
                lambda: log.read_text().count("refused by the broker") >= 2,
                timeout=120,
                interval=0.2,
                message="the large event refused twice",
            )

            def put_off() -> bool:
                with connect(autocommit=True) as conn:
                    return conn.execute(
                        "SELECT attempts >= 2 AND next_attempt_at > now() FROM event_publications"
                        " WHERE ordering_key = 'account:huge' AND status = 'PENDING' ORDER BY event_seq LIMIT 1"
                    ).fetchone()[0]

            wait_for(put_off, timeout=60, interval=0.1, message="the large event put off after its refusals")
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=30)
    output = log.read_text()
    assert "Traceback" not in output
    assert [m["key"] for m in read_topic(kafka_broker.bootstrap, 1, wait_rounds=10)] == [str(jane)]
    with connect(autocommit=True) as conn:
        waiting = conn.execute(
            "SELECT ordering_key, attempts > 0 FROM event_publications WHERE status = 'PENDING' ORDER BY event_seq"
        ).fetchall()
    assert waiting == [("account:huge", True), ("account:huge", False)]


def pages_read(conn, statement: str, params=None) -> int:
    """The pages one statement reads (EXPLAIN ANALYZE's shared buffers, a count that does not depend on
    the machine's speed), its changes rolled back."""
    with conn.transaction(force_rollback=True):
        (plan,) = conn.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + statement, params).fetchone()
    top = plan[0]["Plan"]
    return top["Shared Hit Blocks"] + top["Shared Read Blocks"]


def claim_buffers(conn, size: int = 100) -> int:
    return pages_read(conn, relay.CLAIM, {"size": size, "claim": uuid.uuid4(), "lease": timedelta(seconds=60)})


def one_account_with_20000_events_and_five_with_one():
    relay.start_stream()
    append_events("stuck", 20_000)
    with connect(autocommit=True) as conn:
        for n in range(5):
            provision(conn, f"u{n}")


def test_an_account_with_many_events_behind_a_refused_one_does_not_slow_every_claim():
    one_account_with_20000_events_and_five_with_one()
    with connect(autocommit=True) as conn:
        head = conn.execute("SELECT min(event_seq) FROM event_publications").fetchone()[0]
        claim = uuid.uuid4()
        conn.execute(
            "UPDATE event_publications SET claim = %s, lease_until = now() + interval '1 minute' WHERE event_seq = %s",
            [claim, head],
        )
        conn.execute(  # refused once: due again in 5 minutes, its 19,999 later events held back meanwhile
            "UPDATE event_publications SET attempts = 1, next_attempt_at = now() + interval '5 minutes',"
            " last_error = 'MSG_SIZE_TOO_LARGE', claim = NULL, lease_until = NULL WHERE claim = %s",
            [claim],
        )
    analyze("event_publications")
    # The first claims park what they walk past: each walks one batch, then none of it again.
    passes = []
    for _ in range(100):
        claimed = relay.claim_batch(500)
        if not (claimed.parked or claimed.events):
            break
        passes.append((len(claimed.events), claimed.parked))
    assert sum(parked for _, parked in passes) == 19_999 and len(passes) <= 41, passes
    with connect(autocommit=True) as conn:
        for n in range(5, 10):
            provision(conn, f"u{n}")
    analyze("event_publications")
    with connect(autocommit=True) as conn:
        assert claim_buffers(conn) < 1_000


def test_the_sweep_reads_each_account_with_parked_events_once_not_every_parked_event():
    """The sweep runs at every pass's start (a pass runs at each notification, and every second): with
    one account's 20,000 events parked behind a refused one, it reads the account's first parked event,
    not all 20,000 of them, as the claim no longer walks them."""
    one_account_with_20000_events_and_five_with_one()
    with connect(autocommit=True) as conn:
        conn.execute(  # as the claims leave them: all but the account's first parked
            "UPDATE event_publications SET parked = true WHERE ordering_key = 'account:stuck'"
            " AND event_seq > (SELECT min(event_seq) FROM event_publications)"
        )
    analyze("event_publications")
    with connect(autocommit=True) as conn:
        assert pages_read(conn, relay.SWEEP) < 50
    assert relay.sweep() == 0  # the account's first parked event still waits behind the first
    with connect(autocommit=True) as conn:
        conn.execute("UPDATE event_publications SET parked = true WHERE ordering_key <> 'account:stuck'")
    assert relay.sweep() == 5  # every other account's first, parked by hand: each found


@pytest.mark.parametrize(
    "written",
    [
        datetime(2026, 11, 26, 10, 0, 0, 0, tzinfo=UTC),  # on the second: isoformat() dropped ".000000"
        datetime(2026, 11, 26, 11, 0, 0, 120, tzinfo=timezone(timedelta(hours=1))),  # a session not in UTC
    ],
)
def test_ce_time_is_always_utc_with_microseconds(written):
    """A consumer that parses ce_time with the documented shape (RFC 3339, UTC, microseconds) never
    meets another one."""
    event = relay.Event(uuid.uuid4(), 1, "account", "7", "account.created", written, "{}")
    headers = dict(event.headers())
    assert headers["ce_time"] == written.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ").encode()
    assert re.fullmatch(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", headers["ce_time"])
