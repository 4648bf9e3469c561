"""Helpers the tests share: sessions of their own on the test database, real concurrency (threads
and manage.py processes), staff in the admin, the public pages as a person uses them, waiting with a
bound, and bad input the database must refuse."""

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from urllib.parse import quote

import httpx
import psycopg
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import Argon2PasswordHasher
from django.contrib.auth.models import Group
from django.db import connection, connections
from django.test import Client
from django.urls import reverse

from platform_events.db.direct_connection import direct_connection
from platform_events.db.history import history_rewrite, history_rewrite_key
from tests.smtp import free_port

ROOT = Path(__file__).resolve().parent.parent


# Passwords


class QuickArgon2PasswordHasher(Argon2PasswordHasher):
    """The product's hasher (Argon2id, the same "argon2$argon2id$" hashes, checked by the same code) at
    the least cost argon2 allows: Django's cost (100 MiB, two passes) takes a quarter of a second per
    password on two cores, and the tests make thousands. A hash records its cost, so a process of the
    product's own (runserver, manage.py) checks these as well, and rehashes them at its own cost."""

    time_cost = 1
    memory_cost = 8  # KiB, the least for one lane
    parallelism = 1


# Sessions and concurrency


def connect(**kwargs) -> psycopg.Connection:
    """A connection of our own to the test database as the runtime role, as the app's psql session would be."""
    return direct_connection(**kwargs)


def connect_as_owner(**kwargs) -> psycopg.Connection:
    """A connection to the test database as the owner role (what the runtime role may not do)."""
    return direct_connection("owner", **kwargs)


def analyze(table: str) -> None:
    """Refresh the planner's statistics of a table, as autovacuum would (the owner's to do; the
    rows must be committed: call it from transactional tests)."""
    with connect_as_owner(autocommit=True) as owner:
        owner.execute(f"ANALYZE {table}")


