"""Settings come from the environment; a bad value stops start-up with one sentence."""

import ipaddress
import subprocess
import sys

import pytest
from django.conf import settings as django_settings
from django.core.exceptions import ImproperlyConfigured
from django.db import connection, connections

from lifecycle import configuration
from tests.support import ROOT, database_url_for_tests, environment, manage

PRODUCTION = {
    "DEBUG": "false",
    "SECRET_KEY": "k3y-" + "x1y2z3" * 10,
    "ALLOWED_HOSTS": "lifecycle.example.com",
    "PUBLIC_BASE_URL": "https://lifecycle.example.com",
    "WEBHOOK_SECRET_KEYS": "k1:" + "A" * 43 + "=",
    "TOKEN_DIGEST_KEYS": "d1:" + "B" * 43 + "=",
    "SIGN_IN_URL": "https://app.example.com/sign-in",
    "SUPPORT_CONTACT": "support@example.com",
}


@pytest.mark.parametrize(
    ("variable", "value", "sentence"),
    [
        ("DEBUG", "maybe", "DEBUG must be true or false (or 1/0, yes/no, on/off), not 'maybe'."),
        ("CONN_MAX_AGE", "soon", "CONN_MAX_AGE must be a whole number, not 'soon'."),
        ("DATABASE_URL", "mysql://u@h/db", "DATABASE_URL must be a postgres:// or postgresql:// URL"),
        ("DATABASE_URL", "postgres://u@h:port/db", "DATABASE_URL is not a valid database URL"),
        ("EMAIL_URL", "pigeon://coop", "EMAIL_URL is not a valid e-mail URL"),
        ("PUBLIC_BASE_URL", "lifecycle.example.com", "PUBLIC_BASE_URL must be an http:// or https:// URL"),
        ("LOG_LEVEL", "LOUD", "LOG_LEVEL must be one of DEBUG, INFO, WARNING, ERROR, not 'LOUD'."),
        ("LOG_FORMAT", "xml", "LOG_FORMAT must be one of PLAIN, JSON, not 'XML'."),
        ("READY_CACHE_SECONDS", "0", "READY_CACHE_SECONDS must be at least 1, not 0."),
        ("TOKEN_DIGEST_KEYS", "d1:" + "A" * 12, "TOKEN_DIGEST_KEYS: key 'd1' must be 32 bytes, not 9;"),
        ("TOKEN_DIGEST_KEYS", "d1", "TOKEN_DIGEST_KEYS: entry 1 must be KEY_ID:BASE64_KEY"),
        # Each of these would otherwise be a traceback, or a setting that silently breaks something.
        (
            "TIME_ZONE",
            "Mars/Olympus",
            "TIME_ZONE must be a time zone name such as Europe/Paris or UTC, not 'Mars/Olympus'.",
        ),
        (
            "PUBLIC_BASE_URL",
            "https://example.com/?next=x",
            "PUBLIC_BASE_URL must be a base URL (scheme, host, perhaps a path) without a query",
        ),
        (
            "PUBLIC_BASE_URL",
            "https://example.com/#top",
            "PUBLIC_BASE_URL must be a base URL (scheme, host, perhaps a path) without a query, fragment",
        ),
        ("PUBLIC_BASE_URL", "https://exa mple.com", "PUBLIC_BASE_URL must be a URL with a host and no spaces"),
        ("PUBLIC_BASE_URL", "https://:8000", "PUBLIC_BASE_URL must be a URL with a host and no spaces"),
        ("AXES_COOLOFF_MINUTES", "99999999999999", "AXES_COOLOFF_MINUTES must be at most 525600, not 99999999999999."),
        ("ENV_FILE", "/nonexistent/.env", "ENV_FILE names /nonexistent/.env, which is not a readable file"),
        ("TRUSTED_PROXY_COUNT", "-1", "TRUSTED_PROXY_COUNT must be at least 0, not -1."),
        ("TRUSTED_PROXY_COUNT", "11", "TRUSTED_PROXY_COUNT must be at most 10, not 11."),
        ("TRUSTED_PROXY_COUNT", "one", "TRUSTED_PROXY_COUNT must be a whole number, not 'one'."),
        (
            "NODE_ALLOWED_NETWORKS",
            "10.0.0.0/8, 10.1.2.3/8",
            "NODE_ALLOWED_NETWORKS must be comma-separated networks such as 10.0.0.0/8 or fd00::/8, not '10.1.2.3/8'"
            " (did you mean 10.0.0.0/8?).",
        ),
        (
            "NODE_ALLOWED_NETWORKS",
            "private",
            "NODE_ALLOWED_NETWORKS must be comma-separated networks such as 10.0.0.0/8 or fd00::/8, not 'private'.",
        ),
        # The database refuses a lease longer than an hour (platform_events/sql/0019_outbox_trail.sql).
        ("WEBHOOKS_LEASE_SECONDS", "7200", "WEBHOOKS_LEASE_SECONDS must be at most 3600, not 7200."),
        (
            "KAFKA_BOOTSTRAP_SERVERS",
            "broker1:9092,kafka://broker2",
            "KAFKA_BOOTSTRAP_SERVERS must be host:port pairs separated by commas (broker1:9092,broker2:9092),"
            " not 'kafka://broker2'.",
        ),
        (
            "KAFKA_TOPIC_PREFIX",
            "events/",
            "KAFKA_TOPIC_PREFIX may hold only letters, digits, '.', '_' and '-', up to 200 characters, not 'events/'.",
        ),
        # A claim that ends while the producer may still send would let a second relay send it too.
        (
            "KAFKA_LEASE_SECONDS",
            "59",
            "KAFKA_LEASE_SECONDS must be at least twice KAFKA_MESSAGE_TIMEOUT_SECONDS (60 s): no message may still"
            " be on its way when its claim ends.",
        ),
        # The database refuses a node's number more than a day ahead whatever the margin: a larger one would lie.
        ("NODE_CLOCK_MARGIN_SECONDS", "86401", "NODE_CLOCK_MARGIN_SECONDS must be at most 86400, not 86401."),
        ("NODE_KEY_CHANGES_PER_HOUR", "0", "NODE_KEY_CHANGES_PER_HOUR must be at least 1, not 0."),
        # The site's root and /admin/ are the staff login: an end user's attempts would lock staff out.
        (
            "SIGN_IN_URL",
            "http://127.0.0.1:8000/",
            "SIGN_IN_URL must be the sign-in page of the product that uses these accounts, not"
            " 'http://127.0.0.1:8000', which leads end users to the staff login of this back-office",
        ),
        (
            "SIGN_IN_URL",
            "http://127.0.0.1:8000/admin/login/",
            "SIGN_IN_URL must be the sign-in page of the product that uses these accounts",
        ),
    ],
)
def test_a_bad_value_stops_start_up_with_one_sentence_naming_it(variable, value, sentence):
    result = manage("check", **{"DEBUG": "true", variable: value})
    assert result.returncode == 1
    assert result.stderr.strip().startswith(f"Configuration error: {sentence}")
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_an_env_file_that_is_not_text_stops_start_up_with_one_sentence(tmp_path):
    """An ENV_FILE that is there but cannot be read as text is one sentence, not a traceback."""
    env_file = tmp_path / "binary.env"
    env_file.write_bytes(b"DEBUG=\xff\xfe\n")
    result = manage("check", ENV_FILE=str(env_file), DEBUG="true")
    assert result.returncode == 1
    assert f"ENV_FILE: {env_file} is not UTF-8 text." in result.stderr
    assert "Traceback" not in result.stderr


