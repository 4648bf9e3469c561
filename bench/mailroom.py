"""Mailroom throughput and latency against an SMTP server on loopback: aiosmtpd in a process of its own,
or with ``--mta postfix`` a private Postfix instance.

    .venv/bin/python bench/mailroom.py [--mta aiosmtpd|postfix] [--tokens 2000] [--repeat 5] [--commands 3]
        [--drains 4] [--latency-samples 50] [--schedule-samples 3] [--quick]

Runs on a scratch database (``<name>_bench``, created and dropped). Prints, in one run:
- drain throughput (e-mails/s) against plain smtplib sending the same number of pre-rendered
  messages over one connection (the ratio; the median of ``--repeat`` pairs measured back to back);
- the whole command as cron runs it: ``manage.py drain_mailroom`` in a process of its own, timed from
  its start to its exit (Python's and Django's start-up, claims, rendering, marks, its row in jobs),
  against the fair baseline for a command: a plain smtplib script in a process of its own (Python
  without Django) sending the same e-mails, pre-rendered before it starts, over one connection, also
  timed from its start to its exit (the ratio; the median of ``--commands`` pairs). Both run with DEBUG
  on, as the rest of this bench (off, the e-mails' logo needs collected static files), and the
  command's modules compiled once before (as a deployment has them);
- the command's start-up alone: ``drain_mailroom`` over an empty queue;
- claim-and-mark throughput (tokens/s) with sending stubbed out (Django's dummy backend), with and
  without rendering the e-mails, and without rendering for ``--drains`` drains at once, each a process
  of its own started together once all are connected (the deployed shape: two listeners, cron, the
  worker), timed from the first one's start to the last one's end;
- what digesting the credentials costs a mail run: the same run (claim, render, mark, no sending)
  with the sent-mark that empties the secret and the code and keeps their digests, and with a plain
  mark that keeps them (the ratio; the median of ``--repeat`` pairs);
- latency from the commit of a new account to the SMTP server accepting its e-mail (p50, p99),
  with listen_mailroom running, and with the django-q2 schedule alone (a 1-minute schedule); aiosmtpd
  only (it reports when it accepted each message).

The tables are analysed after each sign-up, as production's have statistics: a table just emptied and
filled again has none, and the claim's plan then reads and sorts the whole queue for each batch.

``--mta postfix`` runs a private Postfix (``postfix -c DIR start``/``stop``): its own configuration,
queue and data directories in a temporary directory, smtpd on a free loopback port, every e-mail
discarded, no DNS, its log in that directory; the system's instance is neither used nor touched. It
needs Debian's ``postfix`` package and root (Postfix's master runs as root and its daemons as the
``postfix`` user); without the package the bench says so and stops.

``--quick`` (for ``make bench QUICK=1``): 300 tokens, 3 pairs, 1 command pair, 5 latency samples, no
schedule; well under a minute.
"""

import argparse
import marshal
import os
import shutil
import smtplib
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import bench.django_setup  # noqa: F401 (Django set up before any model is imported)

# isort: split
from django.conf import settings
from django.db import connection, connections
from django.test.utils import override_settings
from django.utils import timezone

from accounts.services import account_provision
from bench.figures import percentiles
from bench.scratch import scratch_database
from tests.smtp import SMTPServerProcess, free_port
from tests.support import ROOT, database_url_for_tests, environment, manage, start_manage, wait_for
from tokens.mailroom.claim import SentMarks
from tokens.mailroom.drain import drain
from tokens.mailroom.render import MailRenderer, render_mail
from tokens.models import Token


def sign_up(count: int) -> None:
    # Emptying the tables is the owner's to do (the runtime role may not TRUNCATE).
    with connections["owner"].cursor() as cursor:
        cursor.execute("TRUNCATE accounts, tokens, jobs RESTART IDENTITY CASCADE")
        cursor.execute(
            "INSERT INTO accounts (email, login) SELECT 'user' || g || '@example.com', 'user' || g"
            " FROM generate_series(1, %s) g",
            [count],
        )
        cursor.execute("ANALYZE accounts, tokens")


