"""Webhooks in the admin (platform_events/webhooks/admin.py): an endpoint's secret is shown once, on the page
answering the POST that made it, and nowhere else (no page, session, audit row or column holds it in
the clear); the buttons change the endpoint once, audited with the staff member; deliveries are sent
again by those allowed; every list filters only by what it declares; the Integrator role, not Support."""

import base64
import logging
import re
from html import unescape

import pytest
from django.contrib.sessions.models import Session
from django.urls import reverse

from lifecycle.demo.factories import AccountFactory
from platform_events.audit.models import AuditEvent
from platform_events.webhooks.endpoints import endpoint_change, endpoint_create, endpoint_secrets
from platform_events.webhooks.models import DeliveryStatus, EndpointStatus, WebhookDelivery, WebhookSubscription
from tests.support import pages_as_html, set_deliveries, staff_client

pytestmark = pytest.mark.django_db

ENDPOINTS = reverse("admin:platform_events_webhooksubscription_changelist")
ADD = reverse("admin:platform_events_webhooksubscription_add")
DELIVERIES = reverse("admin:platform_events_webhookdelivery_changelist")
EVENTS = reverse("admin:platform_events_outboxevent_changelist")
URL = "https://hooks.example.com/lifecycle"
FORM = {"url": URL, "events": ["account.created", "account.suspended"], "owner": "billing", "description": "invoices"}


@pytest.fixture
def integrator(db):
    return staff_client("Integrator", "integrator1")


def page(url, *args):
    return reverse(f"admin:platform_events_webhooksubscription_{url}", args=args)


def act(endpoint, action):
    return page("act", endpoint.pk, action)


def secret_forms(secret: str) -> list[str]:
    """The secret, and its key's base64 on its own: neither may appear anywhere after the secret's page."""
    return [secret, secret.removeprefix("whsec_")]


def assert_nowhere(text: str, secret: str) -> None:
    for form in secret_forms(secret):
        assert form not in text


def added(client, **changes) -> tuple[WebhookSubscription, str, object]:
    """Add an endpoint through the form; return it, the secret its page showed, and that response."""
    response = client.post(ADD, {**FORM, **changes})
    assert response.status_code == 200, response.content.decode()[:2000]
    (secret,) = re.findall(r'id="signing-secret" type="text" value="([^"]+)"', response.content.decode())
    return WebhookSubscription.objects.get(url=changes.get("url", URL)), secret, response


def every_page_of(client, endpoint, *, superuser=False) -> dict[str, str]:
    """Every admin page about the endpoint, its deliveries and events, as HTML (with the delete
    confirmation and the audit trail, a superuser's)."""
    urls = [ENDPOINTS, page("change", endpoint.pk), page("history", endpoint.pk)]
    urls += [act(endpoint, name) for name in ("rotate_secret", "pause", "send_test")]
    urls += [f"{DELIVERIES}?subscription__id__exact={endpoint.pk}", EVENTS]
    urls += [reverse("admin:platform_events_webhookdelivery_change", args=[d.pk]) for d in endpoint.deliveries.all()]
    if superuser:
        trail = reverse("admin:platform_events_auditevent_changelist")
        urls += [page("delete", endpoint.pk), f"{trail}?resource_type=webhook_endpoint&resource_id={endpoint.pk}"]
    return pages_as_html(client, urls)


def test_adding_shows_the_secret_once_on_a_page_nobody_caches(integrator):
    endpoint, secret, response = added(integrator)
    assert "no-store" in response["Cache-Control"]
    assert "shown this once" in response.content.decode()
    assert endpoint_secrets(endpoint) == [secret]
    assert (endpoint.owner_id, endpoint.events, endpoint.description) == (
        "billing",
        ["account.created", "account.suspended"],
        "invoices",
    )


def test_the_secret_is_in_no_page_session_or_audit_row_afterwards(integrator, admin_client):
    endpoint, secret, _ = added(integrator)
    AccountFactory()  # an event and its delivery to this endpoint
    for client, superuser in ((integrator, False), (admin_client, True)):
        for html in every_page_of(client, endpoint, superuser=superuser).values():
            assert_nowhere(html, secret)
    sessions = " ".join(str(session.get_decoded()) for session in Session.objects.all())
    assert_nowhere(sessions, secret)
    trail = " ".join(f"{e.diff_before} {e.diff_after} {e.reason}" for e in AuditEvent.objects.all())
    assert_nowhere(trail, secret)
    stored = WebhookSubscription.objects.get(pk=endpoint.pk)
    assert base64.b64decode(secret.removeprefix("whsec_")) not in bytes(stored.secret_encrypted)


