"""docs/kafka.md's consumer, run as printed against the real broker: each event handled once, a repeat
(the same ce_id published again) recognised and skipped."""

import re

import pytest
from confluent_kafka import Producer

from platform_events.kafka import relay
from tests.platform_events.kafka.test_relay import read_topic
from tests.support import ROOT, connect

pytestmark = pytest.mark.django_db(transaction=True)


def documented_consumer():
    text = (ROOT / "docs" / "kafka.md").read_text()
    section = text[text.index("### A consumer") :]
    (code,) = re.findall(r"```python\n(.*?)```", section, flags=re.S)[:1]
    namespace: dict = {}
    exec(compile(code, "docs/kafka.md", "exec"), namespace)  # noqa: S102 - the docs' own example
    return namespace["consume"]


class Seen(set):
    """The consumer's record of handled ids, counting how many messages it was asked about."""

    asked = 0

    def __contains__(self, item):
        self.asked += 1
        return super().__contains__(item)


def test_the_documented_consumer_handles_each_event_once_and_skips_a_repeat(settings, kafka_broker):
    settings.KAFKA_BOOTSTRAP_SERVERS = kafka_broker.bootstrap
    relay.start_stream()
    with connect(autocommit=True) as conn:
        conn.execute("INSERT INTO accounts (email, login) VALUES ('c1@example.com', 'c1'), ('c2@example.com', 'c2')")
    assert relay.publish().published == 2
    (repeat, *_) = read_topic(kafka_broker.bootstrap, 2)
    # What a relay killed after the acknowledgement sends again: the same message, the same ce_id.
    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap})
    producer.produce(
        "lifecycle.account",
        key=repeat["key"],
        value=repeat["body"],
        headers=list(repeat["headers"].items()),
        partition=repeat["partition"],
    )
    producer.flush(10)

    handled, seen = [], Seen()
    documented_consumer()(
        kafka_broker.bootstrap,
        lambda event_type, body: handled.append((event_type, body["data"]["login"])),
        seen,
        stop=lambda: seen.asked >= 3,
        # With librdkafka's default session timeout (45 s) the test broker takes some 20 s to let a
        # consumer join its group; with a short one, a few seconds.
        **{"session.timeout.ms": 6000, "heartbeat.interval.ms": 500},
    )
    assert sorted(handled) == [("account.created", "c1"), ("account.created", "c2")]
    assert seen.asked == 3
