"""The database check: publication switched on with no broker configured here."""

import pytest
from django.core.management import call_command

from platform_events.kafka.checks import check_sasl_password_is_encrypted, check_stream_has_a_broker
from tests.support import connect, database_url_for_tests, manage

pytestmark = pytest.mark.django_db


def stream_on() -> None:
    with connect(autocommit=True) as conn:
        conn.execute("SELECT event_stream_start()")


@pytest.mark.django_db(transaction=True)
def test_a_stream_on_without_a_broker_warns_with_what_waits(settings):
    settings.KAFKA_BOOTSTRAP_SERVERS = ""
    stream_on()
    with connect(autocommit=True) as conn:
        conn.execute("INSERT INTO accounts (email, login) VALUES ('w1@example.com', 'w1'), ('w2@example.com', 'w2')")
    (warning,) = check_stream_has_a_broker(None, databases=["default"])
    assert warning.id == "platform_events.W002"
    assert warning.msg.startswith("Publication to Kafka is on in the database but KAFKA_BOOTSTRAP_SERVERS is unset")
    assert ": 2 events wait for a relay" in warning.msg  # the two accounts' account.created
    assert "publish_events --off" in warning.hint


@pytest.mark.django_db(transaction=True)
def test_a_stream_on_with_a_broker_configured_is_no_warning(settings):
    settings.KAFKA_BOOTSTRAP_SERVERS = "broker:9092"
    stream_on()
    assert check_stream_has_a_broker(None, databases=["default"]) == []


def test_a_stream_off_is_no_warning(settings):
    settings.KAFKA_BOOTSTRAP_SERVERS = ""
    assert check_stream_has_a_broker(None, databases=["default"]) == []
    assert check_stream_has_a_broker(None, databases=None) == []  # manage.py check without --database


@pytest.mark.django_db(transaction=True)
def test_manage_check_with_the_database_says_it(settings, capsys):
    settings.KAFKA_BOOTSTRAP_SERVERS = ""
    stream_on()
    call_command("check", "--database", "default")
    assert "platform_events.W002" in capsys.readouterr().err
    # migrate checks the database it migrates: the owner's.
    roles = {"DATABASE_URL": database_url_for_tests(), "DATABASE_OWNER_URL": database_url_for_tests("owner")}
    result = manage("check", "--database", "owner", **roles)
    assert "platform_events.W002" in result.stderr, result.stderr


@pytest.mark.parametrize(
    ("protocol", "mechanism", "warned"),
    [("sasl_plaintext", "PLAIN", True), ("sasl_plaintext", "SCRAM-SHA-512", False), ("sasl_ssl", "PLAIN", False)],
)
def test_check_deploy_warns_of_a_kafka_password_sent_in_clear(settings, protocol, mechanism, warned):
    settings.KAFKA_BOOTSTRAP_SERVERS = "broker:9092"
    settings.KAFKA_SECURITY = {"security.protocol": protocol, "sasl.mechanism": mechanism}
    assert [w.id for w in check_sasl_password_is_encrypted(None)] == (["platform_events.W003"] if warned else [])
