"""The client API over HTTP against the same work in-process and against a bare Django view, in the
same run, with each of the API's per-request costs measured on its own.

    .venv/bin/python bench/api.py [--quick] [--requests 500] [--conn-max-age N]

Runs on a scratch database (``<name>_bench``, created and dropped), DEBUG off on both sides, the
product's database settings (CONN_MAX_AGE its default unless ``--conn-max-age`` says). The API is
served in a process of its own by runserver's server, threaded (a thread per connection), with
Nagle's algorithm off (bench/runserver_nodelay.py: stock runserver stalls every keep-alive response
~40 ms; bench/load.py measures the API under gunicorn), on the same 2 cores as the bench and
PostgreSQL; the client is httpx, one keep-alive connection per thread. The server adds the benches'
views of bench/bare_site.py beside the product's. At concurrency 1 and 4 (threads, ``--requests``
calls shared among them; ``--quick``: 100 calls, 1 thread) it prints requests/s and p50/p99 per
call, and each line's p50 over the line before (what that step adds), of:

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


class Server:
    """bench/runserver_nodelay.py on the scratch database, its output in a file (read on failure)."""

    def __init__(self, *, conn_max_age: int | None):
        self.port = free_port()
        self.log = Path(tempfile.mkstemp(prefix="api-bench-server-")[1])
        given = {} if conn_max_age is None else {"CONN_MAX_AGE": str(conn_max_age)}
        env = environment(**SETTINGS, DATABASE_URL=database_url_for_tests(), **given)
        with open(self.log, "w") as log:
            self.process = subprocess.Popen(
                [sys.executable, "bench/runserver_nodelay.py", str(self.port)],
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
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
        self.process.terminate()
        self.process.wait(timeout=30)
        self.log.unlink()


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


def http_session(server: Server, key: str, warm_id: int):
    @contextmanager
    def session():
        with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {key}"}, timeout=60) as client:
            expect(client.get(f"/api/v1/accounts/{warm_id}"), 200)  # the connection made, the server's thread started
            yield client

    return session


def expect(response: httpx.Response, status: int) -> httpx.Response:
    if response.status_code != status:
        raise AssertionError(
            f"{response.request.method} {response.request.url}: expected {status}, got {response.status_code}"
            f" {response.text[:500]}"
        )
    return response


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="100 calls a measurement, 1 thread (well under a minute)")
    parser.add_argument("--requests", type=int, help="calls per measurement (default 500; 100 with --quick)")
    parser.add_argument(
        "--conn-max-age", type=int, help="the server's CONN_MAX_AGE (default: the product's, from the environment)"
    )
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
            server = Server(conn_max_age=args.conn_max_age)
            print(
                f"{'--quick: ' if args.quick else ''}{version} - {count} calls a measurement; the API on runserver's"
                f" server, threaded, TCP_NODELAY; DEBUG off, CONN_MAX_AGE {conn_max_age}; httpx, a keep-alive"
                f" connection per thread; load average {os.getloadavg()[0]:.1f}"
            )
            print(f"{'':52} {'threads':>7} {'calls/s':>9}   {'per call':44} p50 over the line before")
            http = http_session(server, key, warm.pk)
            aims = [measure(concurrency, count, client, key, http) for concurrency in concurrencies][0]
            print(
                f"aims at 1 thread: the API's read {aims['read']:.2f}x the bare view's requests/s (>= 0.7x), its"
                f" p50 {aims['read_over_orm_ms']:+.1f} ms over the ORM read (<= +2 ms); the API's provisioning"
                f" {aims['provision']:.2f}x the in-process one (>= 0.5x); load average {os.getloadavg()[0]:.1f}"
            )
        finally:
            if server is not None:
                server.stop()


class Lines:
    """The figures of one concurrency, each line's p50 printed over the line before it."""

    def __init__(self, concurrency: int):
        self.concurrency = concurrency
        self.before: Figures | None = None

    def show(self, label: str, figures: Figures) -> Figures:
        line = f"{label:52} {self.concurrency:7} {figures.rate:9,.0f}   {percentiles(figures.durations)}"
        if self.before is not None:
            line += f"   {(figures.p50 - self.before.p50) * 1000:+6.2f} ms"
        print(line, flush=True)
        self.before = figures
        return figures

    def rule(self) -> None:
        self.before = None


