"""The events in the admin (platform_events/outbox/admin.py): what of an event's payload a user sees,
and its publication to Kafka beside its deliveries, which nobody changes from there."""

import re
from html import unescape

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from lifecycle.demo.factories import AccountFactory
from platform_events.kafka import relay
from platform_events.outbox.admin import HIDDEN, shown_payload
from platform_events.outbox.models import OutboxEvent
from tests.platform_events.kafka.test_selectors import claim_and_publish, start_stream
from tests.support import staff_client

CREATED = {
    "type": "account.created",
    "timestamp": "2026-11-26T10:00:00Z",
    "data": {"id": 7, "login": "kim", "email": "kim@example.com", "status": "provisioned"},
}
MOVED = {
    "type": "account.email_changed",
    "timestamp": "2026-11-26T10:00:00Z",
    "data": {
        "id": 7,
        "login": "kim",
        "email": "new@example.com",
        "previous_email": "old@example.com",
        "status": "active",
    },
}
TEST_EVENT = {"type": "webhook.test", "timestamp": "2026-11-26T10:00:00Z", "data": {"endpoint": "e1"}}


def test_whoever_may_read_accounts_sees_the_payload_whole():
    assert shown_payload(MOVED, True) is MOVED


def test_the_others_see_the_id_and_status_with_every_login_and_address_hidden():
    assert shown_payload(CREATED, False) == {
        **CREATED,
        "data": {"id": 7, "login": HIDDEN, "email": HIDDEN, "status": "provisioned"},
    }
    assert shown_payload(MOVED, False)["data"] == {
        "id": 7,
        "login": HIDDEN,
        "email": HIDDEN,
        "previous_email": HIDDEN,
        "status": "active",
    }
    assert MOVED["data"]["email"] == "new@example.com"  # the event itself is untouched


def test_a_payload_about_no_person_is_shown_as_it_is():
    assert shown_payload(TEST_EVENT, False) is TEST_EVENT


# An event's publication to Kafka (docs/kafka.md), beside its deliveries: read-only, for whoever reads events


EVENTS = reverse("admin:platform_events_outboxevent_changelist")


def event_page(event) -> str:
    return reverse("admin:platform_events_outboxevent_change", args=[event.pk])


def refuse(event_id, error: str) -> None:
    """The relay's claim, then its record of a refusal: one more attempt, due again later."""
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE event_publications SET claim = gen_random_uuid(), lease_until = now() + interval '1 minute'"
            " WHERE event_id = %s",
            [event_id],
        )
        cursor.execute(
            "UPDATE event_publications SET attempts = attempts + 1, next_attempt_at = now() + interval '1 minute',"
            " last_error = %s, claim = NULL, lease_until = NULL WHERE event_id = %s",
            [error, event_id],
        )


@pytest.fixture
def published_and_refused(db):
    """Three events of publication: one published (partition 2, offset 41), one refused once, one waiting."""
    start_stream()
    AccountFactory.create_batch(3)
    published, refused, waiting = OutboxEvent.objects.order_by("seq")
    claim_and_publish([published.id], partition=2, first_offset=41)
    refuse(refused.id, "MSG_SIZE_TOO_LARGE: Broker: Message size too large")
    return published, refused, waiting


def publication_rows() -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT event_id, status, attempts, kafka_offset FROM event_publications ORDER BY event_seq")
        return cursor.fetchall()


@pytest.mark.django_db
@pytest.mark.parametrize("who", ["Integrator", "superuser"])
def test_an_events_page_shows_its_publication_beside_its_deliveries(published_and_refused, admin_client, who):
    client = staff_client("Integrator") if who == "Integrator" else admin_client
    published, refused, waiting = published_and_refused
    page = unescape(client.get(event_page(published)).content.decode())
    section = page[page.index('<table class="kafka-publication">') :]
    assert page.index("deliveries →") < page.index('<table class="kafka-publication">')
    section = section[: section.index("</table>")]
    cells = dict(re.findall(r'<th scope="row">([^<]+)</th><td>(.*?)</td>', section))
    assert ">published<" in cells["status"]
    assert (cells["topic"], cells["partition"], cells["offset"]) == ("lifecycle.account", "2", "41")
    assert (cells["attempts"], cells["last error"]) == ("0", "—")
    assert cells["published at"].endswith("UTC") and "next attempt" not in cells

    page = unescape(client.get(event_page(refused)).content.decode())
    assert "MSG_SIZE_TOO_LARGE: Broker: Message size too large" in page
    assert ">retrying<" in page and "1 refused by the broker" in page
    page = unescape(client.get(event_page(waiting)).content.decode())
    assert ">waiting<" in page and "due now, for the next relay to claim" in page


@pytest.mark.django_db
def test_an_event_held_back_by_its_accounts_earlier_one_says_which(admin_client):
    start_stream()
    account = AccountFactory()
    account.status = "active"
    account.save()
    created, activated = OutboxEvent.objects.order_by("seq")
    page = unescape(admin_client.get(event_page(activated)).content.decode())
    assert f"after the account's earlier event #{created.seq}, still unpublished" in page
    claim_and_publish([created.id], partition=0, first_offset=0)
    page = unescape(admin_client.get(event_page(activated)).content.decode())
    assert "due now, for the next relay to claim" in page