def smtp_settings(server: SMTPServerProcess):
    return override_settings(
        EMAIL_BACKEND="django.core.mail.backends.smtp.EmailBackend", EMAIL_HOST="127.0.0.1", EMAIL_PORT=server.port
    )


def drain_rate(count: int) -> float:
    started = time.perf_counter()
    result = drain()
    elapsed = time.perf_counter() - started
    assert result.sent == count and result.error is None, result
    return count / elapsed


def pre_rendered(count: int) -> list[tuple[str, bytes]]:
    messages = [
        (token.account.email, render_mail(token).message().as_bytes(linesep="\r\n"))
        for token in Token.objects.select_related("account")
    ]
    assert len(messages) == count
    return messages


def smtplib_rate(server, count: int) -> float:
    messages = pre_rendered(count)
    started = time.perf_counter()
    with smtplib.SMTP("127.0.0.1", server.port) as smtp:
        for recipient, message in messages:
            smtp.sendmail(settings.DEFAULT_FROM_EMAIL, [recipient], message)
    return count / (time.perf_counter() - started)


# The baseline of the whole command: Python without Django, the e-mails already rendered, one connection.
SMTPLIB_PROCESS = """
import marshal, smtplib, sys
sender, port, path = sys.argv[1:]
with open(path, "rb") as file:
    messages = marshal.load(file)
with smtplib.SMTP("127.0.0.1", int(port)) as smtp:
    for recipient, message in messages:
        smtp.sendmail(sender, [recipient], message)
"""


def smtplib_process_rate(server, count: int) -> float:
    with tempfile.NamedTemporaryFile(suffix=".marshal") as file:
        marshal.dump(pre_rendered(count), file)
        file.flush()
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-c", SMTPLIB_PROCESS, settings.DEFAULT_FROM_EMAIL, str(server.port), file.name],
            check=True,
        )
        return count / (time.perf_counter() - started)


# The command's compiled modules kept between its runs, as a deployment keeps them (this machine's
# environment sets PYTHONDONTWRITEBYTECODE: each run would compile the project again, about a second).
PYCACHE = tempfile.TemporaryDirectory(prefix="mailroom-bench-pycache-")


def command_rate(server, count: int) -> float:
    started = time.perf_counter()
    run = manage(
        "drain_mailroom",
        timeout=600,
        DATABASE_URL=database_url_for_tests(),
        EMAIL_URL=server.url,
        PYTHONDONTWRITEBYTECODE="",
        PYTHONPYCACHEPREFIX=PYCACHE.name,
    )
    elapsed = time.perf_counter() - started
    assert run.returncode == 0 and f"sent {count}," in run.stdout, run.stdout + run.stderr
    return count / elapsed


# One of several drains at once: claims and marks, sending and rendering stubbed out as for "claim + mark
# only"; connected before it says it is ready, it starts when told and prints what it sent, from when to when.
CONCURRENT_DRAIN = """
import sys, time
sys.path.insert(0, sys.argv[1])
import bench.django_setup
from django.db import connection
from django.test.utils import override_settings
from tokens.mailroom.drain import drain
from tokens.mailroom.render import MailRenderer
MailRenderer.render = lambda self, token, now=None: None
connection.ensure_connection()
print("ready", flush=True)
sys.stdin.readline()
with override_settings(EMAIL_BACKEND="django.core.mail.backends.dummy.EmailBackend"):
    started = time.time()
    sent = drain().sent
    print(sent, started, time.time(), flush=True)
"""


def concurrent_rate(count: int, drains: int) -> float:
    """Tokens claimed and marked a second by ``drains`` drains at once, together."""
    sign_up(count)
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", CONCURRENT_DRAIN, str(ROOT)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=environment(DATABASE_URL=database_url_for_tests()),
        )
        for _ in range(drains)
    ]
    for process in processes:
        assert process.stdout.readline().strip() == "ready"
    for process in processes:
        process.stdin.write("go\n")
        process.stdin.flush()
    runs = [[float(figure) for figure in process.communicate(timeout=600)[0].split()] for process in processes]
    assert all(process.returncode == 0 for process in processes)
    assert sum(sent for sent, _, _ in runs) == count, runs
    return count / (max(ended for _, _, ended in runs) - min(started for _, started, _ in runs))


