"""/healthz and /readyz, for an orchestrator's probes (docs/production.md, "Health").

``/healthz``: the process answers; nothing else is touched. ``/readyz``: the database answers, every
migration is applied, and neither queue is stuck (the e-mail or webhook delivery due longest has not
waited past READY_MAIL_MAX_AGE_SECONDS / READY_WEBHOOK_MAX_AGE_SECONDS). Each check is a
django-health-check ``HealthCheck`` run by the library's ``get_result`` (its time limit, its logging of
the reason); the body names each check and its state only, never a reason, which may quote the
database's own words.

A probe comes from the host or the pod network in plain HTTP, with an address for Host: the middleware
answers it first in MIDDLEWARE, before the HTTPS redirect, ALLOWED_HOSTS, the session, CSRF or axes.
"""

import asyncio
import dataclasses
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor, ThreadPoolExecutor
from datetime import timedelta

import health_check
from django.conf import settings
from django.db import connection, connections
from django.db.migrations.executor import MigrationExecutor
from django.http import HttpResponse, JsonResponse
from django.utils.cache import add_never_cache_headers
from health_check.base import HealthCheck
from health_check.exceptions import ServiceUnavailable

from platform_events.db.timeouts import bounded_statements
from platform_events.webhooks.selectors import longest_due_wait
from tokens.selectors import longest_mail_wait

# Each check's wall-clock budget (get_result adds a second), and each statement's, so that a probe
# answers within a kubelet's few seconds even from a database that hangs.
CHECK_TIME_LIMIT = timedelta(seconds=3)
STATEMENT_TIMEOUT = "2s"

OK, FAILING, NOT_CHECKED = "ok", "failing", "not checked"


@dataclasses.dataclass
class Database(health_check.Database):
    """The library's ``SELECT 1`` on the runtime role's connection."""

    timeout = CHECK_TIME_LIMIT


@dataclasses.dataclass
class Migrations(HealthCheck):
    """No migration of any app left unapplied (as ``manage.py migrate --check`` says)."""

    timeout = CHECK_TIME_LIMIT

    def run(self) -> None:
        with bounded_statements(STATEMENT_TIMEOUT):
            executor = MigrationExecutor(connection)
            unapplied = executor.migration_plan(executor.loader.graph.leaf_nodes())
        if unapplied:
            migration, _ = unapplied[0]
            raise ServiceUnavailable(f"{len(unapplied)} unapplied, the first {migration.app_label}.{migration.name}")


@dataclasses.dataclass
class QueueAge(HealthCheck):
    """The item due longest (``longest_wait()``: an e-mail, a webhook delivery) has waited less than
    ``max_age``."""

    what: str
    longest_wait: Callable[[], timedelta | None]
    max_age: timedelta
    timeout = CHECK_TIME_LIMIT

    def run(self) -> None:
        with bounded_statements(STATEMENT_TIMEOUT):
            waited = self.longest_wait()
        if waited is not None and waited > self.max_age:
            raise ServiceUnavailable(f"{self.what} has been due for {waited.total_seconds():.0f} s")


def readiness_checks() -> dict[str, HealthCheck]:
    """The checks by the name /readyz shows, the database first; a queue whose maximum age is 0 is not checked."""
    checks = {"database": Database(), "migrations": Migrations()}
    if settings.READY_MAIL_MAX_AGE_SECONDS:
        checks["mail_queue"] = QueueAge(
            "an e-mail", longest_mail_wait, timedelta(seconds=settings.READY_MAIL_MAX_AGE_SECONDS)
        )
    if settings.READY_WEBHOOK_MAX_AGE_SECONDS:
        checks["webhook_queue"] = QueueAge(
            "a webhook delivery", longest_due_wait, timedelta(seconds=settings.READY_WEBHOOK_MAX_AGE_SECONDS)
        )
    return checks


@dataclasses.dataclass(frozen=True)
class Readiness:
    states: dict[str, str]  # check name: OK, FAILING or NOT_CHECKED
    taken_at: float  # time.monotonic()

    @property
    def ready(self) -> bool:
        return all(state == OK for state in self.states.values())


class ReadinessCache:
    """The last readiness taken in this process, kept READY_CACHE_SECONDS: however many probes come,
    the checks run at most that often, and probes arriving meanwhile wait for that one run."""

    def __init__(self):
        self._lock = threading.Lock()
        self._last: Readiness | None = None

    def get(self) -> Readiness:
        with self._lock:
            if self._last is None or time.monotonic() - self._last.taken_at >= settings.READY_CACHE_SECONDS:
                self._last = Readiness(states=take_readiness(), taken_at=time.monotonic())
            return self._last

    def clear(self) -> None:
        with self._lock:
            self._last = None


READINESS = ReadinessCache()


def take_readiness() -> dict[str, str]:
    """Run the checks one after another on one thread of their own, so on one database connection,
    closed afterwards. A check past its time limit is failing; its thread is left to finish (its
    statements are bounded too) rather than hold the probe."""
    executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="readyz")
    try:
        return asyncio.run(_states(readiness_checks(), executor))
    finally:
        executor.submit(connections.close_all)  # that thread's connections, once its checks are done
        executor.shutdown(wait=False)


async def _states(checks: dict[str, HealthCheck], executor: Executor) -> dict[str, str]:
    states = {}
    for name, check in checks.items():
        if states.get("database") == FAILING:
            # No database: the other checks would only wait for it again.
            states[name] = NOT_CHECKED
            continue
        result = await check.get_result(executor)
        states[name] = FAILING if result.error else OK
    return states


def alive() -> HttpResponse:
    return HttpResponse("ok\n", content_type="text/plain; charset=utf-8")


def ready() -> HttpResponse:
    readiness = READINESS.get()
    return JsonResponse(
        {"status": "ready" if readiness.ready else "not ready", "checks": readiness.states},
        status=200 if readiness.ready else 503,
    )


PROBES = {"/healthz": alive, "/readyz": ready}


def health_probes(get_response):
    """First in MIDDLEWARE: answers GET or HEAD of exactly /healthz or /readyz, without a query string,
    before any other middleware. Every other request goes on unchanged."""

    def middleware(request):
        probe = PROBES.get(request.path_info)
        if probe is None or request.method not in {"GET", "HEAD"} or request.META.get("QUERY_STRING"):
            return get_response(request)
        response = probe()
        add_never_cache_headers(response)
        return response

    return middleware