def wait_until_blocked(conn: psycopg.Connection, count: int, timeout: float = 10.0) -> None:
    """Wait until ``count`` sessions of the test database wait on a lock (so the race really overlaps)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        # Activity statistics are a snapshot per transaction: take a fresh one each time.
        conn.execute("SELECT pg_stat_clear_snapshot()")
        (blocked,) = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
        ).fetchone()
        if blocked >= count:
            return
        time.sleep(0.01)
    raise AssertionError(f"expected {count} sessions waiting on a lock, saw {blocked}")


def deprovisioning_waits_for(holder: psycopg.Connection, account_id: int) -> None:
    """Deprovision ``account_id`` from another runtime-role session while ``holder``'s open transaction
    has written something of the account: assert that the deprovisioning waits for it, then commit
    ``holder`` and let the deprovisioning finish (it then sees what ``holder`` wrote)."""
    done = threading.Event()
    with connect() as deprovisioning:

        def run():
            deprovisioning.execute("UPDATE accounts SET status = 'deprovisioned' WHERE id = %s", [account_id])
            deprovisioning.commit()
            done.set()

        thread = threading.Thread(target=run)
        thread.start()
        assert not done.wait(1.0), "the deprovisioning did not wait for the open transaction"
        holder.commit()
        thread.join(timeout=30)
        assert done.is_set(), "the deprovisioning did not finish once the transaction committed"


def in_threads(*calls):
    """Run each call in its own thread (each with its own database connection); return (ok, value) per call."""
    results = [None] * len(calls)

    def work(index, call):
        try:
            results[index] = (True, call())
        except Exception as error:  # the test inspects it
            results[index] = (False, error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=work, args=(i, call)) for i, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    return threads, results


# The django-q2 queue


def run_queued_tasks() -> int:
    """Run the tasks waiting in django-q2's queue (the ORM broker's rows in PostgreSQL) as a cluster's
    worker would: take each, run its function, acknowledge it. Returns how many ran."""
    import pydoc

    from django_q.brokers import get_broker
    from django_q.signing import SignedPackage

    broker, ran = get_broker(), 0
    while broker.queue_size():
        for ack_id, package in broker.dequeue() or []:
            task = SignedPackage.loads(package)
            pydoc.locate(task["func"])(*task["args"], **task["kwargs"])
            broker.acknowledge(ack_id)
            ran += 1
    return ran


# Staff in the admin


def staff_client(role: str, username: str | None = None) -> Client:
    """A test client logged in as a staff member of ``role`` (Support, Auditor, Integrator)."""
    user = get_user_model().objects.create_user(username or f"{role.lower()}1", password="x", is_staff=True)
    user.groups.set([Group.objects.get(name=role)])
    client = Client()
    client.force_login(user)
    return client


def djangos_admin_template(template_name: str, context: dict) -> str:
    """``admin/<template_name>`` as Django's own file renders it, whatever the project's templates
    override (the admin kit writes some of them itself: tests compare the two)."""
    import django.contrib.admin
    from django.template import Context, Template, engines

    path = Path(django.contrib.admin.__file__).parent / "templates" / "admin" / template_name
    return Template(path.read_text(), engine=engines["django"].engine).render(Context(context))


# Whitespace beside these tags (and hidden inputs) does not show: a browser drops it at a line's ends.
BLOCK_TAG = re.compile(
    r"\s*(</?(?:p|div|table|thead|tbody|tr|th|td|caption|fieldset|details|summary|nav|h[1-6]|ul|li)\b[^>]*>"
    r"|<input type=\"hidden\"[^>]*>)\s*"
)


def as_shown(html: str) -> str:
    """``html`` with the whitespace a browser does not show taken out, the rest as one space: two pieces of
    HTML the same by this are laid out alike (parse_html's equality also drops a space that shows, as
    between a row's name and its link)."""
    return re.sub(r"\s+", " ", BLOCK_TAG.sub(r"\1", html)).strip()


def admin_action(client: Client, action: str, accounts, reason: str | None = None, **meta):
    """Run an action of the account list on ``accounts``; without a reason, only its confirmation page.
    ``meta``: request headers and REMOTE_ADDR, as the test client takes them."""
    data = {"action": action, "_selected_action": [account.pk for account in accounts]}
    if reason is not None:
        data |= {"confirm": "yes", "reason": reason}
    return client.post(reverse("admin:accounts_account_changelist"), data, follow=reason is not None, **meta)


def act_url(pk, action: str = "suspend") -> str:
    """The account page's action URL, built by hand so that any ``pk`` (malformed too) can be tried."""
    return f"/admin/accounts/account/{pk}/act/{action}/"


def quiet(client: Client) -> Client:
    """``client`` answering a server error with the 500 page, as a browser sees it, instead of raising."""
    client.raise_request_exception = False
    return client


def csrf_client(role: str | None, username: str) -> Client:
    """A logged-in client of ``role`` (a superuser without one) that enforces CSRF, as a browser would
    be attacked cross-site."""
    if role:
        user = get_user_model().objects.create_user(username, password="x", is_staff=True)
        user.groups.set([Group.objects.get(name=role)])
    else:
        user = get_user_model().objects.create_superuser(username, password="x")
    client = Client(enforce_csrf_checks=True, raise_request_exception=False)
    client.force_login(user)
    return client


def fail_logins(client: Client, username: str, times: int, **meta):
    """Sign in to the admin as ``username`` with a wrong password ``times`` times; the last answer.
    ``meta``: request headers and REMOTE_ADDR, as the test client takes them."""
    response = None
    for _ in range(times):
        response = client.post(reverse("admin:login"), {"username": username, "password": "wrong"}, **meta)
    return response


# The public pages

PASSWORD = "correct horse battery staple 7"
NEW_PASSWORD = {"password": PASSWORD, "password_again": PASSWORD}


def page_text(response, typed: str = "") -> str:
    """A page as the person sees it, the same for two requests: without the CSRF token, random per page,
    and without what they typed, which a form shows again."""
    page = re.sub(r'name="csrfmiddlewaretoken" value="[^"]*"', "", response.content.decode())
    return page.replace(f'value="{typed}"', 'value="(typed)"') if typed else page


# manage.py in other processes, as cron, a worker or a person would run it


def database_url_for_tests(alias: str = "default") -> str:
    """The test database's URL as the runtime role ("default") or the owner ("owner")."""
    settings = connections[alias].settings_dict
    host = quote(settings["HOST"], safe="") if settings["HOST"] else ""
    port = f":{settings['PORT']}" if settings["PORT"] else ""
    password = f":{quote(settings['PASSWORD'], safe='')}" if settings.get("PASSWORD") else ""
    return f"postgres://{settings['USER']}{password}@{host}{port}/{settings['NAME']}"


def environment(**env) -> dict:
    base = {
        k: v for k, v in os.environ.items() if k not in {"DEBUG", "SECRET_KEY", "DATABASE_URL", "DATABASE_OWNER_URL"}
    }
    # ENV_FILE empty: a developer's .env must not leak into what the tests set.
    return {**base, "DEBUG": "true", "ENV_FILE": "", **env}


def manage(*args, timeout: float = 120, **env) -> subprocess.CompletedProcess:
    """manage.py with ``env``; the caller sets DATABASE_URL when it must reach the test database."""
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=environment(**env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def start_manage(*args, stdout=subprocess.PIPE, **env) -> subprocess.Popen:
    """``manage.py`` with ``args`` in a process of its own; its output in ``stdout`` (a pipe to read, or a
    file for a process left to run while the test waits: an unread pipe fills and blocks it)."""
    return subprocess.Popen(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=environment(**env),
        stdout=stdout,
        stderr=subprocess.STDOUT,
        text=True,
    )


def run_bench(script: str, *args: str, env: dict | None = None, timeout: float = 600) -> tuple[str, str]:
    """``bench/<script>`` with ``args`` in a process of its own, which must exit 0: its standard output,
    and all it printed (for the assertions' messages)."""
    done = subprocess.run(
        [sys.executable, f"bench/{script}", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )
    report = done.stdout + done.stderr
    assert done.returncode == 0, report
    return done.stdout, report


def mailroom_env(smtp, **extra) -> dict:
    """The environment of a manage.py process that drains the test database into ``smtp``."""
    return {"DATABASE_URL": database_url_for_tests(), "EMAIL_URL": smtp.url, **extra}


def drain_until_every_token_is_mailed(smtp, env: dict, total: int, *, timeout: float = 60) -> Counter:
    """Run ``drain_mailroom`` until the SMTP server holds all ``total`` tokens (what a killed run held
    comes due when its lease ends); how many copies of each arrived."""
    wait_for(
        lambda: manage("drain_mailroom", **env).returncode == 0 and len(set(smtp.token_ids())) == total,
        timeout=timeout,
        interval=0.5,
        message="every token mailed after the kill",
    )
    return Counter(smtp.token_ids())


def wait_for(condition, *, timeout: float = 30, interval: float = 0.05, message: str = "condition"):
    """Wait until ``condition()`` is true (a bound on waiting, never a measured time)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {message}")


# Codes


def max_code_attempts() -> int:
    """How many wrong codes burn a token, as the database says (tokens_max_code_attempts())."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT tokens_max_code_attempts()")
        return cursor.fetchone()[0]


def wrong_code(code: str) -> str:
    """A well-formed code that is not ``code``."""
    return "00000" if code != "00000" else "11111"


# Bad input: each value with the sentence the database refuses it with

BAD_EMAILS = [
    ("", "e-mail must not be empty"),
    (" user@example.com", "e-mail must not start or end with spaces"),
    ("user@example.com\t", "e-mail must not start or end with spaces"),
    ("a" * 243 + "@example.com", "e-mail must be at most 254 characters"),
    ("straße@example.com", "e-mail must be plain ASCII"),
    ("STRASSE@exam\u0131ple.com", "e-mail must be plain ASCII"),  # dotless i
    ("user@\u212aelvin.com", "e-mail must be plain ASCII"),  # Kelvin sign, lower() makes it k
    ("user", "e-mail is not a valid address"),
    ("user@localhost", "e-mail is not a valid address"),
    ("two@at@example.com", "e-mail is not a valid address"),
    ("user@-example.com", "e-mail is not a valid address"),
    # Addresses the mailer cannot send to, or sends elsewhere.
    ("poison@" + "x" * 64 + ".example.com", "e-mail domain parts must be at most 63 characters each"),
    ("user@example." + "c" * 64, "e-mail domain parts must be at most 63 characters each"),
    ("=?utf-8?q?a=0D=0Ab?=@example.com", 'e-mail must not contain "=?"'),
    ("=?us-ascii?q?active1?=@example.com", 'e-mail must not contain "=?"'),
    (".a..b.@example.com", "e-mail is not a valid address"),
    ("a..b@example.com", "e-mail is not a valid address"),
    ("ab.@example.com", "e-mail is not a valid address"),
    (".ab@example.com", "e-mail is not a valid address"),
]
BAD_LOGINS = [
    ("", "login must not be empty"),
    ("user ", "login must not start or end with spaces"),
    ("u" * 255, "login must be at most 254 characters"),
    ("ı", "login may only hold ASCII"),
    ("Ma\u00dfe", "login may only hold ASCII"),
    ("-user", "login may only hold ASCII"),
    # A login that reads as an address would let a login-or-e-mail form find the wrong account.
    ("jane@example.com", "login must not contain @"),
]


# Aged rows: trigger-kept history may be rewritten only with the owner's key (platform_events/db/history.py)


def expire(token) -> None:
    """Make ``token`` expired, as if 15 minutes had passed (its expiry is fixed at issue: the owner's key rewrites it)."""
    from django.db import transaction

    from tokens.models import Token

    with transaction.atomic(), history_rewrite():
        Token.objects.filter(pk=token.pk).update(expires_at=token.created_at)


def rewriting_history(conn: psycopg.Connection) -> None:
    """Let the open transaction of ``conn`` (a session of our own) rewrite trigger-kept history, as
    history_rewrite() does on Django's connection: ``with conn.transaction(): rewriting_history(conn); ...``."""
    conn.execute("SELECT set_config('lifecycle.rewrite_history', %s, true)", [history_rewrite_key()])


def set_deliveries(queryset, **fields) -> int:
    """Put webhook deliveries in a state by hand (failed, due an hour ago...): only the dispatcher's and
    staff's moves are the runtime role's to make, so the owner's key opens it (audited)."""
    from django.db import transaction

    with transaction.atomic(), history_rewrite():
        return queryset.update(**fields)


def tokens_in_every_state() -> dict:
    """One activation token in each state of tokens.models.TokenState, each of its own account
    (logins valid, used, expired, replaced, blocked), made as the product makes them."""
    from lifecycle.demo.factories import AccountFactory
    from tokens.models import MaxCodeAttempts, Token, TokenState
    from tokens.selectors import live_token
    from tokens.services import token_resend_activation

    def first_token(account):
        return Token.objects.filter(account=account).earliest("id")

    valid = first_token(AccountFactory(login="valid"))
    used = first_token(AccountFactory(login="used", active=True))
    expired = first_token(AccountFactory(login="expired"))
    expire(expired)
    replaced_account = AccountFactory(login="replaced")
    replaced = first_token(replaced_account)
    token_resend_activation(account=replaced_account, actor=None)
    blocked = live_token(account=AccountFactory(login="blocked"))
    Token.objects.filter(pk=blocked.pk).update(failed_attempts=MaxCodeAttempts())
    tokens = {
        TokenState.VALID: valid,
        TokenState.USED: used,
        TokenState.EXPIRED: expired,
        TokenState.REPLACED: replaced,
        TokenState.CODE_BLOCKED: blocked,
    }
    for token in tokens.values():
        token.refresh_from_db()
    return tokens


# The web server in a process of its own


class Server:
    """manage.py runserver on a free port of loopback, on the test database."""

    def __init__(self, **env):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = start_manage(
            "runserver", "--noreload", f"127.0.0.1:{self.port}", DATABASE_URL=database_url_for_tests(), **env
        )
        wait_for(self._answers, timeout=60, message="the server to answer")

    def _answers(self) -> bool:
        if self.process.poll() is not None:
            raise AssertionError(f"the server exited: {self.process.stdout.read()}")
        try:
            return httpx.get(f"{self.url}/api/v1/problems/not-found", timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)
        self.process.stdout.close()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()
        if not self.process.stdout.closed:
            self.process.stdout.close()


def pages_as_html(client, urls: list[str]) -> dict[str, str]:
    """Each page's HTML, by URL; every one must answer 200."""
    pages = {}
    for url in urls:
        response = client.get(url)
        assert response.status_code == 200, url
        pages[url] = response.content.decode()
    return pages
