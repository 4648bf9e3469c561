"""/metrics (lifecycle/ops/metrics/): only with METRICS_TOKEN, never for a session; an exposition that
parses, whose figures, read from PostgreSQL at each scrape, move as the product does."""

import os
import subprocess
import sys
import textwrap
from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.contrib.auth.hashers import make_password
from django.db import connection
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from accounts.models import Account
from accounts.services import account_set_password
from lifecycle.demo.factories import AccountFactory
from lifecycle.ops.metrics import figures, gunicorn
from platform_events.outbox.consumers import consume
from platform_events.webhooks.endpoints import endpoint_create, endpoint_pause
from tests.lifecycle.test_settings import PRODUCTION
from tests.smtp import free_port
from tests.support import ROOT, connect_as_owner, database_url_for_tests, manage, rewriting_history
from tokens.mailroom.drain import drain

pytestmark = pytest.mark.django_db
TOKEN = "metrics-token-" + "a1b2c3d4" * 4


@pytest.fixture
def token(settings):
    settings.METRICS_TOKEN = TOKEN
    return TOKEN


def scrape(**headers) -> dict[tuple, float]:
    """Every sample of one scrape, by (name, labels)."""
    response = Client().get("/metrics", headers={"Authorization": f"Bearer {TOKEN}", **headers})
    assert response.status_code == 200
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.content.decode())
        for sample in family.samples
    }


def figure(name: str, **labels) -> float:
    return scrape()[(name, tuple(sorted(labels.items())))]


class TestAccess:
    def test_without_a_token_set_metrics_does_not_exist(self, settings, admin_client):
        """Not even for a superuser, nor with a bearer header."""
        settings.METRICS_TOKEN = ""
        assert Client().get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 404
        assert admin_client.get("/metrics").status_code == 404

    def test_no_bearer_token_is_asked_for_one(self, token):
        response = Client().get("/metrics")
        assert response.status_code == 401
        assert response["WWW-Authenticate"] == 'Bearer realm="metrics"'

    def test_a_signed_in_superuser_without_the_token_is_refused(self, token, admin_client):
        assert admin_client.get("/metrics").status_code == 401

    @pytest.mark.parametrize("header", [f"Bearer {TOKEN}x", f"Bearer {TOKEN[:-1]}", "Bearer x", f"Basic {TOKEN}"])
    def test_a_wrong_token_is_refused(self, token, header):
        assert Client().get("/metrics", headers={"Authorization": header}).status_code in (401, 403)

    def test_the_right_token_gets_the_text_exposition(self, token):
        response = Client().get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
        assert response.status_code == 200
        assert response["Content-Type"].startswith("text/plain; version=0.0.4")
        assert "no-cache" in response["Cache-Control"]
        names = {family.name for family in text_string_to_metric_families(response.content.decode())}
        assert {"lifecycle_mail_due_emails", "lifecycle_accounts", "lifecycle_metrics_figures_up"} <= names
        assert figure("lifecycle_metrics_figures_up", figures="mail") == 1

    def test_a_plain_http_scrape_is_answered_in_production_and_nothing_else_is(self):
        """DEBUG off (SECURE_SSL_REDIRECT on): /metrics answers over http; every other page still redirects."""
        script = textwrap.dedent(
            f"""
            from django.test import Client
            client = Client(HTTP_HOST="lifecycle.example.com")
            metrics = client.get("/metrics", headers={{"Authorization": "Bearer {TOKEN}"}})
            print(metrics.status_code, client.get("/admin/login/").status_code, client.get("/metricsx").status_code)
            """
        )
        result = manage(
            "shell",
            "--no-imports",
            "-c",
            script,
            **PRODUCTION,
            METRICS_TOKEN=TOKEN,
            DATABASE_URL=database_url_for_tests(),
        )
        assert result.stdout.split() == ["200", "301", "301"], result.stderr


class TestMailFigures:
    def test_provisioning_makes_mail_due_and_a_drain_sends_it(self, token, smtp_server):
        before = scrape()
        AccountFactory.create_batch(2)
        assert figure("lifecycle_mail_due_emails") == before[("lifecycle_mail_due_emails", ())] + 2
        assert figure("lifecycle_mail_oldest_due_age_seconds") >= 0
        drain()
        after = scrape()
        assert after[("lifecycle_mail_due_emails", ())] == 0
        assert after[("lifecycle_mail_runs_24h", (("outcome", "ok"),))] == 1
        assert after[("lifecycle_mail_sent_emails_24h", ())] == 2
        assert len(smtp_server.messages) == 2

    def test_a_drain_run_that_fails_counts_as_an_error(self, token, settings):
        settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
        settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", free_port()  # nobody listens
        AccountFactory()
        assert drain().error.startswith("SMTP server unreachable")
        runs = {labels[0][1]: value for (name, labels), value in scrape().items() if name == "lifecycle_mail_runs_24h"}
        assert runs == {"ok": 0, "failed_mail": 0, "error": 1, "running": 0}
        assert figure("lifecycle_mail_retrying_emails") == 1

    def test_mail_refused_for_good_is_dead(self, token, smtp_server):
        smtp_server.handler.refuse_recipients = "550 5.1.1 No such mailbox"
        AccountFactory()
        drain()
        assert figure("lifecycle_mail_dead_emails") == 1
        assert figure("lifecycle_mail_runs_24h", outcome="failed_mail") == 1


