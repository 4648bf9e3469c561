"""/healthz and /readyz (lifecycle/ops/health.py): each check's failure makes /readyz 503 and names it,
a plain-HTTP probe with an address for Host is answered with DEBUG off, and the result is cached."""

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

import httpx
import pytest
from django.db.models.functions import Now
from django.test import Client

from lifecycle.demo.factories import AccountFactory
from lifecycle.ops.health import READINESS
from platform_events.webhooks.models import WebhookDelivery, WebhookSubscription
from platform_events.webhooks.secrets import encrypt_secret, new_signing_secret
from tests.smtp import free_port
from tests.support import ROOT, connect_as_owner, environment, set_deliveries, wait_for
from tokens.models import Token
from tokens.selectors import live_token

ALL_OK = {"database": "ok", "migrations": "ok", "mail_queue": "ok", "webhook_queue": "ok"}


@pytest.fixture(autouse=True)
def fresh_readiness():
    """Each test takes its own readiness, not the previous test's cached one."""
    READINESS.clear()
    yield
    READINESS.clear()


def probe(path: str = "/readyz", **extra):
    return Client().get(path, **extra)


def states(response) -> dict:
    return json.loads(response.content)["checks"]


def test_healthz_answers_without_touching_the_database():
    """No django_db mark: a query from the request would fail it ("Database access not allowed"); the
    gunicorn test below shows /healthz answering while the database cannot be reached."""
    response = probe("/healthz")
    assert (response.status_code, response.content) == (200, b"ok\n")
    assert "no-store" in response["Cache-Control"]


@pytest.mark.django_db(transaction=True)
class TestReadiness:
    def test_ready_names_each_check(self):
        response = probe()
        assert response.status_code == 200
        assert json.loads(response.content) == {"status": "ready", "checks": ALL_OK}
        assert "no-store" in response["Cache-Control"]

    def test_an_unapplied_migration_makes_it_503_and_names_it(self):
        with migration_unapplied():
            response = probe()
        assert response.status_code == 503
        assert json.loads(response.content) == {"status": "not ready", "checks": ALL_OK | {"migrations": "failing"}}

    def test_a_mail_due_for_longer_than_the_limit_makes_it_503(self, settings):
        settings.READY_MAIL_MAX_AGE_SECONDS = 600
        token = live_token(account=AccountFactory())
        Token.objects.filter(pk=token.pk).update(mail_next_attempt_at=Now() - timedelta(seconds=601))
        response = probe()
        assert response.status_code == 503
        assert states(response) == ALL_OK | {"mail_queue": "failing"}

    def test_a_mail_due_for_less_than_the_limit_is_fine(self, settings):
        """The queue is judged by its wait, not its length: mail just queued is no trouble."""
        settings.READY_MAIL_MAX_AGE_SECONDS = 600
        token = live_token(account=AccountFactory())
        Token.objects.filter(pk=token.pk).update(mail_next_attempt_at=Now() - timedelta(seconds=590))
        assert probe().status_code == 200

    def test_a_mail_waiting_for_its_retry_is_not_due_so_not_stuck(self, settings):
        """A retrying e-mail waits out its backoff: only the time since it came due counts."""
        settings.READY_MAIL_MAX_AGE_SECONDS = 600
        token = live_token(account=AccountFactory())
        Token.objects.filter(pk=token.pk).update(mail_state="retrying", mail_next_attempt_at=Now() + timedelta(hours=1))
        assert probe().status_code == 200

    def test_a_webhook_delivery_due_for_longer_than_the_limit_makes_it_503(self, settings):
        settings.READY_WEBHOOK_MAX_AGE_SECONDS = 600
        make_endpoint()
        AccountFactory()  # account.created, queued for the endpoint
        assert set_deliveries(WebhookDelivery.objects.all(), next_retry_at=Now() - timedelta(seconds=601)) == 1
        response = probe()
        assert response.status_code == 503
        assert states(response) == ALL_OK | {"webhook_queue": "failing"}

    def test_events_waiting_for_a_kafka_broker_that_is_down_do_not_make_it_503(self, settings):
        """A broker outage holds the events back, and /metrics' lifecycle_kafka_oldest_unpublished_age_seconds
        alerts on it; the web tier keeps answering: the relay is no readiness check."""
        from platform_events.kafka import relay
        from tests.platform_events.outbox.test_runtime_rules import age_events

        settings.KAFKA_BOOTSTRAP_SERVERS = f"127.0.0.1:{free_port()}"  # nobody listens
        settings.KAFKA_MESSAGE_TIMEOUT_SECONDS = 1
        relay.start_stream()
        AccountFactory.create_batch(2)
        age_events(1)  # waiting for a day
        assert relay.publish().outage
        response = probe()
        assert response.status_code == 200
        assert states(response) == ALL_OK

    def test_a_delivery_of_a_paused_endpoint_is_not_due_so_not_stuck(self, settings):
        settings.READY_WEBHOOK_MAX_AGE_SECONDS = 600
        endpoint = make_endpoint()
        AccountFactory()
        set_deliveries(WebhookDelivery.objects.all(), next_retry_at=Now() - timedelta(hours=1))
        WebhookSubscription.objects.filter(pk=endpoint.pk).update(status="PAUSED")
        assert probe().status_code == 200

    def test_a_queue_with_a_maximum_age_of_0_is_not_checked(self, settings):
        settings.READY_MAIL_MAX_AGE_SECONDS = 0
        token = live_token(account=AccountFactory())
        Token.objects.filter(pk=token.pk).update(mail_next_attempt_at=Now() - timedelta(days=1))
        response = probe()
        assert response.status_code == 200
        assert "mail_queue" not in states(response)

    def test_the_result_is_kept_for_READY_CACHE_SECONDS(self, settings):
        """A probe within READY_CACHE_SECONDS gets the last result without running the checks again."""
        settings.READY_CACHE_SECONDS = 1
        assert probe().status_code == 200
        with migration_unapplied():
            assert probe().status_code == 200  # kept
            wait_for(lambda: probe().status_code == 503, timeout=10, message="the kept result to expire")


