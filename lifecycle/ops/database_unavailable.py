"""A clear page, not a 500, while the database cannot be reached.

During a restart of PostgreSQL (or while it is down) every page that needs it answers 503 with a
page saying to try again shortly, and ``Retry-After``; nothing was changed, as the database refused
or never saw the request. Any other database error is still a bug and still a 500.
"""

import sys

from django.shortcuts import render
from django.views import defaults

from platform_events.db.unreachable import database_unreachable

RETRY_AFTER_SECONDS = 30


def server_error(request):
    """handler500: the 503 page when the uncaught exception says the database is unreachable (from a
    view or from any middleware: the session's save, django-axes' log-in rows), Django's 500 otherwise."""
    error = sys.exc_info()[1]
    if error is not None and database_unreachable(error):
        response = render(request, "503.html", status=503)
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return response
    return defaults.server_error(request)
