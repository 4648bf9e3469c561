"""The relay against a real broker (tests/kafka_broker.py): every event once, keyed by its account, in
order, with the CloudEvents headers; marked only with the broker's acknowledgement; held through an
outage and published after it."""

import json
from unittest import mock

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient
from django.db import connection

from platform_events.kafka import relay
from tests.platform_events.outbox.test_triggers import activate, provision
from tests.support import connect, connect_as_owner

pytestmark = pytest.mark.django_db(transaction=True)

TOPIC = "lifecycle.account"


def read_topic(bootstrap: str, expected: int, topic: str = TOPIC, wait_rounds: int = 50) -> list[dict]:
    """Every message of the topic, oldest first per partition (partitions assigned: no group join); none
    when the topic is not there yet."""
    metadata = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).topics
    if topic not in metadata:
        return []
    partitions = metadata[topic].partitions
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "test", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
    read = []
    try:
        for _ in range(wait_rounds):
            for message in consumer.consume(num_messages=1000, timeout=0.2):
                if message.error():
                    raise KafkaException(message.error())
                read.append(
                    {
                        "partition": message.partition(),
                        "offset": message.offset(),
                        "key": message.key().decode(),
                        "body": message.value().decode(),
                        "value": json.loads(message.value()),
                        "headers": {name: value.decode() for name, value in message.headers()},
                    }
                )
            if len(read) >= expected:
                break
    finally:
        consumer.close()
    return read


def publication_states(conn):
    return conn.execute(
        "SELECT e.id, p.status, p.kafka_partition, p.kafka_offset, p.claim FROM event_publications p"
        " JOIN outbox_events e ON e.id = p.event_id ORDER BY e.seq"
    ).fetchall()


def test_each_event_is_published_once_keyed_by_its_account_in_order_and_marked_with_its_offset(kafka_settings):
    relay.start_stream()
    with connect(autocommit=True) as conn:
        accounts = [provision(conn, f"user{n}") for n in range(4)]
        for account in accounts:
            activate(conn, account)
        events = conn.execute("SELECT id, seq, aggregate_id, event_type, payload FROM outbox_events ORDER BY seq")
        events = events.fetchall()

    result = relay.publish()

    assert (result.published, result.outage) == (8, None)
    read = read_topic(kafka_settings.KAFKA_BOOTSTRAP_SERVERS, 8)
    assert sorted(m["headers"]["ce_id"] for m in read) == sorted(str(e[0]) for e in events)
    by_id = {str(e[0]): e for e in events}
    for message in read:
        event_id, seq, account, event_type, payload = by_id[message["headers"]["ce_id"]]
        assert message["key"] == account
        assert message["body"] == payload  # the webhook body, as it is
        assert message["headers"]["ce_type"] == event_type
        assert message["headers"]["ce_sequence"] == f"{seq:020d}"
        assert message["headers"]["ce_specversion"] == "1.0"
    for account in accounts:
        of_account = [m for m in read if m["key"] == str(account)]
        assert [m["value"]["type"] for m in of_account] == ["account.created", "account.activated"]
        assert len({m["partition"] for m in of_account}) == 1
    with connect(autocommit=True) as conn:
        marked = {
            str(i): (status, partition, offset, claim)
            for i, status, partition, offset, claim in publication_states(conn)
        }
    assert {m["headers"]["ce_id"]: ("PUBLISHED", m["partition"], m["offset"], None) for m in read} == marked


def test_an_accounts_later_event_waits_for_its_earlier_one_across_batches(kafka_settings):
    relay.start_stream()
    with connect(autocommit=True) as conn:
        jane = provision(conn, "jane")
        activate(conn, jane)
        conn.execute("UPDATE accounts SET status = 'suspended' WHERE id = %s", [jane])

    first = relay.publish(max_batches=1)

    assert (first.claimed, first.published) == (1, 1)  # one event of the account at a time
    relay.publish()
    read = read_topic(kafka_settings.KAFKA_BOOTSTRAP_SERVERS, 3)
    assert [m["value"]["type"] for m in read] == ["account.created", "account.activated", "account.suspended"]


