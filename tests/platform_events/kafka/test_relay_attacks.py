"""Attacks on the Kafka relay (platform_events/kafka/relay.py) with a real broker (tests/kafka_broker.py)
and the real test database: odd events, odd configurations, and what the runtime role may do to the
publication state by hand."""

import json

import pytest

from platform_events.kafka import relay
from tests.platform_events.kafka.test_relay import read_topic
from tests.platform_events.outbox.test_triggers import activate, provision
from tests.support import connect, connect_as_owner

pytestmark = [pytest.mark.attack, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def kafka_settings(settings, kafka_broker):
    settings.KAFKA_BOOTSTRAP_SERVERS = kafka_broker.bootstrap
    settings.KAFKA_TOPIC_PARTITIONS = 3
    settings.KAFKA_MESSAGE_TIMEOUT_SECONDS = 3
    return settings


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
