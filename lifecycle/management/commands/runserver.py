"""Django's development server (with staticfiles' static files), closing each request's database
connections when the request ends.

runserver serves each request on a thread of its own. With persistent connections (CONN_MAX_AGE, 60 s
by default for gunicorn's long-lived threads) the thread ends with its connection still open, and the
connection waits for Python's garbage collector to close it: under load that is enough of them for
PostgreSQL to refuse new sessions ("remaining connection slots are reserved"). Django's own test server
closes them the same way (django.core.servers.basehttp.ThreadedWSGIServer).
"""

from django.contrib.staticfiles.management.commands.runserver import Command as StaticFilesRunserver
from django.core.servers.basehttp import WSGIServer
from django.db import connections


class ConnectionClosingWSGIServer(WSGIServer):
    def close_request(self, request):
        # Called on the request's own thread, once its HTTP connection (and every request it carried) is done.
        connections.close_all()
        super().close_request(request)


class Command(StaticFilesRunserver):
    server_cls = ConnectionClosingWSGIServer
