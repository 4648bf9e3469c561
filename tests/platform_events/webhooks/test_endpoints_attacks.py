"""The runtime role against the webhook endpoints' rows: the trail names an endpoint by id, so an id
changed in place (platform_events/sql/0020_kept_ids.sql refuses it) would have later rows name one
endpoint for another, with no row saying so."""

import uuid

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import DatabaseError, connection, transaction

from accounts.services import account_suspend
from lifecycle.demo.factories import AccountFactory
from platform_events.outbox.models import EventType
from platform_events.webhooks.endpoints import deliveries_redeliver, endpoint_change
from platform_events.webhooks.models import DeliveryStatus, WebhookDelivery
from tests.support import set_deliveries

pytestmark = [pytest.mark.attack, pytest.mark.django_db]


def test_the_runtime_role_cannot_change_an_endpoints_id(make_endpoint):
    endpoint, _secret = make_endpoint()
    with pytest.raises(DatabaseError, match="webhook_subscriptions .* keeps its id"), connection.cursor() as cursor:
        cursor.execute("UPDATE webhook_subscriptions SET id = %s WHERE id = %s", [uuid.uuid4(), endpoint.pk])


@pytest.mark.django_db(transaction=True)  # each step its own transaction, as in the admin: now() moves on
def test_an_integrator_cannot_send_an_endpoints_history_to_a_url_of_their_own(make_endpoint):
    endpoint, _secret = make_endpoint(events=[EventType.ACCOUNT_SUSPENDED])
    account_suspend(account=AccountFactory(active=True, email="ada@example.com"), actor=None)
    set_deliveries(WebhookDelivery.objects.all(), status=DeliveryStatus.DELIVERED, http_status=200)
    integrator = get_user_model().objects.create_user("ida", is_staff=True)
    integrator.groups.set([Group.objects.get(name="Integrator")])
    assert not integrator.has_perm("accounts.view_account")

    endpoint_change(
        endpoint,
        url="https://collector.example.net/",
        events=endpoint.events,
        owner="partner",
        description="",
        actor=integrator,
    )
    sent_again = deliveries_redeliver(WebhookDelivery.objects.filter(subscription=endpoint), actor=integrator)

    assert sent_again == 0
    # Nor by hand, as the runtime role: the database refuses it, and keeps when the URL changed.
    with pytest.raises(DatabaseError, match="made for the endpoint's former URL"), transaction.atomic():
        connection.cursor().execute(
            "UPDATE webhook_deliveries SET status = 'PENDING', next_retry_at = now() WHERE subscription_id = %s",
            [endpoint.pk],
        )
    with pytest.raises(DatabaseError, match="not set by hand"), transaction.atomic():
        connection.cursor().execute(
            "UPDATE webhook_subscriptions SET url_since = '-infinity' WHERE id = %s", [endpoint.pk]
        )
    assert WebhookDelivery.objects.get().status == DeliveryStatus.DELIVERED
    # What comes after the change is the new URL's, and may be sent again.
    account_suspend(account=AccountFactory(active=True), actor=None)
    later = WebhookDelivery.objects.exclude(status=DeliveryStatus.DELIVERED)
    set_deliveries(later, status=DeliveryStatus.DELIVERED, http_status=200)
    assert deliveries_redeliver(WebhookDelivery.objects.filter(subscription=endpoint), actor=integrator) == 1
