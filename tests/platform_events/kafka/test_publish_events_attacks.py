"""Attacks on manage.py publish_events's arguments: each refusal is one sentence, given before anything
starts, and leaves publication as it was: the stream neither switched on nor off, no row made or
dropped."""

import io

import pytest
from django.core.management import CommandError, call_command

from tests.platform_events.outbox.test_triggers import provision
from tests.support import connect

pytestmark = [pytest.mark.attack, pytest.mark.django_db(transaction=True)]


def publication(conn):
    return (
        conn.execute("SELECT count(*) FROM event_stream").fetchone(),
        conn.execute("SELECT event_id, status FROM event_publications ORDER BY event_seq").fetchall(),
    )


@pytest.mark.parametrize("stream_on", [False, True], ids=["stream off", "stream on"])
@pytest.mark.parametrize(
    ("args", "sentence"),
    [
        # --off ran and the rest was ignored: --again's period was never published, its rows dropped instead.
        (["--off", "--since", "2026-01-01", "--again"], r"^--off takes no other option: it switches publication off"),
        (["--off", "--once"], r"^--off takes no other option"),
        (["--off", "--poll-seconds", "5"], r"^--off takes no other option"),
        # An empty date was taken for no --since at all: the relay ran instead of refusing.
        (["--since", "", "--again"], r"^'' is no date or time"),
        (["--since", "2026-01-01", "--until", ""], r"^'' is no date or time"),
        (["--until", "", "--once"], r"^--until needs --since"),
        # Refused only once the stream was switched on.
        (["--once", "--poll-seconds", "0"], r"^--poll-seconds must be more than 0"),
        (["--poll-seconds", "nan"], r"^--poll-seconds must be more than 0"),
        (["--poll-seconds=-inf"], r"^--poll-seconds must be more than 0"),
        # Ignored: the period was queued and nothing published.
        (["--since", "2026-01-01", "--once"], r"^--once has no use with --since"),
        (["--since", "2026-01-01", "--poll-seconds", "2"], r"^--poll-seconds has no use with --since"),
        (["--since", "2026-01-01T25:00"], r"^'2026-01-01T25:00' is no date or time"),
    ],
)
def test_a_refused_argument_is_one_sentence_and_changes_nothing(settings, args, sentence, stream_on):
    settings.KAFKA_BOOTSTRAP_SERVERS = "127.0.0.1:1"  # the refusal comes before any connection to it
    with connect(autocommit=True) as conn:
        if stream_on:
            conn.execute("SELECT event_stream_start()")
        provision(conn, "jane")
        before = publication(conn)

    with pytest.raises(CommandError, match=sentence) as refusal:
        call_command("publish_events", *args, stdout=io.StringIO())

    assert "\n" not in str(refusal.value) and str(refusal.value).endswith(".")
    with connect(autocommit=True) as conn:
        assert publication(conn) == before
