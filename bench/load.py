"""The product at scale: gunicorn under rising concurrency, and the mail drain and the
webhook dispatch with more workers.

    .venv/bin/python bench/load.py [--quick] [--json] [--workers 5] [--seconds 10]
                                   [--concurrency 1,2,4,8,16,32] [--accounts 20000] [--messages 2000]

Everything runs on an embedded PostgreSQL of its own (a new data directory, removed afterwards), as
bench/soak.py does: migrated, seeded as bench/admin.py seeds (accounts in every state over a year,
their tokens, audit rows in monthly partitions), an API client with every scope and a superuser;
collectstatic into a temporary directory. Then gunicorn serves the product with the benches' views
beside it (bench/bare_site.py; ``--workers``; lifecycle/ops/gunicorn_conf.py as its config when it
exists, the flags given here win) with DEBUG off, the product's database settings (CONN_MAX_AGE its
default unless ``--conn-max-age`` says), the public limits and the API's rate raised so that they
refuse nothing (every client is 127.0.0.1).

- **Web**: for each endpoint in turn, at each concurrency, that many clients (asyncio tasks on
  httpx.AsyncClient, each with a session of its own) ask again and again for ``--seconds``: the public
  page (GET /recover/, and POST /recover/ with its CSRF token: it queues the request for the
  cluster, which does not run here), the client API (GET an account; POST a new one with a fresh
  Idempotency-Key), a bare Django view answering an account's row as JSON (the API read's
  reference), the admin logged in (the account list, an account's page), and a static file when
  WhiteNoise serves them. ``account_provision()`` in this process, one call after another for
  ``--seconds``, is the API write's reference: at one client, the API's read over the bare view's and
  its write over the in-process one are printed (bench/api.py measures the same at one and four threads, each cost on its own). Per step: requests/s, p50/p95/p99, errors (any other status, or no
  answer: each kind printed), and the CPU the load generator, gunicorn and PostgreSQL used. The
  baseline, in the same run: GET /recover/ at concurrency 1; each step's requests/s is printed as a
  ratio to it. The bend per endpoint: the first concurrency where p95 exceeds twice its value at the
  lowest concurrency, or requests/s rises by less than 10% over the step before.
- **Workers**: the mail drain (bench/mailroom.py's tokens and SMTP server) and the webhook dispatch
  (bench/webhooks.py's events and receiver) with 1, 2 and 4 workers at once (processes forked from
  this one, each one run of ``drain()`` / ``deliver()``, as that many cron runs or listeners
  would), messages/s and the ratios 2/1 and 4/1; the sink alone (plain smtplib, plain httpx, one
  connection, as those benches measure it) and the CPU of the workers, the sink and PostgreSQL, to
  tell which one was the limit.

Every figure printed is measured in this run. The machine's cores are shared by the load generator,
gunicorn, PostgreSQL and the sinks (and whatever else runs): the CPU columns say how busy each was.
"""

import argparse
import asyncio
import json
import multiprocessing
import os
import random
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx

from bench import ROOT
from bench.figures import quantile
from bench.soak import CSRF, production_on_loopback
from tests.smtp import free_port

CONCURRENCIES = [1, 2, 4, 8, 16, 32]
DRAIN_WORKERS = [1, 2, 4]
STAFF_PASSWORD = secrets.token_urlsafe(16)
# A limit nobody reaches in a run: every client comes from 127.0.0.1.
RAISED_LIMIT = "1000000"
RAISED_API_RATE = "10000000"
CORES = os.cpu_count() or 1
BARE_VIEW = "bare view: GET /bench/accounts/{id}"
API_READ, API_WRITE = "API GET /api/v1/accounts/{id}", "API POST /api/v1/accounts (Idem.-Key)"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def say(text: str = "") -> None:
    print(text, flush=True)


# CPU time: of a process tree from /proc (Linux), of this process from os.times()


def _stat(pid: int) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except (FileNotFoundError, ProcessLookupError):
        return None


