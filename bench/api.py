"""The client API over HTTP against the same work in-process and against a bare Django view, in the
same run, with each of the API's per-request costs measured on its own.

    .venv/bin/python bench/api.py [--quick] [--requests 500] [--rounds 5] [--conn-max-age N]
                                  [--server gunicorn|runserver] [--client http.client|httpx]

Runs on a scratch database (``<name>_bench``, created and dropped), DEBUG off on both sides, the
product's database settings (CONN_MAX_AGE its default unless ``--conn-max-age`` says). The API is
served in a process of its own, on the same 2 cores as the bench and PostgreSQL, with the benches'
views of bench/bare_site.py beside the product's, by:

- ``--server gunicorn`` (the default): production's server, gunicorn with lifecycle/ops/gunicorn_conf.py
  (gthread workers, 8 threads each, as many workers as it chooses), except that no worker is
  replaced after WEB_MAX_REQUESTS mid-measurement (a new process and database session that a step
  would pay by chance);
- ``--server runserver``: runserver's server, threaded (a thread per connection), with Nagle's
  algorithm off (bench/runserver_nodelay.py: stock runserver stalls every keep-alive response ~40 ms).

The client holds one keep-alive connection per thread: ``--client http.client`` (the default; the
standard library's, a request in one send(), a third of httpx's CPU per call: 0.24 against 0.76 ms
on a GET) or ``--client httpx``. The server and the client are the same for every HTTP step, the
bare views and the API's operations alike, so that what they cost falls on the baseline as on the
API. At concurrency 1 and 4 (threads, ``--requests`` calls shared among them, in ``--rounds`` rounds
where the steps take turns, so that a change in the shared machine's load falls on all of them;
``--quick``: 100 calls, 1 thread) it prints requests/s and p50/p99 per call, and each line's p50 over
the line before (what that step adds), of:

- reads: ``Account.objects.get()`` in-process; a bare Django view answering the row's JSON; + the
  bearer key's look-up; + the rate-limit hit counted with it (the API's statement); GET
  /api/v1/accounts/{id};
- provisioning: ``account_provision()`` in-process, as the API client; a bare view doing the key and
  rate, then ``account_provision()``; + the Idempotency-Key's bookkeeping; POST /api/v1/accounts with
  a fresh Idempotency-Key each; the same requests again, answered from the stored responses;
- a commit's wait for the disk: the key-and-rate statement in-process, committed as the API commits
  it (synchronous_commit off for it), then with synchronous_commit on;

then the aims at 1 thread: the API's read over the bare view's (requests/s), its p50 over the ORM
read, and the API's provisioning over the in-process one. Every response is checked (status, the
replay's header and body, no account made by a replay); no time is.
"""

import argparse
import http.client
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
# The bench process and the server alike: DEBUG off as in production (on, Django keeps every query's
# SQL and time), and what DEBUG off then asks for.
SETTINGS = {
    "DEBUG": "false",
    "SECRET_KEY": secrets.token_urlsafe(50),
    "ALLOWED_HOSTS": "127.0.0.1",
    "SECURE_SSL_REDIRECT": "false",  # plain http on loopback
    "API_REQUESTS_PER_MINUTE": "10000000",  # the default 600 would refuse the bench in its first second
}
os.environ.update(SETTINGS)

import bench.django_setup  # noqa: E402, F401 (Django set up with SETTINGS)

# isort: split
import httpx  # noqa: E402
from django.conf import settings  # noqa: E402
from django.db import connection  # noqa: E402

from accounts.models import Account  # noqa: E402
from accounts.services import account_provision  # noqa: E402
from bench import ROOT  # noqa: E402
from bench.figures import percentiles  # noqa: E402
from bench.scratch import scratch_database  # noqa: E402
from lifecycle.api.auth import per_client_limit  # noqa: E402
from platform_events.api.clients import CALLED, api_client_called, api_client_create, key_digest  # noqa: E402
from platform_events.api.models import ApiClient, ApiScope  # noqa: E402
from platform_events.limits.counters import bucket_for  # noqa: E402
from tests.smtp import free_port  # noqa: E402
from tests.support import database_url_for_tests, environment, wait_for  # noqa: E402

CONCURRENCIES = (1, 4)


SERVERS = {
    "gunicorn": "gunicorn (lifecycle/ops/gunicorn_conf.py: gthread, 8 threads a worker; no worker replaced mid-run)",
    "runserver": "runserver's server, threaded, TCP_NODELAY",
}


