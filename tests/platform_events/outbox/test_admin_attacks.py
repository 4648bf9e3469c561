"""Attacks on the events' Kafka parts in the admin (platform_events/outbox/admin.py): what the broker
wrote is shown as text, and the roles that may not read events learn nothing of a publication."""

from html import unescape

import pytest
from django.urls import reverse

from lifecycle.demo.factories import AccountFactory
from platform_events.outbox.models import OutboxEvent
from tests.platform_events.kafka.test_selectors import start_stream
from tests.platform_events.outbox.test_admin import EVENTS, event_page, refuse
from tests.support import staff_client

pytestmark = [pytest.mark.attack, pytest.mark.django_db]

SCRIPT = '<script>alert("kafka")</script><img src=x onerror=alert(1)>'


@pytest.fixture
def refused_with_markup(settings):
    settings.KAFKA_BOOTSTRAP_SERVERS = "127.0.0.1:9092"
    start_stream()
    AccountFactory()
    event = OutboxEvent.objects.get()
    refuse(event.id, f"INVALID_RECORD: {SCRIPT}")
    return event


def test_a_brokers_error_with_markup_is_shown_as_text(refused_with_markup, admin_client):
    page = admin_client.get(event_page(refused_with_markup)).content.decode()
    assert SCRIPT not in page
    assert f"INVALID_RECORD: {SCRIPT}" in unescape(page)


@pytest.mark.parametrize("role", ["Support", "Auditor"])
def test_a_role_that_reads_no_event_reads_no_publication(refused_with_markup, role):
    client = staff_client(role)
    for url in (
        EVENTS,
        f"{EVENTS}?kafka=waiting",
        event_page(refused_with_markup),
        reverse("admin:platform_events_outboxevent_history", args=[refused_with_markup.pk]),
    ):
        response = client.get(url)
        assert response.status_code == 403, url
        assert "INVALID_RECORD" not in response.content.decode()


def test_an_integrator_reads_the_publication_without_the_persons_login_or_address(refused_with_markup):
    """The Integrator reads events with their personal fields hidden: the Kafka table beside the payload
    adds none of them back."""
    event = refused_with_markup
    page = unescape(staff_client("Integrator").get(event_page(event)).content.decode())
    assert "kafka-publication" in page and "INVALID_RECORD" in page
    assert event.payload["data"]["email"] not in page and event.payload["data"]["login"] not in page