def tree_cpu(pid: int) -> float:
    """User and system seconds of ``pid`` and of every descendant, live or reaped (a PostgreSQL backend
    lives for one request at CONN_MAX_AGE 0: its time moves to the postmaster's when it exits)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := _stat(int(entry.name))):
            children.setdefault(int(fields[1]), []).append(int(entry.name))

    def total(process: int) -> float:
        fields = _stat(process)
        if fields is None:
            return 0.0
        # utime, stime, cutime, cstime: fields 14-17 of stat, 11-14 counted from the state after the name.
        ticks = sum(int(value) for value in fields[11:15])
        return ticks / CLOCK_TICKS + sum(total(child) for child in children.get(process, []))

    return total(pid)


def own_cpu() -> float:
    """This process's seconds, all its threads (not its children: gunicorn and the sinks are)."""
    times = os.times()
    return times.user + times.system


def own_and_reaped_cpu() -> float:
    """This process's seconds and those of the children it has waited for (the forked workers)."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def machine_cpu() -> float:
    """Seconds every core of the machine spent busy (/proc/stat): this run's parts and any other work."""
    user, nice, system, _idle, _iowait, irq, softirq, steal = map(
        int, Path("/proc/stat").open().readline().split()[1:9]
    )
    return (user + nice + system + irq + softirq + steal) / CLOCK_TICKS


class CpuMeter:
    """Cores each named part used between ``start()`` and ``stop()``; each part is a function
    returning CPU seconds so far."""

    def __init__(self, **parts):
        self.parts = parts

    def start(self) -> "CpuMeter":
        self.began = {name: seconds() for name, seconds in self.parts.items()}
        self.clock = time.perf_counter()
        return self

    def stop(self) -> dict[str, float]:
        elapsed = time.perf_counter() - self.clock
        return {name: (seconds() - self.began[name]) / elapsed for name, seconds in self.parts.items()}


def cores(cpu: dict[str, float]) -> str:
    """Cores used, in the order the columns name them."""
    return " / ".join(f"{used:.2f}" for used in cpu.values())


# The product: database, data, web server


def product_settings(databases: dict, *, static_root: Path, conn_max_age: int | None) -> dict:
    """DEBUG off as in production, on plain HTTP (bench/soak.py), the API's limit raised too;
    CONN_MAX_AGE the product's default unless given."""
    return {
        **production_on_loopback(databases, static_root=static_root, limit=RAISED_LIMIT),
        **({} if conn_max_age is None else {"CONN_MAX_AGE": str(conn_max_age)}),
        "LOG_LEVEL": "WARNING",
        "API_REQUESTS_PER_MINUTE": RAISED_API_RATE,
    }


@dataclass
class Data:
    key: str  # the API client's bearer key
    account_ids: list[int]
    logins: list[str]


def seed(accounts: int) -> Data:
    """bench/admin.py's accounts and audit rows (three per account), an API client, a superuser."""
    from django.contrib.auth import get_user_model

    from accounts.models import Account
    from bench.admin import seed as seed_accounts_and_audit
    from platform_events.api.clients import api_client_create
    from platform_events.api.models import ApiScope

    seed_accounts_and_audit(accounts, 3 * accounts)
    _, key = api_client_create(name="load", scopes=list(ApiScope.values), actor=None)
    get_user_model().objects.create_superuser("load", password=STAFF_PASSWORD)
    ids, logins = zip(*Account.objects.values_list("id", "login"), strict=True)
    return Data(key=key, account_ids=list(ids), logins=list(logins))


