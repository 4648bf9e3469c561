"""A clear page, not a 500, while the database cannot be reached (issue 9).

During a restart of PostgreSQL (or while it is down) every page that needs it answers 503 with a
page saying to try again shortly, and ``Retry-After``; nothing was changed, as the database refused
or never saw the request. Any other database error is still a bug and still a 500.
"""

import sys

from django.db import InterfaceError, OperationalError
from django.shortcuts import render
from django.views import defaults

RETRY_AFTER_SECONDS = 30

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


def server_error(request):
    """handler500: the 503 page when the uncaught exception says the database is unreachable (from a
    view or from any middleware: the session's save, django-axes' log-in rows), Django's 500 otherwise."""
    error = sys.exc_info()[1]
    if error is not None and database_unreachable(error):
        response = render(request, "503.html", status=503)
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return response
    return defaults.server_error(request)