class Server:
    """The product and bench/bare_site.py's views on the scratch database, served by ``kind`` (see
    SERVERS), its output in a file (read on failure)."""

    def __init__(self, *, kind: str, conn_max_age: int | None):
        self.port = free_port()
        self.log = Path(tempfile.mkstemp(prefix="api-bench-server-")[1])
        given = {} if conn_max_age is None else {"CONN_MAX_AGE": str(conn_max_age)}
        env = environment(**SETTINGS, DATABASE_URL=database_url_for_tests(), **given)
        if kind == "gunicorn":
            command = [
                *(sys.executable, "-m", "gunicorn", "bench.bare_site:application"),
                *("--config", "python:lifecycle.ops.gunicorn_conf", "--bind", f"127.0.0.1:{self.port}"),
                *("--max-requests", "0", "--log-level", "warning"),
            ]
        else:
            command = [sys.executable, "bench/runserver_nodelay.py", str(self.port)]
        with open(self.log, "w") as log:
            self.process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        wait_for(self._up, timeout=60, interval=0.2, message="the API server")

    def _up(self) -> bool:
        if self.process.poll() is not None:
            raise RuntimeError(f"the API server exited:\n{self.log.read_text()}")
        try:
            return httpx.get(f"{self.url}/api/v1/openapi.json").status_code == 200
        except httpx.HTTPError:
            return False

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.process.terminate()  # gunicorn's graceful stop: its workers finish and exit
        self.process.wait(timeout=60)
        self.log.unlink()


@dataclass(frozen=True)
class Answer:
    """A response as the steps check it, whichever client got it."""

    method: str
    path: str
    status: int
    headers: dict[str, str]  # names in lower case
    body: bytes

    def json(self):
        return json.loads(self.body)


class KeepAlive:
    """http.client: one keep-alive connection, each request (headers and body) written in one send()."""

    def __init__(self, url: str, headers: dict[str, str]):
        host, _, port = url.removeprefix("http://").partition(":")
        self.connection = http.client.HTTPConnection(host, int(port), timeout=60)
        self.headers = headers

    def request(self, method: str, path: str, *, json_body=None, headers=None) -> Answer:
        body = None if json_body is None else json.dumps(json_body).encode()
        sent = {**self.headers, **(headers or {})}
        if body is not None:
            sent["Content-Type"] = "application/json"
        self.connection.request(method, path, body=body, headers=sent)
        response = self.connection.getresponse()
        content = response.read()
        return Answer(method, path, response.status, {k.lower(): v for k, v in response.getheaders()}, content)

    def close(self) -> None:
        self.connection.close()


class Httpx:
    """httpx.Client: one keep-alive connection."""

    def __init__(self, url: str, headers: dict[str, str]):
        self.client = httpx.Client(base_url=url, headers=headers, timeout=60)

    def request(self, method: str, path: str, *, json_body=None, headers=None) -> Answer:
        response = self.client.request(method, path, json=json_body, headers=headers)
        return Answer(method, path, response.status_code, dict(response.headers), response.content)

    def close(self) -> None:
        self.client.close()


CLIENTS = {"http.client": KeepAlive, "httpx": Httpx}


@dataclass(frozen=True)
class Figures:
    rate: float  # calls/s by the wall clock, all threads together
    durations: list[float]  # seconds, each call

    @property
    def p50(self) -> float:
        return statistics.median(self.durations)


def in_threads(items: list, concurrency: int, open_session, call) -> Figures:
    """``call(session, item)`` for every item, the items shared among ``concurrency`` threads, each
    with a session of its own (``open_session()``, a context manager, opened before the clock starts)."""
    shares = [items[n::concurrency] for n in range(concurrency)]
    durations: list[list[float]] = [[] for _ in shares]
    errors: list[BaseException] = []
    ready = threading.Barrier(concurrency + 1)

    def work(n: int) -> None:
        try:
            with open_session() as session:
                ready.wait()
                for item in shares[n]:
                    started = time.perf_counter()
                    call(session, item)
                    durations[n].append(time.perf_counter() - started)
        except BaseException as error:  # raised again in the caller's thread
            errors.append(error)
            ready.abort()

    threads = [threading.Thread(target=work, args=(n,)) for n in range(concurrency)]
    for thread in threads:
        thread.start()
    try:
        ready.wait()
    except threading.BrokenBarrierError:
        pass  # a thread failed before the start; its error is raised below
    started = time.perf_counter()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    if errors:
        raise errors[0]
    return Figures(len(items) / elapsed, [d for share in durations for d in share])


@contextmanager
def database_session():
    """This thread's own database connection (Django's are per thread), opened before the clock starts."""
    connection.ensure_connection()
    try:
        yield None
    finally:
        connection.close()