class Gunicorn:
    """gunicorn serving bench/bare_site.py (the product and the benches' views) on a free port of
    loopback, its output in a file (shown on failure)."""

    def __init__(self, *, workers: int, env: dict, log: Path):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        command = [sys.executable, "-m", "gunicorn", "bench.bare_site:application"]
        self.config = ROOT / "lifecycle" / "ops" / "gunicorn_conf.py"
        # As the config chooses its worker class (WEB_THREADS, 8 by default; 1 for sync workers).
        threads = int({**os.environ, **env}.get("WEB_THREADS", "8"))
        self.kind = f"gthread workers, {threads} threads each" if threads > 1 else "sync workers"
        if self.config.exists():
            command += ["--config", "python:lifecycle.ops.gunicorn_conf"]
        command += ["--workers", str(workers), "--bind", f"127.0.0.1:{self.port}", "--log-level", "warning"]
        self.command = command
        with open(log, "w") as output:
            self.process = subprocess.Popen(
                command, cwd=ROOT, env={**os.environ, **env}, stdout=output, stderr=subprocess.STDOUT
            )
        from tests.support import wait_for  # after Django's set-up: it imports models

        wait_for(self._up, timeout=60, interval=0.2, message="gunicorn")

    def _up(self) -> bool:
        if self.process.poll() is not None:
            raise RuntimeError(f"gunicorn exited:\n{self.log.read_text()}")
        try:
            return httpx.get(f"{self.url}/recover/").status_code == 200
        except httpx.HTTPError:
            return False

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()  # gunicorn's graceful stop: its workers finish and exit
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=30)


# The web load


@dataclass
class Visitor:
    """One client of a step: its own connection pool, cookies and random choices."""

    client: httpx.AsyncClient
    rng: random.Random
    csrf: str = ""


@dataclass(frozen=True)
class Endpoint:
    label: str
    expected: int
    session: str  # "public", "api" or "admin": how a visitor opens its session
    method: str
    path: str  # what it asks for; {id} an account's id


class Site:
    """The endpoints, and how a visitor asks for each."""

    def __init__(self, base_url: str, data: Data, *, static_file: str | None):
        self.base_url, self.data = base_url, data
        self.admin_cookies: list[dict] = []  # one logged-in session per admin visitor, made once
        self.endpoints = [
            Endpoint("GET /recover/", 200, "public", "GET", "/recover/"),
            Endpoint("POST /recover/ (CSRF token)", 200, "public", "POST", "/recover/"),
            Endpoint(API_READ, 200, "api", "GET", "/api/v1/accounts/{id}"),
            Endpoint(API_WRITE, 201, "api", "POST", "/api/v1/accounts"),
            Endpoint(BARE_VIEW, 200, "public", "GET", "/bench/accounts/{id}"),
            Endpoint("admin: account list", 200, "admin", "GET", "/admin/accounts/account/"),
            Endpoint("admin: an account's page", 200, "admin", "GET", "/admin/accounts/account/{id}/change/"),
        ]
        if static_file:
            self.endpoints.append(Endpoint("static file (WhiteNoise)", 200, "public", "GET", static_file))

    async def visitor(self, endpoint: Endpoint, number: int) -> Visitor:
        """A visitor ready to ask: its CSRF token, its API key or its admin session (not timed)."""
        client = httpx.AsyncClient(base_url=self.base_url, timeout=120)
        visitor = Visitor(client, random.Random(number))
        if endpoint.session == "api":
            client.headers["Authorization"] = f"Bearer {self.data.key}"
        elif endpoint.session == "admin":
            while len(self.admin_cookies) <= number:
                self.admin_cookies.append(await self.log_in())
            client.cookies.update(self.admin_cookies[number])
        elif endpoint.method == "POST":
            visitor.csrf = CSRF.search((await client.get(endpoint.path)).text).group(1)
        return visitor

    async def log_in(self) -> dict:
        async with httpx.AsyncClient(base_url=self.base_url, timeout=120) as client:
            form = await client.get("/admin/login/")
            answer = await client.post(
                "/admin/login/",
                data={
                    "username": "load",
                    "password": STAFF_PASSWORD,
                    "csrfmiddlewaretoken": CSRF.search(form.text).group(1),
                    "next": "/admin/",
                },
            )
            if answer.status_code != 302:
                raise RuntimeError(f"admin log-in: {answer.status_code} {answer.text[:300]}")
            return dict(client.cookies)

    def ask(self, endpoint: Endpoint, visitor: Visitor):
        """The request, as a coroutine."""
        client, rng = visitor.client, visitor.rng
        path = endpoint.path.replace("{id}", str(rng.choice(self.data.account_ids)))
        if endpoint.method == "GET":
            return client.get(path)
        if endpoint.session == "public":  # the form, for any login (the answer is the same for nobody)
            identifier = rng.choice(self.data.logins)
            return client.post(path, data={"csrfmiddlewaretoken": visitor.csrf, "identifier": identifier})
        name = uuid.uuid4().hex  # a new account, under a fresh Idempotency-Key
        return client.post(
            path, json={"email": f"{name}@example.com", "login": name}, headers={"Idempotency-Key": uuid.uuid4().hex}
        )