def test_an_erased_accounts_event_says_its_publication_was_cancelled(admin_client, settings):
    from accounts.erasure import account_erase
    from accounts.services import account_deprovision

    settings.KAFKA_BOOTSTRAP_SERVERS = "127.0.0.1:9"
    start_stream()
    account = AccountFactory(active=True)
    account_deprovision(account=account, actor=None)
    account_erase(account=account, actor=None)
    created = OutboxEvent.objects.filter(event_type="account.created", aggregate_id=str(account.pk)).get()
    page = unescape(admin_client.get(event_page(created)).content.decode())
    assert ">cancelled<" in page and "never: cancelled when its account was erased" in page
    listed = unescape(admin_client.get(EVENTS).content.decode())
    assert ">cancelled<" in listed


@pytest.mark.django_db
def test_an_event_written_while_publication_was_off_shows_no_publication(admin_client):
    AccountFactory()
    page = admin_client.get(event_page(OutboxEvent.objects.get())).content.decode()
    assert "deliveries →" in page
    assert "kafka-publication" not in page and "Kafka" not in page


@pytest.mark.django_db
def test_the_list_shows_each_events_state_in_one_query_and_filters_the_waiting_ones(published_and_refused, settings):
    settings.KAFKA_BOOTSTRAP_SERVERS = "127.0.0.1:9092"
    client = staff_client("Integrator")
    published, refused, waiting = published_and_refused

    def listed(query=""):
        with CaptureQueriesContext(connection) as queries:
            response = client.get(f"{EVENTS}{query}")
        assert response.status_code == 200
        states = {event.pk: event.kafka_state for event in response.context["cl"].result_list}
        return states, len(queries), response.content.decode()

    states, queries, html = listed()
    assert states == {published.pk: "published", refused.pk: "retrying", waiting.pk: "waiting"}
    assert ">published<" in html and ">retrying<" in html
    AccountFactory.create_batch(7)  # ten events: the same number of queries
    assert listed()[1] == queries
    assert set(listed("?kafka=waiting")[0]) == set(OutboxEvent.objects.values_list("pk", flat=True)) - {published.pk}
    assert set(listed("?kafka=published")[0]) == {published.pk}
    assert client.get(f"{EVENTS}?kafka=bogus").status_code == 400


@pytest.mark.django_db
def test_without_kafka_configured_the_list_has_no_kafka_column_nor_filter(admin_client, settings):
    settings.KAFKA_BOOTSTRAP_SERVERS = None
    AccountFactory()
    html = admin_client.get(EVENTS).content.decode()
    assert "Kafka" not in html
    assert admin_client.get(f"{EVENTS}?kafka=waiting").status_code == 400


@pytest.mark.django_db
@pytest.mark.parametrize("who", ["Integrator", "Support", "Auditor", "superuser"])
def test_nobody_changes_or_deletes_a_publication_from_the_admin(published_and_refused, admin_client, who):
    """Every role, a superuser included: the change form, the delete page, the list's delete action and
    the add page refuse; the publication rows and their events stay as they were."""
    client = admin_client if who == "superuser" else staff_client(who)
    published, refused, waiting = published_and_refused
    before = publication_rows()
    change = {"status": "PENDING", "kafka_offset": "0", "attempts": "0", "last_error": "", "_save": "Save"}
    for event in (published, refused):
        assert client.post(event_page(event), change).status_code == 403
        delete = reverse("admin:platform_events_outboxevent_delete", args=[event.pk])
        assert client.post(delete, {"post": "yes"}).status_code == 403
    assert client.post(reverse("admin:platform_events_outboxevent_add"), change).status_code == 403
    bulk = {"action": "delete_selected", "_selected_action": [published.pk, refused.pk], "post": "yes"}
    assert client.post(EVENTS, bulk).status_code in (200, 302, 403)
    assert publication_rows() == before
    assert OutboxEvent.objects.count() == 3
    if who in ("Support", "Auditor"):  # they read no event: nor its publication
        assert client.get(event_page(published)).status_code == 403


@pytest.mark.django_db(transaction=True)
def test_an_events_topic_is_the_one_the_stream_had_when_it_was_published(admin_client, settings):
    """Each statement commits on its own here, so that the stream's start, its move and each mark have
    a moment of their own, as in production."""
    settings.KAFKA_TOPIC_PREFIX = "lifecycle."
    relay.start_stream()
    AccountFactory.create_batch(3)
    before, after, waiting = OutboxEvent.objects.order_by("seq")
    claim_and_publish([before.id])
    settings.KAFKA_TOPIC_PREFIX = "moved."
    relay.move_topics()
    claim_and_publish([after.id])
    settings.KAFKA_TOPIC_PREFIX = "a-relay-elsewhere."  # not the stream's: the admin names the stream's

    def topic(event) -> str:
        page = unescape(admin_client.get(event_page(event)).content.decode())
        return re.search(r'<th scope="row">topic</th><td>([^<]+)</td>', page).group(1)

    assert [topic(before), topic(after), topic(waiting)] == ["lifecycle.account", "moved.account", "moved.account"]
