"""Webhook endpoint services (platform_events/webhooks/endpoints.py): secrets kept encrypted and shown
once, bad input refused with nothing written, state changes made once, redeliveries audited."""

import base64
import io
import os
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.db import connections
from django.utils import timezone

from lifecycle.demo.factories import AccountFactory
from platform_events.audit.models import AuditEvent
from platform_events.outbox.models import EventType, OutboxEvent
from platform_events.webhooks.endpoints import (
    EndpointError,
    deliveries_redeliver,
    endpoint_create,
    endpoint_enable,
    endpoint_pause,
    endpoint_resume,
    endpoint_rotate_secret,
    endpoint_secrets,
    endpoint_send_test,
    reencrypt_secrets,
)
from platform_events.webhooks.models import DeliveryStatus, EndpointStatus, WebhookDelivery, WebhookSubscription
from platform_events.webhooks.secrets import SecretKeyError, decrypt_secret
from tests.platform_events.webhooks.conftest import URL
from tests.support import connect, in_threads, set_deliveries, wait_until_blocked

pytestmark = pytest.mark.django_db


def trail(endpoint) -> list[AuditEvent]:
    return list(
        AuditEvent.objects.filter(resource_type="webhook_endpoint", resource_id=str(endpoint.pk)).order_by(
            "occurred_at"
        )
    )


def secret_forms(secret: str) -> list[bytes]:
    """The secret as text and its key as raw bytes: neither may appear where it is stored."""
    key = secret.removeprefix("whsec_")
    return [secret.encode(), key.encode(), base64.b64decode(key)]


def test_a_new_endpoint_gets_a_secret_that_is_returned_once_and_stored_only_encrypted(make_endpoint):
    endpoint, secret = make_endpoint()
    assert secret.startswith("whsec_") and 24 <= len(base64.b64decode(secret.removeprefix("whsec_"))) <= 64
    assert (endpoint.status, endpoint.events, endpoint.owner_id) == (
        EndpointStatus.ACTIVE,
        ["account.created"],
        "partner",
    )
    stored = bytes(WebhookSubscription.objects.get(pk=endpoint.pk).secret_encrypted)
    assert not any(form in stored for form in secret_forms(secret))
    assert endpoint_secrets(endpoint) == [secret]


def test_a_secret_copied_to_another_endpoint_does_not_decrypt_there(make_endpoint):
    """The ciphertext is bound to its row's id (associated data): a copied column is useless."""
    first, _ = make_endpoint()
    second, _ = make_endpoint()
    with pytest.raises(SecretKeyError):
        decrypt_secret(bytes(first.secret_encrypted), first.secret_key_id, aad=second.pk.bytes)


def test_a_given_secret_is_kept(make_endpoint):
    given = "whsec_" + base64.b64encode(b"k" * 32).decode()
    endpoint, secret = make_endpoint(secret=given)
    assert secret == given
    assert endpoint_secrets(endpoint) == [given]


BAD_INPUT = [
    ({"url": "http://hooks.example.com/in"}, "url"),
    ({"url": "https://127.0.0.1/in"}, "url"),
    ({"url": ""}, "url"),
    ({"url": " https://hooks.example.com/in"}, "url"),
    ({"url": "https://hooks.example.com/\x00"}, "url"),
    ({"url": "https://hooks.example.com/" + "a" * 2048}, "url"),
    ({"events": []}, "events"),
    ({"events": ["account.exploded"]}, "events"),
    ({"events": ["webhook.test"]}, "events"),
    ({"events": ["account.created", "account.created"]}, "events"),
    ({"owner": " "}, "owner"),
    ({"owner": "o" * 65}, "owner"),
    ({"description": "\x00"}, "description"),
    ({"secret": "sk_" + base64.b64encode(b"k" * 32).decode()}, "secret"),
    ({"secret": "whsec_not base64!"}, "secret"),
    ({"secret": "whsec_" + base64.b64encode(b"k" * 23).decode()}, "secret"),
    ({"secret": "whsec_" + base64.b64encode(b"k" * 65).decode()}, "secret"),
]