@dataclass
class Step:
    endpoint: str
    clients: int
    rate: float  # answers as expected per second
    p50_ms: float
    p95_ms: float
    p99_ms: float
    answered: int
    errors: int
    error_kinds: dict[str, int]
    cpu: dict[str, float]
    ratio: float | None = None  # rate / the baseline's


async def run_step(site: Site, endpoint: Endpoint, clients: int, seconds: float, meter: CpuMeter) -> Step:
    visitors = [await site.visitor(endpoint, number) for number in range(clients)]
    durations: list[float] = []
    errors: Counter[str] = Counter()
    deadline = time.perf_counter() + seconds

    async def keep_asking(visitor: Visitor) -> None:
        while time.perf_counter() < deadline:
            started = time.perf_counter()
            try:
                response = await site.ask(endpoint, visitor)
            except httpx.HTTPError as error:
                errors[f"{type(error).__name__}: {str(error)[:120]}"] += 1
                await asyncio.sleep(0.05)  # a refused connection must not spin
                continue
            if response.status_code == endpoint.expected:
                durations.append(time.perf_counter() - started)
            else:
                errors[f"{response.status_code}: {' '.join(response.text.split())[:160]}"] += 1

    meter.start()
    started = time.perf_counter()
    await asyncio.gather(*(keep_asking(visitor) for visitor in visitors))
    elapsed = time.perf_counter() - started
    cpu = meter.stop()
    for visitor in visitors:
        await visitor.client.aclose()
    ordered = sorted(durations) or [float("nan")]
    return Step(
        endpoint=endpoint.label,
        clients=clients,
        rate=len(durations) / elapsed,
        p50_ms=statistics.median(ordered) * 1000,
        p95_ms=quantile(ordered, 0.95) * 1000,
        p99_ms=quantile(ordered, 0.99) * 1000,
        answered=len(durations),
        errors=sum(errors.values()),
        error_kinds=dict(errors),
        cpu=cpu,
    )


def bend(steps: list[Step]) -> dict:
    """Where latency bends: the first concurrency where p95 is over twice the lowest concurrency's, or
    requests/s rose by less than 10% over the step before."""
    first = steps[0]
    for before, step in zip(steps, steps[1:], strict=False):
        if step.p95_ms > 2 * first.p95_ms:
            why = f"p95 {step.p95_ms:.1f} ms > 2x {first.p95_ms:.1f} ms at {first.clients}"
            return {"clients": step.clients, "why": why}
        if step.rate < 1.1 * before.rate:
            why = f"req/s {step.rate:,.1f}, {step.rate / before.rate - 1:+.0%} over {before.clients} clients"
            return {"clients": step.clients, "why": why}
    return {"clients": None, "why": f"none up to {steps[-1].clients} clients"}


async def web_load(site: Site, concurrencies: list[int], seconds: float, warm_clients: int, meter: CpuMeter):
    steps: dict[str, list[Step]] = {}
    for endpoint in site.endpoints:
        # Every worker has served it once (its templates loaded, its imports done): not measured.
        await run_step(site, endpoint, warm_clients, min(1.0, seconds / 2), meter)
        steps[endpoint.label] = []
        for clients in concurrencies:
            step = await run_step(site, endpoint, clients, seconds, meter)
            steps[endpoint.label].append(step)
            say(
                f"  {endpoint.label:40} {clients:4} clients {step.rate:8,.1f} req/s  p95 {step.p95_ms:7.1f} ms"
                f"  errors {step.errors}"
            )
    return steps


