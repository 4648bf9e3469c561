"""runserver's own server (django.core.servers.basehttp: wsgiref, a thread per connection, keep-alive)
serving the product with the benches' views (bench/bare_site.py), with Nagle's algorithm off: the
server bench/api.py measures the API on with ``--server runserver`` (its default is gunicorn).

    .venv/bin/python bench/runserver_nodelay.py PORT

Stock runserver writes a response in several small send()s (status line, headers, body); with Nagle's
algorithm on, each after the first waits for the client's delayed ACK, about 40 ms on Linux, on every
response after the first on a keep-alive connection: a GET of /api/v1/problems/not-found took 44 ms
that way against 1.4 ms on a new connection each time (and 0.3 ms through Django's test client). That
stall is the development server's, not the API's (bench/load.py measures the production server, gunicorn).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler  # noqa: E402

from bench.bare_site import application  # noqa: E402


class NoDelayHandler(WSGIRequestHandler):
    disable_nagle_algorithm = True  # socketserver sets TCP_NODELAY on each accepted connection


def main() -> None:
    # runserver's own: a thread per connection, its database connections closed when the client's closes.
    server = ThreadedWSGIServer(("127.0.0.1", int(sys.argv[1])), NoDelayHandler)
    server.set_app(application)
    server.serve_forever()


if __name__ == "__main__":
    main()
