"""Provisioning through the client API over HTTP, against the same service call in-process, in the same run.

    .venv/bin/python bench/api.py [--requests 500] [--conn-max-age 0]

Runs on a scratch database (``<name>_bench``, created and dropped), DEBUG off on both sides. The API
is served in a process of its own by runserver's server, threaded (a thread per connection), with
Nagle's algorithm off (bench/runserver_nodelay.py: stock runserver stalls every keep-alive response
~40 ms; bench/load.py measures the API under gunicorn), on the same 2 cores as the bench
and PostgreSQL; the client is httpx, one keep-alive connection per thread. At concurrency 1 and 4
(threads, ``--requests`` calls shared among them), it prints requests/s and p50/p99 per call of:

- ``account_provision()`` in-process, as the API client (the baseline);
- POST /api/v1/accounts with a fresh Idempotency-Key each (the bearer key looked up, the client's
  rate counted, the Idempotency-Key's row, provisioning, the answer stored);
- the same requests again, same key and body: the stored response (``Idempotent-Replayed: true``);
- GET /api/v1/accounts/{id}, against ``Account.objects.get()`` in-process, for scale;

and each API figure over its in-process one (requests/s, and the time it adds at p50). Every response
is checked (status, the replay's header and body, no account made by a replay); no time is.
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
from django.db import connection  # noqa: E402

from accounts.models import Account  # noqa: E402
from accounts.services import account_provision  # noqa: E402
from bench import ROOT  # noqa: E402
from bench.figures import percentiles  # noqa: E402
from bench.scratch import scratch_database  # noqa: E402
from platform_events.api.clients import api_client_create  # noqa: E402
from platform_events.api.models import ApiScope  # noqa: E402
from tests.smtp import free_port  # noqa: E402
from tests.support import database_url_for_tests, environment, wait_for  # noqa: E402

CONCURRENCIES = (1, 4)


class Server:
    """bench/runserver_nodelay.py on the scratch database, its output in a file (read on failure)."""

    def __init__(self, *, conn_max_age: int):
        self.port = free_port()
        self.log = Path(tempfile.mkstemp(prefix="api-bench-server-")[1])
        env = environment(**SETTINGS, DATABASE_URL=database_url_for_tests(), CONN_MAX_AGE=str(conn_max_age))
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
    parser.add_argument("--requests", type=int, default=500, help="calls per measurement (default 500)")
    parser.add_argument(
        "--conn-max-age",
        type=int,
        default=0,
        help="the server's CONN_MAX_AGE (default 0, the product's: a database connection per request)",
    )
    args = parser.parse_args()

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
                f"{version} - {args.requests} calls a measurement; the API on runserver's server, threaded, TCP_NODELAY;"
                f" DEBUG off, CONN_MAX_AGE {args.conn_max_age}; httpx, a keep-alive connection per thread"
            )
            print(f"{'':52} {'threads':>7} {'calls/s':>9}   {'per call':44} API / in-process")
            http = http_session(server, key, warm.pk)
            for concurrency in CONCURRENCIES:
                measure(concurrency, args.requests, client, http)
        finally:
            if server is not None:
                server.stop()


def measure(concurrency: int, count: int, client, http) -> None:
    """Each measurement at one concurrency: in-process provisioning, the API's fresh and replayed
    provisioning, then reads both ways."""
    made: list[int] = []

    def provision(_, n):
        made.append(
            account_provision(
                email=f"direct-c{concurrency}-{n}@example.com", login=f"direct-c{concurrency}-{n}", actor=client
            ).pk
        )

    requests = [
        (uuid.uuid4().hex, {"email": f"api-c{concurrency}-{n}@example.com", "login": f"api-c{concurrency}-{n}"})
        for n in range(count)
    ]
    first: dict[str, dict] = {}
    encoded_twice: list[str] = []

    def post(session, request):
        idempotency_key, body = request
        response = expect(
            session.post("/api/v1/accounts", json=body, headers={"Idempotency-Key": idempotency_key}), 201
        )
        assert "Idempotent-Replayed" not in response.headers, response.headers
        first[idempotency_key] = response.json()

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

    def read(session, account_id):
        expect(session.get(f"/api/v1/accounts/{account_id}"), 200)

    def get(_, account_id):
        Account.objects.get(pk=account_id)

    baseline = in_threads(list(range(count)), concurrency, database_session, provision)
    show("in-process account_provision()", concurrency, baseline)
    fresh = in_threads(requests, concurrency, http, post)
    show("POST /api/v1/accounts, a fresh Idempotency-Key", concurrency, fresh, baseline)
    accounts = Account.objects.count()
    replayed = in_threads(requests, concurrency, http, replay)
    assert Account.objects.count() == accounts, "a replay made an account"
    show("the same POSTs again: the stored responses", concurrency, replayed, baseline)
    if encoded_twice:
        print(
            f"  API bug: {len(encoded_twice)} of {count} replays answered the first body as a JSON string (encoded"
            " twice), not the object"
        )
    direct = in_threads(made, concurrency, database_session, get)
    show("in-process Account.objects.get()", concurrency, direct)
    ids = [body["id"] for body in first.values()]
    show("GET /api/v1/accounts/{id}", concurrency, in_threads(ids, concurrency, http, read), direct)


def show(label: str, concurrency: int, figures: Figures, baseline: Figures | None = None) -> None:
    line = f"{label:52} {concurrency:7} {figures.rate:9,.0f}   {percentiles(figures.durations)}"
    if baseline is not None:
        line += f"   {figures.rate / baseline.rate:5.2f}x, p50 {(figures.p50 - baseline.p50) * 1000:+.1f} ms"
    print(line, flush=True)


if __name__ == "__main__":
    main()