def test_a_broker_outage_marks_nothing_and_everything_goes_out_in_order_after_it(kafka_settings, kafka_broker):
    relay.start_stream()
    with connect(autocommit=True) as conn:
        jane = provision(conn, "jane")
    kafka_broker.stop()
    with connect(autocommit=True) as conn:
        activate(conn, jane)

    during = relay.publish()

    assert during.published == 0 and during.outage
    with connect(autocommit=True) as conn:
        assert [(status, claim) for _, status, _, _, claim in publication_states(conn)] == [("PENDING", None)] * 2
        assert conn.execute("SELECT sum(attempts) FROM event_publications").fetchone() == (0,)

    kafka_broker.start()  # empty: the topic is gone and is made again
    after = relay.publish()

    assert (after.published, after.outage) == (2, None)
    read = read_topic(kafka_settings.KAFKA_BOOTSTRAP_SERVERS, 2)
    assert [m["value"]["type"] for m in read] == ["account.created", "account.activated"]


def test_a_claim_skips_the_rows_another_relay_is_claiming_instead_of_waiting_for_them():
    relay.start_stream()
    with connect(autocommit=True) as conn:
        provision(conn, "jane")
        john = provision(conn, "john")
    with connect() as other:  # another relay's claim, its transaction still open
        other.execute("SELECT event_id FROM event_publications ORDER BY event_seq LIMIT 1 FOR UPDATE")
        with connection.cursor() as cursor:
            cursor.execute("SET lock_timeout = '2s'")
        try:
            events = relay.claim_batch(10).events
        finally:
            with connection.cursor() as cursor:
                cursor.execute("RESET lock_timeout")
    assert [event.aggregate_id for event in events] == [str(john)]


def append_events(aggregate_id: str, count: int) -> None:
    """``count`` events of one account, as the database's triggers append them (the owner's function)."""
    with connect_as_owner(autocommit=True) as owner:
        owner.execute(
            "SELECT outbox_append_many('account', array_fill(%s::text, ARRAY[%s]), 'account.updated',"
            " array_fill('{}'::jsonb, ARRAY[%s]))",
            [aggregate_id, count, count],
        )


def parked_seqs() -> list[int]:
    with connect(autocommit=True) as conn:
        return [seq for (seq,) in conn.execute("SELECT event_seq FROM event_publications WHERE parked ORDER BY 1")]


def seqs_of(aggregate_id: str) -> list[int]:
    with connect(autocommit=True) as conn:
        return [
            seq
            for (seq,) in conn.execute(
                "SELECT event_seq FROM event_publications WHERE ordering_key = 'account:' || %s ORDER BY 1",
                [aggregate_id],
            )
        ]


def acknowledge(claimed: relay.Claimed, *events: relay.Event) -> relay.BatchResult:
    """What the relay records when the broker acknowledged ``events`` of the claim."""
    result = relay.BatchResult()
    relay.record(claimed.claim, relay.Outcome(acknowledged=[(e, 0, n) for n, e in enumerate(events)]), result)
    return result


def test_a_claim_parks_what_it_walks_past_held_back_and_each_mark_unparks_the_accounts_next():
    relay.start_stream()
    append_events("busy", 3)
    with connect(autocommit=True) as conn:
        jane = provision(conn, "jane")
    first, second, third = seqs_of("busy")

    claimed = relay.claim_batch(10)

    assert [e.aggregate_id for e in claimed.events] == ["busy", str(jane)]
    assert claimed.parked == 2 and parked_seqs() == [second, third]
    assert relay.claim_batch(10) == (mock.ANY, [], 0)  # nothing left to walk past again

    assert acknowledge(claimed, claimed.events[0]).published == 1
    assert parked_seqs() == [third]  # the account's next is due, the one after it still waits
    (later,) = relay.claim_batch(10).events
    assert later.seq == second
    acknowledge(relay.Claimed(claimed.claim, [], 0), later)  # another claim's mark changes nothing
    assert parked_seqs() == [third]


