"""Whether a database error says the server could not be reached (a restart, an outage), rather than
that a query failed: the web's 503 page (lifecycle/ops/database_unavailable.py), the commands' one
sentence (manage.py) and the queued public requests' retry (tokens/tasks.py) ask the same question."""

from django.db import InterfaceError, OperationalError

# SQLSTATEs of a server that is going away or not yet back: admin_shutdown, crash_shutdown,
# cannot_connect_now (starting up, shutting down), and the connection_exception class.
GOING_AWAY = {"57P01", "57P02", "57P03", "08000", "08003", "08006"}


def database_unreachable(error: BaseException) -> bool:
    """Whether ``error`` says the database could not be reached, rather than that a query failed.

    No SQLSTATE: no server answered (refused, unknown host, timed out, log-in refused); a failed query
    has one. A connection the server closed under us is an InterfaceError in Django."""
    if isinstance(error, InterfaceError):
        return True
    if not isinstance(error, OperationalError):
        return False
    return getattr(error.__cause__, "sqlstate", None) in {None, *GOING_AWAY}
