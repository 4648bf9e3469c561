"""Attacks on the overlapped mail drain (tokens/mailroom/wire.py, SentMarks in tokens/mailroom/claim.py),
with a real SMTP server (tests/smtp.py), a real PostgreSQL and real processes."""

import random
import signal
import threading
import time
from collections import Counter

import pytest
from django.db import DatabaseError, connection, connections

from lifecycle.demo.factories import AccountFactory
from tests.smtp import SMTPServer
from tests.support import (
    connect,
    drain_until_every_token_is_mailed,
    mailroom_env,
    start_manage,
    wait_for,
)
from tokens.mailroom.claim import claim_batch
from tokens.mailroom.drain import DrainResult, drain
from tokens.mailroom.send import send_batch
from tokens.models import Job, MailState, Token
from tokens.selectors import live_token

pytestmark = [pytest.mark.attack, pytest.mark.django_db(transaction=True)]


def test_one_refused_sent_mark_leaves_only_its_own_token_to_be_sent_again(smtp_server, psql):
    """One token's sent-mark fails in the database (its row is locked by a longer transaction, e.g. a
    person using the link, and the session has a lock_timeout): one e-mail delivered but not marked.
    Read only after the NEXT message's body went out, the failure would leave that one delivered too,
    its answer never read (QUIT reads it) and the token still claimed as well: two e-mails re-sent once
    the lease ends, and the rest of the batch claimed for a whole lease."""
    tokens = [live_token(account=AccountFactory()) for _ in range(4)]
    claim, batch = claim_batch(10)
    assert [t.pk for t in batch] == [t.pk for t in tokens]
    with connection.cursor() as cursor:
        cursor.execute("SET lock_timeout = '200ms'")
    result = DrainResult()
    try:
        with psql.transaction():
            psql.execute("SELECT 1 FROM tokens WHERE id = %s FOR UPDATE", [tokens[0].pk])
            try:
                send_batch(batch, claim=claim, result=result)
            except DatabaseError:
                pass  # the drain stops on the lock timeout; the test is about the tokens
    finally:
        with connection.cursor() as cursor:
            cursor.execute("RESET lock_timeout")
    delivered = smtp_server.token_ids()
    claimed = set(Token.objects.filter(mail_claim=claim.id).values_list("pk", flat=True))
    delivered_but_claimed = [pk for pk in delivered if pk in claimed]
    # At most the token whose mark failed is delivered and still claimed (to be sent again).
    assert delivered_but_claimed == [tokens[0].pk]


def test_many_kills_of_concurrent_drains_double_at_most_one_email_per_kill_and_lose_none(psql):
    """Three drains at once over 1200 tokens, one of them SIGKILLed at a random moment every so often
    (and replaced): every token is mailed, and each kill sends at most one e-mail twice."""

    rng = random.Random(8)
    smtp = SMTPServer().start()
    smtp.handler.delay = 0.002
    total, kills = 1200, 0
    try:
        psql.execute(
            "INSERT INTO accounts (email, login) SELECT 'k' || g || '@example.com', 'k' || g"
            " FROM generate_series(1, %s) g",
            [total],
        )
        env = mailroom_env(smtp, MAILROOM_LEASE_SECONDS="8", EMAIL_TIMEOUT="1")
        runs = [start_manage("drain_mailroom", "--batch-size", "40", **env) for _ in range(3)]
        deadline = time.monotonic() + 60
        while kills < 15 and time.monotonic() < deadline and len(set(smtp.token_ids())) < total - 100:
            time.sleep(rng.uniform(0.2, 1.2))
            index = rng.randrange(len(runs))
            if runs[index].poll() is None:
                runs[index].send_signal(signal.SIGKILL)
                runs[index].wait()
                kills += 1
            runs[index] = start_manage("drain_mailroom", "--batch-size", "40", **env)
        for run in runs:
            run.communicate(timeout=120)
        counts = drain_until_every_token_is_mailed(smtp, env, total, timeout=120)
    finally:
        smtp.stop()
    doubled = {token: n for token, n in counts.items() if n > 1}
    assert len(counts) == total
    assert max(counts.values()) <= 2, doubled
    assert len(doubled) <= kills, (kills, doubled)
    assert set(Token.objects.values_list("mail_state", flat=True)) == {MailState.SENT}


