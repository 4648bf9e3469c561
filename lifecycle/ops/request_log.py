"""Every request's id, and one log line per request that carries it (docs/production.md, "Logs").

The id is a UUID, as ``audit_events.request_id`` is one, so a log line and the audit rows its request
wrote can be joined. It is sent back as ``X-Request-ID``. A client's own ``X-Request-ID`` is ignored,
as anybody can write one: only when REQUEST_ID_HEADER names the header a proxy in front sets is that
header taken, and only when it holds a UUID.

The line names the URL pattern, not the path: ``POST /activate/<str:secret> 200 in 31 ms``. The path of
an e-mail's link carries its secret, and paths carry logins and ids a pattern does not. A path that
matches no pattern (a 404) is written as it came, with a link's secret hidden (lifecycle/ops/logs.py).
"""

import logging
import time
import uuid

from django.conf import settings

from platform_events.request_id import serve_under

RESPONSE_HEADER = "X-Request-ID"

logger = logging.getLogger("lifecycle.requests")


def request_log(get_response):
    def middleware(request):
        started = time.monotonic()
        request.request_id = _proxy_request_id(request) or str(uuid.uuid4())
        serve_under(request.request_id)
        response = get_response(request)
        response[RESPONSE_HEADER] = request.request_id
        match = request.resolver_match
        logger.info(
            "%s %s %s in %.0f ms",
            request.method,
            f"/{match.route}" if match else request.path,
            response.status_code,
            (time.monotonic() - started) * 1000,
        )
        return response

    return middleware


def _proxy_request_id(request) -> str | None:
    """The id the proxy in front gave the request, when REQUEST_ID_HEADER names its header and it is a UUID."""
    if not settings.REQUEST_ID_HEADER:
        return None
    try:
        return str(uuid.UUID(request.headers.get(settings.REQUEST_ID_HEADER, "")))
    except ValueError:
        return None  # not a UUID (nginx's $request_id, 32 hex digits, is one): the audit trail could not record it
