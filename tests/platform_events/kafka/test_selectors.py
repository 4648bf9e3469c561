"""Reads of the publication state (platform_events/kafka/selectors.py): the relay's figures, read by
the runtime role through the partial indexes, and one event's publication for the admin."""

from datetime import timedelta

import pytest
from django.db import connection, transaction

from lifecycle.demo.factories import AccountFactory
from platform_events.kafka.selectors import FIGURES, OFF, publication_of, stream_figures
from platform_events.outbox.models import OutboxEvent
from tests.support import analyze

pytestmark = pytest.mark.django_db

WINDOW = timedelta(minutes=5)


def start_stream():
    with connection.cursor() as cursor:
        cursor.execute("SELECT event_stream_start()")


def claim_and_publish(event_ids, *, partition=0, first_offset=0):
    """The relay's two moves, as relay.py makes them: a claim, then the mark with the broker's position."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT gen_random_uuid()")
        (claim,) = cursor.fetchone()
        cursor.execute(
            "UPDATE event_publications SET claim = %s, lease_until = now() + interval '1 minute'"
            " WHERE event_id = ANY(%s)",
            [claim, list(event_ids)],
        )
        for offset, event_id in enumerate(event_ids, start=first_offset):
            cursor.execute(
                "UPDATE event_publications SET status = 'PUBLISHED', published_at = now(), kafka_partition = %s,"
                " kafka_offset = %s, claim = NULL, lease_until = NULL WHERE event_id = %s AND claim = %s",
                [partition, offset, event_id, claim],
            )


def test_off_is_all_zero_and_reads_nothing_else():
    AccountFactory()
    assert stream_figures(up_to=100, window=WINDOW) == OFF


def test_on_it_counts_what_waits_up_to_the_limit_and_what_was_published():
    start_stream()
    accounts = AccountFactory.create_batch(3)
    events = list(OutboxEvent.objects.filter(aggregate_id__in=[str(a.pk) for a in accounts]).order_by("seq"))
    claim_and_publish([events[0].id])
    figures = stream_figures(up_to=100, window=WINDOW)
    assert (figures.on, figures.unpublished, figures.published_recently) == (True, 2, 1)
    assert figures.oldest_unpublished_at == events[1].created_at
    assert stream_figures(up_to=1, window=WINDOW).unpublished == 1  # counted up to the limit
    assert len(accounts) == 3


@pytest.mark.django_db(transaction=True)
def test_each_figure_is_read_through_an_index_not_the_whole_table():
    """Plan read with seq scans off, as on a table of a million publications. No figure looks a
    publication up by its event: a scan of the primary key there is the whole table read under an
    index's name (the oldest parked event, looked up by its account and seq without its index's
    conditions, read every publication kept). A thousand publications wait, analyzed, as a real
    backlog's statistics say: with one, which the planner counts as one, walking the index of every
    waiting one and sorting costs it what walking the due index does."""
    start_stream()
    AccountFactory()
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO accounts (email, login) SELECT 'waiting' || g || '@example.com', 'waiting' || g"
            " FROM generate_series(1, 1000) g"
        )
    analyze("event_publications")
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(f"EXPLAIN {FIGURES}", {"up_to": 100, "window": WINDOW})
        plan = "\n".join(row[0] for row in cursor.fetchall())
    for index in (
        "event_publications_order",
        "event_publications_due",
        "event_publications_parked",
        "event_publications_published_at",
    ):
        assert index in plan, plan
    assert "Seq Scan" not in plan and "event_publications_pkey" not in plan, plan


def test_an_events_publication_is_read_whole_and_none_without_one():
    first = AccountFactory()  # before the stream: no publication
    start_stream()
    second = AccountFactory()
    before, after = OutboxEvent.objects.filter(aggregate_id__in=[str(first.pk), str(second.pk)]).order_by("seq")
    assert publication_of(before.id) is None
    waiting = publication_of(after.id)
    assert (waiting.status, waiting.attempts, waiting.claimed, waiting.published_at) == ("PENDING", 0, False, None)
    claim_and_publish([after.id], partition=2, first_offset=41)
    published = publication_of(after.id)
    assert (published.status, published.partition, published.offset) == ("PUBLISHED", 2, 41)
    assert published.published_at is not None


@pytest.mark.django_db(transaction=True)
def test_an_event_parked_by_a_race_still_counts_as_the_oldest_unpublished_while_no_relay_sweeps():
    """Two relays: one marks an account's event while the other's claim parks the account's next one
    (neither statement sees the other's change), then every relay stops. The next event waits, parked,
    until a relay starts and sweeps: the age of the oldest unpublished event is the alert that says so."""
    import json

    from platform_events.kafka import relay
    from tests.platform_events.kafka.test_relay import append_events, seqs_of
    from tests.support import connect

    relay.start_stream()
    append_events("busy", 1)
    claimed = relay.claim_batch(10)
    append_events("busy", 1)
    first, second = seqs_of("busy")
    with connect() as marking:  # the first relay's mark, not committed yet
        rows = [{"event_id": str(claimed.events[0].id), "partition": 0, "kafka_offset": 0}]
        assert marking.execute(relay.MARK, {"rows": json.dumps(rows), "claim": claimed.claim}).fetchone() == (1, 0)
        assert relay.claim_batch(10).parked == 1  # the second relay's claim parks the second event
        marking.commit()
    with connection.cursor() as cursor:
        cursor.execute("SELECT status, parked FROM event_publications ORDER BY event_seq")
        assert cursor.fetchall() == [("PUBLISHED", False), ("PENDING", True)]
        cursor.execute("SELECT created_at FROM outbox_events WHERE seq = %s", [second])
        (written,) = cursor.fetchone()

    figures = stream_figures(up_to=100, window=WINDOW)

    assert figures.unpublished == 1
    assert figures.oldest_unpublished_at == written
    assert first < second