def http_session(server: Server, client: str, key: str, warm_id: int):
    @contextmanager
    def session():
        opened = CLIENTS[client](server.url, {"Authorization": f"Bearer {key}"})
        try:
            # The connection made, the server's thread started.
            expect(opened.request("GET", f"/api/v1/accounts/{warm_id}"), 200)
            yield opened
        finally:
            opened.close()

    return session


def expect(response: Answer, status: int) -> Answer:
    if response.status != status:
        raise AssertionError(
            f"{response.method} {response.path}: expected {status}, got {response.status} {response.body[:500]!r}"
        )
    return response


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="100 calls a measurement, 1 thread (well under a minute)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds the steps take turns in (default 5)")
    parser.add_argument("--requests", type=int, help="calls per measurement (default 500; 100 with --quick)")
    parser.add_argument(
        "--conn-max-age", type=int, help="the server's CONN_MAX_AGE (default: the product's, from the environment)"
    )
    parser.add_argument("--server", choices=SERVERS, default="gunicorn", help="what serves the HTTP steps")
    parser.add_argument("--client", choices=CLIENTS, default="http.client", help="what calls them")
    args = parser.parse_args()
    count = args.requests or (100 if args.quick else 500)
    concurrencies = (1,) if args.quick else CONCURRENCIES
    conn_max_age = settings.DATABASES["default"]["CONN_MAX_AGE"] if args.conn_max_age is None else args.conn_max_age

    server = None
    with scratch_database():
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT version()")
                version = cursor.fetchone()[0].split(" on ")[0]
            client, key = api_client_create(name="bench", scopes=list(ApiScope.values), actor=None)
            warm = account_provision(email="warm@example.com", login="warm", actor=client)
            server = Server(kind=args.server, conn_max_age=args.conn_max_age)
            print(
                f"{'--quick: ' if args.quick else ''}{version} - {count} calls a measurement in {args.rounds} rounds;"
                f" the API and the bare views on {SERVERS[args.server]}; DEBUG off, CONN_MAX_AGE {conn_max_age};"
                f" {args.client}, a keep-alive connection per thread; load average {os.getloadavg()[0]:.1f}"
            )
            print(f"{'':52} {'threads':>7} {'calls/s':>9}   {'per call':44} p50 over the line before")
            http = http_session(server, args.client, key, warm.pk)
            aims = [measure(c, count, args.rounds, client, key, http) for c in concurrencies][0]
            print(
                f"aims at 1 thread: the API's read {aims['read']:.2f}x the bare view's requests/s (>= 0.7x), its"
                f" p50 {aims['read_over_orm_ms']:+.1f} ms over the ORM read (<= +2 ms); the API's provisioning"
                f" {aims['provision']:.2f}x the in-process one (>= 0.5x); load average {os.getloadavg()[0]:.1f}"
            )
        finally:
            if server is not None:
                server.stop()


def combined(parts: list[Figures]) -> Figures:
    """One figure of several runs of one step: every call's duration, calls over the time they took."""
    calls = sum(len(part.durations) for part in parts)
    return Figures(
        calls / sum(len(part.durations) / part.rate for part in parts), [d for p in parts for d in p.durations]
    )


@dataclass(frozen=True)
class Step:
    label: str
    open_session: object  # a context manager factory: database_session or an HTTP session
    call: object  # call(session, item)
    items: object  # items(round): what this round's calls take