def measure(concurrency: int, count: int, client, key: str, http) -> dict:
    """Each measurement at one concurrency: reads step by step, provisioning step by step, commits."""
    lines = Lines(concurrency)
    made: list[int] = []

    def provision(_, n):
        name = f"direct-c{concurrency}-{n}"
        made.append(account_provision(email=f"{name}@example.com", login=name, actor=client).pk)

    def bodies(kind: str) -> list[tuple[str, dict]]:
        names = [f"{kind}-c{concurrency}-{n}" for n in range(count)]
        return [(uuid.uuid4().hex, {"email": f"{name}@example.com", "login": name}) for name in names]

    first: dict[str, dict] = {}
    encoded_twice: list[str] = []

    def poster(path: str, *, remember: bool = False):
        def post(session, request):
            idempotency_key, body = request
            response = expect(session.post(path, json=body, headers={"Idempotency-Key": idempotency_key}), 201)
            assert "Idempotent-Replayed" not in response.headers, response.headers
            if remember:
                first[idempotency_key] = response.json()

        return post

    def replay(session, request):
        idempotency_key, body = request
        response = expect(
            session.post("/api/v1/accounts", json=body, headers={"Idempotency-Key": idempotency_key}), 201
        )
        assert response.headers.get("Idempotent-Replayed") == "true", response.headers
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
            expect(session.get(path.format(id=account_id)), 200)

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

    baseline = in_threads(list(range(count)), concurrency, database_session, provision)
    lines.show("in-process account_provision()", baseline)
    lines.show(
        "bare view: key and rate, account_provision()",
        in_threads(bodies("bare"), concurrency, http, poster("/bench/counted/accounts")),
    )
    lines.show(
        "  + the Idempotency-Key's bookkeeping",
        in_threads(bodies("once"), concurrency, http, poster("/bench/once/accounts")),
    )
    requests = bodies("api")
    fresh = lines.show(
        "POST /api/v1/accounts, a fresh Idempotency-Key",
        in_threads(requests, concurrency, http, poster("/api/v1/accounts", remember=True)),
    )
    accounts = Account.objects.count()
    lines.show("the same POSTs again: the stored responses", in_threads(requests, concurrency, http, replay))
    assert Account.objects.count() == accounts, "a replay made an account"
    if encoded_twice:
        print(
            f"  API bug: {len(encoded_twice)} of {count} replays answered the first body as a JSON string (encoded"
            " twice), not the object"
        )

    lines.rule()
    orm = lines.show("in-process Account.objects.get()", in_threads(made, concurrency, database_session, get))
    ids = [body["id"] for body in first.values()]
    bare = lines.show(
        "GET bare view: the account's row as JSON", in_threads(ids, concurrency, http, reader("/bench/accounts/{id}"))
    )
    lines.show("  + the bearer key's look-up", in_threads(ids, concurrency, http, reader("/bench/keyed/accounts/{id}")))
    lines.show(
        "  + its rate-limit hit, in the same statement",
        in_threads(ids, concurrency, http, reader("/bench/counted/accounts/{id}")),
    )
    read = lines.show("GET /api/v1/accounts/{id}", in_threads(ids, concurrency, http, reader("/api/v1/accounts/{id}")))

    lines.rule()
    lines.show(
        "in-process key and rate, synchronous_commit off",
        in_threads(list(range(count)), concurrency, database_session, called),
    )
    lines.show(
        "  the same statement, synchronous_commit on",
        in_threads(list(range(count)), concurrency, database_session, called_synchronously),
    )
    return {
        "read": read.rate / bare.rate,
        "read_over_orm_ms": (read.p50 - orm.p50) * 1000,
        "provision": fresh.rate / baseline.rate,
    }


if __name__ == "__main__":
    main()
