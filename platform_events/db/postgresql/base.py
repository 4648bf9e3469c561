"""Django's PostgreSQL backend (ENGINE ``platform_events.db.postgresql``), with one change: the health
check of a kept connection (CONN_HEALTH_CHECKS) asks the server only when something has arrived on
the connection's socket since its last statement.

Django's own check sends ``SELECT 1`` before the first statement of every request: a round trip per
request, as much as an API read's own statement. A server that ends a session while it sits idle (a
restart, a shutdown, ``pg_terminate_backend``, a pooler closing its client side) says so on the
socket (its FATAL message, then the end of the stream), so an idle connection with nothing to read
is one the server still holds; with something to read, Django's check decides as before. A peer that
vanishes without a word (a host powered off) is caught by neither check before a statement waits on it.
"""

import select

from django.db.backends.postgresql import base


class DatabaseWrapper(base.DatabaseWrapper):
    def close_if_health_check_failed(self):
        due = self.connection is not None and self.health_check_enabled and not self.health_check_done
        if due and _nothing_to_read(self.connection):
            self.health_check_done = True
            return
        super().close_if_health_check_failed()


def _nothing_to_read(connection) -> bool:
    """Whether the psycopg connection's socket has no data, end of stream or error waiting (poll: no
    FD_SETSIZE limit). A connection psycopg holds closed has no socket: Django's check closes it."""
    if connection.closed:
        return False
    poller = select.poll()
    poller.register(connection.fileno(), select.POLLIN)
    return not poller.poll(0)