@pytest.mark.parametrize(("bad", "field"), BAD_INPUT, ids=[repr(bad)[:40] for bad, _ in BAD_INPUT])
def test_bad_input_is_refused_in_one_sentence_and_nothing_is_written(settings, make_endpoint, bad, field):
    settings.WEBHOOKS_ALLOW_PRIVATE_URLS = False  # plain http and loopback refused, as in production
    with pytest.raises(EndpointError) as refusal:
        make_endpoint(**bad)
    assert (refusal.value.field, refusal.value.code, refusal.value.status) == (field, "invalid-endpoint", 422)
    message = str(refusal.value)
    assert message.endswith(".") and "\n" not in message
    assert "secret" not in bad or bad["secret"] not in message  # a refused secret is not repeated
    assert not WebhookSubscription.objects.exists()
    assert not AuditEvent.objects.filter(resource_type="webhook_endpoint").exists()


def test_adding_is_audited_with_the_staff_member_and_without_the_secret(make_endpoint):
    endpoint, secret = make_endpoint()
    (created,) = trail(endpoint)
    assert (created.action, created.actor_display) == ("webhook.created", "integrator1")
    assert created.diff_after["url"] == URL
    assert not any(form.decode(errors="replace") in str(created.diff_after) for form in secret_forms(secret)[:2])


def test_rotating_gives_a_new_secret_and_signs_with_both_until_the_overlap_ends(make_endpoint, staff):
    endpoint, first = make_endpoint()
    second = endpoint_rotate_secret(endpoint, actor=staff)
    assert second != first
    assert endpoint_secrets(endpoint) == [second, first]
    assert timezone.now() + timedelta(hours=23) < endpoint.previous_secret_until < timezone.now() + timedelta(hours=25)
    rotated = [event for event in trail(endpoint) if event.action == "webhook.secret_rotated"]
    assert len(rotated) == 1 and set(rotated[0].diff_after) == {"previous_secret_until"}
    stored = WebhookSubscription.objects.get(pk=endpoint.pk)
    for secret in (first, second):
        for form in secret_forms(secret):
            assert form not in bytes(stored.secret_encrypted) + bytes(stored.previous_secret_encrypted)


def test_a_rotation_during_the_overlap_drops_the_older_previous_secret(make_endpoint, staff):
    endpoint, first = make_endpoint()
    second = endpoint_rotate_secret(endpoint, actor=staff)
    third = endpoint_rotate_secret(endpoint, actor=staff)
    assert endpoint_secrets(endpoint) == [third, second]


def test_with_no_overlap_only_the_new_secret_signs(make_endpoint, staff):
    endpoint, _ = make_endpoint()
    new = endpoint_rotate_secret(endpoint, actor=staff, overlap_hours=0)
    assert endpoint_secrets(endpoint) == [new]


def test_a_rotation_from_a_stale_page_is_refused_so_the_secret_just_shown_stays(make_endpoint, staff):
    """Two staff rotate at once from the same page: the second is refused, the first one's secret signs."""
    endpoint, _ = make_endpoint()
    stale = WebhookSubscription.objects.get(pk=endpoint.pk)
    shown = endpoint_rotate_secret(endpoint, actor=staff)
    with pytest.raises(EndpointError, match="changed by someone else") as refusal:
        endpoint_rotate_secret(stale, actor=staff)
    assert (refusal.value.code, refusal.value.status) == ("secret-changed", 409)
    assert endpoint_secrets(WebhookSubscription.objects.get(pk=endpoint.pk))[0] == shown


def test_pause_resume_and_their_audit_rows(make_endpoint, staff):
    endpoint, _ = make_endpoint()
    assert endpoint_pause(endpoint, actor=staff).status == EndpointStatus.PAUSED
    with pytest.raises(EndpointError, match="paused, not active") as refusal:
        endpoint_pause(endpoint, actor=staff)
    assert (refusal.value.state, refusal.value.code, refusal.value.status) == (
        EndpointStatus.PAUSED,
        "wrong-endpoint-state",
        409,
    )
    assert endpoint_resume(endpoint, actor=staff).status == EndpointStatus.ACTIVE
    with pytest.raises(EndpointError, match="active, not paused"):
        endpoint_resume(endpoint, actor=staff)
    actions = [(event.action, event.actor_display) for event in trail(endpoint)]
    assert actions == [
        ("webhook.created", "integrator1"),
        ("webhook.paused", "integrator1"),
        ("webhook.resumed", "integrator1"),
    ]


