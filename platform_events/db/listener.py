"""LISTEN on a channel and run a pass at once on every notification; poll as a fallback; reconnect
when the database goes away (a restart, a failover). The mailroom's listener (token_insert) and the
webhook dispatcher's (webhook_delivery) are this loop with their own pass.

Needs a direct connection to PostgreSQL: PgBouncer in transaction mode drops LISTEN.
"""

import logging
import signal
import time
from collections.abc import Callable

import psycopg
from django.db import DatabaseError, close_old_connections

from platform_events.db.direct_connection import direct_connection

logger = logging.getLogger(__name__)

MAX_POLL_SECONDS = 86_400


def poll_seconds_problem(seconds: float) -> str | None:
    """Why ``--poll-seconds`` is no interval, or None. nan would make a busy loop (383 runs in 5 s); inf, no
    poll."""
    if not 0 < seconds <= MAX_POLL_SECONDS:
        return f"--poll-seconds must be more than 0 and at most {MAX_POLL_SECONDS} (a day)."
    return None


def listen_until_signalled(channel: str, run_pass: Callable[[], None], *, poll_seconds: float, what: str) -> None:
    """``listen_and_run`` until SIGTERM or SIGINT (a listener command's whole life)."""
    stop = []
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.append(True))
    listen_and_run(channel, run_pass, poll_seconds=poll_seconds, stopping=lambda: bool(stop), what=what)


def listen_and_run(
    channel: str,
    run_pass: Callable[[], None],
    *,
    poll_seconds: float,
    stopping: Callable[[], bool],
    reconnect_max_seconds: float = 30,
    what: str = "pass",
) -> None:
    """Until ``stopping()``: ``run_pass()`` when ``channel`` is notified, and at least every ``poll_seconds``.

    ``run_pass`` reports its own outcome; an exception from it is logged (as ``what``: "mail run") and
    the listener goes on."""
    delay = 1.0
    while not stopping():
        try:
            with direct_connection(autocommit=True) as listener:
                listener.execute(f"LISTEN {channel}")
                logger.info("listening on %s (polling every %ss as a fallback)", channel, poll_seconds)
                delay = 1.0
                _run_logged(run_pass, what)  # what arrived while nobody listened
                while not stopping():
                    if _wait_for_notification(listener, poll_seconds, stopping):
                        _discard_pending(listener)  # one pass serves every notification so far
                    _run_logged(run_pass, what)
        except (psycopg.OperationalError, DatabaseError) as error:
            logger.warning("database unreachable (%s); reconnecting in %.0fs", str(error).strip(), delay)
            _sleep(delay, stopping)
            delay = min(delay * 2, reconnect_max_seconds)


def _wait_for_notification(listener: psycopg.Connection, poll_seconds: float, stopping: Callable[[], bool]) -> bool:
    deadline = time.monotonic() + poll_seconds
    while not stopping() and (remaining := deadline - time.monotonic()) > 0:
        # Short waits, so that a stop request is seen within a second.
        if any(True for _ in listener.notifies(timeout=min(1.0, remaining), stop_after=1)):
            return True
    return False


def _discard_pending(listener: psycopg.Connection) -> None:
    for _ in listener.notifies(timeout=0):
        pass


def _run_logged(run_pass: Callable[[], None], what: str) -> None:
    close_old_connections()  # a connection broken by a database restart is replaced, not reused
    try:
        run_pass()
    except DatabaseError as error:
        logger.warning("%s stopped by a database error (%s); the next one takes it up", what, str(error).strip())
    except Exception:
        logger.exception("%s failed; the listener goes on", what)


def _sleep(seconds: float, stopping: Callable[[], bool]) -> None:
    deadline = time.monotonic() + seconds
    while not stopping() and time.monotonic() < deadline:
        time.sleep(0.1)
