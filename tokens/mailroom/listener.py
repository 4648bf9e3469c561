"""LISTEN token_insert and drain the mailroom at once; poll as a fallback; reconnect when the
database goes away (platform_events/db/listener.py)."""

import logging

from platform_events.db.listener import listen_until_signalled
from tokens.mailroom.drain import drain

logger = logging.getLogger(__name__)


def listen_and_drain(*, poll_seconds: float) -> None:
    listen_until_signalled("token_insert", _drain_logged, poll_seconds=poll_seconds, what="mail run")


def _drain_logged() -> None:
    result = drain()
    if result.claimed or result.expired or result.error:
        logger.info("%s%s", result.summary(), f"; failed: {result.error}" if result.error else "")
