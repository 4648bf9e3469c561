"""LISTEN token_insert and drain the mailroom at once; poll as a fallback; reconnect when the
database goes away (a restart, a failover)."""

import logging
import time
from collections.abc import Callable

import psycopg
from django.db import DatabaseError, close_old_connections

from platform_events.db.direct_connection import direct_connection
from tokens.mailroom.drain import drain

logger = logging.getLogger(__name__)


def listen_and_drain(*, poll_seconds: float, stopping: Callable[[], bool], reconnect_max_seconds: float = 30) -> None:
    delay = 1.0
    while not stopping():
        try:
            with direct_connection(autocommit=True) as listener:
                listener.execute("LISTEN token_insert")
                logger.info("listening on token_insert (polling every %ss as a fallback)", poll_seconds)
                delay = 1.0
                _drain_logged()  # what arrived while nobody listened
                while not stopping():
                    if _wait_for_notification(listener, poll_seconds, stopping):
                        _discard_pending(listener)  # one drain serves every notification so far
                    _drain_logged()
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


def _drain_logged() -> None:
    close_old_connections()  # a connection broken by a database restart is replaced, not reused
    try:
        result = drain()
    except DatabaseError as error:
        logger.warning("mail run stopped by a database error (%s); the next run takes it up", str(error).strip())
        return
    except Exception:
        logger.exception("mail run failed; the listener goes on")
        return
    if result.claimed or result.expired or result.error:
        logger.info("%s%s", result.summary(), f"; failed: {result.error}" if result.error else "")


def _sleep(seconds: float, stopping: Callable[[], bool]) -> None:
    deadline = time.monotonic() + seconds
    while not stopping() and time.monotonic() < deadline:
        time.sleep(0.1)
