"""The soak test: the whole product under load while it maintains itself, with a worker killed and
the database restarted.

    .venv/bin/python bench/soak.py [--clients 8] [--seconds 300] [--json] [--keep-logs]
    .venv/bin/python -m bench.soak [--clients 8] [--seconds 300] [--json] [--keep-logs]

Its defaults are the long form (docs/measurements.md, "Soak", has a run's figures); the suite runs
the short form, 4 clients for 20 s (tests/bench/test_soak.py).

Everything runs on an embedded PostgreSQL of its own (a new data directory, removed afterwards)
and a real SMTP server (aiosmtpd on loopback, in this process). The product runs as it would in
production, each part a process of its own with DEBUG off, naming the database by DATABASE_URL (so
none can start it again during the outage): the web server (runserver --noreload), two
``listen_mailroom`` workers and the django-q2 cluster.

- **Clients** (threads): each provisions accounts through the services, reads the activation e-mail
  and opens its link through the web server (GET, then the POST that activates with a password), asks
  for recovery on ``/recover/`` (the cluster runs the queued request), reads that e-mail and sets a new
  password through its link; again and again until the time is up.
- **Upkeep** meanwhile: this month's audit partition is absent at the start (as on an install whose
  month was not made ahead), and ``ensure_audit_partitions`` makes it under load; ``cleanup``
  deletes old abandoned sign-ups made before the run (and whatever else its rules no longer keep);
  ``drain_mailroom`` runs as cron would, beside the listeners and the cluster's schedule.
- **Disruptions**: one listener is killed (SIGKILL) and started again; later the database is
  stopped and started again.

At the end it waits for the mail to settle and counts: requests made and failed (and why), e-mails
expected, received, lost and doubled, audit rows against the changes in the tables. A failure is
allowed only while the database is down, and only as the 503 page (never a traceback); an e-mail
may arrive twice only when its worker was killed or the database went away between the SMTP
server's acceptance and the sent-mark (the mailroom sends at least once: docs/mailroom.md, "How a run drains").
Exit status 0 when every promise held, 1 otherwise.
"""

import argparse
import email.policy
import http.cookiejar
import json
import logging
import os
import re
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter, defaultdict
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import ROOT

# The long form by default; tests/bench/test_soak.py runs 4 clients for 20 s.
CLIENTS, SECONDS = 8, 300
# The mailroom's lease, short so that what a killed worker held is sent again within the run; the
# settings want it at least 8 × EMAIL_TIMEOUT.
LEASE_SECONDS = 10
EMAIL_TIMEOUT = 1
OLD_SIGN_UPS = 200
# Mail runs at once at most: two listeners, a cron-style drain_mailroom, the cluster's two workers.
MAIL_RUNS = 5
# A request that ended this long after the database was back still counts as in the outage.
OUTAGE_GRACE = 2.0
LIMIT_NAMES = ["SIGN_UP_PER_ADDRESS", "SIGN_UP_PER_CLIENT", "MAIL_PER_IDENTIFIER", "MAIL_PER_CLIENT",
               "MAIL_PER_ACCOUNT", "CODE_PER_IDENTIFIER", "CODE_PER_CLIENT"]  # fmt: skip
IN_OUTAGE = "(refused while the database was down)"
PASSWORD = {"password": "soak test password 1", "password_again": "soak test password 1"}
LINK = re.compile(r"https?://[^/\s]+(/(?:activate|recover)/[A-Za-z0-9_-]{43})")
CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


@dataclass
class Failure:
    what: str
    why: str
    started: float
    ended: float
    allowed: bool = False


@dataclass
class Window:
    name: str
    started: float
    ended: float = float("inf")


@dataclass
class Tally:
    lock: threading.Lock = field(default_factory=threading.Lock)
    requests: Counter = field(default_factory=Counter)
    failures: list[Failure] = field(default_factory=list)
    done: Counter = field(default_factory=Counter)

    def count(self, what: str) -> None:
        with self.lock:
            self.requests[what] += 1

    def fail(self, failure: Failure) -> None:
        with self.lock:
            self.failures.append(failure)

    def finished(self, what: str) -> None:
        with self.lock:
            self.done[what] += 1


# Mail