def measure(concurrency: int, count: int, rounds: int, client, key: str, http) -> dict:
    """Each step at one concurrency, in ``rounds`` rounds of ``count / rounds`` calls that take turns
    (a change of the machine's load meanwhile falls on every step alike): reads step by step,
    provisioning step by step, the commit's wait. Prints each step's figures and p50 over the step before."""
    share = max(1, count // rounds)
    made: list[int] = []
    first: dict[str, dict] = {}
    encoded_twice: list[str] = []
    fresh_requests: dict[int, list] = {}

    def provision(_, n):
        name = f"direct-c{concurrency}-{n}"
        made.append(account_provision(email=f"{name}@example.com", login=name, actor=client).pk)

    def bodies(kind: str):
        def items(round_: int) -> list[tuple[str, dict]]:
            names = [f"{kind}-c{concurrency}-r{round_}-{n}" for n in range(share)]
            found = [(uuid.uuid4().hex, {"email": f"{name}@example.com", "login": name}) for name in names]
            fresh_requests[round_] = found
            return found

        return items

    def poster(path: str, *, remember: bool = False):
        def post(session, request):
            idempotency_key, body = request
            response = expect(
                session.request("POST", path, json_body=body, headers={"Idempotency-Key": idempotency_key}), 201
            )
            assert "idempotent-replayed" not in response.headers, response.headers
            if remember:
                first[idempotency_key] = response.json()

        return post

    def replay(session, request):
        idempotency_key, body = request
        response = expect(
            session.request("POST", "/api/v1/accounts", json_body=body, headers={"Idempotency-Key": idempotency_key}),
            201,
        )
        assert response.headers.get("idempotent-replayed") == "true", response.headers
        replied = response.json()
        if (
            replied != first[idempotency_key]
            and isinstance(replied, str)
            and json.loads(replied) == first[idempotency_key]
        ):
            encoded_twice.append(idempotency_key)  # said below; not a reason to stop measuring
            return
        assert replied == first[idempotency_key], (replied, first[idempotency_key])

    def reader(path: str):
        def read(session, account_id):
            expect(session.request("GET", path.format(id=account_id)), 200)

        return read

    def get(_, account_id):
        Account.objects.get(pk=account_id)

    def called(_, n):
        assert api_client_called(key, limit=per_client_limit()) is not None

    def called_synchronously(_, n):
        params = {
            "hash": key_digest(key),
            "bucket": bucket_for(limit=per_client_limit(), key=f"api-key:{key_digest(key).hex()}"),
            "seconds": per_client_limit().seconds,
            "own_transaction": False,  # the statement's own transaction all the same: autocommit
        }
        assert list(ApiClient.objects.raw(CALLED, params))

    numbers = lambda round_: list(range(round_ * share, (round_ + 1) * share))  # noqa: E731
    accounts = lambda round_: made[-share:]  # noqa: E731 (the accounts this round made in-process)
    groups = [
        [
            Step("in-process account_provision()", database_session, provision, numbers),
            Step(
                "bare view: key and rate, account_provision()", http, poster("/bench/counted/accounts"), bodies("bare")
            ),
            Step("  + the Idempotency-Key's bookkeeping", http, poster("/bench/once/accounts"), bodies("once")),
            Step(
                "POST /api/v1/accounts, a fresh Idempotency-Key",
                http,
                poster("/api/v1/accounts", remember=True),
                bodies("api"),
            ),
            Step("the same POSTs again: the stored responses", http, replay, lambda round_: fresh_requests[round_]),
        ],
        [
            Step("in-process Account.objects.get()", database_session, get, accounts),
            Step("GET bare view: the account's row as JSON", http, reader("/bench/accounts/{id}"), accounts),
            Step("  + the bearer key's look-up", http, reader("/bench/keyed/accounts/{id}"), accounts),
            Step(
                "  + its rate-limit hit, in the same statement", http, reader("/bench/counted/accounts/{id}"), accounts
            ),
            Step("GET /api/v1/accounts/{id}", http, reader("/api/v1/accounts/{id}"), accounts),
        ],
        [
            Step("in-process key and rate, synchronous_commit off", database_session, called, numbers),
            Step("  the same statement, synchronous_commit on", database_session, called_synchronously, numbers),
        ],
    ]
    parts: dict[str, list[Figures]] = {step.label: [] for group in groups for step in group}
    for round_ in range(rounds):
        print(f"  {concurrency} thread(s), round {round_ + 1} of {rounds}", file=sys.stderr, flush=True)
        for group in groups:
            for step in group:
                accounts_before = Account.objects.count() if step.call is replay else None
                found = in_threads(step.items(round_), concurrency, step.open_session, step.call)
                parts[step.label].append(found)
                if accounts_before is not None:
                    assert Account.objects.count() == accounts_before, "a replay made an account"
    figures = {label: combined(found) for label, found in parts.items()}
    for group in groups:
        before = None
        for step in group:
            show(step.label, concurrency, figures[step.label], before)
            before = figures[step.label]
    if encoded_twice:
        print(
            f"  API bug: {len(encoded_twice)} of {share * rounds} replays answered the first body as a JSON string"
            " (encoded twice), not the object"
        )
    read, bare, orm = (
        figures[label]
        for label in (
            "GET /api/v1/accounts/{id}",
            "GET bare view: the account's row as JSON",
            "in-process Account.objects.get()",
        )
    )
    return {
        "read": read.rate / bare.rate,
        "read_over_orm_ms": (read.p50 - orm.p50) * 1000,
        "provision": figures["POST /api/v1/accounts, a fresh Idempotency-Key"].rate
        / figures["in-process account_provision()"].rate,
    }


def show(label: str, concurrency: int, figures: Figures, before: Figures | None) -> None:
    line = f"{label:52} {concurrency:7} {figures.rate:9,.0f}   {percentiles(figures.durations)}"
    if before is not None:
        line += f"   {(figures.p50 - before.p50) * 1000:+6.2f} ms"
    print(line, flush=True)


if __name__ == "__main__":
    main()
