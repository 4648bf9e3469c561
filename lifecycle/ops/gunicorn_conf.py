"""gunicorn's settings, from the environment: ``gunicorn -c python:lifecycle.ops.gunicorn_conf lifecycle.wsgi``
(the production ``Procfile``; docs/production.md, "gunicorn"). A bad value stops gunicorn with one sentence.

gunicorn rather than granian or uWSGI: mature, a prefork master that restarts a dead worker and reloads
the code gracefully on SIGHUP, and threaded workers (gthread), which fit Django and psycopg (blocking
calls, one database connection per busy thread). granian (Rust, faster on small responses) was the
alternative; our requests are database-bound, and gunicorn's signals and settings are what operators know.
An asyncio worker (gunicorn's ASGI one, uvicorn) would shrug off any number of slow clients, but Django's
ASGI handler buffers a streamed response whole in memory (the audit trail's export) and runs every sync
view on one thread per process.

These variables are read from the process environment only (Django reads ``.env``, gunicorn does not).
"""

import ipaddress
import os
import shutil
import sys
import tempfile
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from lifecycle.configuration import env, read_choice, read_int

# More workers than this on a large host would only add PostgreSQL connections (one per worker thread,
# beside the django-q2 cluster's and the listeners'); raise WEB_WORKERS by hand when measured.
MAX_DEFAULT_WORKERS = 8


