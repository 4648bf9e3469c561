"""Reads of webhook endpoints and deliveries (platform_events/webhooks/selectors.py): how long the
delivery due longest has waited (the readiness probe's), how many wait, and how the endpoints stand
(the figures /metrics shows)."""

from datetime import timedelta

import pytest
from django.db.models.functions import Now

from platform_events.webhooks.endpoints import endpoint_pause
from platform_events.webhooks.models import DeliveryStatus, EndpointStatus, WebhookDelivery, WebhookSubscription
from platform_events.webhooks.selectors import (
    endpoint_counts_by_status,
    failing_endpoints_count,
    longest_due_wait,
    waiting_deliveries_count,
)
from tests.support import set_deliveries

pytestmark = pytest.mark.django_db


@pytest.fixture
def sign_ups(sql):
    """``sign_ups(n)``: n new accounts, each an account.created event queued to every endpoint taking it."""

    def sign_up(count: int) -> None:
        sql(
            "INSERT INTO accounts (email, login)"
            " SELECT 'hook' || n || '@example.com', 'hook' || n FROM generate_series(1, %s) n",
            [count],
        )

    return sign_up


def delivery_due_for(delivery: WebhookDelivery, wait: timedelta) -> None:
    """Make ``delivery`` due since ``wait`` ago (a negative wait: due only after that long)."""
    set_deliveries(WebhookDelivery.objects.filter(pk=delivery.pk), next_retry_at=Now() - wait)


class TestLongestDueWait:
    def test_nothing_due_has_no_wait(self, make_endpoint):
        make_endpoint()
        assert longest_due_wait() is None

    def test_the_wait_is_the_longest_due_deliverys(self, make_endpoint, sign_ups):
        make_endpoint()
        sign_ups(2)
        first, second = WebhookDelivery.objects.order_by("event_seq")
        delivery_due_for(first, timedelta(minutes=3))
        delivery_due_for(second, timedelta(minutes=10))
        assert abs(longest_due_wait() - timedelta(minutes=10)) < timedelta(minutes=1)

    def test_deliveries_to_a_paused_endpoint_are_not_due(self, make_endpoint, staff, sign_ups):
        endpoint, _ = make_endpoint()
        sign_ups(1)
        delivery_due_for(WebhookDelivery.objects.get(), timedelta(hours=1))
        endpoint_pause(endpoint, actor=staff)
        assert longest_due_wait() is None

    def test_a_delivery_not_due_yet_does_not_wait(self, make_endpoint, sign_ups):
        make_endpoint()
        sign_ups(1)
        delivery_due_for(WebhookDelivery.objects.get(), -timedelta(minutes=5))
        assert longest_due_wait() is None


class TestCounts:
    def test_waiting_deliveries_are_counted_by_status_up_to_the_limit(self, make_endpoint, sign_ups):
        make_endpoint()
        sign_ups(4)
        retrying = WebhookDelivery.objects.order_by("event_seq").first()
        set_deliveries(WebhookDelivery.objects.filter(pk=retrying.pk), status=DeliveryStatus.FAILED, attempts=1)
        assert waiting_deliveries_count(DeliveryStatus.PENDING, up_to=100) == 3
        assert waiting_deliveries_count(DeliveryStatus.PENDING, up_to=2) == 2
        assert waiting_deliveries_count(DeliveryStatus.FAILED, up_to=100) == 1

    def test_endpoints_are_counted_by_status_every_status_named(self, make_endpoint, staff):
        make_endpoint()
        paused, _ = make_endpoint(url="https://hooks.example.com/other")
        endpoint_pause(paused, actor=staff)
        assert endpoint_counts_by_status() == {
            EndpointStatus.ACTIVE: 1,
            EndpointStatus.PAUSED: 1,
            EndpointStatus.DISABLED_DEAD: 0,
        }

    def test_failing_endpoints_are_those_not_disabled_that_failed_since_their_last_success(self, make_endpoint):
        failing, _ = make_endpoint()
        disabled, _ = make_endpoint(url="https://hooks.example.com/disabled")
        make_endpoint(url="https://hooks.example.com/fine")
        WebhookSubscription.objects.filter(pk__in=[failing.pk, disabled.pk]).update(failing_since=Now())
        WebhookSubscription.objects.filter(pk=disabled.pk).update(status=EndpointStatus.DISABLED_DEAD)
        assert failing_endpoints_count() == 1
