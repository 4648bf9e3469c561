"""Advisory locks, so that a job cron may start twice never runs twice at once (Zulip's abort_unless_locked)."""

import zlib
from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connections


def lock_key(name: str) -> int:
    return zlib.crc32(f"lifecycle:{name}".encode())


@contextmanager
def advisory_lock(name: str, *, wait: bool = False, using: str = "default") -> Iterator[bool]:
    """Hold a session-level advisory lock named ``name`` if it is free (or, with ``wait``, once it is);
    yield whether we got it."""
    key = lock_key(name)
    connection = connections[using]
    with connection.cursor() as cursor:
        if wait:
            cursor.execute("SELECT pg_advisory_lock(%s), true", [key])
        else:
            cursor.execute("SELECT pg_try_advisory_lock(%s)", [key])
        acquired = cursor.fetchone()[-1]
    try:
        yield acquired
    finally:
        if acquired:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [key])