def test_the_secret_is_in_no_log_even_at_debug(integrator, caplog):
    """django.template logs a page's whole context at DEBUG for each variable it cannot find
    (admin/base.html's subtitle), the secret's page included: the secret is not in those lines."""
    caplog.set_level(logging.DEBUG, logger="django")
    _, secret, _ = added(integrator)
    assert "Exception while resolving variable" in caplog.text
    assert_nowhere(caplog.text, secret)


def test_the_endpoint_page_has_no_secret_field(integrator):
    endpoint, _, _ = added(integrator)
    html = integrator.get(page("change", endpoint.pk)).content.decode()
    assert 'name="secret' not in html and 'name="previous_secret' not in html
    assert "encrypted under key" in html


def test_a_refused_form_says_why_writes_nothing_and_does_not_repeat_a_given_secret(integrator, settings):
    settings.WEBHOOKS_ALLOW_PRIVATE_URLS = False
    given = "whsec_" + base64.b64encode(b"s" * 32).decode()
    response = integrator.post(ADD, {**FORM, "url": "http://127.0.0.1/in", "secret": given})
    assert response.status_code == 200 and response.context["adminform"].form.errors["url"]
    assert "WEBHOOKS_ALLOW_PRIVATE_URLS=true" in response.context["adminform"].form.errors["url"][0]
    assert given not in response.content.decode()
    response = integrator.post(ADD, {**FORM, "events": [], "secret": "whsec_short"})
    errors = response.context["adminform"].form.errors
    assert set(errors) == {"events", "secret"}
    assert not WebhookSubscription.objects.exists()


def test_a_given_secret_is_kept_and_shown_once(integrator):
    given = "whsec_" + base64.b64encode(b"s" * 32).decode()
    endpoint, secret, _ = added(integrator, secret=given)
    assert secret == given and endpoint_secrets(endpoint) == [given]


def test_changing_the_endpoint_keeps_its_secret_and_is_audited(integrator):
    endpoint, secret, _ = added(integrator)
    response = integrator.post(
        page("change", endpoint.pk),
        {
            "url": "https://hooks.example.com/v2",
            "events": ["account.deleted"],
            "owner_id": "billing",
            "description": "",
        },
    )
    assert response.status_code == 302
    endpoint.refresh_from_db()
    assert (endpoint.url, endpoint.events) == ("https://hooks.example.com/v2", ["account.deleted"])
    assert endpoint_secrets(endpoint) == [secret]
    changed = AuditEvent.objects.get(action="webhook.changed")
    assert changed.actor_display == "integrator1" and changed.diff_after["url"] == "https://hooks.example.com/v2"


def test_a_change_the_service_refuses_is_said_beside_its_field_and_changes_nothing(integrator):
    endpoint, _, _ = added(integrator)
    form = {"url": "http://hooks.example.com/plain", "events": ["account.deleted"], "owner_id": "billing"}
    response = integrator.post(page("change", endpoint.pk), {**form, "description": ""})
    assert response.status_code == 200
    assert list(response.context["adminform"].form.errors) == ["url"]
    endpoint.refresh_from_db()
    assert endpoint.url != form["url"] and not AuditEvent.objects.filter(action="webhook.changed").exists()


def test_rotating_asks_first_then_shows_the_new_secret_once(integrator):
    endpoint, first, _ = added(integrator)
    confirm = integrator.get(act(endpoint, "rotate_secret"))
    assert confirm.status_code == 200 and "keeps signing" in confirm.content.decode()
    assert endpoint_secrets(endpoint) == [first]  # a GET changes nothing
    response = integrator.post(act(endpoint, "rotate_secret"), {"confirm": "yes", "reason": "leaked in a ticket"})
    (second,) = re.findall(r'id="signing-secret" type="text" value="([^"]+)"', response.content.decode())
    assert "no-store" in response["Cache-Control"]
    endpoint.refresh_from_db()
    assert endpoint_secrets(endpoint) == [second, first]
    rotated = AuditEvent.objects.get(action="webhook.secret_rotated")
    assert (rotated.actor_display, rotated.reason) == ("integrator1", "leaked in a ticket")
    for html in every_page_of(integrator, endpoint).values():
        assert_nowhere(html, second)


