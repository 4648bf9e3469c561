"""Webhook delivery throughput and latency against an HTTP receiver on loopback (in a process of its own).

    .venv/bin/python bench/webhooks.py [--events 2000] [--repeat 5] [--latency-samples 50] [--quick]

Runs on a scratch database (``<name>_bench``, created and dropped). Prints, in one run:
- dispatch throughput (deliveries/s: claim, sign, POST, record) against plain httpx posting the
  same pre-signed bodies over one keep-alive connection with ``httpx.Client.post`` (the ratio, the
  median of ``--repeat`` rounds measured back to back; the aim is at least 0.7), and against the
  same posts made the way the dispatcher makes them, straight to httpx's transport (that ratio is
  the cost of claiming, signing and recording alone);
- the CPU time each delivery costs, this process, its PostgreSQL backend and the receiver together,
  against the transport's posts (on a shared machine, steadier than the rates);
- claim-and-record throughput with sending stubbed out;
- latency from the commit of a new account to the receiver getting its webhook (p50, p99), with
  listen_webhooks running.
"""

import argparse
import base64
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ["WEBHOOKS_ALLOW_PRIVATE_URLS"] = "true"  # the receiver is on loopback
# One key for this process and the listener it starts (unset, each would derive its own from SECRET_KEY).
os.environ["WEBHOOK_SECRET_KEYS"] = "bench:" + base64.b64encode(os.urandom(32)).decode()

import bench.django_setup  # noqa: F401 (Django set up with the settings above)

# isort: split
import httpx
from django.conf import settings
from django.db import connection, connections

from accounts.services import account_provision
from bench import ROOT
from bench.figures import percentiles
from bench.scratch import scratch_database
from platform_events.outbox.models import EventType, OutboxEvent
from platform_events.webhooks import dispatch, http
from platform_events.webhooks.endpoints import endpoint_create
from platform_events.webhooks.signing import signature_headers
from tests.smtp import free_port
from tests.support import database_url_for_tests, start_manage, wait_for


class Receiver:
    """tests/webhook_receiver.py in a process of its own, appending each arrival's time to a file."""

    def __init__(self):
        self.port = free_port()
        self.times = Path(tempfile.mkstemp(prefix="webhook-times-")[1])
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.webhook_receiver", "--port", str(self.port), "--times", str(self.times)],
            cwd=ROOT,
        )
        wait_for(self._up, timeout=30, message="the receiver")

    def _up(self) -> bool:
        try:
            httpx.post(self.url, content=b"{}")
            return True
        except httpx.HTTPError:
            return False

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def arrivals(self) -> list[float]:
        return [float(line) for line in self.times.read_text().split()]

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)
        self.times.unlink()


def queue(count: int) -> None:
    """``count`` account.created events, each queued for the one endpoint."""
    with connections["owner"].cursor() as cursor:
        cursor.execute("TRUNCATE accounts, tokens, outbox_events, webhook_deliveries RESTART IDENTITY CASCADE")
        cursor.execute(
            "INSERT INTO accounts (email, login) SELECT 'user' || g || '@example.com', 'user' || g"
            " FROM generate_series(1, %s) g",
            [count],
        )
        cursor.execute("ANALYZE webhook_deliveries")  # as autovacuum would after such an insert


class CpuClock:
    """CPU seconds of this process, its PostgreSQL backend and the receiver, read from /proc."""

    TICK = os.sysconf("SC_CLK_TCK")

    def __init__(self, receiver: "Receiver"):
        self.receiver = receiver
        self.spent: list[float] = []  # microseconds per delivery of the last measure(): ours, PostgreSQL, receiver

    def now(self) -> tuple[float, float, float]:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            backend = cursor.fetchone()[0]
        return time.process_time(), self._process(backend), self._process(self.receiver.process.pid)

    def _process(self, pid: int) -> float:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / self.TICK  # utime + stime

    def measure(self, count: int, before: tuple[float, float, float]) -> None:
        self.spent = [(after - start) * 1e6 / count for start, after in zip(before, self.now(), strict=True)]


