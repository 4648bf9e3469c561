"""LISTEN token_insert and drain the mailroom at once; poll as a fallback; reconnect when the
database goes away (platform_events/db/listener.py)."""

import logging
from collections.abc import Callable

from platform_events.db.listener import listen_and_run
from tokens.mailroom.drain import drain

logger = logging.getLogger(__name__)


def listen_and_drain(*, poll_seconds: float, stopping: Callable[[], bool], reconnect_max_seconds: float = 30) -> None:
    listen_and_run(
        "token_insert",
        _drain_logged,
        poll_seconds=poll_seconds,
        stopping=stopping,
        reconnect_max_seconds=reconnect_max_seconds,
        what="mail run",
    )


def _drain_logged() -> None:
    result = drain()
    if result.claimed or result.expired or result.error:
        logger.info("%s%s", result.summary(), f"; failed: {result.error}" if result.error else "")
