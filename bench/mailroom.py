"""Mailroom throughput and latency against an aiosmtpd server on loopback (in a process of its own).

    .venv/bin/python bench/mailroom.py [--tokens 2000] [--repeat 5] [--latency-samples 50] [--schedule-samples 3]

Runs on a scratch database (``<name>_bench``, created and dropped). Prints, in one run:
- drain throughput (e-mails/s) against plain smtplib sending the same number of pre-rendered
  messages over one connection (the ratio; the median of ``--repeat`` pairs measured back to back);
- claim-and-mark throughput (tokens/s) with sending stubbed out (Django's dummy backend), with and
  without rendering the e-mails;
- what digesting the credentials costs a mail run: the same run (claim, render, mark, no sending)
  with the sent-mark that empties the secret and the code and keeps their digests, and with a plain
  mark that keeps them (the ratio; the median of ``--repeat`` pairs);
- latency from the commit of a new account to the SMTP server accepting its e-mail (p50, p99),
  with listen_mailroom running, and with the django-q2 schedule alone (a 1-minute schedule).
"""

import argparse
import smtplib
import sys
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
from tests.smtp import SMTPServerProcess
from tests.support import database_url_for_tests, start_manage, wait_for
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


def smtplib_rate(server: SMTPServerProcess, count: int) -> float:
    messages = [
        render_mail(token).message().as_bytes(linesep="\r\n") for token in Token.objects.select_related("account")
    ]
    assert len(messages) == count
    started = time.perf_counter()
    with smtplib.SMTP("127.0.0.1", server.port) as smtp:
        for n, message in enumerate(messages):
            smtp.sendmail(settings.DEFAULT_FROM_EMAIL, [f"user{n}@example.com"], message)
    return count / (time.perf_counter() - started)


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
    parser.add_argument("--tokens", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5, help="drain/smtplib pairs; the median is reported")
    parser.add_argument("--latency-samples", type=int, default=50)
    parser.add_argument("--schedule-samples", type=int, default=3, help="each waits up to a minute; 0 to skip")
    args = parser.parse_args()

    with scratch_database():
        server = SMTPServerProcess().start()
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT version()")
                print(
                    cursor.fetchone()[0].split(" on ")[0],
                    f"- {args.tokens} tokens, batches of {settings.MAILROOM_BATCH_SIZE}",
                )

            # Pairs measured back to back, the order swapped each round, so a slower minute of the shared
            # machine weighs on both sides of a ratio; the median pair is the figure.
            pairs = []
            with smtp_settings(server):
                for round_ in range(args.repeat):
                    sign_up(args.tokens)
                    if round_ % 2 == 0:
                        baseline = smtplib_rate(server, args.tokens)
                        ours = drain_rate(args.tokens)
                    else:
                        ours = drain_rate(args.tokens)
                        sign_up(args.tokens)
                        baseline = smtplib_rate(server, args.tokens)
                    pairs.append((ours / baseline, ours, baseline))
                    print(
                        f"  round {round_ + 1}: drain {ours:6,.0f} e-mails/s, smtplib {baseline:6,.0f}: {ours / baseline:.2f}x"
                    )
            ratio, ours, baseline = sorted(pairs)[len(pairs) // 2]
            print(f"drain over SMTP                    {ours:9,.0f} e-mails/s")
            print(
                f"plain smtplib, pre-rendered        {baseline:9,.0f} e-mails/s   drain / smtplib = {ratio:.2f}x"
                f" (median of {len(pairs)} pairs)"
            )

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

            env = {"DATABASE_URL": database_url_for_tests(), "EMAIL_URL": server.url}
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