class TestOtherFigures:
    def test_accounts_by_status_are_counted(self, token):
        AccountFactory.create_batch(2)
        AccountFactory(active=True)
        AccountFactory(suspended=True)
        AccountFactory(deprovisioned=True)
        AccountFactory(erased=True)
        samples = scrape()
        counted = {labels[0][1]: value for (name, labels), value in samples.items() if name == "lifecycle_accounts"}
        assert counted == {"provisioned": 2, "active": 1, "suspended": 1, "deprovisioned": 1, "erased": 1}
        assert samples[("lifecycle_accounts_estimated", ())] == 0

    def test_a_rate_limited_request_counts_as_a_refusal(self, token, client):
        key = ("lifecycle_rate_limit_refusals_total", (("limit", "mail-per-identifier"),))
        before = scrape().get(key, 0)
        statuses = [client.post(reverse("resend"), {"identifier": "nobody"}).status_code for _ in range(5)]
        assert statuses == [200] * 3 + [429] * 2
        assert scrape()[key] == before + 2

    def test_locked_out_staff_logins_are_counted_per_login_and_address(self, token, settings):
        """One lock-out per login and address; a login one failure short, or past its cool-off, is not locked out."""
        for login, address, failures in [
            ("support9", "192.0.2.7", settings.AXES_FAILURE_LIMIT),
            ("support9", "192.0.2.8", settings.AXES_FAILURE_LIMIT),
            ("support8", "192.0.2.9", settings.AXES_FAILURE_LIMIT - 1),
            ("support7", "192.0.2.10", settings.AXES_FAILURE_LIMIT),
        ]:
            for _ in range(failures):
                Client().post(reverse("admin:login"), {"username": login, "password": "wrong"}, REMOTE_ADDR=address)
        AccessAttempt.objects.filter(username="support7").update(
            attempt_time=timezone.now() - settings.AXES_COOLOFF_TIME - timedelta(seconds=1)
        )
        assert figure("lifecycle_staff_lockouts") == 2

    def test_webhook_deliveries_wait_for_their_endpoint(self, token):
        endpoint, _ = endpoint_create(
            url="https://hooks.example.com/lifecycle", events=["account.created"], owner="billing", actor=None
        )
        endpoint_pause(endpoint, actor=None)
        AccountFactory.create_batch(3)
        assert figure("lifecycle_webhook_deliveries", status="pending") == 3
        assert figure("lifecycle_webhook_deliveries", status="retrying") == 0
        assert figure("lifecycle_webhook_endpoints", status="paused") == 1
        assert figure("lifecycle_webhook_endpoints", status="active") == 0

    def test_an_outbox_consumer_lags_until_it_consumes(self, token):
        from accounts.nodes.consumer import ASSIGNMENTS

        account = AccountFactory(active=True)
        AccountFactory()  # account.created: not one of the consumer's types
        # What earlier tests of the run left unconsumed (the suite's tables are emptied, not the log of it).
        before = figure("lifecycle_outbox_consumer_lag_events", consumer=ASSIGNMENTS.group)
        account_set_password(
            account=Account.objects.get(pk=account.pk), password_hash=make_password("x" * 12), actor=None
        )
        assert figure("lifecycle_outbox_consumer_lag_events", consumer=ASSIGNMENTS.group) == before + 1
        assert figure("lifecycle_outbox_consumer_lag_seconds", consumer=ASSIGNMENTS.group) >= 0
        consume(ASSIGNMENTS)
        assert figure("lifecycle_outbox_consumer_lag_events", consumer=ASSIGNMENTS.group) == 0
        assert figure("lifecycle_outbox_consumer_lag_seconds", consumer=ASSIGNMENTS.group) == 0

    def test_request_latency_is_kept_per_view(self, token, client):
        key = ("django_http_requests_latency_seconds_by_view_method_count", (("method", "GET"), ("view", "sign-up")))
        before = scrape().get(key, 0)
        client.get(reverse("sign-up"))
        assert scrape()[key] == before + 1


def kafka_figures() -> dict[str, float]:
    return {name: value for (name, _), value in scrape().items() if name.startswith("lifecycle_kafka_")}