def print_web(steps: dict[str, list[Step]], baseline: Step) -> dict[str, dict]:
    say(
        f"{'endpoint':40} {'clients':>7} {'req/s':>8} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'errors':>7}"
        f" {'/base':>7}   CPU cores: load generator, gunicorn, PostgreSQL, the machine"
    )
    bends = {}
    for label, rows in steps.items():
        for step in rows:
            step.ratio = step.rate / baseline.rate
            say(
                f"{label:40} {step.clients:7} {step.rate:8,.1f} {step.p50_ms:8.1f} {step.p95_ms:8.1f}"
                f" {step.p99_ms:8.1f} {step.errors:7} {step.ratio:6.2f}x   {cores(step.cpu)}"
            )
            for kind, count in step.error_kinds.items():
                say(f"    error x{count}: {kind}")
        bends[label] = bend(rows)
    say()
    say(f"{'where latency bends':40} {'clients':>7}   {'peak req/s':>10}   why")
    for label, rows in steps.items():
        peak = max(rows, key=lambda step: step.rate)
        clients = bends[label]["clients"]
        say(
            f"{label:40} {clients if clients else '-':>7}   {peak.rate:10,.1f}   (at {peak.clients})"
            f"  {bends[label]['why']}"
        )
    return bends


def provision_in_process(key: str, seconds: float) -> float:
    """``account_provision()`` in this process, as the API client, one call after another for
    ``seconds`` (gunicorn stopped): calls/s, the API write's reference."""
    from accounts.services import account_provision
    from platform_events.api.clients import api_client_by_key

    client = api_client_by_key(key)
    made = 0
    started = time.perf_counter()
    while time.perf_counter() < started + seconds:
        name = uuid.uuid4().hex
        account_provision(email=f"{name}@example.com", login=name, actor=client)
        made += 1
    return made / (time.perf_counter() - started)


def print_api_references(steps: dict[str, list[Step]], in_process: float) -> dict:
    """The API's figures at the lowest concurrency over their references, measured in this run."""
    read, bare, write = steps[API_READ][0], steps[BARE_VIEW][0], steps[API_WRITE][0]
    found = {"read_over_bare_view": read.rate / bare.rate, "write_over_in_process": write.rate / in_process}
    say(
        f"the API at {read.clients} client(s): its read {found['read_over_bare_view']:.2f}x the bare view's"
        f" requests/s (p50 {read.p50_ms:.1f} against {bare.p50_ms:.1f} ms); its write"
        f" {found['write_over_in_process']:.2f}x account_provision() in this process ({in_process:,.1f}/s)"
    )
    return {**found, "in_process_provision_rate": in_process}


# The workers: the mail drain and the webhook dispatch, 1, 2 and 4 at once


@dataclass
class WorkerRun:
    workers: int
    rate: float  # messages/s, all workers together
    cpu: dict[str, float] = field(default_factory=dict)
    limit: str = ""


def in_workers(run, workers: int, meter: CpuMeter) -> tuple[float, list, dict[str, float]]:
    """``run()`` in ``workers`` processes forked from this one, started together; the wall time, what
    each returned, and the cores used meanwhile."""
    from django.db import connections

    context = multiprocessing.get_context("fork")
    ready, go, results = context.Queue(), context.Event(), context.Queue()

    def work() -> None:
        ready.put(True)
        go.wait()
        try:
            results.put(run())
        except Exception as error:  # the parent says what failed
            results.put(error)
        finally:
            connections.close_all()

    connections.close_all()  # each fork opens its own
    processes = [context.Process(target=work) for _ in range(workers)]
    for process in processes:
        process.start()
    for _ in processes:
        ready.get(timeout=60)
    meter.start()
    started = time.perf_counter()
    go.set()
    answers = [results.get(timeout=600) for _ in processes]
    elapsed = time.perf_counter() - started
    for process in processes:
        process.join(timeout=60)
    cpu = meter.stop()
    failed = [answer for answer in answers if isinstance(answer, Exception)]
    if failed:
        raise failed[0]
    return elapsed, answers, cpu