@pytest.mark.parametrize(
    ("start", "action", "end", "audited"),
    [
        (EndpointStatus.ACTIVE, "pause", EndpointStatus.PAUSED, "webhook.paused"),
        (EndpointStatus.PAUSED, "resume", EndpointStatus.ACTIVE, "webhook.resumed"),
        (EndpointStatus.DISABLED_DEAD, "enable", EndpointStatus.ACTIVE, "webhook.enabled"),
    ],
)
def test_the_state_buttons_move_the_endpoint_once_audited_with_the_staff_member(
    integrator, start, action, end, audited
):
    endpoint, _, _ = added(integrator)
    WebhookSubscription.objects.filter(pk=endpoint.pk).update(status=start)
    html = integrator.get(page("change", endpoint.pk)).content.decode()
    assert act(endpoint, action) in html
    response = integrator.post(act(endpoint, action), {"confirm": "yes"}, follow=True)
    endpoint.refresh_from_db()
    assert endpoint.status == end
    assert AuditEvent.objects.get(action=audited).actor_display == "integrator1"
    # The same click again (a second tab): refused with the reason, nothing changed.
    response = integrator.post(act(endpoint, action), {"confirm": "yes"}, follow=True)
    nothing, skipped = [str(m) for m in response.context["messages"]]
    assert nothing == "Nothing was changed."
    assert skipped.startswith("1 webhook endpoint skipped (") and EndpointStatus(end).label in skipped
    assert skipped.endswith(f"): {endpoint.url}.")
    assert AuditEvent.objects.filter(action=audited).count() == 1


def test_send_a_test_event_queues_one_delivery_to_that_endpoint(integrator):
    endpoint, _, _ = added(integrator)
    integrator.post(act(endpoint, "send_test"), {"confirm": "yes"})
    (delivery,) = WebhookDelivery.objects.filter(subscription=endpoint)
    assert delivery.event.event_type == "webhook.test"
    assert AuditEvent.objects.get(action="webhook.test_sent").actor_display == "integrator1"


def delivery_in(endpoint, status) -> WebhookDelivery:
    account = AccountFactory()
    delivery = WebhookDelivery.objects.get(subscription=endpoint, event__aggregate_id=str(account.pk))
    set_deliveries(WebhookDelivery.objects.filter(pk=delivery.pk), status=status, attempts=8, http_status=500)
    return delivery


def test_redeliver_sends_the_selected_deliveries_again_and_audits_each(integrator):
    endpoint, _, _ = added(integrator)
    failed = [delivery_in(endpoint, DeliveryStatus.PERMANENTLY_FAILED) for _ in range(2)]
    waiting = delivery_in(endpoint, DeliveryStatus.PENDING)
    data = {"action": "redeliver", "_selected_action": [d.pk for d in [*failed, waiting]]}
    confirm = integrator.post(DELIVERIES, data)
    assert confirm.status_code == 200 and "sent again" in confirm.content.decode()
    assert not AuditEvent.objects.filter(action="webhook.redelivered").exists()
    response = integrator.post(DELIVERIES, {**data, "confirm": "yes"}, follow=True)
    messages = [str(m) for m in response.context["messages"]]
    assert messages == ["2 deliveries sent again. 1 was already waiting to be sent."]
    redelivered = AuditEvent.objects.filter(action="webhook.redelivered")
    assert {e.resource_id for e in redelivered} == {str(d.pk) for d in failed}
    assert {e.actor_display for e in redelivered} == {"integrator1"}


def test_a_delivery_page_shows_its_response_and_sends_it_again(integrator):
    endpoint, _, _ = added(integrator)
    delivery = delivery_in(endpoint, DeliveryStatus.FAILED)
    set_deliveries(WebhookDelivery.objects.filter(pk=delivery.pk), http_response_body_excerpt="upstream <timeout>")
    html = integrator.get(reverse("admin:platform_events_webhookdelivery_change", args=[delivery.pk])).content.decode()
    assert "upstream &lt;timeout&gt;" in html
    again = reverse("admin:platform_events_webhookdelivery_redeliver", args=[delivery.pk])
    assert again in html
    integrator.post(again, {"confirm": "yes"})
    assert WebhookDelivery.objects.get(pk=delivery.pk).status == DeliveryStatus.PENDING


def test_a_delivery_made_before_the_endpoints_url_changed_is_not_sent_to_the_new_one(integrator):
    """Its payload was meant for the former receiver: no button on its page, and the list's action
    skips it, saying why."""
    endpoint, _, _ = added(integrator)
    delivery = delivery_in(endpoint, DeliveryStatus.PERMANENTLY_FAILED)
    endpoint_change(
        endpoint,
        url="https://elsewhere.example.net/hook",
        events=endpoint.events,
        owner="billing",
        description="",
        actor=None,
    )
    again = reverse("admin:platform_events_webhookdelivery_redeliver", args=[delivery.pk])
    assert (
        again
        not in integrator.get(
            reverse("admin:platform_events_webhookdelivery_change", args=[delivery.pk])
        ).content.decode()
    )
    data = {"action": "redeliver", "_selected_action": [delivery.pk], "confirm": "yes"}
    report = integrator.post(DELIVERIES, data, follow=True)
    messages = " ".join(str(m) for m in report.context["messages"])
    assert "made for the endpoint's former URL" in messages, messages
    assert WebhookDelivery.objects.get(pk=delivery.pk).status == DeliveryStatus.PERMANENTLY_FAILED
    assert not AuditEvent.objects.filter(action="webhook.redelivered").exists()