def test_an_interrupted_drain_waiting_for_a_marks_answer_still_records_its_run(psql):
    """Ctrl-C (SIGINT) of ``manage.py drain_mailroom`` while SentMarks.collect() waits for a mark's
    answer (the row is locked a moment by another transaction). psycopg cancels a query it waits for on
    KeyboardInterrupt and leaves the connection usable; were the answer then left unread with collect()
    no longer expecting it, the drain's own finally would fail with "another command is already in
    progress": its jobs row never finished, and the interrupt hidden behind that error."""

    smtp = SMTPServer().start()
    locker = connect()
    try:
        psql.execute(
            "INSERT INTO accounts (email, login) SELECT 'i' || g || '@example.com', 'i' || g"
            " FROM generate_series(1, 5) g"
        )

        def lock_every_token(number):
            if number == 1:  # the batch is claimed and committed: hold every row a while
                locker.execute("SELECT 1 FROM tokens FOR UPDATE")

        smtp.handler.before_answer = lock_every_token
        run = start_manage("drain_mailroom", **mailroom_env(smtp))
        wait_for(
            lambda: (
                psql.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                    " AND datname = current_database() AND query LIKE 'SELECT * FROM tokens_mark_sent(%'"
                ).fetchone()[0]
                == 1
            ),
            timeout=30,
            message="a sent-mark waiting for its row",
        )
        time.sleep(0.3)  # the drain built the next message and waits in collect()
        run.send_signal(signal.SIGINT)
        output = run.communicate(timeout=30)[0]
    finally:
        locker.rollback()
        locker.close()
        smtp.stop()
    assert "another command is already in progress" not in output, output
    job = Job.objects.get()
    assert job.finished_at is not None, output[-2000:]  # psycopg cancels, and the run is recorded


def test_a_drain_whose_database_session_is_terminated_leaves_one_delivered_email_unmarked_at_most(psql):
    """pg_terminate_backend() of the drain's session (a failover, an operator) while a message is in
    flight: the next mark fails, and one e-mail is delivered and not marked. Read only after the next
    message went out too, the failure would leave two e-mails delivered, neither marked, both sent
    again once the lease ends."""

    smtp = SMTPServer().start()
    killer = connect(autocommit=True)
    try:
        psql.execute(
            "INSERT INTO accounts (email, login) SELECT 't' || g || '@example.com', 't' || g"
            " FROM generate_series(1, 6) g"
        )

        def terminate_the_drains_session(number):
            if number == 3:  # the marks of messages 1 and 2 are done by now
                killer.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database()"
                    " AND query LIKE 'UPDATE tokens SET mail_state = ''sent''%' AND pid <> pg_backend_pid()"
                )

        smtp.handler.before_answer = terminate_the_drains_session
        run = start_manage("drain_mailroom", **mailroom_env(smtp))
        output = run.communicate(timeout=60)[0]
    finally:
        killer.close()
        smtp.stop()
    sent = set(Token.objects.filter(mail_state=MailState.SENT).values_list("pk", flat=True))
    delivered_unmarked = [pk for pk in smtp.token_ids() if pk not in sent]
    assert len(delivered_unmarked) <= 1, (delivered_unmarked, output[-1500:])