def test_the_mark_unparks_the_accounts_next_event_even_when_the_one_it_marks_was_parked_by_hand():
    """The runtime role may park any waiting row (a routine move), the claimed one too: its mark then
    unparks the account's next event, not the one it has just published."""
    relay.start_stream()
    append_events("busy", 3)
    claimed = relay.claim_batch(10)
    first, second, third = seqs_of("busy")
    with connect(autocommit=True) as conn:
        conn.execute("UPDATE event_publications SET parked = true WHERE event_seq = %s", [first])

    assert acknowledge(claimed, claimed.events[0]).published == 1

    assert parked_seqs() == [third]
    assert [e.seq for e in relay.claim_batch(10).events] == [second]


def test_the_sweep_unparks_an_accounts_first_parked_event_and_no_other():
    """A park the mark cannot see (made while the event holding it back was being marked, by another
    relay), or made by hand: the sweep finds it."""
    relay.start_stream()
    append_events("busy", 2)
    with connect(autocommit=True) as conn:
        conn.execute("UPDATE event_publications SET parked = true")  # the runtime role's own UPDATE
    assert relay.claim_batch(10).events == []

    first, second = seqs_of("busy")

    assert relay.sweep() == 1
    assert parked_seqs() == [second]
    assert [e.seq for e in relay.claim_batch(10).events] == [first]
    assert relay.sweep() == 0  # the second still waits behind the first, claimed


def holding(seq: int):
    """Another transaction holding the row of ``seq`` (a sweep or a mark of another relay, mid-way)."""
    other = connect()
    other.execute("SELECT 1 FROM event_publications WHERE event_seq = %s FOR UPDATE", [seq])
    return other


def waiting_at_most(seconds: int):
    with connection.cursor() as cursor:
        cursor.execute(f"SET lock_timeout = '{seconds}s'")


def test_a_mark_never_waits_for_the_parked_row_it_would_unpark():
    """A mark that waited for a row a sweep holds, while the sweep waited for one the mark holds, was
    a deadlock: the acknowledged batch went out again. The row it skips waits for the next sweep."""
    relay.start_stream()
    append_events("busy", 2)
    first, second = seqs_of("busy")
    claimed = relay.claim_batch(10)
    assert parked_seqs() == [second]
    other = holding(second)
    try:
        waiting_at_most(2)
        assert acknowledge(claimed, *claimed.events).published == 1
    finally:
        other.close()
        with connection.cursor() as cursor:
            cursor.execute("RESET lock_timeout")
    assert parked_seqs() == [second]
    assert relay.sweep() == 1


def test_a_sweep_never_waits_for_a_row_another_transaction_holds():
    relay.start_stream()
    append_events("busy", 1)
    append_events("other", 1)
    with connect(autocommit=True) as conn:
        conn.execute("UPDATE event_publications SET parked = true")  # both firsts, parked by hand
    (busy,) = seqs_of("busy")
    other = holding(busy)
    try:
        waiting_at_most(2)
        assert relay.sweep() == 1  # the one it could take
    finally:
        other.close()
        with connection.cursor() as cursor:
            cursor.execute("RESET lock_timeout")
    assert parked_seqs() == [busy]


def test_a_pass_sweeps_first_and_the_parked_events_go_out_in_order(kafka_settings):
    relay.start_stream()
    append_events("busy", 3)
    with connect(autocommit=True) as conn:
        conn.execute("UPDATE event_publications SET parked = true")

    result = relay.publish()

    assert (result.published, result.outage) == (3, None)
    read = read_topic(kafka_settings.KAFKA_BOOTSTRAP_SERVERS, 3)
    assert [int(m["headers"]["ce_sequence"]) for m in read] == sorted(int(m["headers"]["ce_sequence"]) for m in read)