def paired(rounds: int, ours, baseline, *, label: str, unit: str) -> tuple[float, float, float]:
    """``ours`` and ``baseline`` (each signs up its own tokens first) measured back to back ``rounds``
    times, the order swapped each round, so a slower minute of the shared machine weighs on both sides of
    a ratio; the median pair is the figure."""
    pairs = []
    for round_ in range(rounds):
        if round_ % 2 == 0:
            theirs, mine = baseline(), ours()
        else:
            mine, theirs = ours(), baseline()
        pairs.append((mine / theirs, mine, theirs))
        print(
            f"  {label} round {round_ + 1}: {mine:6,.0f} {unit}, baseline {theirs:6,.0f}: {mine / theirs:.2f}x",
            file=sys.stderr,
        )
    return sorted(pairs)[len(pairs) // 2]


class PrivatePostfix:
    """A Postfix instance of the bench's own: configuration, queue and data in a temporary directory,
    smtpd on a free loopback port, every e-mail discarded (docs/measurements.md, "Mailroom figures")."""

    POSTFIX = Path("/usr/sbin/postfix")
    MASTER_CF = """\
127.0.0.1:{port} inet n - n - - smtpd
pickup    unix  n - n 60 1 pickup
cleanup   unix  n - n - 0 cleanup
qmgr      unix  n - n 300 1 qmgr
rewrite   unix  - - n - - trivial-rewrite
bounce    unix  - - n - 0 bounce
defer     unix  - - n - 0 bounce
trace     unix  - - n - 0 bounce
verify    unix  - - n - 1 verify
flush     unix  n - n 1000? 0 flush
proxymap  unix  - - n - - proxymap
showq     unix  n - n - - showq
error     unix  - - n - - error
retry     unix  - - n - - error
discard   unix  - - n - - discard
anvil     unix  - - n - 1 anvil
scache    unix  - - n - 1 scache
postlog   unix-dgram n - n - 1 postlogd
"""
    MAIN_CF = """\
compatibility_level = 3.6
queue_directory = {dir}/queue
data_directory = {dir}/data
meta_directory = /etc/postfix
mail_owner = postfix
setgid_group = postdrop
inet_interfaces = 127.0.0.1
inet_protocols = ipv4
myhostname = mailroom-bench.invalid
mydestination =
mynetworks = 127.0.0.0/8
smtpd_relay_restrictions = permit_mynetworks, reject
default_transport = discard:bench
relay_transport = discard:bench
local_transport = discard:bench
virtual_transport = discard:bench
smtpd_peername_lookup = no
smtp_dns_support_level = disabled
alias_maps =
alias_database =
maillog_file_prefixes = {dir}
maillog_file = {dir}/maillog
biff = no
"""

    @classmethod
    def missing(cls) -> str | None:
        if not cls.POSTFIX.exists():
            return f"Postfix is not installed ({cls.POSTFIX} is missing: apt-get install postfix)"
        if os.geteuid() != 0:
            return "a private Postfix instance needs root (its master runs as root)"
        return None

    def start(self):
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="mailroom-bench-postfix-"))
        self.dir.chmod(0o755)  # its daemons run as the postfix user
        (self.dir / "queue").mkdir()
        (self.dir / "data").mkdir()
        shutil.chown(self.dir / "data", "postfix")
        (self.dir / "main.cf").write_text(self.MAIN_CF.format(dir=self.dir))
        (self.dir / "master.cf").write_text(self.MASTER_CF.format(port=self.port))
        started = self._postfix("start")
        if started.returncode != 0:
            shutil.rmtree(self.dir, ignore_errors=True)
            raise RuntimeError(f"postfix -c {self.dir} start failed: {started.stdout}{started.stderr}")
        wait_for(self._listening, timeout=30, message="Postfix's smtpd")
        return self

    def _listening(self) -> bool:
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
        except OSError:
            return False
        return True

    def _postfix(self, command: str) -> subprocess.CompletedProcess:
        return subprocess.run([self.POSTFIX, "-c", str(self.dir), command], capture_output=True, text=True)

    def stop(self):
        master_pid = self.dir / "queue" / "pid" / "master.pid"
        pid = int(master_pid.read_text().split()[0]) if master_pid.exists() else None
        self._postfix("stop")
        if pid is not None:
            wait_for(lambda: not Path(f"/proc/{pid}").exists() or _zombie(pid), timeout=30, message="Postfix's master")
        shutil.rmtree(self.dir, ignore_errors=True)

    @property
    def url(self) -> str:
        return f"smtp://127.0.0.1:{self.port}"


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith("Z")
    except OSError:
        return True