def the_limit(cpu: dict[str, float], rate: float, sink_alone: float) -> str:
    """Which part held the rate back, as far as CPU time tells (each reason that holds)."""
    reasons = []
    if cpu["sink"] >= 0.85:
        reasons.append(f"the sink: its one process busy {cpu['sink']:.0%} of a core")
    elif rate >= 0.9 * sink_alone:
        reasons.append(f"the sink: {rate / sink_alone:.2f}x of its rate alone")
    if cpu["PostgreSQL"] >= 0.85:
        reasons.append(f"PostgreSQL: {cpu['PostgreSQL']:.2f} cores")
    if cpu["machine"] >= 0.85 * CORES:
        others = max(cpu["machine"] - cpu["workers"] - cpu["sink"] - cpu["PostgreSQL"], 0)
        reasons.append(f"the machine's {CORES} cores full ({others:.2f} of them other work)")
    return "; ".join(reasons) or "none by CPU: waiting (round trips, commits, locks)"


def measure_workers(label: str, unit: str, queue, run, count: int, sink_pid: int, sink_alone) -> dict:
    """``queue(count)`` then ``run()`` in 1, 2 and 4 workers, each from a full queue."""
    postmaster = postmaster_pid()
    meter = CpuMeter(
        workers=own_and_reaped_cpu,
        sink=lambda: tree_cpu(sink_pid),
        PostgreSQL=lambda: tree_cpu(postmaster),
        machine=machine_cpu,
    )
    queue(count)
    meter.start()
    alone = sink_alone()
    alone_cpu = meter.stop()
    say(
        f"  {label}: the sink alone, one connection: {alone:,.0f} {unit}/s (CPU cores {'/'.join(alone_cpu)}: {cores(alone_cpu)})"
    )
    runs = []
    for workers in DRAIN_WORKERS:
        queue(count)
        elapsed, sent, cpu = in_workers(run, workers, meter)
        if sum(sent) != count:
            raise AssertionError(f"{label}: {workers} workers sent {sum(sent)} of {count}")
        rate = count / elapsed
        runs.append(WorkerRun(workers, rate, cpu, the_limit(cpu, rate, alone)))
        say(f"  {label}: {workers} workers {rate:8,.0f} {unit}/s")
    return {"count": count, "unit": unit, "sink_alone": alone, "sink_alone_cpu": alone_cpu, "runs": runs}


def postmaster_pid() -> int:
    from lifecycle.ops import embedded_db

    return int((embedded_db.data_directory() / "postmaster.pid").read_text().split()[0])


def mail_and_webhooks(count: int) -> dict:
    from django.conf import settings

    from bench import mailroom, webhooks
    from platform_events.outbox.models import EventType
    from platform_events.webhooks import dispatch
    from platform_events.webhooks.endpoints import endpoint_create
    from tests.smtp import SMTPServerProcess
    from tokens.mailroom.drain import drain

    figures = {}
    server = SMTPServerProcess().start()
    try:
        with mailroom.smtp_settings(server):
            figures["mail drain"] = measure_workers(
                f"mail drain (batches of {settings.MAILROOM_BATCH_SIZE})",
                "e-mails",
                mailroom.sign_up,
                lambda: drain().sent,
                count,
                server.process.pid,
                lambda: mailroom.smtplib_rate(server, count),
            )
    finally:
        server.stop()
    receiver = webhooks.Receiver()
    try:
        _, secret = endpoint_create(
            url=receiver.url, events=[EventType.ACCOUNT_CREATED], owner="load", description="", actor=None
        )
        figures["webhook dispatch"] = measure_workers(
            f"webhook dispatch (batches of {settings.WEBHOOKS_BATCH_SIZE})",
            "deliveries",
            webhooks.queue,
            lambda: dispatch.deliver().delivered,
            count,
            receiver.process.pid,
            lambda: webhooks.httpx_rate(receiver.url, secret),
        )
    finally:
        receiver.stop()
    return figures