def self_signed_pem(tmp_path) -> str:
    """A CA certificate librdkafka can load."""
    from datetime import UTC, datetime, timedelta

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test CA")])
    now = datetime.now(UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    path = tmp_path / "ca.pem"
    path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    return str(path)


def test_the_producer_and_the_admin_client_take_the_tls_and_sasl_settings(settings, tmp_path):
    """librdkafka itself accepts what the settings make (it loads the CA file as it starts)."""
    settings.KAFKA_BOOTSTRAP_SERVERS = "127.0.0.1:1"
    settings.KAFKA_SECURITY = {
        "security.protocol": "sasl_ssl",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "relay",
        "sasl.password": "s3cret",
        "ssl.ca.location": self_signed_pem(tmp_path),
    }
    config = relay.connection_config()
    assert config["bootstrap.servers"] == "127.0.0.1:1" and config["security.protocol"] == "sasl_ssl"
    assert relay.producer_config()["sasl.username"] == "relay"
    relay.new_producer()  # no refusal
    AdminClient(config)


def test_a_ca_file_that_holds_no_certificate_is_one_sentence(settings, tmp_path):
    (tmp_path / "ca.pem").write_text("not a certificate\n")
    settings.KAFKA_BOOTSTRAP_SERVERS = "127.0.0.1:1"
    settings.KAFKA_SECURITY = {"security.protocol": "ssl", "ssl.ca.location": str(tmp_path / "ca.pem")}
    with pytest.raises(relay.ClientRefused, match=r"^The Kafka client refused its configuration: .*ssl\.ca\.location"):
        relay.new_producer()


def test_a_message_never_makes_its_topic_a_missing_topic_is_an_outage(kafka_settings):
    """The broker would make the topic on a produce with its own default partition count; the relay
    makes it (KAFKA_TOPIC_PARTITIONS) or says what is missing (KAFKA_CREATE_TOPICS off)."""
    kafka_settings.KAFKA_MESSAGE_TIMEOUT_SECONDS = 1
    relay.start_stream()
    with connect(autocommit=True) as conn:
        provision(conn, "jane")
    events = relay.claim_batch(10).events

    outcome = relay.produce(relay.new_producer(), events)

    assert (outcome.acknowledged, [event.id for event, _ in outcome.undelivered]) == ([], [events[0].id])
    assert TOPIC not in AdminClient({"bootstrap.servers": kafka_settings.KAFKA_BOOTSTRAP_SERVERS}).list_topics().topics


class FailedForGood:
    """A producer that failed for good, as a real idempotent producer does once the broker it talks to
    restarted empty and no longer knows its producer id: flush() raises the fatal error (or the Python
    client's SystemError, at times, at that moment), and every later produce() is refused with _FATAL
    (without librdkafka's fatal flag)."""

    def __init__(self, where: str):
        self.where = where

    def produce(self, *args, **kwargs):
        if self.where == "produce":
            raise KafkaException(KafkaError(KafkaError._FATAL, "Unable to produce message: Local: Fatal error"))

    def flush(self, timeout=None):
        if self.where == "flush":
            raise KafkaException(KafkaError(KafkaError.UNKNOWN_PRODUCER_ID, "unknown producer id", fatal=True))
        if self.where == "flush, as a SystemError":
            raise SystemError("<method 'flush' of 'cimpl.Producer' objects> returned NULL without setting an exception")


@pytest.mark.parametrize("where", ["flush", "flush, as a SystemError", "produce"])
def test_a_producer_failed_for_good_gives_the_batch_back_as_an_outage(kafka_settings, where):
    relay.start_stream()
    with connect(autocommit=True) as conn:
        provision(conn, "jane")
        provision(conn, "john")

    result = relay.publish(producer=FailedForGood(where))

    assert (result.claimed, result.published, result.refused, result.fatal) == (2, 0, 0, True)
    with connect(autocommit=True) as conn:
        states = conn.execute("SELECT status, attempts, claim FROM event_publications ORDER BY event_seq").fetchall()
    assert states == [("PENDING", 0, None)] * 2  # no attempt counted, the claims given back