class ScriptedSMTP:
    """A raw SMTP server on loopback whose answers a test scripts: ``misbehave(step, number)`` returns
    what to do at ``step`` ("ehlo", "mail", "rcpt", "data", "body") of message ``number`` (from 1):
    None for the usual answer, "close" to hang up without one, the raw bytes to answer, or (bytes,
    "close") to answer and hang up. With
    ``pipelining`` it offers PIPELINING (RFC 2920), and the drain writes MAIL, RCPT and DATA at once."""

    def __init__(self, misbehave, *, pipelining: bool = False):
        import socket
        import threading

        self.misbehave = misbehave
        self.pipelining = pipelining
        self.accepted: list[int] = []  # X-Lifecycle-Token of each message answered 250
        self.bodies: list[bytes] = []  # what came after each 354, up to the dot or a hang-up
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(5)
        self.port = self.sock.getsockname()[1]
        self.number = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        import threading

        while True:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._session, args=(client,), daemon=True).start()

    def _session(self, client):
        import re

        reader = client.makefile("rb")
        client.sendall(b"220 scripted ESMTP\r\n")

        def answer(step, usual):
            what = self.misbehave(step, self.number)
            if what == "close":
                client.close()
                return False
            if isinstance(what, tuple):  # an answer, then a hang-up
                client.sendall(what[0])
                client.close()
                return False
            client.sendall(usual if what is None else what)
            return True

        try:
            while True:
                line = reader.readline()
                if not line:
                    return
                verb = line[:4].upper()
                if verb == b"EHLO":
                    offers = b"250-PIPELINING\r\n" if self.pipelining else b""
                    if not answer("ehlo", b"250-scripted\r\n" + offers + b"250-SIZE 1000000\r\n250 8BITMIME\r\n"):
                        return
                elif verb == b"HELO":
                    client.sendall(b"250 scripted\r\n")
                elif verb == b"MAIL":
                    self.number += 1
                    if not answer("mail", b"250 OK\r\n"):
                        return
                elif verb == b"RCPT":
                    if not answer("rcpt", b"250 OK\r\n"):
                        return
                elif verb == b"DATA":
                    if not answer("data", b"354 go ahead\r\n"):
                        return
                    body = b""
                    while (chunk := reader.readline()) not in (b".\r\n", b""):
                        body += chunk
                    self.bodies.append(body)
                    token = re.search(rb"X-Lifecycle-Token: (\d+)", body)
                    what = self.misbehave("body", self.number)
                    if what == "close":
                        client.close()
                        return
                    reply = b"250 queued\r\n" if what is None else what
                    if reply.startswith(b"250") and token:
                        self.accepted.append(int(token.group(1)))
                    client.sendall(reply)
                elif verb == b"RSET":
                    client.sendall(b"250 reset\r\n")
                elif verb == b"QUIT":
                    client.sendall(b"221 bye\r\n")
                    client.close()
                    return
                else:
                    client.sendall(b"502 unknown\r\n")
        except OSError:
            return

    def stop(self):
        self.sock.close()


def drain_into(server: ScriptedSMTP, settings) -> DrainResult:
    """One drain into ``server`` over plain SMTP, with a 2 s timeout; the server stopped afterwards."""
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", server.port
    settings.EMAIL_HOST_USER = settings.EMAIL_HOST_PASSWORD = ""
    settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
    settings.EMAIL_TIMEOUT = 2
    try:
        return drain()
    finally:
        server.stop()


MISBEHAVIOURS = {
    "close after MAIL": ("mail", "close"),
    "close after RCPT": ("rcpt", "close"),
    "close after DATA": ("data", "close"),
    "354 then close": ("data", b"354 go ahead\r\n"),  # followed by a hang-up once the body is in
    "close after the body": ("body", "close"),
    "421 to MAIL": ("mail", b"421 4.3.2 going down\r\n"),
    "421 to MAIL, then hang up": ("mail", (b"421 4.3.2 going down\r\n", "close")),
    "421 to RCPT": ("rcpt", b"421 4.3.2 going down\r\n"),
    "421 to DATA": ("data", b"421 4.3.2 going down\r\n"),
    "421 to the body": ("body", b"421 4.3.2 going down\r\n"),
    "451 to MAIL": ("mail", b"451 4.3.0 later\r\n"),
    "550 to RCPT": ("rcpt", b"550 5.1.1 no such user\r\n"),
    "554 to DATA": ("data", b"554 5.7.1 no\r\n"),
    "garbage to the body": ("body", b"xyzzy\r\n"),
    "multi-line 250 to the body": ("body", b"250-queued as\r\n250-ABC\r\n250 ok\r\n"),
    "multi-line 554 to the body": ("body", b"554-5.7.1 spam\r\n554 5.7.1 go away\r\n"),
    "250 then 421 after the body": ("body", b"250 queued\r\n421 4.3.2 closing now\r\n"),
    "HELO only": ("ehlo", b"502 5.5.1 no EHLO\r\n"),
    "very long answer to the body": ("body", b"250 " + b"x" * 9000 + b"\r\n"),
}