def print_workers(figures: dict) -> None:
    say(
        f"{'':34} {'workers':>7} {'msgs/s':>8} {'/1 worker':>9}   CPU cores: workers, sink, PostgreSQL, the machine"
        "   the limit, as far as CPU time tells"
    )
    for label, found in figures.items():
        one = found["runs"][0].rate
        say(
            f"{label + ': the sink alone':34} {'-':>7} {found['sink_alone']:8,.0f} {'':9}   {cores(found['sink_alone_cpu'])}"
        )
        for run in found["runs"]:
            say(f"{label:34} {run.workers:7} {run.rate:8,.0f} {run.rate / one:8.2f}x   {cores(run.cpu)}   {run.limit}")
        ratios = ", ".join(f"{run.workers}/1 = {run.rate / one:.2f}x" for run in found["runs"][1:])
        say(f"{label:34} {ratios}")


# The run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="bench/load.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="a few seconds a step, 1 and 4 clients, small data")
    parser.add_argument("--json", action="store_true", help="also print the figures as one JSON line at the end")
    parser.add_argument(
        "--workers",
        type=int,
        default=2 * CORES + 1,
        help=f"gunicorn's workers (default 2 x cores + 1: {2 * CORES + 1})",
    )
    parser.add_argument("--seconds", type=float, help="seconds a step (default 10; 2 with --quick)")
    parser.add_argument("--concurrency", help="clients per step, e.g. 1,2,4 (default 1,2,4,8,16,32; 1,4 with --quick)")
    parser.add_argument("--accounts", type=int, help="accounts seeded (default 20000; 2000 with --quick)")
    parser.add_argument(
        "--messages", type=int, help="e-mails and webhooks per worker run (default 2000; 300 with --quick)"
    )
    parser.add_argument(
        "--conn-max-age", type=int, help="the server's CONN_MAX_AGE (default: the product's, from the environment)"
    )
    args = parser.parse_args(argv)
    quick = args.quick
    seconds = args.seconds or (2.0 if quick else 10.0)
    concurrencies = (
        [int(n) for n in args.concurrency.split(",")] if args.concurrency else ([1, 4] if quick else CONCURRENCIES)
    )
    accounts = args.accounts or (2_000 if quick else 20_000)
    messages = args.messages or (300 if quick else 2_000)
    if args.workers < 1 or seconds <= 0 or min(concurrencies) < 1 or accounts < 10 or messages < 1:
        parser.error("--workers, --seconds, --concurrency, --accounts and --messages must be positive")
    concurrencies.sort()

    os.chdir(ROOT)
    # A short path, so the socket lives in the data directory.
    workdir = Path(tempfile.mkdtemp(prefix="lc-load-"))
    pgdata = workdir / "pg"
    os.environ["LIFECYCLE_PGDATA"] = str(pgdata)
    from lifecycle.ops import embedded_db

    server = None
    figures: dict = {"ok": False}
    try:
        began = time.monotonic()
        say(f"embedded PostgreSQL in {pgdata}; migrating")
        databases = embedded_db.ensure_running(pgdata)
        env = product_settings(databases, static_root=workdir / "static", conn_max_age=args.conn_max_age)
        os.environ.update(env)
        os.environ["WEBHOOKS_ALLOW_PRIVATE_URLS"] = "true"  # the webhook receiver is on loopback
        from django.core.management import call_command
        from django.db import connection

        import bench.django_setup  # noqa: F401 (Django set up with the environment above)

        call_command("migrate", interactive=False, verbosity=0)
        with connection.cursor() as cursor:
            cursor.execute("SELECT version()")
            version = cursor.fetchone()[0].split(" on ")[0]
        say(f"seeding {accounts:,} accounts and {3 * accounts:,} audit rows")
        data = seed(accounts)
        call_command("collectstatic", interactive=False, verbosity=0)
        connection.close()
        server = Gunicorn(workers=args.workers, env=env, log=workdir / "gunicorn.log")
        from django.conf import settings
        from django.contrib.staticfiles.storage import staticfiles_storage

        # The name a page links (hashed by collectstatic's manifest), as a browser asks for it.
        static_file = (
            staticfiles_storage.url("admin/css/base.css")
            if "whitenoise.middleware.WhiteNoiseMiddleware" in settings.MIDDLEWARE
            else None
        )
        say(f"set up in {time.monotonic() - began:.0f} s")
        load_before = os.getloadavg()
        say()
        say(
            f"{version}; gunicorn {' '.join(server.command[3:])}"
            f" ({'config ' + str(server.config.relative_to(ROOT)) + ', ' if server.config.exists() else ''}{server.kind});"
            f" DEBUG off, CONN_MAX_AGE {settings.DATABASES['default']['CONN_MAX_AGE']}"
        )
        say(
            f"data: {accounts:,} accounts (40% provisioned, 50% active, 10% suspended), {3 * accounts:,} audit rows;"
            f" {seconds:g} s a step; clients {', '.join(map(str, concurrencies))}"
        )
        say(
            f"limits raised for the run (every client is 127.0.0.1): LIMIT_* = {RAISED_LIMIT} an hour,"
            f" API_REQUESTS_PER_MINUTE = {RAISED_API_RATE}"
        )
        say(
            f"every figure below is measured in this run, on this machine's {CORES} cores, shared by the load"
            f" generator (this process), gunicorn, PostgreSQL and the sinks; load average before:"
            f" {load_before[0]:.1f}"
        )
        if static_file is None:
            say("no static file measured: WhiteNoise is not in MIDDLEWARE")
        say()

        site = Site(server.url, data, static_file=static_file)
        postmaster = postmaster_pid()
        meter = CpuMeter(
            **{
                "load generator": own_cpu,
                "gunicorn": lambda: tree_cpu(server.process.pid),
                "PostgreSQL": lambda: tree_cpu(postmaster),
                "machine": machine_cpu,
            }
        )
        say("web load:")
        steps = asyncio.run(web_load(site, concurrencies, seconds, args.workers, meter))
        server.stop()
        in_process = provision_in_process(data.key, seconds)
        baseline = steps["GET /recover/"][0]
        say()
        say(f"the baseline: GET /recover/ at {baseline.clients} client(s), {baseline.rate:,.1f} req/s (/base = 1.00x)")
        bends = print_web(steps, baseline)
        say()
        references = print_api_references(steps, in_process)

        say()
        say(f"workers ({messages:,} messages a run, each run from a full queue):")
        workers = mail_and_webhooks(messages)
        say()
        print_workers(workers)
        load_after = os.getloadavg()
        say()
        say(
            f"load average before {load_before[0]:.1f}, after {load_after[0]:.1f}; {time.monotonic() - began:.0f} s in all"
        )

        errors = sum(step.errors for rows in steps.values() for step in rows)
        figures = {
            "ok": errors == 0,
            "version": version,
            "cores": CORES,
            "gunicorn": server.command[3:],
            "conn_max_age": settings.DATABASES["default"]["CONN_MAX_AGE"],
            "accounts": accounts,
            "seconds": seconds,
            "concurrencies": concurrencies,
            "limits_raised": {"LIMIT_*": RAISED_LIMIT, "API_REQUESTS_PER_MINUTE": RAISED_API_RATE},
            "load_average": [load_before[0], load_after[0]],
            "baseline": {"endpoint": baseline.endpoint, "clients": baseline.clients, "rate": baseline.rate},
            "endpoints": {label: [asdict(step) for step in rows] for label, rows in steps.items()},
            "bends": bends,
            "api_references": references,
            "errors": errors,
            "workers": {
                label: {**found, "runs": [asdict(run) for run in found["runs"]]} for label, found in workers.items()
            },
        }
        if args.json:
            print(json.dumps(figures), flush=True)
    finally:
        if server is not None:
            server.stop()
        from django.apps import apps

        if apps.ready:
            from django.db import connections

            connections.close_all()
        embedded_db.stop(pgdata, delete=True)
        shutil.rmtree(workdir, ignore_errors=True)
    return 0 if figures["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
