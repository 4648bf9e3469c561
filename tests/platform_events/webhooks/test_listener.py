"""listen_webhooks: LISTEN webhook_delivery, deliver at once (the shared loop, platform_events/db/listener.py)."""

import signal

import pytest
from django.core.management import CommandError, call_command

from accounts.services import account_provision
from tests.platform_events.webhooks.test_dispatch import dispatcher_env, make_endpoint
from tests.support import start_manage, wait_for
from tests.webhook_receiver import WebhookReceiver

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("webhook_settings")]


def test_listen_webhooks_delivers_a_new_event_without_waiting_for_a_poll(psql):
    with WebhookReceiver() as receiver:
        make_endpoint(receiver.url)
        listener = start_manage("listen_webhooks", "--poll-seconds", "300", PGAPPNAME="test-hooks", **dispatcher_env())
        try:
            wait_for(
                lambda: psql.execute(
                    "SELECT pg_stat_clear_snapshot(), count(*) FROM pg_stat_activity"
                    " WHERE datname = current_database() AND application_name = 'test-hooks'"
                    " AND query = 'LISTEN webhook_delivery'"
                ).fetchone()[1],
                timeout=60,
                message="the listener to LISTEN",
            )
            account_provision(email="jane@example.com", login="jane", actor=None)
            # The poll is 5 minutes away: only the NOTIFY can bring it this soon.
            wait_for(lambda: receiver.received, timeout=30, message="the webhook")
        finally:
            listener.send_signal(signal.SIGTERM)
            output = listener.communicate(timeout=30)[0]
    assert listener.returncode == 0, output
    assert "Webhook listener stopped." in output


def test_a_listener_that_refuses_an_endpoint_says_why_on_its_console(psql):
    """An endpoint to loopback added while WEBHOOKS_ALLOW_PRIVATE_URLS was on, a listener started
    without it: its console names the address it refused and the setting, beyond "1 to retry"."""
    with WebhookReceiver() as receiver:
        make_endpoint(receiver.url)
        account_provision(email="jane@example.com", login="jane", actor=None)
        listener = start_manage(
            "listen_webhooks", "--poll-seconds", "300", **dispatcher_env(WEBHOOKS_ALLOW_PRIVATE_URLS="false")
        )
        try:
            wait_for(
                lambda: psql.execute("SELECT attempts FROM webhook_deliveries").fetchone()[0],
                timeout=60,
                message="the listener's first attempt",
            )
        finally:
            listener.send_signal(signal.SIGTERM)
            output = listener.communicate(timeout=30)[0]
    assert receiver.received == []
    assert "1 to retry" in output
    assert "1 delivery not delivered: refused: 127.0.0.1 resolves to 127.0.0.1, a loopback address" in output
    assert "WEBHOOKS_ALLOW_PRIVATE_URLS (off in this process) would allow" in output


@pytest.mark.parametrize("seconds", ["nan", "0", "86401"])
def test_a_poll_interval_that_is_no_interval_is_refused(seconds):
    with pytest.raises(CommandError, match="--poll-seconds must be more than 0"):
        call_command("listen_webhooks", "--poll-seconds", seconds)