@pytest.mark.parametrize("pipelining", [False, True], ids=["one command at a time", "pipelined"])
@pytest.mark.parametrize("name", list(MISBEHAVIOURS))
def test_a_misbehaving_server_fails_only_what_it_must_and_leaves_nothing_claimed(settings, name, pipelining):

    step, what = MISBEHAVIOURS[name]
    tokens = [live_token(account=AccountFactory()) for _ in range(4)]

    def misbehave(at, number):
        if step == "ehlo":
            return what if at == "ehlo" else None
        if at == step and number == 2:
            return what
        if name == "354 then close" and at == "body" and number == 2:
            return "close"
        return None

    server = ScriptedSMTP(misbehave, pipelining=pipelining)
    result = drain_into(server, settings)
    rows = {pk: (state, claim) for pk, state, claim in Token.objects.values_list("pk", "mail_state", "mail_claim")}
    assert all(claim is None for _, claim in rows.values()), rows  # nothing stays claimed
    sent = {pk for pk, (state, _) in rows.items() if state == MailState.SENT}
    assert sent <= set(server.accepted), (sent, server.accepted)  # never sent without a 250
    # (a hang-up before the answer, or an answer over smtplib's line limit: the drain cannot know)
    assert sent == set(server.accepted) or name in ("close after the body", "very long answer to the body")
    assert tokens[0].pk in sent and (tokens[3].pk in sent or result.error), (rows, result)
    job = Job.objects.get()
    failed = sum(1 for state, _ in rows.values() if state in (MailState.RETRYING, MailState.DEAD))
    assert (job.sent, job.failed) == (len(sent), failed)
    assert Token.objects.count() == 4  # the connection is usable
    if name.startswith("421 to MAIL"):  # the server's answer is the token's error, not the hang-up after it
        assert Token.objects.get(pk=tokens[1].pk).mail_error.startswith("421 4.3.2"), rows


def test_a_server_taking_data_after_refusing_every_recipient_gets_no_body(settings):
    """Pipelined, DATA is written before RCPT's answer is read: a server that refuses the one recipient
    and still answers 354 waits for a body. The drain hangs up (RFC 5321 3.8), so nothing is delivered
    for the refused message and its 550 makes it dead; the rest of the batch waits for the next run."""
    tokens = [live_token(account=AccountFactory()) for _ in range(3)]
    server = ScriptedSMTP(
        lambda at, number: b"550 5.1.1 no such user\r\n" if (at, number) == ("rcpt", 2) else None, pipelining=True
    )
    result = drain_into(server, settings)
    states = dict(Token.objects.values_list("pk", "mail_state"))
    assert server.accepted == [tokens[0].pk]
    # No command sent into a body (smtplib writes them in lower case).
    assert not any(line.upper() == b"RSET" for body in server.bodies for line in body.split(b"\r\n"))
    assert [states[token.pk] for token in tokens] == [MailState.SENT, MailState.DEAD, MailState.RETRYING]
    assert result.error.startswith("SMTP connection lost")


def test_a_slow_server_never_lets_a_lease_run_out_under_a_message_in_flight(settings):
    """settings.py: "one message may take 4 x EMAIL_TIMEOUT, and a run renews its lease before that"
    (MAILROOM_MESSAGE_SECONDS). Overlapped, the last message of a batch takes its MAIL, RCPT, DATA and
    body answer (4) plus the answer to the message before it (1) after the last lease check: 5 x
    EMAIL_TIMEOUT. Unless the lease check counts that answer too, a server answering each command in
    just under EMAIL_TIMEOUT would let the lease end while the last message is in flight, and another
    run would claim that token and mail it again, no kill needed."""

    tokens = [live_token(account=AccountFactory()) for _ in range(2)]
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST_USER = settings.EMAIL_HOST_PASSWORD = ""
    settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
    # Every time below is a multiple of EMAIL_TIMEOUT: 2 s, so that a loaded machine (a suite's three
    # workers beside other work) still answers within the timeout what the server sends just under it.
    unit = 2
    settings.EMAIL_TIMEOUT, settings.MAILROOM_MESSAGE_SECONDS, settings.MAILROOM_LEASE_SECONDS = (
        unit,
        4 * unit,
        8 * unit,
    )
    watcher = connect(autocommit=True)

    def slow(at, number):
        if at == "body" and number == 2:  # the last message of the first run: wait while it may
            deadline = time.monotonic() + 0.98 * unit
            while time.monotonic() < deadline:
                claims = watcher.execute("SELECT count(DISTINCT mail_claim) FROM tokens").fetchone()[0]
                if claims > 1:
                    break
                time.sleep(0.02)
            return None
        time.sleep(0.93 * unit)
        return None

    server = ScriptedSMTP(slow)
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", server.port
    second = []

    def another_run():
        try:
            time.sleep(7.0 * unit)
            deadline = time.monotonic() + 3 * unit
            while time.monotonic() < deadline and not second:
                result = drain()
                if result.claimed:
                    second.append(result)
                time.sleep(0.03)
        finally:
            connections.close_all()

    other = threading.Thread(target=another_run)
    other.start()
    try:
        first = drain()
        other.join()
    finally:
        watcher.close()
        server.stop()
    assert Counter(server.accepted)[tokens[1].pk] == 1, (server.accepted, first, second)