def test_an_integrator_reads_events_and_deliveries_without_the_persons_login_or_address(integrator, admin_client):
    """Accounts are closed to the Integrator role: an event's and a delivery's payload show them the
    account's id and status, its login and e-mail hidden; a superuser sees them whole."""
    endpoint, _, _ = added(integrator)
    delivery = delivery_in(endpoint, DeliveryStatus.FAILED)
    account = delivery.event.payload["data"]
    pages = [
        reverse("admin:platform_events_webhookdelivery_change", args=[delivery.pk]),
        reverse("admin:platform_events_outboxevent_change", args=[delivery.event_id]),
    ]
    for url in pages:
        hidden = unescape(integrator.get(url).content.decode())
        assert account["email"] not in hidden and f'"{account["login"]}"' not in hidden, url
        assert '"email": "(hidden: your role does not read accounts)"' in hidden and f'"id": {account["id"]}' in hidden
        whole = unescape(admin_client.get(url).content.decode())
        assert account["email"] in whole and "(hidden:" not in whole, url


def test_the_events_of_an_account_are_a_link_from_its_page(admin_client):
    account, other = AccountFactory(), AccountFactory()
    html = admin_client.get(reverse("admin:accounts_account_change", args=[account.pk])).content.decode()
    link = f"{EVENTS}?aggregate_id={account.pk}"
    assert link in html and "Audit trail" in html
    listed = admin_client.get(link).context["cl"].result_list
    assert {(e.aggregate_id, e.event_type) for e in listed} == {(str(account.pk), "account.created")}
    assert other.pk not in {int(e.aggregate_id) for e in listed}


@pytest.mark.parametrize(
    "url",
    [ENDPOINTS, ADD, DELIVERIES, EVENTS],
)
def test_support_has_no_webhook_page(support, url):
    assert support.get(url).status_code == 403


def test_support_sees_no_events_link_on_an_account_page(support):
    account = AccountFactory()
    html = support.get(reverse("admin:accounts_account_change", args=[account.pk])).content.decode()
    assert EVENTS not in html


def test_support_cannot_press_an_endpoint_button_or_redeliver(support, admin_client):
    endpoint, _ = endpoint_create(url=URL, events=["account.created"], owner="billing", actor=None)
    assert support.post(act(endpoint, "pause"), {"confirm": "yes"}).status_code == 403
    delivery = delivery_in(endpoint, DeliveryStatus.FAILED)
    redeliver = reverse("admin:platform_events_webhookdelivery_redeliver", args=[delivery.pk])
    assert support.post(redeliver, {"confirm": "yes"}).status_code == 403
    assert WebhookSubscription.objects.get(pk=endpoint.pk).status == EndpointStatus.ACTIVE
    assert WebhookDelivery.objects.get(pk=delivery.pk).status == DeliveryStatus.FAILED


@pytest.mark.parametrize(
    ("url", "query"),
    [
        (ENDPOINTS, "secret_encrypted=x"),
        (ENDPOINTS, "secret_key_id=k1"),
        (ENDPOINTS, "previous_secret_encrypted__isnull=1"),
        (ENDPOINTS, "status=bogus"),
        (DELIVERIES, "event=not-an-id"),
        (DELIVERIES, "subscription__secret_encrypted=x"),
        (DELIVERIES, "status=%00"),
        (EVENTS, "event_type=bogus"),
        (EVENTS, "payload__data__email=x"),
        (EVENTS, "aggregate_id=" + "7" * 65),
    ],
)
def test_undeclared_or_impossible_lookups_answer_400(admin_client, url, query):
    assert admin_client.get(f"{url}?{query}").status_code == 400


@pytest.mark.parametrize(
    "query",
    ["status__exact=ACTIVE", "q=hooks.example"],
)
def test_declared_endpoint_lookups_work(admin_client, query):
    endpoint_create(url=URL, events=["account.created"], owner="billing", actor=None)
    response = admin_client.get(f"{ENDPOINTS}?{query}")
    assert response.status_code == 200 and len(response.context["cl"].result_list) == 1


def test_the_endpoint_form_subscribes_to_deprovisioning_and_reprovisioning(integrator):
    events = ["account.deprovisioned", "account.reprovisioned"]
    form = integrator.get(ADD).content.decode()
    assert all(f'value="{event}"' in form for event in events)

    endpoint, _, _ = added(integrator, events=events)

    assert endpoint.events == events