class Mailbox:
    """The SMTP server's handler: every accepted message by recipient, with its link and token id."""

    def __init__(self):
        self.lock = threading.Condition()
        self.by_recipient: dict[str, list[tuple[int, str]]] = defaultdict(list)
        self.accepted: dict[int, list[float]] = defaultdict(list)  # token id -> acceptance times

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        token_id = int(message["X-Lifecycle-Token"])
        # A notice ("your password was changed") carries no link: it is counted as every e-mail is.
        found = LINK.search(message.get_body(("plain",)).get_content())
        link = found.group(1) if found else ""
        with self.lock:
            self.accepted[token_id].append(time.monotonic())
            for recipient in envelope.rcpt_tos:
                self.by_recipient[recipient.lower()].append((token_id, link))
            self.lock.notify_all()
        return "250 Message accepted for delivery"

    def newest(self, recipient: str, kind: str, *, newer_than: int = 0, timeout: float) -> tuple[int, str] | None:
        """The newest e-mail of ``kind`` ("activate", "recover") to ``recipient`` with a token id
        above ``newer_than``, waiting up to ``timeout``."""
        deadline = time.monotonic() + timeout
        with self.lock:
            while True:
                found = [m for m in self.by_recipient[recipient] if m[1].startswith(f"/{kind}/") and m[0] > newer_than]
                if found:
                    return max(found)
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                self.lock.wait(remaining)


# The web, as a browser


class Browser:
    """One person's browser: cookies kept, the CSRF token taken from the form it submits."""

    def __init__(self, base_url: str):
        self.base_url = base_url
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))

    def request(self, path: str, data: dict | None = None) -> tuple[int, str]:
        body = urllib.parse.urlencode(data).encode() if data is not None else None
        request = urllib.request.Request(self.base_url + path, data=body)
        try:
            with self.opener.open(request, timeout=30) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode(errors="replace")


