"""Django's PostgreSQL backend (ENGINE ``platform_events.db.postgresql``), with two changes. The health
check of a kept connection (CONN_HEALTH_CHECKS) asks the server only when something has arrived on
the connection's socket, or when the connection was last checked more than QUIET_SECONDS ago.

Django's own check sends ``SELECT 1`` before the first statement of every request: a round trip per
request, as much as an API read's own statement. A server that ends a session while it sits idle (a
restart, a shutdown, ``pg_terminate_backend``, a pooler closing its client side) says so on the
socket (its FATAL message, then the end of the stream), so an idle connection with nothing to read
is one the server still holds; with something to read, Django's check decides as before.

Silence proves less the longer it lasts: a server whose host died, or whose address moved to another
host (a failover's floating IP), says nothing, and the first packet after it gets a reset. So the
check is skipped only for a connection checked within the last QUIET_SECONDS (a busy thread's, the
case the round trip costs most) and idle outside a transaction; any other gets Django's SELECT 1.

And ``savepoints_skipped`` (set by platform_events/db/savepoints.py) makes the atomic blocks opened
meanwhile make no savepoint, as ``atomic(savepoint=False)`` would.
"""

import select
import time

from django.db.backends.postgresql import base
from psycopg import pq

# How long after its last check a quiet connection is still taken as alive without asking the server.
QUIET_SECONDS = 5.0


class DatabaseWrapper(base.DatabaseWrapper):
    # time.monotonic() of this connection's last health check, either way.
    checked_at = float("-inf")
    # True within platform_events.db.savepoints.savepoints_skipped().
    savepoints_skipped = False

    def _savepoint_allowed(self):
        return not self.savepoints_skipped and super()._savepoint_allowed()

    def close_if_health_check_failed(self):
        due = self.connection is not None and self.health_check_enabled and not self.health_check_done
        if not due:
            return super().close_if_health_check_failed()
        now = time.monotonic()
        quiet = (
            now - self.checked_at < QUIET_SECONDS
            and not self.connection.closed
            and self.connection.info.transaction_status == pq.TransactionStatus.IDLE
            and _nothing_to_read(self.connection)
        )
        self.checked_at = now
        if quiet:
            self.health_check_done = True
            return
        super().close_if_health_check_failed()


def _nothing_to_read(connection) -> bool:
    """Whether the psycopg connection's socket has no data, end of stream or error waiting (poll: no
    FD_SETSIZE limit)."""
    poller = select.poll()
    poller.register(connection.fileno(), select.POLLIN)
    return not poller.poll(0)