def test_enabling_takes_back_a_disabled_endpoint_and_clears_its_failures(make_endpoint, staff):
    endpoint, _ = make_endpoint()
    with pytest.raises(EndpointError, match="active, not disabled"):
        endpoint_enable(endpoint, actor=staff)
    WebhookSubscription.objects.filter(pk=endpoint.pk).update(
        status=EndpointStatus.DISABLED_DEAD, disabled_reason="410 Gone", failure_count=9, failing_since=timezone.now()
    )
    endpoint = endpoint_enable(endpoint, actor=staff)
    assert (endpoint.status, endpoint.disabled_reason, endpoint.failure_count, endpoint.failing_since) == (
        EndpointStatus.ACTIVE,
        None,
        0,
        None,
    )
    assert trail(endpoint)[-1].action == "webhook.enabled"


def test_a_test_event_is_queued_for_that_endpoint_only(make_endpoint, staff):
    endpoint, _ = make_endpoint()
    other, _ = make_endpoint()
    event_id = endpoint_send_test(endpoint, actor=staff)
    event = OutboxEvent.objects.get(pk=event_id)
    assert event.event_type == "webhook.test" and event.payload["data"] == {"endpoint": str(endpoint.pk)}
    assert list(WebhookDelivery.objects.filter(event=event).values_list("subscription", flat=True)) == [endpoint.pk]
    assert trail(endpoint)[-1].action == "webhook.test_sent"


def test_a_test_event_for_a_deleted_endpoint_is_refused(make_endpoint, staff):
    endpoint, _ = make_endpoint()
    WebhookSubscription.objects.filter(pk=endpoint.pk).delete()
    with pytest.raises(EndpointError, match="no longer exists") as refusal:
        endpoint_send_test(endpoint, actor=staff)
    assert (refusal.value.code, refusal.value.status) == ("endpoint-gone", 404)


def deliveries_in(endpoint, *statuses):
    """One delivery to ``endpoint`` in each status (each of its own account's account.created)."""
    deliveries = []
    for status in statuses:
        account = AccountFactory()
        delivery = WebhookDelivery.objects.get(subscription=endpoint, event__aggregate_id=str(account.pk))
        set_deliveries(WebhookDelivery.objects.filter(pk=delivery.pk), status=status, attempts=3)
        deliveries.append(delivery)
    return deliveries


def test_redelivering_sends_again_all_but_the_waiting_ones_and_audits_each(make_endpoint, staff):
    endpoint, _ = make_endpoint()
    statuses = [
        DeliveryStatus.DELIVERED,
        DeliveryStatus.FAILED,
        DeliveryStatus.PERMANENTLY_FAILED,
        DeliveryStatus.PENDING,
    ]
    deliveries = deliveries_in(endpoint, *statuses)
    assert deliveries_redeliver([delivery.pk for delivery in deliveries], actor=staff) == 3
    assert set(WebhookDelivery.objects.values_list("status", flat=True)) == {DeliveryStatus.PENDING}
    audited = AuditEvent.objects.filter(action="webhook.redelivered")
    assert {event.resource_id for event in audited} == {str(delivery.pk) for delivery in deliveries[:3]}
    assert {event.actor_display for event in audited} == {"integrator1"}
    # Sent again at once: nothing left to send again.
    assert deliveries_redeliver(WebhookDelivery.objects.all(), actor=staff) == 0


def test_a_delivery_being_sent_right_now_is_not_sent_again(make_endpoint, staff):
    endpoint, _ = make_endpoint()
    (delivery,) = deliveries_in(endpoint, DeliveryStatus.FAILED)
    WebhookDelivery.objects.filter(pk=delivery.pk).update(
        lease_until=timezone.now() + timedelta(minutes=1), claim="00000000-0000-4000-8000-000000000001"
    )
    assert deliveries_redeliver(WebhookDelivery.objects.filter(pk=delivery.pk), actor=staff) == 0
    assert WebhookDelivery.objects.get(pk=delivery.pk).status == DeliveryStatus.FAILED