def test_a_lease_one_slow_message_could_outlast_stops_start_up():
    """8 × EMAIL_TIMEOUT at least: a run renews its lease when one message (4 × EMAIL_TIMEOUT) could outlast it."""
    refused = manage("check", DEBUG="true", MAILROOM_LEASE_SECONDS="15", EMAIL_TIMEOUT="2")
    assert refused.returncode == 1
    assert "MAILROOM_LEASE_SECONDS must be at least 8 × EMAIL_TIMEOUT (16 s with EMAIL_TIMEOUT 2)" in refused.stderr
    assert manage("check", DEBUG="true", MAILROOM_LEASE_SECONDS="16", EMAIL_TIMEOUT="2").returncode == 0


def test_production_needs_a_secret_key():
    result = manage("check", DEBUG="false")
    assert result.returncode == 1
    assert "SECRET_KEY must be set when DEBUG is off" in result.stderr


def test_a_production_configuration_passes_check_deploy():
    result = manage("check", "--deploy", "--fail-level", "WARNING", **PRODUCTION)
    assert result.returncode == 0, result.stderr
    assert "System check identified no issues" in result.stdout


def test_database_url_is_used_instead_of_the_embedded_server():
    """The test database's URL (a socket directory, percent-encoded, on the embedded server; a TCP
    host on one of your own) reaches the same database, and no embedded server is started."""
    settings = connection.settings_dict
    result = manage(
        "shell",
        "--no-imports",
        "-c",
        "from django.db import connection; print(connection.settings_dict['NAME'], connection.cursor() is not None)",
        DEBUG="true",
        DATABASE_URL=database_url_for_tests(),
        LIFECYCLE_PGDATA="/nonexistent/never-started",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [settings["NAME"], "True"]


@pytest.mark.parametrize(
    ("url", "host", "port"),
    [
        ("postgres://app@%2Fvar%2Frun%2Fpostgresql/lifecycle", "/var/run/postgresql", ""),
        ("postgres://app@db.example.com:5433/lifecycle", "db.example.com", 5433),
    ],
)
def test_a_database_url_names_a_socket_directory_percent_encoded_or_a_host(monkeypatch, url, host, port):
    monkeypatch.setenv("DATABASE_URL", url)
    config = configuration.read_database_url("DATABASE_URL")
    assert (config["HOST"], config["PORT"], config["USER"], config["NAME"]) == (host, port, "app", "lifecycle")


@pytest.mark.django_db(databases=["default", "owner"])
def test_the_tests_run_as_the_runtime_role_on_the_database_the_owner_migrated():
    """On the embedded server or on one DATABASE_URL names: two login roles, one database."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT current_user, current_database(), pg_has_role(current_user, %s, 'MEMBER')",
            [django_settings.DATABASE_RUNTIME_ROLE],
        )
        runtime, database, in_runtime_group = cursor.fetchone()
    with connections["owner"].cursor() as cursor:
        cursor.execute("SELECT current_user, current_database()")
        owner, owners_database = cursor.fetchone()
    assert runtime != owner
    assert database == owners_database
    assert in_runtime_group


@pytest.mark.parametrize(
    ("url_query", "variable", "expected"),
    [("", None, "10 10 True True"), ("", "3", "3 3 True True"), ("?connect_timeout=7", "3", "7 3 True True")],
)
def test_a_connection_attempt_gives_up_after_a_bound_and_a_kept_one_is_checked_before_reuse(
    url_query, variable, expected
):
    """DATABASE_CONNECT_TIMEOUT, unless the URL says otherwise; for both roles. And a kept connection
    (CONN_MAX_AGE) is checked before reuse, so a restart costs no request a 503, by the backend whose
    check costs no round trip on a quiet socket."""
    result = manage(
        "shell",
        "--no-imports",
        "-c",
        "from django.conf import settings;"
        " print(*(settings.DATABASES[a]['OPTIONS']['connect_timeout'] for a in ('default', 'owner')),"
        " *(settings.DATABASES[a]['CONN_HEALTH_CHECKS'] for a in ('default', 'owner')),"
        " *(settings.DATABASES[a]['ENGINE'] for a in ('default', 'owner')))",
        DEBUG="true",
        DATABASE_URL="postgres://nobody@127.0.0.1:9/nothing" + url_query,
        DATABASE_OWNER_URL="postgres://owner@127.0.0.1:9/nothing",
        **({"DATABASE_CONNECT_TIMEOUT": variable} if variable else {}),
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [
        *expected.split(),
        "platform_events.db.postgresql",
        "platform_events.db.postgresql",
    ]


@pytest.mark.parametrize(("value", "expected"), [(None, "False"), ("true", "True")])
def test_server_side_cursors_can_be_turned_off_for_a_transaction_pooler(value, expected):
    """docs/deploy.md, PgBouncer: the web processes behind a pooler in transaction mode set it."""
    result = manage(
        "shell",
        "--no-imports",
        "-c",
        "from django.db import connections; print(connections['default'].settings_dict['DISABLE_SERVER_SIDE_CURSORS'])",
        DEBUG="true",
        **({"DISABLE_SERVER_SIDE_CURSORS": value} if value else {}),
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [expected]


@pytest.mark.parametrize(("raw", "expected"), [("", True), ("1", True), ("Off", False), (" yes ", True)])
def test_read_bool(monkeypatch, raw, expected):
    monkeypatch.setenv("SOME_FLAG", raw)
    assert configuration.read_bool("SOME_FLAG", default=True) is expected


def test_read_networks(monkeypatch):
    """Networks and single addresses, comma-separated; unset or empty is none (public addresses only)."""
    monkeypatch.setenv("NODE_ALLOWED_NETWORKS", " 10.0.0.0/8, fd00::/8 ,192.0.2.7,")
    assert configuration.read_networks("NODE_ALLOWED_NETWORKS") == tuple(
        map(ipaddress.ip_network, ["10.0.0.0/8", "fd00::/8", "192.0.2.7/32"])
    )
    monkeypatch.setenv("NODE_ALLOWED_NETWORKS", "")
    assert configuration.read_networks("NODE_ALLOWED_NETWORKS") == ()
    monkeypatch.delenv("NODE_ALLOWED_NETWORKS")
    assert configuration.read_networks("NODE_ALLOWED_NETWORKS") == ()
    assert django_settings.NODE_ALLOWED_NETWORKS == ()  # the tests allow loopback nodes only where they need them


def test_read_int_refuses_a_value_below_its_minimum(monkeypatch):
    monkeypatch.setenv("Q_WORKERS", "0")
    with pytest.raises(ImproperlyConfigured, match="Q_WORKERS must be at least 1, not 0."):
        configuration.read_int("Q_WORKERS", default=2, minimum=1)


@pytest.mark.parametrize(
    ("variable", "value", "sentence"),
    [
        ("ALLOWED_HOSTS", "", "ALLOWED_HOSTS must name the site's host names (comma-separated) when DEBUG is off"),
        ("ALLOWED_HOSTS", " , ", "ALLOWED_HOSTS must name the site's host names (comma-separated) when DEBUG is off"),
        ("SECRET_KEY", "short-key", "SECRET_KEY must be at least 50 characters with at least 5 different ones"),
        ("SECRET_KEY", "a" * 60, "SECRET_KEY must be at least 50 characters with at least 5 different ones"),
        # Every e-mail, with its working link and code, in a file on the server that nobody receives.
        ("EMAIL_URL", "filemail:///var/tmp/mail", "EMAIL_URL filemail:// keeps e-mails in files, for development only"),
    ],
)
def test_production_refuses_what_would_fail_quietly(variable, value, sentence):
    """An empty ALLOWED_HOSTS would answer every request with 400, and a short key would be accepted:
    both stop start-up instead."""
    result = manage("check", **{**PRODUCTION, variable: value})
    assert result.returncode == 1
    assert result.stderr.strip().startswith(f"Configuration error: {sentence}")


@pytest.mark.parametrize("module", ["lifecycle.wsgi", "lifecycle.asgi"])
def test_the_web_application_with_a_bad_setting_stops_with_one_sentence(module):
    """What gunicorn, uwsgi or uvicorn import: a bad setting is one sentence there too, as at manage.py."""
    result = subprocess.run(
        [sys.executable, "-c", f"import {module}"],
        cwd=ROOT,
        env=environment(TIME_ZONE="Mars/Olympus"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert result.stderr.strip() == (
        "Configuration error: TIME_ZONE must be a time zone name such as Europe/Paris or UTC, not 'Mars/Olympus'."
    )


@pytest.mark.parametrize(
    ("command", "url", "reason"),
    [
        ("migrate", "postgres://nobody@127.0.0.1:1/nothing", "connection failed"),  # nothing listens on port 1
        # A mistyped host name; .invalid never resolves (RFC 2606).
        ("drain_mailroom", "postgres://nobody@no-such-host.invalid/nothing", "failed to resolve host"),
    ],
)
def test_an_unreachable_database_is_one_sentence_at_any_command(command, url, reason):
    """One sentence, not a hundred lines of traceback."""
    result = manage(command, DEBUG="true", DATABASE_URL=url)
    assert result.returncode == 1
    assert result.stderr.startswith(f"Database unreachable (DATABASE_URL, or the embedded server): {reason}")
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.django_db
def test_a_server_older_than_django_supports_is_one_sentence():
    """Lifecycle runs on PostgreSQL 14 or newer (Django 5.2's minimum); an older server is refused on
    connecting. Here the minimum is raised past the test server's version to see the refusal."""
    patch = (
        "import sys; from django.db.backends.postgresql.features import DatabaseFeatures as F;"
        " F.minimum_database_version = (99,); sys.argv = ['manage.py', 'showmigrations']; import manage; manage.main()"
    )
    result = subprocess.run(
        [sys.executable, "-c", patch],
        cwd=ROOT,
        env=environment(DATABASE_URL=database_url_for_tests()),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert result.stderr.startswith("Database not supported (DATABASE_URL): PostgreSQL 99 or later is required (found ")
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.django_db
def test_a_query_that_fails_once_connected_keeps_its_traceback():
    """Only an unreachable database is summed up in one sentence; a failed query (it has a SQLSTATE) is a bug to read."""
    result = manage(
        "shell",
        "--no-imports",
        "-c",
        "from django.db import connection; connection.cursor().execute('SET statement_timeout = 1; SELECT pg_sleep(5)')",
        DEBUG="true",
        DATABASE_URL=database_url_for_tests(),
    )
    assert result.returncode == 1
    assert "Traceback" in result.stderr
    assert "canceling statement due to statement timeout" in result.stderr
    assert "Database unreachable" not in result.stderr


def test_check_deploy_warns_when_webhook_secrets_hang_on_secret_key():
    result = manage("check", "--deploy", "--fail-level", "WARNING", **{**PRODUCTION, "WEBHOOK_SECRET_KEYS": ""})
    assert result.returncode != 0 and "platform_events.W001" in result.stderr + result.stdout


def test_check_deploy_refuses_token_codes_digested_under_secret_key():
    result = manage("check", "--deploy", "--fail-level", "ERROR", **{**PRODUCTION, "TOKEN_DIGEST_KEYS": ""})
    assert result.returncode != 0 and "tokens.E001" in result.stderr + result.stdout


@pytest.mark.parametrize(
    ("env", "backend"),
    [
        ({"DEBUG": "true"}, "lifecycle.dev_inbox.backend.InboxBackend"),
        ({"DEBUG": "true", "EMAIL_URL": "smtp://127.0.0.1:2525"}, "django.core.mail.backends.smtp.EmailBackend"),
        ({**PRODUCTION}, "django.core.mail.backends.console.EmailBackend"),
    ],
)
def test_e_mails_are_kept_for_the_development_inbox_only_with_debug_on_and_no_email_url(env, backend):
    result = manage(
        "shell", "--no-imports", "-c", "from django.conf import settings; print(settings.EMAIL_BACKEND)", **env
    )
    assert result.stdout.strip() == backend, result.stderr


def test_check_deploy_warns_when_the_public_pages_have_no_support_contact():
    """Unset, the pages end with support@localhost."""
    result = manage("check", "--deploy", "--fail-level", "WARNING", **{**PRODUCTION, "SUPPORT_CONTACT": ""})
    assert result.returncode != 0 and "tokens.W002" in result.stderr + result.stdout


def test_check_deploy_is_clean_without_a_sign_in_page():
    """Unset, the pages lead to the account pages' own sign-in."""
    result = manage("check", "--deploy", "--fail-level", "WARNING", **{**PRODUCTION, "SIGN_IN_URL": ""})
    assert result.returncode == 0, result.stdout + result.stderr


def test_check_deploy_warns_about_the_development_support_contact():
    result = manage(
        "check", "--deploy", "--fail-level", "WARNING", **{**PRODUCTION, "SUPPORT_CONTACT": "support@localhost"}
    )
    assert result.returncode != 0 and "tokens.W002" in result.stderr + result.stdout


KAFKA_SECURITY_VARIABLES = [
    "KAFKA_SECURITY_PROTOCOL",
    "KAFKA_SASL_MECHANISM",
    "KAFKA_SASL_USERNAME",
    "KAFKA_SASL_PASSWORD",
    "KAFKA_SSL_CA_LOCATION",
    "KAFKA_SSL_CERTIFICATE_LOCATION",
    "KAFKA_SSL_KEY_LOCATION",
    "KAFKA_SSL_KEY_PASSWORD",
]


@pytest.fixture
def kafka_env(monkeypatch, tmp_path):
    """A clean slate of the Kafka TLS/SASL variables, and three readable files to name."""
    for name in KAFKA_SECURITY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    for name in ("ca.pem", "client.pem", "client.key"):
        (tmp_path / name).write_text("-----BEGIN CERTIFICATE-----\n")

    def set_env(**values):
        for name, value in values.items():
            monkeypatch.setenv(name, value.replace("{dir}", str(tmp_path)))
        return configuration.read_kafka_security()

    return set_env


def test_kafka_security_defaults_to_plaintext_with_nothing_else(kafka_env):
    assert kafka_env() == {"security.protocol": "plaintext"}


def test_kafka_sasl_over_tls_with_a_ca_and_a_client_certificate(kafka_env):
    config = kafka_env(
        KAFKA_SECURITY_PROTOCOL="sasl_ssl",
        KAFKA_SASL_USERNAME="relay",
        KAFKA_SASL_PASSWORD="s3cret pass",
        KAFKA_SSL_CA_LOCATION="{dir}/ca.pem",
        KAFKA_SSL_CERTIFICATE_LOCATION="{dir}/client.pem",
        KAFKA_SSL_KEY_LOCATION="{dir}/client.key",
        KAFKA_SSL_KEY_PASSWORD="k",
    )
    assert config["security.protocol"] == "sasl_ssl"
    assert (config["sasl.mechanism"], config["sasl.username"], config["sasl.password"]) == (
        "SCRAM-SHA-512",  # not PLAIN unless asked: SCRAM never sends the password itself
        "relay",
        "s3cret pass",
    )
    assert config["ssl.ca.location"].endswith("/ca.pem") and config["ssl.key.password"] == "k"


@pytest.mark.parametrize(
    ("values", "sentence"),
    [
        ({"KAFKA_SECURITY_PROTOCOL": "tls"}, "KAFKA_SECURITY_PROTOCOL must be one of PLAINTEXT, SSL, SASL_PLAINTEXT,"),
        (
            {"KAFKA_SECURITY_PROTOCOL": "SASL_SSL", "KAFKA_SASL_USERNAME": "relay"},
            "KAFKA_SECURITY_PROTOCOL=SASL_SSL needs KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD.",
        ),
        (
            {
                "KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
                "KAFKA_SASL_USERNAME": "u",
                "KAFKA_SASL_PASSWORD": "p",
                "KAFKA_SASL_MECHANISM": "GSSAPI",
            },
            "KAFKA_SASL_MECHANISM must be one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, not 'GSSAPI'.",
        ),
        (
            {"KAFKA_SASL_PASSWORD": "p"},
            "KAFKA_SASL_* is set but KAFKA_SECURITY_PROTOCOL is PLAINTEXT: use SASL_SSL (or SASL_PLAINTEXT) to sign in.",
        ),
        (
            {"KAFKA_SSL_CA_LOCATION": "{dir}/ca.pem"},
            "KAFKA_SSL_CA_LOCATION is set but KAFKA_SECURITY_PROTOCOL is PLAINTEXT: use SSL or SASL_SSL.",
        ),
        (
            {"KAFKA_SECURITY_PROTOCOL": "SSL", "KAFKA_SSL_CA_LOCATION": "{dir}/missing.pem"},
            "KAFKA_SSL_CA_LOCATION names no readable file: ",
        ),
        (
            {"KAFKA_SECURITY_PROTOCOL": "SSL", "KAFKA_SSL_CERTIFICATE_LOCATION": "{dir}/client.pem"},
            "KAFKA_SSL_CERTIFICATE_LOCATION and KAFKA_SSL_KEY_LOCATION go together",
        ),
        (
            {"KAFKA_SECURITY_PROTOCOL": "SSL", "KAFKA_SSL_KEY_PASSWORD": "k"},
            "KAFKA_SSL_KEY_PASSWORD is set but KAFKA_SSL_KEY_LOCATION is not.",
        ),
    ],
)
def test_a_kafka_security_setting_that_does_not_fit_is_one_sentence(kafka_env, values, sentence):
    with pytest.raises(ImproperlyConfigured) as refusal:
        kafka_env(**values)
    assert str(refusal.value).startswith(sentence.replace("{dir}", ""))


def test_a_kafka_password_is_refused_without_being_repeated():
    """At start-up, as an operator sees it: one sentence, and not the password."""
    result = manage("check", DEBUG="true", KAFKA_SASL_PASSWORD="hunter2-kafka")
    assert result.returncode == 1
    assert result.stderr.strip().startswith("Configuration error: KAFKA_SASL_* is set but KAFKA_SECURITY_PROTOCOL")
    assert "hunter2-kafka" not in result.stderr + result.stdout


# The brand (SITE_NAME, SITE_LOGO_URL, SITE_ACCENT_COLOUR)


@pytest.mark.parametrize(
    ("value", "sentence"),
    [
        ("blue", "SITE_ACCENT_COLOUR must be a colour written #rrggbb, such as #2f5d8a, not 'blue'."),
        ("#2f5d8", "SITE_ACCENT_COLOUR must be a colour written #rrggbb"),
        ("#ffd700", "SITE_ACCENT_COLOUR #ffd700 is too light: white on it has a contrast ratio of 1.40"),
        ("#808080", "SITE_ACCENT_COLOUR #808080 is too light"),
    ],
)
def test_an_accent_colour_that_cannot_be_read_is_refused_in_one_sentence(monkeypatch, value, sentence):
    monkeypatch.setenv("SITE_ACCENT_COLOUR", value)
    with pytest.raises(ImproperlyConfigured) as refusal:
        configuration.read_accent_colour("SITE_ACCENT_COLOUR", default="#2f5d8a")
    assert str(refusal.value).startswith(sentence)


@pytest.mark.parametrize(("value", "kept"), [("#2F5D8A", "#2f5d8a"), ("", "#2f5d8a"), ("#000000", "#000000")])
def test_an_accent_colour_dark_enough_is_kept_in_lower_case(monkeypatch, value, kept):
    monkeypatch.setenv("SITE_ACCENT_COLOUR", value)
    assert configuration.read_accent_colour("SITE_ACCENT_COLOUR", default="#2f5d8a") == kept


def test_the_contrast_ratio_is_wcags():
    assert configuration.contrast_with_white("#000000") == pytest.approx(21.0)
    assert configuration.contrast_with_white("#ffffff") == pytest.approx(1.0)
    assert configuration.contrast_with_white("#767676") == pytest.approx(4.54, abs=0.01)


def test_a_logo_on_another_site_is_allowed_by_the_content_security_policy():
    result = manage(
        "shell",
        "--no-imports",
        "-c",
        "from django.conf import settings; print(settings.CONTENT_SECURITY_POLICY['DIRECTIVES']['img-src'])",
        SITE_LOGO_URL="https://cdn.example.org/logo.png",
        DEBUG="true",
    )
    assert "https://cdn.example.org/logo.png" in result.stdout, result.stderr
