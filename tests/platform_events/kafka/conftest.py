"""What the relay's tests share: the settings of a relay on the test broker."""

import pytest


@pytest.fixture
def kafka_settings(settings, kafka_broker):
    """The relay pointed at this test's broker, with a short message timeout (an outage shows in seconds)."""
    settings.KAFKA_BOOTSTRAP_SERVERS = kafka_broker.bootstrap
    settings.KAFKA_TOPIC_PARTITIONS = 3
    settings.KAFKA_MESSAGE_TIMEOUT_SECONDS = 3
    return settings
