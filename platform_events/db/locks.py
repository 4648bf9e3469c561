"""Advisory locks, so that a job cron may start twice never runs twice at once (Zulip's abort_unless_locked)."""

import zlib
from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connections


def lock_key(name: str) -> int:
    return zlib.crc32(f"lifecycle:{name}".encode())


@contextmanager
def advisory_lock(name: str, *, wait: bool = False, shared: bool = False, using: str = "default") -> Iterator[bool]:
    """Hold a session-level advisory lock named ``name`` if it is free (or, with ``wait``, once it is);
    yield whether we got it. ``shared``: held together with other shared holders, never with an
    exclusive one (jobs that may run side by side, each excluding the whole-table run)."""
    key = lock_key(name)
    kind = "_shared" if shared else ""
    connection = connections[using]
    with connection.cursor() as cursor:
        if wait:
            cursor.execute(f"SELECT pg_advisory_lock{kind}(%s), true", [key])
        else:
            cursor.execute(f"SELECT pg_try_advisory_lock{kind}(%s)", [key])
        acquired = cursor.fetchone()[-1]
    try:
        yield acquired
    finally:
        if acquired:
            with connection.cursor() as cursor:
                cursor.execute(f"SELECT pg_advisory_unlock{kind}(%s)", [key])