@pytest.mark.django_db(transaction=True)
def test_two_staff_pausing_at_once_pause_once():
    """Real concurrent sessions: both wait on a third that holds the row; one pauses, one is told why not."""
    staff = get_user_model().objects.create_user("integrator1", password="x", is_staff=True)
    endpoint, _ = endpoint_create(url=URL, events=[EventType.ACCOUNT_CREATED], owner="partner", actor=staff)
    with connect() as holder:
        holder.execute("SELECT 1 FROM webhook_subscriptions WHERE id = %s FOR UPDATE", [endpoint.pk])
        threads, results = in_threads(
            lambda: endpoint_pause(WebhookSubscription.objects.get(pk=endpoint.pk), actor=staff),
            lambda: endpoint_pause(WebhookSubscription.objects.get(pk=endpoint.pk), actor=staff),
        )
        wait_until_blocked(holder, 2)
        holder.commit()
    for thread in threads:
        thread.join()
    connections.close_all()
    outcomes = sorted(ok for ok, _ in results)
    assert outcomes == [False, True]
    assert [str(error) for ok, error in results if not ok] == ["This endpoint is paused, not active."]
    assert [event.action for event in trail(endpoint)].count("webhook.paused") == 1


def test_reencrypting_moves_every_secret_to_the_current_key_and_keeps_it(make_endpoint, staff, settings):
    """WEBHOOK_SECRET_KEYS gains a new first key: the current and previous secrets are re-encrypted
    under it, still sign the same, and the old key can then go; a second run has nothing to do."""
    settings.WEBHOOK_SECRET_KEYS = {"old": os.urandom(32)}
    rotated, first = make_endpoint()
    second = endpoint_rotate_secret(rotated, actor=staff)
    plain, third = make_endpoint()
    settings.WEBHOOK_SECRET_KEYS = {"new": os.urandom(32), **settings.WEBHOOK_SECRET_KEYS}
    counts = []
    assert reencrypt_secrets(batch_size=1, progress=counts.append) == 2
    assert counts == [1, 2]
    del settings.WEBHOOK_SECRET_KEYS["old"]
    rotated, plain = (WebhookSubscription.objects.get(pk=e.pk) for e in (rotated, plain))
    assert (rotated.secret_key_id, rotated.previous_secret_key_id, plain.secret_key_id) == ("new", "new", "new")
    assert endpoint_secrets(rotated) == [second, first] and endpoint_secrets(plain) == [third]
    assert reencrypt_secrets() == 0
    # Nothing staff would see changed: no audit row beyond the rotation's.
    assert [e.action for e in trail(rotated)] == ["webhook.created", "webhook.secret_rotated"]


def test_reencrypt_webhook_secrets_prints_its_progress(make_endpoint, settings):
    settings.WEBHOOK_SECRET_KEYS = {"old": os.urandom(32)}
    make_endpoint()
    make_endpoint()
    settings.WEBHOOK_SECRET_KEYS = {"new": os.urandom(32), **settings.WEBHOOK_SECRET_KEYS}
    out = io.StringIO()
    call_command("reencrypt_webhook_secrets", "--batch-size", "1", stdout=out)
    assert out.getvalue().splitlines() == [
        "1 endpoint re-encrypted",
        "2 endpoints re-encrypted",
        "Done: 2 endpoints re-encrypted under key new.",
    ]


def test_reencrypting_without_the_old_key_is_refused_in_one_sentence(make_endpoint, settings):
    settings.WEBHOOK_SECRET_KEYS = {"old": os.urandom(32)}
    make_endpoint()
    settings.WEBHOOK_SECRET_KEYS = {"new": os.urandom(32)}
    with pytest.raises(CommandError, match="key '?old"):
        call_command("reencrypt_webhook_secrets", stdout=io.StringIO())


@pytest.mark.parametrize("hours", [-1, 24 * 30 + 1, 2**31])
def test_an_overlap_out_of_range_is_refused_in_a_sentence(make_endpoint, staff, hours):
    endpoint, secret = make_endpoint()
    with pytest.raises(EndpointError, match="The overlap must be from 0 to 720 hours") as refusal:
        endpoint_rotate_secret(endpoint, actor=staff, overlap_hours=hours)
    assert (refusal.value.field, refusal.value.code) == ("overlap_hours", "invalid-endpoint")
    assert endpoint_secrets(WebhookSubscription.objects.get(pk=endpoint.pk)) == [secret]
