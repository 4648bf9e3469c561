"""The production web server (docs/production.md): gunicorn with
lifecycle/ops/gunicorn_conf.py, DEBUG off, the static files collected and served by WhiteNoise, behind a TLS
proxy that says so in X-Forwarded-Proto (SECURE_PROXY_SSL_HEADER), on the test database."""

import json
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from honcho.environ import parse_procfile
from prometheus_client.parser import text_string_to_metric_families

from tests.support import ROOT, database_url_for_tests, environment, free_port, manage, wait_for

PRODUCTION = {
    "DEBUG": "false",
    "SECRET_KEY": "k3y-" + "x1y2z3" * 10,
    "ALLOWED_HOSTS": "127.0.0.1",
    "PUBLIC_BASE_URL": "https://127.0.0.1",
    "SECURE_PROXY_SSL_HEADER": "true",
}
# What the TLS proxy in front adds to every request it passes on.
BEHIND_TLS = {"X-Forwarded-Proto": "https"}
METRICS_TOKEN = "m" * 8 + "etrics-token-for-the-production-server-test"
GUNICORN = [sys.executable, "-m", "gunicorn", "-c", "python:lifecycle.ops.gunicorn_conf", "lifecycle.wsgi"]

# Every gunicorn this module starts makes a metrics directory in /dev/shm: under pytest-xdist the module
# runs in one worker, so that a test listing /dev/shm sees only its own (and the module's server starts once).
pytestmark = pytest.mark.xdist_group("gunicorn")


@dataclass
class Server:
    url: str
    log: Path


