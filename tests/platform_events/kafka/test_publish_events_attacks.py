"""Attacks on manage.py publish_events's arguments: each refusal is one sentence, given before anything
starts, and leaves publication as it was: the stream neither switched on nor off, no row made or
dropped."""

import io

import pytest
from django.core.management import CommandError, call_command
from django.views.debug import get_default_exception_reporter_filter

from tests.platform_events.outbox.test_triggers import provision
from tests.support import connect, database_url_for_tests, manage

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


PASSWORD = "kattack-Pw-7f3a9c"


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512"])
def test_the_sasl_password_is_in_no_line_the_relay_writes_at_debug_level(kafka_broker, mechanism):
    """The broker (no SASL listener) fails the handshake with an event waiting: librdkafka's lines, the
    outage and the one-sentence end, all at LOG_LEVEL=DEBUG, name no password."""
    with connect(autocommit=True) as conn:
        conn.execute("SELECT event_stream_start()")
        provision(conn, "jane")
    result = manage(
        "publish_events",
        "--once",
        DATABASE_URL=database_url_for_tests(),
        KAFKA_BOOTSTRAP_SERVERS=kafka_broker.bootstrap,
        KAFKA_SECURITY_PROTOCOL="SASL_PLAINTEXT",
        KAFKA_SASL_MECHANISM=mechanism,
        KAFKA_SASL_USERNAME="relay",
        KAFKA_SASL_PASSWORD=PASSWORD,
        KAFKA_MESSAGE_TIMEOUT_SECONDS="2",
        LOG_LEVEL="DEBUG",
    )
    assert result.returncode == 1 and "CommandError: The broker is unavailable:" in result.stderr
    assert PASSWORD not in result.stdout + result.stderr


def test_the_error_pages_settings_mask_the_kafka_passwords(settings):
    """Django's error reports list the settings: both passwords in KAFKA_SECURITY are masked; the
    user name and the protocol are not secrets."""
    settings.KAFKA_SECURITY = {
        "security.protocol": "sasl_ssl",
        "sasl.username": "relay",
        "sasl.password": PASSWORD,
        "ssl.key.password": PASSWORD + "-key",
    }
    shown = get_default_exception_reporter_filter().get_safe_settings()["KAFKA_SECURITY"]
    assert PASSWORD not in repr(shown)
    assert shown["sasl.username"] == "relay"


def test_a_poll_interval_over_a_day_from_the_environment_is_refused_before_the_stream_is_switched_on(settings):
    settings.KAFKA_BOOTSTRAP_SERVERS = "127.0.0.1:1"
    settings.KAFKA_POLL_SECONDS = 100_000  # the settings bound it below only
    with pytest.raises(CommandError, match=r"^KAFKA_POLL_SECONDS must be more than 0 and at most"):
        call_command("publish_events", "--once", stdout=io.StringIO())
    with connect(autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM event_stream").fetchone() == (0,)
    out = io.StringIO()
    call_command("publish_events", "--off", stdout=out)  # which polls nothing
    assert out.getvalue().startswith("Publication to Kafka is off")
