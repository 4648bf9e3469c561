"""The test broker speaks Kafka as the relay will use it: a keyed topic, an idempotent producer with
acks=all, a consumer that reads each key's messages back in order; and it comes back empty after a stop."""

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.kafka_broker import KafkaBroker

PARTITIONS = 3


def create_topic(bootstrap: str, name: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(name, num_partitions=PARTITIONS, replication_factor=1)]).values():
        future.result(timeout=10)


def produce(bootstrap: str, topic: str, messages: list[tuple[str, str]]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all"})
    failures = []

    def delivered(error, message):
        if error is not None:
            failures.append(error)

    for key, value in messages:
        producer.produce(topic, key=key, value=value, headers={"ce_id": value}, on_delivery=delivered)
    assert producer.flush(10) == 0
    assert failures == []


def read_all(bootstrap: str, topic: str, expected: int) -> list[tuple[int, str, str, dict]]:
    """Every message of the topic, by assigning its partitions from the start (no group join to wait for)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "smoke", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    read = []
    try:
        for _ in range(200):
            for message in consumer.consume(num_messages=500, timeout=0.2):
                if message.error():
                    raise KafkaException(message.error())
                read.append(
                    (message.partition(), message.key().decode(), message.value().decode(), dict(message.headers()))
                )
            if len(read) >= expected:
                break
    finally:
        consumer.close()
    return read


def test_keyed_messages_come_back_each_key_in_order_on_one_partition(kafka_broker):
    messages = [(f"account-{n % 7}", f"{n % 7}:{n}") for n in range(300)]
    create_topic(kafka_broker.bootstrap, "lifecycle.account")
    produce(kafka_broker.bootstrap, "lifecycle.account", messages)

    read = read_all(kafka_broker.bootstrap, "lifecycle.account", len(messages))

    assert len(read) == len(messages)
    for key in {k for k, _ in messages}:
        of_key = [(partition, value) for partition, k, value, _ in read if k == key]
        assert len({partition for partition, _ in of_key}) == 1  # a key keeps to one partition
        assert [value for _, value in of_key] == [v for k, v in messages if k == key]  # in the order sent
    assert all(headers["ce_id"] == value.encode() for _, _, value, headers in read)


def test_a_restarted_broker_listens_on_the_same_address_and_is_empty(kafka_broker):
    create_topic(kafka_broker.bootstrap, "lifecycle.account")
    produce(kafka_broker.bootstrap, "lifecycle.account", [("a", "1")])
    kafka_broker.stop()
    assert not kafka_broker.running()
    kafka_broker.start()

    topics = AdminClient({"bootstrap.servers": kafka_broker.bootstrap}).list_topics(timeout=10).topics
    assert "lifecycle.account" not in topics


def test_a_missing_broker_binary_is_said_in_one_sentence(monkeypatch):
    monkeypatch.setattr("importlib.util.find_spec", lambda name: None)
    with pytest.raises(RuntimeError, match=r"^The Kafka tests need the test broker: install the dev extra"):
        KafkaBroker().start()