class Soak:
    def __init__(self, *, clients: int, seconds: float, workdir: Path, pgdata: Path, out=sys.stdout):
        self.clients, self.seconds, self.workdir, self.pgdata, self.out = clients, seconds, workdir, pgdata, out
        self.tally = Tally()
        self.windows: list[Window] = []
        self.processes: dict[str, subprocess.Popen] = {}
        self.stopping = threading.Event()
        self.mailbox = Mailbox()
        self.cluster_task: str | None = None
        self.log_sizes_at_restart: dict[str, int] = {}
        self.figures: dict = {}
        # The old sign-ups' account ids and token ids (text, as audit_events.resource_id holds them).
        self.old_accounts: list[str] = []
        self.old_tokens: list[str] = []

    def say(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    # Set-up

    def environment(self) -> dict:
        return {**os.environ, **self.product_env}

    def start_product(self) -> None:
        from aiosmtpd.controller import Controller

        from tests.smtp import free_port

        smtp_port, self.web_port = free_port(), free_port()
        self.smtp = Controller(self.mailbox, hostname="127.0.0.1", port=smtp_port)
        self.smtp.start()
        self.base_url = f"http://127.0.0.1:{self.web_port}"
        from lifecycle.ops import embedded_db

        # As in production: the processes name the database by URL and cannot start it themselves
        # (the embedded mode would start it again at once, ending the outage the soak makes).
        databases = embedded_db.ensure_running(self.pgdata)
        self.product_env = {
            **production_on_loopback(databases, static_root=self.workdir / "static", limit="1000000"),
            "PUBLIC_BASE_URL": self.base_url,
            "EMAIL_URL": f"smtp://127.0.0.1:{smtp_port}",
            "EMAIL_TIMEOUT": str(EMAIL_TIMEOUT),
            "MAILROOM_LEASE_SECONDS": str(LEASE_SECONDS),
            "LOG_LEVEL": "INFO",
        }
        os.environ.update(self.product_env)
        import bench.django_setup  # noqa: F401 (Django set up with the product's environment above)

        logging.getLogger("django-q").setLevel(logging.WARNING)  # its "Enqueued" lines, in this process
        self.say(f"embedded PostgreSQL in {self.pgdata}; migrating")
        self.manage_checked("migrate", "--no-input")
        self.manage_checked("collectstatic", "--no-input")
        self.month_partition = self.remove_this_months_partition()
        self.make_old_sign_ups()
        self.start("web", "runserver", f"127.0.0.1:{self.web_port}", "--noreload")
        self.start("listener-1", "listen_mailroom", "--poll-seconds", "5")
        self.start("listener-2", "listen_mailroom", "--poll-seconds", "5")
        self.start("cluster", "qcluster")
        self.wait_for_web()

    def manage_checked(self, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=self.environment(),
            capture_output=True,
            text=True,
            timeout=300,
        )
        if done.returncode:
            raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{done.stdout}{done.stderr}")
        return done.stdout

    def start(self, name: str, *args: str) -> None:
        log = open(self.workdir / f"{name}.log", "a")  # noqa: SIM115 (the process keeps it)
        self.processes[name] = subprocess.Popen(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=self.environment(),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait_for_web(self) -> None:
        browser = Browser(self.base_url)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with suppress(OSError):
                if browser.request("/recover/")[0] == 200:
                    return
            time.sleep(0.2)
        raise RuntimeError("the web server did not answer within 60 s:\n" + self.log_tail("web"))

    def remove_this_months_partition(self) -> str:
        """This month as on an install whose month was not made ahead: its rows go to the default
        partition until the upkeep makes it, under load."""
        from datetime import date

        from platform_events.db.direct_connection import direct_connection

        name = f"audit_events_{date.today():%Y_%m}"
        with direct_connection("owner", autocommit=True) as owner:
            owner.execute(f"ALTER TABLE audit_events DETACH PARTITION {name}")
            owner.execute(f"DROP TABLE {name}")
        return name

    def make_old_sign_ups(self) -> None:
        """Sign-ups of 30 days ago that never activated, for cleanup to delete during the run."""
        from django.db import connections, transaction

        from platform_events.db.history import history_rewrite

        with transaction.atomic(using="owner"), history_rewrite(using="owner"):
            with connections["owner"].cursor() as cursor:
                cursor.execute(
                    "INSERT INTO accounts (email, login) SELECT 'old' || g || '@example.com', 'old' || g"
                    " FROM generate_series(1, %s) g",
                    [OLD_SIGN_UPS],
                )
                cursor.execute("UPDATE accounts SET created_at = now() - interval '30 days' WHERE login LIKE 'old%%'")
                cursor.execute(
                    "UPDATE tokens SET created_at = now() - interval '30 days',"
                    " expires_at = now() - interval '30 days' + interval '15 minutes'"
                    " WHERE account IN (SELECT id FROM accounts WHERE login LIKE 'old%%')"
                )
                cursor.execute("SELECT id::text FROM accounts WHERE login LIKE 'old%%'")
                self.old_accounts = [row[0] for row in cursor.fetchall()]
                cursor.execute(
                    "SELECT id::text FROM tokens WHERE account IN (SELECT id FROM accounts WHERE login LIKE 'old%%')"
                )
                self.old_tokens = [row[0] for row in cursor.fetchall()]

    # The load

    def run(self) -> None:
        started = time.monotonic()
        self.deadline = started + self.seconds
        clients = [threading.Thread(target=self.client, args=(n,), name=f"client-{n}") for n in range(self.clients)]
        upkeep = threading.Thread(target=self.run_upkeep, name="upkeep")
        for thread in [*clients, upkeep]:
            thread.start()
        self.say(f"{self.clients} clients for {self.seconds:.0f} s, against {self.base_url}")
        self.disrupt(started)
        for thread in clients:
            thread.join()
        self.stopping.set()
        upkeep.join()
        self.figures["load_seconds"] = round(time.monotonic() - started, 1)

    def disrupt(self, started: float) -> None:
        """At 40 % of the run one listener is killed and started again; at 60 % the database restarts."""
        self.sleep_until(started + 0.4 * self.seconds)
        victim = self.processes["listener-1"]
        os.killpg(victim.pid, signal.SIGKILL)
        victim.wait()
        self.windows.append(Window("kill", time.monotonic(), time.monotonic()))
        self.say(f"  {self.elapsed(started)}: killed listener-1 (SIGKILL); starting it again")
        self.start("listener-1", "listen_mailroom", "--poll-seconds", "5")

        from lifecycle.ops import embedded_db

        self.sleep_until(started + 0.6 * self.seconds)
        self.log_sizes_at_restart = {name: len(self.log(name)) for name in self.processes}
        outage = Window("database restart", time.monotonic())
        self.windows.append(outage)
        embedded_db.stop(self.pgdata)
        self.say(f"  {self.elapsed(started)}: database stopped")
        time.sleep(2)
        embedded_db.ensure_running(self.pgdata)
        outage.ended = time.monotonic()
        self.say(f"  {self.elapsed(started)}: database running again ({outage.ended - outage.started:.1f} s down)")
        # The cluster must have come through too: it runs a drain queued now.
        from django.db import connection
        from django_q.tasks import async_task

        connection.close()
        self.cluster_task = async_task("tokens.tasks.drain_mailroom")

    def sleep_until(self, moment: float) -> None:
        time.sleep(max(0.0, moment - time.monotonic()))

    @staticmethod
    def elapsed(started: float) -> str:
        return f"{time.monotonic() - started:5.1f} s"

    def in_outage(self, started: float, ended: float) -> bool:
        return any(
            w.name == "database restart" and started <= w.ended + OUTAGE_GRACE and ended >= w.started
            for w in self.windows
        )

    # A client

    def client(self, number: int) -> None:
        from django.db import connection

        n = 0
        try:
            while time.monotonic() < self.deadline:
                n += 1
                self.one_account(f"soak{number}x{n}", f"soak{number}x{n}@example.com")
        finally:
            connection.close()

    def one_account(self, login: str, address: str) -> None:
        browser = Browser(self.base_url)
        if not self.provision(login, address):
            return
        mail = self.mailbox.newest(address, "activate", timeout=LEASE_SECONDS + 30)
        if mail is None:
            self.tally.fail(
                Failure("activation e-mail", f"none arrived for {login}", time.monotonic(), time.monotonic())
            )
            return
        if not self.confirm(browser, mail[1], PASSWORD, done="Your account is active", what="activate"):
            return
        self.tally.finished("activated")
        newest = 0
        for _ in range(5):  # a newer e-mail than the one opened replaced it: use that one
            if not self.submit(browser, "/recover/", {"identifier": login}, done="Check your e-mail", what="recover"):
                return
            self.tally.finished("recovery asked")
            mail = self.mailbox.newest(address, "recover", newer_than=newest, timeout=LEASE_SECONDS + 30)
            if mail is None:
                self.tally.fail(
                    Failure("recovery e-mail", f"none arrived for {login}", time.monotonic(), time.monotonic())
                )
                return
            newest = mail[0]
            outcome = self.confirm(browser, mail[1], PASSWORD, done="Your password is changed", what="recover link")
            if outcome != "replaced":
                break
        if outcome:
            self.tally.finished("recovered")

    def provision(self, login: str, address: str) -> bool:
        from django.db import DatabaseError, close_old_connections, connection

        from accounts.errors import LoginTaken
        from accounts.services import account_provision

        for _ in range(100):
            self.tally.count("service: account_provision")
            started = time.monotonic()
            # As Django does around each request: a connection the restart broke is not reused.
            close_old_connections()
            try:
                account_provision(email=address, login=login, actor=None)
            except LoginTaken:  # an earlier try committed although its answer was lost
                break
            except DatabaseError as error:
                connection.close()  # a new session next time
                ended = time.monotonic()
                allowed = self.in_outage(started, ended)
                self.tally.fail(
                    Failure("service: account_provision", " ".join(str(error).split())[:200], started, ended, allowed)
                )
                if not allowed:
                    return False
                time.sleep(0.3)
                continue
            break
        else:
            return False
        self.tally.finished("provisioned")
        return True

    def confirm(self, browser: Browser, path: str, data: dict, *, done: str, what: str) -> str | bool:
        """Open an e-mail's link (GET: the form that asks for a password), then POST it."""
        return self.submit(browser, path, data, done=done, what=what)

    def submit(self, browser: Browser, path: str, data: dict, *, done: str, what: str) -> str | bool:
        """GET the form, POST it with its CSRF token; retried while the database is down. Returns
        True when done, "replaced" when a newer e-mail replaced this link, False on a failure."""
        refused_in_outage = False
        for _ in range(100):
            status, page = self.http(browser, f"GET {what}", path)
            if page == IN_OUTAGE:
                time.sleep(0.3)
                continue
            if status != 200 or not (token := CSRF.search(page)):
                return False
            started = time.monotonic()
            self.tally.count(f"POST {what}")
            try:
                status, page = browser.request(path, {**data, "csrfmiddlewaretoken": token.group(1)})
            except OSError as error:
                status, page = 0, f"{type(error).__name__}: {error}"
            ended = time.monotonic()
            if status == 200 and done in page:
                return True
            if status == 503 and "Back in a moment" in page and "Traceback" not in page:
                allowed = self.in_outage(started, ended)
                self.tally.fail(Failure(f"POST {what}", "503 Back in a moment", started, ended, allowed))
                if not allowed:
                    return False
                refused_in_outage = True
                time.sleep(0.3)
                continue
            if status == 409 and "Already used" in page and refused_in_outage:
                return True  # the try the 503 answered had committed: done all the same
            if status == 410 and "Replaced by a newer e-mail" in page:
                return "replaced"
            self.tally.fail(Failure(f"POST {what}", f"{status} {heading(page)}", started, ended))
            return False
        return False

    def http(self, browser: Browser, what: str, path: str) -> tuple[int, str]:
        self.tally.count(what)
        started = time.monotonic()
        try:
            status, page = browser.request(path)
        except OSError as error:
            status, page = 0, f"{type(error).__name__}: {error}"
        ended = time.monotonic()
        if status == 503 and "Back in a moment" in page and "Traceback" not in page:
            # A link's page reads its token (whose account it is): refused while the database is down.
            allowed = self.in_outage(started, ended)
            self.tally.fail(Failure(what, "503 Back in a moment", started, ended, allowed))
            return status, IN_OUTAGE if allowed else page
        if status != 200:
            self.tally.fail(Failure(what, f"{status} {heading(page)}", started, ended))
        return status, page

    # Upkeep, as the schedules and cron would run it

    def run_upkeep(self) -> None:
        started = time.monotonic()
        partition_at = started + 0.25 * self.seconds
        made = False
        while not self.stopping.is_set():
            if not made and time.monotonic() >= partition_at:
                made = self.upkeep_command("ensure_audit_partitions")
                if not made:  # refused by the restart: again soon, as its schedule would run it again
                    self.stopping.wait(0.5)
                    continue
            self.upkeep_command("cleanup", "--batch-size", "20")
            self.upkeep_command("drain_mailroom")
            self.stopping.wait(1.0)
        if not made:
            # On a slow machine a round of commands takes seconds, and the restart can take the last
            # attempt: the schedule's next run, once the load has stopped.
            self.upkeep_command("ensure_audit_partitions")

    def upkeep_command(self, *args: str) -> bool:
        what = f"manage.py {args[0]}"
        self.tally.count(what)
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, "manage.py", *args], cwd=ROOT, env=self.environment(), capture_output=True, text=True
        )
        ended = time.monotonic()
        output = (done.stdout + done.stderr).strip()
        if done.returncode:
            allowed = self.in_outage(started, ended) and "Traceback" not in output
            why = " | ".join(output.splitlines()[-3:]) if output else f"exit {done.returncode}"
            self.tally.fail(Failure(what, why, started, ended, allowed))
        return done.returncode == 0

    # The end: let the mail settle, then count

    def settle(self) -> None:
        """Wait until nothing of the clients' is left to mail (what the killed worker held comes back
        when its lease runs out)."""
        from django_q.tasks import fetch

        deadline = time.monotonic() + 2 * LEASE_SECONDS + 30
        while time.monotonic() < deadline:
            if fetch(self.cluster_task) is None:
                time.sleep(0.5)
                continue
            if not self.owner_rows(
                "SELECT 1 FROM tokens t JOIN accounts a ON a.id = t.account"
                " WHERE a.login LIKE 'soak%%' AND t.mail_state IN ('queued', 'retrying') LIMIT 1"
            ):
                return
            time.sleep(0.5)

    def owner_rows(self, statement: str, params=None) -> list[tuple]:
        from platform_events.db.direct_connection import direct_connection

        with direct_connection("owner", autocommit=True) as owner:
            return owner.execute(statement.replace("%%", "%"), params).fetchall()

    def count(self) -> bool:
        f = self.figures
        tally = self.tally
        f["requests"] = dict(sorted(tally.requests.items()))
        f["requests_total"] = sum(tally.requests.values())
        f["failed_in_outage"] = sum(1 for x in tally.failures if x.allowed)
        failed = [x for x in tally.failures if not x.allowed]
        f["failed_outside_outage"] = len(failed)
        f["failures"] = [f"{x.what}: {x.why}" for x in failed][:20]
        f["outage_failures_by_reason"] = dict(Counter(f"{x.what}: {x.why[:300]}" for x in tally.failures if x.allowed))
        f["completed"] = dict(tally.done)

        rows = self.owner_rows(
            "SELECT t.id, t.mail_state, t.mail_error FROM tokens t JOIN accounts a ON a.id = t.account"
            " WHERE a.login LIKE 'soak%%'"
        )
        tokens = {token_id: state for token_id, state, _ in rows}
        with self.mailbox.lock:
            accepted = {token_id: list(times) for token_id, times in self.mailbox.accepted.items()}
        f["tokens"] = len(tokens)
        f["tokens_by_mail_state"] = dict(Counter(tokens.values()))
        sent = {t for t, state in tokens.items() if state == "sent"}
        f["emails_expected"] = len(sent)
        f["emails_received"] = sum(len(accepted.get(t, [])) for t in tokens)
        # Sent by the record but never received, or never sent at all (still queued, retrying, dead).
        unsent = {t for t, state in tokens.items() if state in ("queued", "retrying", "dead")}
        f["emails_lost"] = sorted({t for t in sent if not accepted.get(t)} | unsent)[:20]
        f["emails_unexpected"] = sorted(t for t in accepted if t not in sent)[:20]
        # A token asked for again while live is mailed again on purpose (/recover/ retried after a 503
        # whose request had committed): its audit row (token.mail_changed to queued) says so.
        resent = Counter(
            int(token_id)
            for (token_id,) in self.owner_rows(
                "SELECT resource_id FROM audit_events WHERE action = 'token.mail_changed'"
                " AND diff_after ->> 'mail_state' = 'queued' AND resource_id = ANY(%s)",
                [[str(t) for t in tokens]],
            )
        )
        f["emails_resent_on_request"] = sum(resent.values())
        doubled = {t: times for t, times in accepted.items() if len(times) > 1 + resent[t]}
        explained = {t for t, times in doubled.items() if self.explains_mark_lost(times[0])}
        f["emails_doubled"] = len(doubled)
        f["emails_doubled_by_disruption"] = len(explained)
        f["emails_doubled_unexplained"] = sorted(set(doubled) - explained)[:20]
        # Sent, its sent-mark lost, then used before the lease let it go out again: the consumption
        # recorded it as sent (tokens/sql/0011). Each must be one a disruption explains.
        used_while_held = {t for t, state, error in rows if state == "sent" and error and "mark was lost" in error}
        f["emails_marked_sent_when_used"] = len(used_while_held)
        f["emails_marked_sent_when_used_unexplained"] = sorted(
            t for t in used_while_held if not (accepted.get(t) and self.explains_mark_lost(accepted[t][0]))
        )[:20]
        # Each run marks every message as soon as the server accepts it: a disruption cuts off at
        # most the one message in flight per run (the killed listener's; each live run's at the restart).
        f["lost_marks"] = len(explained | used_while_held)
        f["lost_marks_bound"] = 1 + MAIL_RUNS

        f["audit"] = self.audit_figures()
        f["processes"] = self.process_figures()
        ok = (
            f["failed_outside_outage"] == 0
            and not f["emails_lost"]
            and not f["emails_unexpected"]
            and not f["emails_doubled_unexplained"]
            and not f["emails_marked_sent_when_used_unexplained"]
            and f["lost_marks"] <= f["lost_marks_bound"]
            and f["audit"]["unexplained"] == 0
            and f["audit"]["missing"] == 0
            and f["audit"]["rows_in_default_partition"] == 0
            and f["audit"]["old_sign_ups_left"] == 0
            and f["audit"]["old_sign_ups_deleted_and_audited"] == len(self.old_accounts) > 0
            and f["audit"]["old_tokens_deleted_and_audited"] == len(self.old_tokens) > 0
            and not f["processes"]["problems"]
            and tally.done["provisioned"] > 0
            and tally.done["recovered"] > 0
        )
        f["ok"] = ok
        return ok

    def explains_mark_lost(self, first_accepted: float) -> bool:
        """A lost sent-mark is the at-least-once of a disruption: the e-mail was accepted just before a
        worker was killed or while the database went away, and its sent-mark never committed."""
        return any(w.started - 2.0 <= first_accepted <= w.ended for w in self.windows)

    def audit_figures(self) -> dict:
        """Every change to the clients' accounts and tokens has its one audit row, and no row is
        left unexplained; the sweep's deletions are audited; the default partition stays empty."""
        changes = dict(
            self.owner_rows(
                "SELECT 'account.created', count(*) FROM accounts WHERE login LIKE 'soak%%'"
                " UNION ALL SELECT 'account.activated', count(*) FROM accounts WHERE login LIKE 'soak%%'"
                "  AND activated_at IS NOT NULL"
                " UNION ALL SELECT 'token.issued', count(*) FROM tokens t JOIN accounts a ON a.id = t.account"
                "  WHERE a.login LIKE 'soak%%'"
                " UNION ALL SELECT 'token.consumed', count(*) FROM tokens t JOIN accounts a ON a.id = t.account"
                "  WHERE a.login LIKE 'soak%%' AND t.consumed_at IS NOT NULL"
                " UNION ALL SELECT 'token.superseded', count(*) FROM tokens t JOIN accounts a ON a.id = t.account"
                "  WHERE a.login LIKE 'soak%%' AND t.superseded_at IS NOT NULL"
                # Each link the clients opened set a password with its consumption.
                " UNION ALL SELECT 'account.password_set', count(*) FROM tokens t JOIN accounts a ON a.id = t.account"
                "  WHERE a.login LIKE 'soak%%' AND t.consumed_at IS NOT NULL"
            )
        )
        rows = dict(
            self.owner_rows(
                "SELECT e.action, count(*) FROM audit_events e WHERE"
                " (e.resource_type = 'account' AND e.resource_id IN"
                "   (SELECT id::text FROM accounts WHERE login LIKE 'soak%%'))"
                " OR (e.resource_type = 'token' AND e.resource_id IN (SELECT t.id::text FROM tokens t"
                "   JOIN accounts a ON a.id = t.account WHERE a.login LIKE 'soak%%'))"
                " GROUP BY e.action"
            )
        )
        # Per resource, not per action: one row missing and another doubled must not cancel out.
        expected = Counter(
            self.owner_rows(
                "SELECT 'account.created', id::text FROM accounts WHERE login LIKE 'soak%%'"
                " UNION ALL SELECT 'account.activated', id::text FROM accounts WHERE login LIKE 'soak%%'"
                "  AND activated_at IS NOT NULL"
                " UNION ALL SELECT 'token.issued', t.id::text FROM tokens t JOIN accounts a ON a.id = t.account"
                "  WHERE a.login LIKE 'soak%%'"
                " UNION ALL SELECT 'token.consumed', t.id::text FROM tokens t JOIN accounts a ON a.id = t.account"
                "  WHERE a.login LIKE 'soak%%' AND t.consumed_at IS NOT NULL"
                " UNION ALL SELECT 'token.superseded', t.id::text FROM tokens t JOIN accounts a ON a.id = t.account"
                "  WHERE a.login LIKE 'soak%%' AND t.superseded_at IS NOT NULL"
                " UNION ALL SELECT 'account.password_set', t.account::text FROM tokens t JOIN accounts a ON a.id = t.account"
                "  WHERE a.login LIKE 'soak%%' AND t.consumed_at IS NOT NULL"
                # A live token asked for again (see emails_resent_on_request).
                " UNION ALL SELECT action, resource_id FROM audit_events WHERE action = 'token.mail_changed'"
                "  AND diff_after ->> 'mail_state' = 'queued' AND resource_id IN (SELECT t.id::text FROM tokens t"
                "  JOIN accounts a ON a.id = t.account WHERE a.login LIKE 'soak%%')"
            )
        )
        found = Counter(
            self.owner_rows(
                "SELECT e.action, e.resource_id FROM audit_events e WHERE"
                " (e.resource_type = 'account' AND e.resource_id IN"
                "   (SELECT id::text FROM accounts WHERE login LIKE 'soak%%'))"
                " OR (e.resource_type = 'token' AND e.resource_id IN (SELECT t.id::text FROM tokens t"
                "   JOIN accounts a ON a.id = t.account WHERE a.login LIKE 'soak%%'))"
            )
        )
        missing = sum((expected - found).values())
        unexplained = sum((found - expected).values())
        # Each old sign-up and each of its tokens deleted with exactly one row giving the sweep's reason
        # (a row missing, doubled or without the reason leaves the count short of the ids made).
        deleted = {
            resource_type: count
            for resource_type, count in self.owner_rows(
                "SELECT e.resource_type, count(*) FILTER (WHERE e.n = 1) FROM (SELECT resource_type, resource_id,"
                "  count(*) AS n FROM audit_events WHERE ((action = 'account.deleted' AND resource_type = 'account'"
                "  AND resource_id = ANY(%s)) OR (action = 'token.deleted' AND resource_type = 'token'"
                "  AND resource_id = ANY(%s))) AND starts_with(reason, 'abandoned sign-up')"
                "  GROUP BY resource_type, resource_id) e GROUP BY e.resource_type",
                [self.old_accounts, self.old_tokens],
            )
        }
        (left,), (default_rows,) = (
            self.owner_rows("SELECT count(*) FROM accounts WHERE login LIKE 'old%%'")[0],
            self.owner_rows("SELECT count(*) FROM audit_events_default")[0],
        )
        (partition,) = self.owner_rows("SELECT to_regclass(%s) IS NOT NULL", [self.month_partition])[0]
        return {
            "changes": changes,
            "rows": rows,
            "missing": missing,
            "unexplained": unexplained,
            "old_sign_ups_deleted_and_audited": deleted.get("account", 0),
            "old_tokens_deleted_and_audited": deleted.get("token", 0),
            "old_sign_ups_left": left,
            "this_months_partition_made": partition,
            "rows_in_default_partition": default_rows,
        }

    def process_figures(self) -> dict:
        problems = [
            f"{name} exited ({process.returncode})"
            for name, process in self.processes.items()
            if process.poll() is not None
        ]
        # Each listener's log says so at every (re)connection: both must have listened again after the restart.
        reconnected = {
            name: self.log(name)[self.log_sizes_at_restart.get(name, 0) :].count("listening on token_insert")
            for name in ("listener-1", "listener-2")
        }
        problems += [
            f"{name} did not listen again after the database restart" for name, n in reconnected.items() if not n
        ]
        from django_q.tasks import fetch

        task = fetch(self.cluster_task)
        if task is None or not task.success:
            problems.append("the django-q2 cluster did not run the drain queued after the database restart")
        return {"problems": problems, "listened_again_after_the_restart": reconnected}

    def log(self, name: str) -> str:
        path = self.workdir / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def log_tail(self, name: str, lines: int = 30) -> str:
        return "\n".join(self.log(name).splitlines()[-lines:])

    def stop_product(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.terminate()  # the process itself, which stops its own children
        for process in self.processes.values():
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
            with suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)  # whatever of its group is left
            process.wait()
        with suppress(AttributeError):
            self.smtp.stop()

    def report(self) -> None:
        f = self.figures
        say = self.say
        say("")
        say(f"set up {f['setup_seconds']} s, load {f['load_seconds']} s, mail settled in {f['settle_seconds']} s")
        say(f"requests made              {f['requests_total']:8,}")
        for what, count in f["requests"].items():
            say(f"  {what:32} {count:8,}")
        say(
            f"failed while the database was down {f['failed_in_outage']:4,}  (each the 503 page or a refused connection)"
        )
        for reason, count in f["outage_failures_by_reason"].items():
            say(f"  {count:5,}  {reason}")
        say(f"failed otherwise           {f['failed_outside_outage']:8,}")
        for failure in f["failures"]:
            say(f"  {failure}")
        say(f"completed                  {dict(f['completed'])}")
        say(
            f"e-mails expected {f['emails_expected']:,}, received {f['emails_received']:,}, lost {len(f['emails_lost'])},"
            f" doubled {f['emails_doubled']} (by the kill or the restart: {f['emails_doubled_by_disruption']});"
            f" sent-marks lost to the disruptions {f['lost_marks']} (at most {f['lost_marks_bound']})"
        )
        audit = f["audit"]
        say(
            f"audit rows vs changes      {audit['rows']} vs {audit['changes']}: missing {audit['missing']},"
            f" unexplained {audit['unexplained']}"
        )
        say(
            f"cleanup deleted {OLD_SIGN_UPS - audit['old_sign_ups_left']} of {OLD_SIGN_UPS} old sign-ups"
            f" (audited once with the reason: {audit['old_sign_ups_deleted_and_audited']} of {len(self.old_accounts)}"
            f" accounts, {audit['old_tokens_deleted_and_audited']} of {len(self.old_tokens)} tokens);"
            f" this month's partition made:"
            f" {audit['this_months_partition_made']}; rows left in the default partition: {audit['rows_in_default_partition']}"
        )
        say(f"processes                  {f['processes']}")
        say("RESULT: " + ("every promise held" if f["ok"] else "FAILED"))