@pytest.mark.django_db(transaction=True)
class TestKafkaFigures:
    """The relay's gauges: what waits, the oldest one's age, what went out in the last 5 minutes, and
    whether publication is on. An alert only: a broker outage is never a readiness failure
    (tests/lifecycle/ops/test_health.py)."""

    @pytest.fixture
    def kafka(self, settings, kafka_broker):
        settings.KAFKA_BOOTSTRAP_SERVERS = kafka_broker.bootstrap
        settings.KAFKA_TOPIC_PARTITIONS = 1
        settings.KAFKA_MESSAGE_TIMEOUT_SECONDS = 2
        return kafka_broker

    def test_with_publication_off_every_gauge_is_0(self, token):
        AccountFactory.create_batch(2)  # events, but no publication rows: nothing waits on a relay
        assert kafka_figures() == {
            "lifecycle_kafka_publication_on": 0,
            "lifecycle_kafka_unpublished_events": 0,
            "lifecycle_kafka_oldest_unpublished_age_seconds": 0,
            "lifecycle_kafka_published_events_5m": 0,
        }
        assert figure("lifecycle_metrics_figures_up", figures="kafka") == 1

    def test_events_wait_through_an_outage_aging_then_go_out_and_count_as_published(self, token, kafka):
        from platform_events.kafka import relay
        from tests.platform_events.outbox.test_runtime_rules import age_events

        relay.start_stream()
        AccountFactory.create_batch(2)
        age_events(1)  # written a day ago
        AccountFactory()  # just now: the oldest is the one with the lowest seq, not the newest
        kafka.stop()
        assert relay.publish().outage
        during = kafka_figures()
        assert during["lifecycle_kafka_publication_on"] == 1
        assert during["lifecycle_kafka_unpublished_events"] == 3
        assert 86_400 <= during["lifecycle_kafka_oldest_unpublished_age_seconds"] < 86_400 + 600
        assert during["lifecycle_kafka_published_events_5m"] == 0

        kafka.start()
        assert relay.publish().published == 3
        after = kafka_figures()
        assert after["lifecycle_kafka_unpublished_events"] == 0
        assert after["lifecycle_kafka_oldest_unpublished_age_seconds"] == 0
        assert after["lifecycle_kafka_published_events_5m"] == 3

    def test_only_the_last_5_minutes_publications_count(self, token, kafka):
        from platform_events.kafka import relay

        relay.start_stream()
        AccountFactory.create_batch(2)
        assert relay.publish().published == 2
        with connect_as_owner(autocommit=True) as owner, owner.transaction():
            rewriting_history(owner)
            owner.execute(
                "UPDATE event_publications SET published_at = now() - interval '6 minutes'"
                " WHERE event_seq = (SELECT min(event_seq) FROM event_publications)"
            )
        assert figure("lifecycle_kafka_published_events_5m") == 1

    def test_switched_off_the_gauges_go_back_to_0(self, token, kafka):
        from platform_events.kafka import relay

        relay.start_stream()
        AccountFactory.create_batch(2)
        assert relay.publish(max_batches=1).published == 2
        AccountFactory()
        assert figure("lifecycle_kafka_unpublished_events") == 1
        with connection.cursor() as cursor:
            cursor.execute("SELECT event_stream_stop()")
        assert set(kafka_figures().values()) == {0}


class TestSlowQueries:
    def test_a_query_past_the_statement_timeout_leaves_out_its_group_only(self, token, monkeypatch):
        def slow():
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_sleep(5)")
            return []

        monkeypatch.setattr(figures, "STATEMENT_TIMEOUT", "200ms")
        monkeypatch.setattr(figures, "FIGURES", {"slow": slow, **figures.FIGURES})  # first: the others come after
        samples = scrape()
        assert samples[("lifecycle_metrics_figures_up", (("figures", "slow"),))] == 0
        assert samples[("lifecycle_metrics_figures_up", (("figures", "mail"),))] == 1
        assert ("lifecycle_mail_due_emails", ()) in samples


class TestMultiprocess:
    def test_a_scrape_adds_up_every_process_and_a_restart_starts_from_nothing(self, token, tmp_path, monkeypatch):
        """gunicorn's workers each write their counts to PROMETHEUS_MULTIPROC_DIR; any one answers for all."""
        refuse_once = textwrap.dedent(
            """
            from platform_events.limits.counters import REFUSALS
            REFUSALS.labels(limit="api-per-client").inc()
            """
        )
        environment = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
        for _ in range(2):  # two workers
            subprocess.run([sys.executable, "-c", refuse_once], cwd=ROOT, env=environment, check=True)
        monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
        assert figure("lifecycle_rate_limit_refusals_total", limit="api-per-client") == 2
        assert figure("lifecycle_metrics_figures_up", figures="accounts") == 1  # the database's figures too
        gunicorn.on_starting(server=None)
        assert list(tmp_path.iterdir()) == []
        assert ("lifecycle_rate_limit_refusals_total", (("limit", "api-per-client"),)) not in scrape()

    def test_start_up_removes_only_prometheus_clients_files(self, tmp_path, monkeypatch):
        """A directory named by mistake (/tmp, a home) loses nothing but the counts' files."""
        monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
        (tmp_path / "counter_4242.db").touch()
        (tmp_path / "notes.txt").write_text("keep me")
        (tmp_path / "a directory").mkdir()
        gunicorn.on_starting(server=None)
        assert sorted(entry.name for entry in tmp_path.iterdir()) == ["a directory", "notes.txt"]

    def test_a_dead_workers_live_gauges_go(self, tmp_path, monkeypatch):
        monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
        (tmp_path / "gauge_livesum_4242.db").touch()
        (tmp_path / "counter_4242.db").touch()

        class Worker:
            pid = 4242

        gunicorn.child_exit(server=None, worker=Worker())
        assert [entry.name for entry in tmp_path.iterdir()] == ["counter_4242.db"]