def dispatch_rate(count: int, cpu: CpuClock | None = None) -> float:
    before = cpu.now() if cpu else None
    started = time.perf_counter()
    result = dispatch.deliver()
    elapsed = time.perf_counter() - started
    if cpu:
        cpu.measure(count, before)
    assert result.delivered == count, result
    return count / elapsed


def print_cpu(cpu_ratios: list[tuple[float, dict[str, list[float]]]]) -> None:
    """The median round's CPU per delivery, dispatch against the transport's posts."""
    cpu_ratio, spent = sorted(cpu_ratios, key=lambda r: r[0])[len(cpu_ratios) // 2]
    ours, theirs = spent["dispatch"], spent["transport"]
    print(
        f"CPU per delivery, dispatch         {sum(ours):9,.0f} µs  (this process {ours[0]:,.0f}, PostgreSQL"
        f" {ours[1]:,.0f}, receiver {ours[2]:,.0f})"
    )
    print(
        f"CPU per post, httpx transport      {sum(theirs):9,.0f} µs  (this process {theirs[0]:,.0f},"
        f" receiver {theirs[2]:,.0f})   transport / dispatch = {cpu_ratio:.2f}x (median of {len(cpu_ratios)})"
    )


def httpx_rate(url: str, secret: str) -> float:
    """The same bodies, signed beforehand, posted one after the other over one connection."""
    requests = presigned(secret)
    started = time.perf_counter()
    with httpx.Client() as client:
        for body, headers in requests:
            client.post(url, content=body, headers=headers).raise_for_status()
    return len(requests) / (time.perf_counter() - started)


def transport_rate(url: str, secret: str, cpu: CpuClock | None = None) -> float:
    """The same, straight to httpx's transport as the dispatcher posts (no client: no cookie jar,
    redirect handling or default headers)."""
    requests = presigned(secret)
    timeout = httpx.Timeout(10).as_dict()
    before = cpu.now() if cpu else None
    started = time.perf_counter()
    with httpx.HTTPTransport() as transport:
        for body, headers in requests:
            request = httpx.Request("POST", url, content=body, headers=headers, extensions={"timeout": timeout})
            response = transport.handle_request(request)
            response.read()
            response.close()
            assert response.is_success, response.status_code
    elapsed = time.perf_counter() - started
    if cpu:
        cpu.measure(len(requests), before)
    return len(requests) / elapsed


def presigned(secret: str) -> list[tuple[bytes, dict[str, str]]]:
    bodies = [(str(event.id), event_body(event)) for event in OutboxEvent.objects.order_by("seq")]
    return [
        (
            body,
            {
                **signature_headers(msg_id=msg_id, timestamp=datetime.now(UTC), body=body, secrets=[secret]),
                "content-type": "application/json",
            },
        )
        for msg_id, body in bodies
    ]


def event_body(event: OutboxEvent) -> bytes:
    with connection.cursor() as cursor:
        cursor.execute("SELECT payload::text FROM outbox_events WHERE id = %s", [event.id])
        return cursor.fetchone()[0].encode()


def latencies(receiver: Receiver, samples: int, prefix: str) -> list[float]:
    found = []
    for n in range(samples):
        seen = len(receiver.arrivals())
        account_provision(email=f"{prefix}{n}@example.com", login=f"{prefix}{n}", actor=None)
        committed = time.time()
        wait_for(lambda seen=seen: len(receiver.arrivals()) > seen, timeout=30, interval=0.0005, message="the webhook")
        found.append(receiver.arrivals()[seen] - committed)
        time.sleep(0.02)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5, help="dispatch/httpx pairs; the median is reported")
    parser.add_argument("--latency-samples", type=int, default=50)
    parser.add_argument("--quick", action="store_true", help="500 events, 3 rounds, 10 latency samples")
    args = parser.parse_args()
    if args.quick:
        args.events, args.repeat, args.latency_samples = 500, 3, 10

    with scratch_database():
        receiver = Receiver()
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT version()")
                print(
                    cursor.fetchone()[0].split(" on ")[0],
                    f"- {args.events} events, batches of {settings.WEBHOOKS_BATCH_SIZE}",
                    "(--quick: small sizes, a smoke run, not figures)" if args.quick else "",
                )
            endpoint, secret = endpoint_create(
                url=receiver.url, events=[EventType.ACCOUNT_CREATED], owner="bench", description="", actor=None
            )

            # Rounds measured back to back, the order turned each round, so a slower minute of the shared
            # machine weighs on every side of a ratio; the median round (by the first ratio) is the figure.
            rounds = []
            cpu = CpuClock(receiver) if Path("/proc/self/stat").exists() else None  # Linux's /proc
            cpu_ratios, cpu_spent = [], {}
            for round_ in range(args.repeat):
                queue(args.events)
                rates = {}
                order = ["dispatch", "client", "transport"]
                for name in order[round_ % 3 :] + order[: round_ % 3]:
                    if name == "dispatch":
                        rates[name] = dispatch_rate(args.events, cpu)
                        cpu_spent[name] = cpu.spent if cpu else None
                        queue(args.events)
                    elif name == "client":
                        rates[name] = httpx_rate(receiver.url, secret)
                    else:
                        rates[name] = transport_rate(receiver.url, secret, cpu)
                        cpu_spent[name] = cpu.spent if cpu else None
                ours, client, transport = rates["dispatch"], rates["client"], rates["transport"]
                rounds.append((ours / client, ours / transport, ours, client, transport))
                if cpu:
                    cpu_ratios.append((sum(cpu_spent["transport"]) / sum(cpu_spent["dispatch"]), cpu_spent))
                cpu_spent = {}
                print(
                    f"  round {round_ + 1}: dispatch {ours:6,.0f}/s, httpx client {client:6,.0f}/s ({ours / client:.2f}x),"
                    f" httpx transport {transport:6,.0f}/s ({ours / transport:.2f}x)",
                    file=sys.stderr,
                )
            by_client, by_transport, ours, client, transport = sorted(rounds)[len(rounds) // 2]
            print(f"dispatch over HTTP                 {ours:9,.0f} deliveries/s")
            print(
                f"plain httpx, pre-signed            {client:9,.0f} posts/s        dispatch / httpx = {by_client:.2f}x"
                f" (median of {len(rounds)} rounds)"
            )
            print(
                f"httpx transport, pre-signed        {transport:9,.0f} posts/s        dispatch / transport = {by_transport:.2f}x"
                f" (that round; median of all {sorted(r[1] for r in rounds)[len(rounds) // 2]:.2f}x,"
                f" rounds {min(r[1] for r in rounds):.2f}-{max(r[1] for r in rounds):.2f})"
            )

            if cpu_ratios:
                print_cpu(cpu_ratios)

            queue(args.events)
            real_post = http.post
            http.post = lambda transport, url, body, headers: http.Attempt("delivered", 204, "", 0)
            try:
                stubbed = dispatch_rate(args.events)
            finally:
                http.post = real_post
            print(f"claim + sign + record, no sending  {stubbed:9,.0f} deliveries/s")

            queue(0)
            env = {
                "DATABASE_URL": database_url_for_tests(),
                "WEBHOOKS_ALLOW_PRIVATE_URLS": "true",
                "WEBHOOK_SECRET_KEYS": os.environ["WEBHOOK_SECRET_KEYS"],
            }
            listener = start_manage("listen_webhooks", "--poll-seconds", "300", **env)
            try:
                latencies(receiver, 3, prefix="warm")
                samples = latencies(receiver, args.latency_samples, prefix="listen")
                print(f"commit -> received, listen_webhooks        {percentiles(samples)}")
            finally:
                listener.terminate()
                listener.wait(timeout=30)
        finally:
            receiver.stop()


if __name__ == "__main__":
    main()