def production_on_loopback(databases: dict, *, static_root: Path, limit: str) -> dict:
    """The environment of the product with DEBUG off as in production, by URL to ``databases`` (so a
    process cannot start the embedded server itself), on plain HTTP on loopback (no redirect to HTTPS,
    cookies over HTTP), its static files collected into ``static_root`` (named by collectstatic's
    manifest), and the public limits raised to ``limit`` an hour: every client is 127.0.0.1 and asks
    again and again. The soak test's and bench/load.py's."""
    return {
        "ENV_FILE": "",
        "DATABASE_URL": database_url(databases["default"]),
        "DATABASE_OWNER_URL": database_url(databases["owner"]),
        "DEBUG": "false",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "127.0.0.1",
        "SECURE_SSL_REDIRECT": "false",
        "SESSION_COOKIE_SECURE": "false",
        "CSRF_COOKIE_SECURE": "false",
        "STATIC_ROOT": str(static_root),
        **{f"LIMIT_{name}": limit for name in LIMIT_NAMES},
    }


def database_url(settings: dict) -> str:
    host = urllib.parse.quote(settings["HOST"], safe="")
    password = urllib.parse.quote(settings["PASSWORD"], safe="")
    return f"postgres://{settings['USER']}:{password}@{host}:{settings['PORT']}/{settings['NAME']}"


