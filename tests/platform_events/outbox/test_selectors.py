"""Reads of the outbox (platform_events/outbox/selectors.py): how far an internal consumer is behind,
as /metrics shows it."""

import pytest

from platform_events.outbox.models import OutboxEvent
from platform_events.outbox.selectors import consumer_lag

pytestmark = pytest.mark.django_db

GROUP = "test-lag"
TYPES = {"account.created"}


@pytest.fixture
def sign_ups(sql):
    """``sign_ups(n)``: n new accounts, each an account.created event in the outbox."""

    def sign_up(count: int) -> None:
        sql(
            "INSERT INTO accounts (email, login)"
            " SELECT 'lag' || n || '@example.com', 'lag' || n FROM generate_series(1, %s) n",
            [count],
        )

    return sign_up


def lag():
    return consumer_lag(group=GROUP, event_types=TYPES, up_to=100_000)


def test_events_of_the_consumers_types_published_after_its_newest_handled_one_are_its_lag(sign_ups):
    before = lag().events  # events earlier tests left: nobody of this group handled them
    sign_ups(2)
    assert lag().events == before + 2
    assert lag().seconds >= 0


def test_a_consumer_that_handled_the_newest_event_has_no_lag(sign_ups, sql):
    sign_ups(2)
    newest = OutboxEvent.objects.filter(event_type__in=TYPES).order_by("-seq").first()
    sql("SELECT outbox_consumer_register(%s, %s)", [GROUP, sorted(TYPES)])  # as a pass of the consumer does
    sql("INSERT INTO processed_events (consumer_group, event_id) VALUES (%s, %s)", [GROUP, newest.id])
    assert (lag().events, lag().seconds) == (0, 0)


def test_the_lag_is_counted_up_to_the_limit(sign_ups):
    sign_ups(3)
    assert consumer_lag(group=GROUP, event_types=TYPES, up_to=2).events == 2


def test_events_of_other_types_are_not_the_consumers_lag(sign_ups):
    suspensions = {"account.suspended"}
    before = consumer_lag(group=GROUP, event_types=suspensions, up_to=100_000).events
    sign_ups(2)
    assert consumer_lag(group=GROUP, event_types=suspensions, up_to=100_000).events == before
