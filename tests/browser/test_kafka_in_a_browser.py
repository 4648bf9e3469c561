"""An event's publication to Kafka in a real browser: an Integrator lists the events still waiting for
the relay, opens one the broker refused, one it published and one held back by its account's earlier
event, and reads where each went or why it waits, beside the event's deliveries.

With SCREENSHOTS set, each page is also saved there at 1366×768."""

import pytest

from lifecycle.demo.factories import AccountFactory
from platform_events.outbox.models import OutboxEvent
from tests.browser.conftest import SCREEN, log_in, navigating, needs_chromium, shoot, staff_user
from tests.platform_events.kafka.test_selectors import claim_and_publish, start_stream
from tests.platform_events.outbox.test_admin import refuse

pytestmark = [pytest.mark.django_db(transaction=True), needs_chromium]


def test_an_integrator_reads_each_events_publication(browser, live_server, settings):
    settings.KAFKA_BOOTSTRAP_SERVERS = "kafka1.internal:9092"
    start_stream()
    AccountFactory.create_batch(3)
    published, refused, _ = OutboxEvent.objects.order_by("seq")
    later = AccountFactory()
    later.status = "active"
    later.save()  # its activation waits for its creation to be published
    created, activated = OutboxEvent.objects.filter(aggregate_id=str(later.pk)).order_by("seq")
    claim_and_publish([published.id], partition=4, first_offset=1207)
    refuse(refused.id, "MSG_SIZE_TOO_LARGE: Broker: Message size too large")
    staff_user("integrator1", "Integrator")
    page = browser.new_page(viewport=SCREEN)
    log_in(page, live_server, "integrator1")

    page.goto(f"{live_server.url}/admin/platform_events/outboxevent/")
    assert page.locator("#result_list tbody tr").count() == 5
    shoot(page, "kafka-event-list")
    navigating(page, lambda: page.click("#changelist-filter a[href*='kafka=waiting']"))
    assert page.locator("#result_list tbody tr").count() == 4
    shoot(page, "kafka-event-list-waiting")

    page.goto(f"{live_server.url}/admin/platform_events/outboxevent/{refused.pk}/change/")
    kafka = page.locator(".field-kafka").inner_text()
    assert "retrying" in kafka and "Message size too large" in kafka and "1 refused by the broker" in kafka
    shoot(page, "kafka-event-refused")

    page.goto(f"{live_server.url}/admin/platform_events/outboxevent/{published.pk}/change/")
    kafka = page.locator(".field-kafka").inner_text()
    assert "published" in kafka and "lifecycle.account" in kafka and "1207" in kafka
    assert page.locator(".field-deliveries").is_visible()
    assert not page.locator(".field-kafka input, .field-kafka select, .field-kafka textarea").count()
    shoot(page, "kafka-event-published")

    page.goto(f"{live_server.url}/admin/platform_events/outboxevent/{activated.pk}/change/")
    kafka = page.locator(".field-kafka").inner_text()
    assert "waiting" in kafka and f"after the account's earlier event #{created.seq}, still unpublished" in kafka
    shoot(page, "kafka-event-held-back")