def heading(page: str) -> str:
    found = re.search(r"<h1[^>]*>(.*?)</h1>", page, re.S)
    return found.group(1).strip() if found else page.strip()[:120]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/soak.py", description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=CLIENTS, help=f"client threads (default {CLIENTS})")
    parser.add_argument("--seconds", type=float, default=SECONDS, help=f"length of the load (default {SECONDS})")
    parser.add_argument("--json", action="store_true", help="also print the figures as one JSON line at the end")
    parser.add_argument(
        "--keep-logs", action="store_true", help="keep the processes' logs (their directory is printed)"
    )
    args = parser.parse_args(argv)
    if args.clients < 1 or args.seconds < 5:
        parser.error("--clients must be at least 1 and --seconds at least 5")

    os.chdir(ROOT)
    # A short path, so the socket lives in the data directory and keeps its path across the restart.
    workdir = Path(tempfile.mkdtemp(prefix="lc-soak-"))
    pgdata = workdir / "pg"
    from lifecycle.ops import embedded_db

    soak = Soak(clients=args.clients, seconds=args.seconds, workdir=workdir, pgdata=pgdata)
    ok = False
    try:
        began = time.monotonic()
        soak.start_product()
        soak.figures["setup_seconds"] = round(time.monotonic() - began, 1)
        soak.run()
        began = time.monotonic()
        soak.settle()
        soak.figures["settle_seconds"] = round(time.monotonic() - began, 1)
        ok = soak.count()
        soak.report()
        if not ok:
            for name in soak.processes:
                soak.say(f"--- {name} (last lines) ---\n{soak.log_tail(name)}")
        if args.json:
            print(json.dumps(soak.figures, default=str), flush=True)
    finally:
        soak.stop_product()
        embedded_db.stop(pgdata, delete=True)
        import shutil

        if args.keep_logs:
            shutil.rmtree(pgdata, ignore_errors=True)
            print(f"logs kept in {workdir}", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
