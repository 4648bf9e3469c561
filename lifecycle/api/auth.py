"""Who calls the client API: an API client's bearer key, checked for the operation's scope, the
client's rate, the body's size and the query's parameters before the operation runs (a row it reads
along the key's statement is read only for a key within its rate that holds the scope)."""

from collections.abc import Callable
from datetime import timedelta

from django.conf import settings
from ninja.security.http import HttpAuthBase

from platform_events.api.clients import ReadAlong, api_client_called_reading
from platform_events.api.models import ApiClient, ApiScope
from platform_events.api.problems import Problem
from platform_events.limits.counters import Limit, LimitExceeded


def per_client_limit() -> Limit:
    return Limit(name="api-per-client", max_hits=settings.API_REQUESTS_PER_MINUTE, window=timedelta(minutes=1))


class ClientKey(HttpAuthBase):
    """``Authorization: Bearer <key>`` of an unrevoked API client that holds ``scope``.

    Written out rather than ninja's HttpBearer, which in DEBUG logs an Authorization header that is
    not a bearer one, credentials and all."""

    openapi_scheme = "bearer"

    def __init__(
        self,
        scope: ApiScope,
        *,
        query: frozenset[str] = frozenset(),
        read_along: Callable[[dict], tuple[str, dict] | None] | None = None,
    ):
        self.scope = scope
        self.query = query  # the query parameters the operation takes; any other is refused
        # The operation's row read in the key's statement: (SQL, parameters) from the path's
        # parameters as the URL gave them, None when they name no row. request.read_along is then
        # (parameters, its row or None); an operation whose own parameters differ reads as it would.
        self.read_along = read_along
        super().__init__()

    def __call__(self, request) -> ApiClient | None:
        scheme, _, key = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer":
            return None
        wanted = self.read_along(request.resolver_match.kwargs) if self.read_along else None
        read = None if wanted is None else ReadAlong(scope=self.scope, sql=wanted[0], params=wanted[1])
        try:
            # One round trip for the key, the client's rate and the row read along.
            client, row = api_client_called_reading(key.strip(), limit=per_client_limit(), read=read)
        except LimitExceeded as refusal:
            raise Problem(
                "rate-limited",
                f"this client may make {settings.API_REQUESTS_PER_MINUTE} requests a minute",
                headers={"Retry-After": str(refusal.retry_after)},
            ) from None
        if client is None:
            return None
        if self.scope not in client.scopes:
            raise Problem(
                "insufficient-scope", f"this needs the scope {self.scope}; this client has {', '.join(client.scopes)}"
            )
        if _content_length(request) > settings.API_MAX_BODY_BYTES:
            raise Problem("request-too-large", f"a request body may be at most {settings.API_MAX_BODY_BYTES} bytes")
        _check_query(request, self.query)
        if read is not None:
            request.read_along = (read.params, row)
        return client


def _check_query(request, allowed: frozenset[str]) -> None:
    """A query parameter the operation does not take, or one given twice, is refused (ninja would
    ignore the one and take the last of the other)."""
    unknown = sorted(set(request.GET) - allowed)
    if unknown:
        raise Problem("validation-failed", f"unknown query parameter(s): {', '.join(unknown)[:200]}", errors=[])
    repeated = sorted(name for name in request.GET if len(request.GET.getlist(name)) > 1)
    if repeated:
        raise Problem("validation-failed", f"give {repeated[0]} once", errors=[])


def _content_length(request) -> int:
    """The body's declared size; a Content-Length that is not a number is refused here (Django would
    raise on it while reading the body: a 500)."""
    declared = request.META.get("CONTENT_LENGTH") or "0"
    if not (declared.isascii() and declared.isdigit()):
        raise Problem("malformed-request", "the Content-Length header is not a number of bytes")
    return int(declared)