@pytest.fixture(scope="module")
def production(django_db_setup, tmp_path_factory):
    """gunicorn (two workers, JSON logs) on a free port, after collectstatic into a STATIC_ROOT of its
    own. No PROMETHEUS_MULTIPROC_DIR: the server makes its own (lifecycle/ops/gunicorn_conf.py)."""
    workdir = tmp_path_factory.mktemp("production-server")
    env = {
        **PRODUCTION,
        "DATABASE_URL": database_url_for_tests(),
        "STATIC_ROOT": str(workdir / "static"),
        "METRICS_TOKEN": METRICS_TOKEN,
        "LOG_FORMAT": "json",
    }
    collected = manage("collectstatic", "--no-input", **env)
    assert collected.returncode == 0, collected.stderr
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log_path = workdir / "gunicorn.log"
    with open(log_path, "w") as log:  # a file, not a pipe nobody reads: the access log would fill it and block
        process = subprocess.Popen(
            GUNICORN,
            cwd=ROOT,
            env=environment(**env, WEB_BIND=f"127.0.0.1:{port}", WEB_WORKERS="2"),
            stdout=log,
            stderr=subprocess.STDOUT,
        )

    def answers() -> bool:
        if process.poll() is not None:
            raise AssertionError(f"gunicorn exited: {log_path.read_text()}")
        try:
            return httpx.get(f"{url}/admin/login/", headers=BEHIND_TLS, timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    try:
        wait_for(answers, timeout=60, message="gunicorn to answer")
        yield Server(url, log_path)
    finally:
        process.send_signal(signal.SIGTERM)  # gunicorn's graceful stop
        try:
            process.wait(timeout=40)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


@pytest.fixture(scope="module")
def server(production) -> str:
    return production.url


def get(url: str, **headers) -> httpx.Response:
    return httpx.get(url, headers={**BEHIND_TLS, **headers}, timeout=10)


def test_the_admin_login_and_a_public_page_answer(server):
    login = get(f"{server}/admin/login/")
    assert login.status_code == 200
    assert 'name="username"' in login.text and 'name="password"' in login.text
    recover = get(f"{server}/recover/")
    assert recover.status_code == 200
    assert "Need help? Contact" in recover.text


def test_plain_http_is_sent_to_https(server):
    """A request the proxy did not mark as TLS is redirected (SECURE_SSL_REDIRECT, on when DEBUG is off)."""
    plain = httpx.get(f"{server}/recover/", timeout=10)
    assert plain.status_code == 301
    assert plain.headers["Location"] == f"https://{server.removeprefix('http://')}/recover/"


@pytest.mark.parametrize(
    ("page", "stylesheet"),
    [
        ("/admin/login/", r"/static/admin/css/base\.[0-9a-f]{12}\.css"),
        ("/recover/", r"/static/lifecycle/pages\.[0-9a-f]{12}\.css"),
    ],
)
def test_the_pages_stylesheet_is_served_under_its_hashed_name_cached_for_a_year(server, page, stylesheet):
    """The page names the file by collectstatic's hashed name; WhiteNoise serves it, compressed, as immutable."""
    path = re.search(stylesheet, get(f"{server}{page}").text)
    assert path, f"no hashed stylesheet named on {page}"
    css = get(f"{server}{path.group()}", **{"Accept-Encoding": "gzip"})
    assert css.status_code == 200
    assert css.headers["Content-Type"].startswith("text/css")
    assert css.headers["Content-Encoding"] == "gzip"
    max_age = int(re.search(r"max-age=(\d+)", css.headers["Cache-Control"]).group(1))
    assert max_age >= 365 * 24 * 3600 and "immutable" in css.headers["Cache-Control"]


def test_pages_carry_the_security_headers(server):
    headers = get(f"{server}/admin/login/").headers
    assert headers["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains; preload"
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["Referrer-Policy"] == "same-origin"
    assert headers["X-Frame-Options"] == "DENY"
    policy = dict(directive.strip().split(" ", 1) for directive in headers["Content-Security-Policy"].split(";"))
    # Scripts from our files, or inline with the page's nonce; never any inline script, nor eval.
    assert policy["script-src"].split(" ")[0] == "'self'"
    assert "'unsafe-inline'" not in policy["script-src"] and "'unsafe-eval'" not in policy["script-src"]
    assert policy["frame-ancestors"] == "'none'"
    assert policy["object-src"] == "'none'"


def test_the_server_header_names_no_version(server):
    assert get(f"{server}/recover/").headers["Server"] == "gunicorn"


def test_by_default_gunicorn_believes_no_proxys_forwarded_headers():
    """forwarded_allow_ips is empty (gunicorn's own default trusts loopback): Django's
    SECURE_PROXY_SSL_HEADER alone decides whether a request came over TLS."""
    config = printed_config()
    assert re.search(r"^forwarded_allow_ips\s+= \[\]$", config, re.MULTILINE), config


@pytest.mark.parametrize(
    ("variable", "value", "sentence"),
    [
        ("WEB_WORKERS", "lots", "WEB_WORKERS must be a whole number, not 'lots'."),
        ("WEB_TIMEOUT", "0", "WEB_TIMEOUT must be at least 1, not 0."),
        ("WEB_BIND", "localhost", "WEB_BIND must be host:port or unix:/path, not 'localhost'."),
        ("WEB_FORWARDED_ALLOW_IPS", "10.0.0.1/8", "WEB_FORWARDED_ALLOW_IPS must be comma-separated IP addresses"),
    ],
)
def test_a_bad_web_setting_stops_gunicorn_with_one_sentence(variable, value, sentence):
    refused = subprocess.run(
        [*GUNICORN, "--check-config"],
        cwd=ROOT,
        env=environment(**{variable: value}),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 1
    assert refused.stderr.strip().startswith(f"Configuration error: {sentence}")
    assert "Traceback" not in refused.stderr


def printed_config(**variables) -> str:
    """gunicorn's --print-config: it loads the application too, with a database URL nothing connects to."""
    env = environment(**PRODUCTION, DATABASE_URL="postgres://nobody@127.0.0.1:9/nothing", **variables)
    printed = subprocess.run(
        [*GUNICORN, "--print-config"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert printed.returncode == 0, printed.stdout + printed.stderr
    return printed.stdout


@pytest.mark.parametrize(
    ("variables", "bind"),
    [
        ({}, "127.0.0.1:8000"),  # nothing said: this host only, for a proxy beside it
        ({"PORT": "5000"}, "0.0.0.0:5000"),  # a platform's router reaches the container from outside
        ({"PORT": "5000", "WEB_BIND": "10.0.0.5:8000"}, "10.0.0.5:8000"),
        ({"WEB_BIND": "unix:/run/lifecycle/web.sock"}, "unix:/run/lifecycle/web.sock"),
    ],
)
def test_gunicorn_listens_on_loopback_unless_told_or_given_a_port(variables, bind):
    config = printed_config(**{"PORT": "", "WEB_BIND": "", **variables})
    assert re.search(rf"^bind\s+= \[{re.escape(repr(bind))}\]$", config, re.MULTILINE), config


def test_a_few_slow_clients_do_not_hold_up_the_others(server):
    """Four clients send a request's headers a line every half second and never finish: each holds a
    thread of a worker (gthread) as long as it trickles. With one thread per worker (sync workers) the two
    workers are theirs until gunicorn's timeout kills them, and /healthz waits 30 s; with the threads
    the others are still answered."""
    address = server.removeprefix("http://").rpartition(":")
    slow = [socket.create_connection((address[0], int(address[2])), timeout=10) for _ in range(4)]
    stop = threading.Event()

    def trickle():
        try:
            for client in slow:
                client.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            while not stop.wait(0.5):
                for client in slow:
                    client.sendall(b"X-Slow: 1\r\n")
        except OSError:
            pass  # gunicorn gave up on a client: that is fine too

    trickling = threading.Thread(target=trickle, daemon=True)
    trickling.start()
    try:
        time.sleep(1)  # every slow client has been accepted and is being read
        for _ in range(4):
            assert httpx.get(f"{server}/healthz", timeout=10).status_code == 200
    finally:
        stop.set()
        trickling.join(timeout=5)
        for client in slow:
            client.close()


def test_the_procfile_runs_each_production_process_by_exec_with_no_shell_between():
    """Production's Procfile (make run's is Procfile.dev): gunicorn with its settings, the four background
    processes, and the release step; each command exec'd alone, so the platform's signals reach it."""
    processes = parse_procfile((ROOT / "Procfile").read_text()).processes
    assert processes == {
        "release": "exec python manage.py migrate --no-input",
        "web": "exec gunicorn -c python:lifecycle.ops.gunicorn_conf lifecycle.wsgi",
        "worker": "exec python manage.py qcluster",
        "mailroom": "exec python manage.py listen_mailroom",
        "webhooks": "exec python manage.py listen_webhooks",
        "kafka": "exec python manage.py publish_events",
    }


def test_a_probe_from_the_host_itself_gets_health_and_readiness_over_plain_http(server):
    """No TLS proxy, an address for Host (a pod's, not in ALLOWED_HOSTS): no redirect, no 400."""
    for path in ("/healthz", "/readyz"):
        answer = httpx.get(f"{server}{path}", headers={"Host": "10.1.2.3:8000"}, timeout=10)
        assert answer.status_code == 200, (path, answer.text)
    ready = httpx.get(f"{server}/readyz", timeout=10).json()
    assert ready["status"] == "ready"
    assert set(ready["checks"].values()) == {"ok"}


def test_metrics_need_the_token_and_add_up_both_workers(server):
    assert httpx.get(f"{server}/metrics", timeout=10).status_code == 401
    for _ in range(20):  # spread over both workers
        get(f"{server}/recover/")
    scraped = httpx.get(f"{server}/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}, timeout=10)
    assert scraped.status_code == 200  # plain HTTP: the scraper inside the network is not redirected
    families = {family.name: family for family in text_string_to_metric_families(scraped.text)}
    assert "lifecycle_mail_due_emails" in families
    requests = [
        sample.value
        for sample in families["django_http_requests_latency_seconds_by_view_method"].samples
        if sample.name.endswith("_count") and sample.labels.get("view") == "recover"
    ]
    assert sum(requests) >= 20  # from the files of every worker, whichever answered the scrape


def test_the_log_is_json_lines_and_never_holds_a_links_secret(production):
    secret = "S3cr3t" + "x" * 37  # a link's shape: 43 characters
    get(f"{production.url}/activate/{secret}")
    get(f"{production.url}/recover/{secret}")
    get(f"{production.url}/ACTIVATE//{secret}")  # a mangled link: no page, Django's "Not Found" line
    # A request line gunicorn refuses (no HTTP version): gunicorn's own line quotes it.
    with socket.create_connection(("127.0.0.1", int(production.url.rsplit(":", 1)[1])), timeout=10) as raw:
        raw.sendall(f"GET /activate/{secret}\r\n\r\n".encode())
        raw.recv(4096)
    wait_for(lambda: "Invalid request" in production.log.read_text(), timeout=10, message="gunicorn's line")
    text = production.log.read_text()
    assert secret not in text
    lines = [json.loads(line) for line in text.splitlines()]  # gunicorn's own lines too: every line is JSON
    assert any(line["logger"] == "gunicorn.error" for line in lines)
    requests = [line for line in lines if line["logger"] == "lifecycle.requests"]
    assert any(line["message"].startswith("GET /activate/") for line in requests), text[-2000:]
    assert all(line.get("request_id") for line in requests)


# gunicorn --check-config with tempfile.mkdtemp counted: a server the load bench runs beside it in the
# other xdist worker makes its own directory in /dev/shm meanwhile, so listing /dev/shm cannot tell.
CHECK_CONFIG_COUNTING_MKDTEMP = """
import runpy, sys, tempfile
made, real = [], tempfile.mkdtemp
tempfile.mkdtemp = lambda *args, **kwargs: made.append(kwargs.get("prefix")) or real(*args, **kwargs)
sys.argv = ["gunicorn", *sys.argv[1:]]
try:
    runpy.run_module("gunicorn", run_name="__main__")
except SystemExit as exit:
    print("mkdtemp:", made)
    raise
"""


def test_reading_the_configuration_makes_no_metrics_directory():
    """The server's own metrics directory is made when it starts, not when its configuration is read:
    otherwise each --check-config would leave one in /dev/shm."""
    env = environment(**PRODUCTION, DATABASE_URL="postgres://nobody@127.0.0.1:9/nothing")
    checked = subprocess.run(
        [sys.executable, "-c", CHECK_CONFIG_COUNTING_MKDTEMP, *GUNICORN[3:], "--check-config"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert checked.returncode == 0, checked.stderr
    assert "mkdtemp: []" in checked.stdout, checked.stdout