def cores() -> int:
    """The CPUs this process may run on (a container's cpuset, not the host's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def read_bind() -> str:
    """WEB_BIND if set; else all interfaces on PORT when a platform sets it (its router reaches the
    container from outside); else this host only, port 8000, for a TLS proxy beside it (docs/deploy.md)."""
    bind = env.str("WEB_BIND", default="").strip()
    if not bind and env.str("PORT", default="").strip():
        bind = f"0.0.0.0:{read_int('PORT', default=8000, minimum=1, maximum=65535)}"
    bind = bind or "127.0.0.1:8000"
    if not bind.startswith("unix:") and not bind.rpartition(":")[2].isdigit():
        raise ImproperlyConfigured(f"WEB_BIND must be host:port or unix:/path, not {bind!r}.")
    return bind


def read_addresses(name: str) -> str:
    """Comma-separated addresses or networks (203.0.113.7, 10.0.0.0/8), or "*" for any."""
    addresses = [part.strip() for part in env.str(name, default="").split(",") if part.strip()]
    for address in addresses:
        if address == "*":
            continue
        try:
            ipaddress.ip_network(address)
        except ValueError:
            raise ImproperlyConfigured(
                f"{name} must be comma-separated IP addresses or networks (10.0.0.0/8), or *, not {address!r}."
            ) from None
    return ",".join(addresses)


try:
    bind = [read_bind()]
    workers = read_int("WEB_WORKERS", default=min(cores() + 1, MAX_DEFAULT_WORKERS), minimum=1, maximum=64)
    # Each worker runs its requests in threads (gunicorn's gthread worker). A client holds a thread only
    # once it has sent something, and for as long as it takes to send its request: with one thread per
    # worker (sync workers), as many slow clients as workers stopped the site until gunicorn's timeout
    # killed them. With 8, fewer than 8 slow clients cannot hold up a worker; many more are the TLS
    # proxy's to absorb (it buffers whole requests, docs/deploy.md). Each thread busy with a request
    # holds one database connection (none between requests unless CONN_MAX_AGE says so). 1 turns the
    # threads off: sync workers.
    threads = read_int("WEB_THREADS", default=8, minimum=1, maximum=32)
    # A request running longer is killed with its worker (and logged); the admin's slowest pages take
    # well under a second ("Measured").
    timeout = read_int("WEB_TIMEOUT", default=30, minimum=1, maximum=3600)
    # On SIGTERM or SIGHUP, how long running requests may finish before their worker is killed.
    graceful_timeout = read_int("WEB_GRACEFUL_TIMEOUT", default=30, minimum=1, maximum=3600)
    # Behind a proxy that reuses connections; gunicorn's own 2 s cut idle ones before most proxies do.
    keepalive = read_int("WEB_KEEPALIVE", default=5, minimum=0, maximum=300)
    # A worker is replaced after this many requests (0: never), jittered so they are not all replaced at once.
    max_requests = read_int("WEB_MAX_REQUESTS", default=1000, minimum=0)
    max_requests_jitter = read_int("WEB_MAX_REQUESTS_JITTER", default=max_requests // 10, minimum=0)
    # Addresses whose X-Forwarded-Proto (and the like) gunicorn believes. None by default: Django's
    # SECURE_PROXY_SSL_HEADER is the one switch for "behind a TLS proxy", and gunicorn's own default
    # (loopback) would let any local process claim https.
    forwarded_allow_ips = read_addresses("WEB_FORWARDED_ALLOW_IPS")
    # gunicorn's own lines in the product's format (LOG_FORMAT), through the same secret hiding
    # (lifecycle/ops/logs.py): it quotes a refused request line whole, a link's secret included.
    log_format = read_choice("LOG_FORMAT", "PLAIN", ["PLAIN", "JSON"]).lower()
except ImproperlyConfigured as error:
    sys.exit(f"Configuration error: {error}")

worker_class = "gthread" if threads > 1 else "sync"
wsgi_app = "lifecycle.wsgi:application"
proc_name = "lifecycle-web"
# No access log of gunicorn's own: its request line holds the path, and /activate/<secret> and
# /recover/<secret> carry a live token. Django logs one line per request instead (lifecycle.requests:
# method, URL pattern, status, time, request id; JSON with LOG_FORMAT=json; docs/production.md, "Logs").
# gunicorn's own messages (workers started, killed, timed out) go to stderr.
accesslog = None
errorlog = "-"
# Not preloaded: each worker imports Django itself, so SIGHUP reloads new code and no database
# connection is made before the fork.
preload_app = False
# The control socket (gunicorn 25.1+) is one path in $HOME shared by every gunicorn of the user;
# signals do the same (HUP reload, TTIN/TTOU workers, TERM stop).
control_socket_disable = True
# Workers' heartbeat files in memory: on a container's overlay disk, a slow write makes the master
# think a worker hung and kill it (gunicorn's FAQ).
if Path("/dev/shm").is_dir():
    worker_tmp_dir = "/dev/shm"


# prometheus_client's multiprocess mode for the workers (docs/production.md, "Metrics"): each writes
# its counts to files in PROMETHEUS_MULTIPROC_DIR, and whichever answers /metrics adds them all up.
# Unless the variable names a directory, the server makes one of its own, in memory, when it starts
# (not when this file is read: --check-config would leave one behind) and removes it when it stops.
# prometheus_client reads the variable when first imported: here, in the master, before any worker.
OWN_METRICS_DIR = None


def on_starting(server):
    global OWN_METRICS_DIR
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        OWN_METRICS_DIR = tempfile.mkdtemp(
            prefix="lifecycle-metrics-", dir="/dev/shm" if Path("/dev/shm").is_dir() else None
        )
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = OWN_METRICS_DIR
    from lifecycle.ops.metrics import gunicorn as metrics

    metrics.on_starting(server)  # the directory emptied before the first worker starts


def child_exit(server, worker):
    from lifecycle.ops.metrics import gunicorn as metrics

    metrics.child_exit(server, worker)  # an exited worker's live gauges dropped


def on_exit(server):
    if OWN_METRICS_DIR:
        shutil.rmtree(OWN_METRICS_DIR, ignore_errors=True)


logconfig_dict = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"lines": {"()": f"lifecycle.ops.logs.{'JsonLines' if log_format == 'json' else 'PlainLines'}"}},
    "handlers": {
        "error_console": {"class": "logging.StreamHandler", "formatter": "lines", "stream": "ext://sys.stderr"}
    },
    # Django sets the root logger up in each worker (settings.LOGGING); gunicorn's default for it names
    # a handler this configuration replaces.
    "root": {"level": "INFO", "handlers": []},
    "loggers": {
        "gunicorn.error": {
            "level": "INFO",
            "handlers": ["error_console"],
            "propagate": False,
            "qualname": "gunicorn.error",
        },
        "gunicorn.access": {"level": "INFO", "handlers": [], "propagate": False, "qualname": "gunicorn.access"},
    },
}