@contextmanager
def plain_marks(plain: bool):
    """With ``plain``, the sent-mark as it was before credentials were digested: it keeps the secret and
    the code (the runtime role may still write that mark; only the bench does)."""
    if not plain:
        yield
        return
    statement, parameters = SentMarks.STATEMENT, SentMarks.parameters
    SentMarks.STATEMENT = (
        "UPDATE tokens SET mail_state = 'sent', mailed_at = now(),"
        " mail_lease_until = NULL, mail_claim = NULL, mail_error = NULL WHERE id = $1 AND mail_claim = $2"
    )
    SentMarks.parameters = lambda self, token: [str(token.pk), str(self.claim.id)]
    try:
        yield
    finally:
        SentMarks.STATEMENT, SentMarks.parameters = statement, parameters


def latencies(server: SMTPServerProcess, samples: int, *, wait: float, prefix: str) -> list[float]:
    found = []
    for n in range(samples):
        seen = server.count()
        account_provision(email=f"{prefix}{n}@example.com", login=f"{prefix}{n}", actor=None)
        committed = time.time()
        wait_for(lambda seen=seen: server.count() > seen, timeout=wait, interval=0.0005, message="the e-mail")
        found.append(server.accepted[seen][0] - committed)
        time.sleep(0.02)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mta", choices=["aiosmtpd", "postfix"], default="aiosmtpd")
    parser.add_argument("--tokens", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5, help="drain/smtplib pairs; the median is reported")
    parser.add_argument("--commands", type=int, default=3, help="drain_mailroom/smtplib process pairs")
    parser.add_argument("--drains", type=int, default=4, help="drains at once for the concurrent claim + mark")
    parser.add_argument("--latency-samples", type=int, default=50)
    parser.add_argument("--schedule-samples", type=int, default=3, help="each waits up to a minute; 0 to skip")
    parser.add_argument("--quick", action="store_true", help="small sizes, well under a minute")
    args = parser.parse_args()
    if args.quick:
        args.tokens, args.repeat, args.commands, args.latency_samples, args.schedule_samples = 300, 3, 1, 5, 0
    if args.mta == "postfix" and (missing := PrivatePostfix.missing()):
        print(f"mailroom bench skipped: {missing}")
        return

    with scratch_database():
        server = (PrivatePostfix() if args.mta == "postfix" else SMTPServerProcess()).start()
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT version()")
                print(
                    cursor.fetchone()[0].split(" on ")[0],
                    f"- {args.tokens} tokens, batches of {settings.MAILROOM_BATCH_SIZE}, into {args.mta}"
                    + (" (--quick: small sizes)" if args.quick else ""),
                )

            def signed_up(measure):
                def run():
                    sign_up(args.tokens)
                    return measure(server, args.tokens)

                return run

            with smtp_settings(server):
                ratio, ours, baseline = paired(
                    args.repeat,
                    signed_up(lambda server, count: drain_rate(count)),
                    signed_up(smtplib_rate),
                    label="drain",
                    unit="e-mails/s",
                )
            print(f"drain over SMTP                    {ours:9,.0f} e-mails/s")
            print(
                f"plain smtplib, pre-rendered        {baseline:9,.0f} e-mails/s   drain / smtplib = {ratio:.2f}x"
                f" (median of {args.repeat} pairs)"
            )

            sign_up(0)
            command_rate(server, 0)  # compiles the command's modules once, for all its runs
            ratio, ours, baseline = paired(
                args.commands,
                signed_up(command_rate),
                signed_up(smtplib_process_rate),
                label="command",
                unit="e-mails/s",
            )
            sign_up(0)
            started = time.perf_counter()
            command_rate(server, 0)
            start_up = time.perf_counter() - started
            print(f"drain_mailroom, whole command      {ours:9,.0f} e-mails/s")
            print(
                f"smtplib script, own process        {baseline:9,.0f} e-mails/s   command / script = {ratio:.2f}x"
                f" (median of {args.commands} pairs)"
            )
            print(f"drain_mailroom over an empty queue {start_up:9.2f} s")

            with override_settings(EMAIL_BACKEND="django.core.mail.backends.dummy.EmailBackend"):
                sign_up(args.tokens)
                rendered = drain_rate(args.tokens)
                sign_up(args.tokens)
                render = MailRenderer.render
                # The dummy backend sends anything, even nothing.
                MailRenderer.render = lambda self, token, now=None: None
                try:
                    bare = drain_rate(args.tokens)
                finally:
                    MailRenderer.render = render
            print(f"claim + render + mark, no sending  {rendered:9,.0f} tokens/s")
            print(f"claim + mark only                  {bare:9,.0f} tokens/s")
            together = concurrent_rate(args.tokens, args.drains)
            print(f"{f'claim + mark, {args.drains} drains at once':35}{together:9,.0f} tokens/s together")

            with override_settings(EMAIL_BACKEND="django.core.mail.backends.dummy.EmailBackend"):
                pairs = []
                for round_ in range(args.repeat):
                    runs = {}
                    for digesting in (True, False) if round_ % 2 == 0 else (False, True):
                        sign_up(args.tokens)
                        with plain_marks(not digesting):
                            runs[digesting] = drain_rate(args.tokens)
                    pairs.append((runs[True] / runs[False], runs[True], runs[False]))
                ratio, digested, plain = sorted(pairs)[len(pairs) // 2]
            print(f"mail run, credentials digested     {digested:9,.0f} tokens/s")
            print(
                f"mail run, credentials kept plain   {plain:9,.0f} tokens/s   digested / plain = {ratio:.2f}x"
                f" (median of {len(pairs)} pairs)"
            )

            if args.mta != "aiosmtpd":
                print("latency: measured against aiosmtpd only (it reports when it accepted each e-mail)")
                return
            env = {"DATABASE_URL": database_url_for_tests(), "EMAIL_URL": server.url}
            if args.latency_samples:
                sign_up(0)
                listener = start_manage("listen_mailroom", "--poll-seconds", "300", **env)
                try:
                    latencies(server, 3, wait=30, prefix="warm")  # warm-up: the listener's first drain and connections
                    samples = latencies(server, args.latency_samples, wait=30, prefix="listen")
                    print(f"commit -> SMTP accept, listen_mailroom      {percentiles(samples)}")
                finally:
                    listener.terminate()
                    listener.wait(timeout=30)

            if args.schedule_samples:
                from django_q.models import Schedule

                sign_up(0)
                Schedule.objects.filter(name="mailroom: drain").update(next_run=timezone.now())
                worker = start_manage("qcluster", **env)
                try:
                    samples = latencies(server, args.schedule_samples, wait=150, prefix="schedule")
                    print(f"commit -> SMTP accept, django-q2 schedule   {percentiles(samples)}")
                finally:
                    worker.terminate()
                    worker.wait(timeout=60)
        finally:
            server.stop()


if __name__ == "__main__":
    main()