def test_a_database_that_cannot_be_reached_makes_it_503_with_no_error_text():
    """A real server (gunicorn, DEBUG off) whose database is a closed port: /healthz still answers,
    /readyz names the database and skips the rest; the body holds none of the connection's words."""
    closed_port = free_port()
    with gunicorn(DATABASE_URL=f"postgres://lifecycle_app:sw0rdfish@127.0.0.1:{closed_port}/lifecycle") as url:
        assert httpx.get(f"{url}/healthz", headers={"Host": "10.1.2.3"}).status_code == 200
        response = httpx.get(f"{url}/readyz", headers={"Host": "10.1.2.3"})
    assert response.status_code == 503
    assert response.json() == {
        "status": "not ready",
        "checks": {
            "database": "failing",
            "migrations": "not checked",
            "mail_queue": "not checked",
            "webhook_queue": "not checked",
        },
    }
    for word in ("sw0rdfish", "lifecycle_app", str(closed_port), "127.0.0.1", "refused"):
        assert word not in response.text


class TestAPlainHttpProbeInProduction:
    """DEBUG off, the HTTPS redirect on, and a pod's address for Host, not in ALLOWED_HOSTS."""

    @pytest.fixture(autouse=True)
    def production(self, settings):
        settings.DEBUG = False
        settings.SECURE_SSL_REDIRECT = True
        settings.ALLOWED_HOSTS = ["lifecycle.example.com"]

    @pytest.mark.parametrize("host", ["127.0.0.1", "10.42.0.17:8000"])
    def test_healthz_is_answered(self, host):
        assert probe("/healthz", HTTP_HOST=host).status_code == 200

    @pytest.mark.django_db(transaction=True)
    def test_readyz_is_answered_with_no_cookie(self):
        response = probe("/readyz", HTTP_HOST="10.42.0.17")
        assert response.status_code == 200
        assert not response.cookies

    def test_head_is_answered_too(self):
        assert Client().head("/healthz", HTTP_HOST="10.42.0.17").status_code == 200

    @pytest.mark.parametrize(
        ("method", "path"),
        [
            ("get", "/healthz?debug=1"),
            ("get", "/healthz/"),
            ("get", "/readyz/x"),
            ("post", "/readyz"),
            ("options", "/healthz"),
            ("get", "/admin/"),
        ],
    )
    def test_nothing_else_passes_by_the_probes(self, method, path):
        """Other paths, methods and a query string go the usual way: here, redirected to HTTPS."""
        response = getattr(Client(), method)(path, HTTP_HOST="lifecycle.example.com")
        assert response.status_code == 301 and response["Location"].startswith("https://")

    def test_a_host_not_allowed_is_still_refused_elsewhere(self):
        response = Client(raise_request_exception=False).get("/readyz?x", HTTP_HOST="10.42.0.17", secure=True)
        assert response.status_code == 400


# Helpers


class migration_unapplied:
    """The latest tokens migration's row deleted from django_migrations by the owner (as if it had
    never run), and put back afterwards."""

    def __enter__(self):
        with connect_as_owner(autocommit=True) as owner:
            self.row = owner.execute(
                "DELETE FROM django_migrations WHERE id = (SELECT max(id) FROM django_migrations WHERE app = 'tokens')"
                " RETURNING id, app, name, applied"
            ).fetchone()

    def __exit__(self, *exc):
        with connect_as_owner(autocommit=True) as owner:
            owner.execute("INSERT INTO django_migrations (id, app, name, applied) VALUES (%s, %s, %s, %s)", self.row)


def make_endpoint() -> WebhookSubscription:
    endpoint_id = uuid.uuid4()
    blob, key_id = encrypt_secret(new_signing_secret(), aad=endpoint_id.bytes)
    return WebhookSubscription.objects.create(
        id=endpoint_id,
        owner_id="partner",
        url="https://partner.example.com/hooks",
        events=["account.created"],
        secret_encrypted=blob,
        secret_key_id=key_id,
    )


@contextmanager
def gunicorn(**env) -> Iterator[str]:
    """gunicorn serving lifecycle.wsgi with DEBUG off on a free port of loopback, as in production; its URL."""
    port = free_port()
    production = {
        "DEBUG": "false",
        "SECRET_KEY": "a-test-key-" + "x1y2z3" * 8,
        "ALLOWED_HOSTS": "lifecycle.example.com",
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "lifecycle.wsgi", "--bind", f"127.0.0.1:{port}", "--workers", "1"],
        cwd=ROOT,
        env=environment(**production, **env),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: _answers(f"{url}/healthz", process), timeout=60, message="gunicorn to answer")
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


def _answers(url: str, process: subprocess.Popen) -> bool:
    assert process.poll() is None, "gunicorn exited"
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.TransportError:
        return False
