"""One delivery attempt over HTTP (httpx), and when to try again.

Requests go straight to httpx's transport (``HTTPTransport.handle_request``, httpx's documented
transport API) rather than through an ``httpx.Client``: the client's per-request work is all for
what a webhook must not do (keep a receiver's cookies and send them back, follow redirects, ask for a
compressed answer whose raw bytes would then fill the excerpt) and costs about a third of a POST.
So no redirect is followed (a 3xx is a failed attempt, its Location in the excerpt), no
cookie is kept, no proxy is used, every connection goes through the SSRF guard (addresses.py), and at
most ``EXCERPT_CHARS`` of an answer are read and kept: a receiver that answers a gigabyte, or
trickles, costs one excerpt and at most ``WEBHOOKS_CONNECT_TIMEOUT_SECONDS`` +
``WEBHOOKS_TIMEOUT_SECONDS``: one deadline bounds the whole attempt (deadline.py), where httpx's
timeouts bound each read alone.
"""

import functools
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import httpcore
import httpx
from django.conf import settings

from platform_events.webhooks.addresses import WEBHOOKS, AddressPolicy, GuardedBackend
from platform_events.webhooks.deadline import attempt_deadline

EXCERPT_CHARS = 2048
RETRY_AFTER_CAP_SECONDS = 24 * 3600
USER_AGENT = "Lifecycle-Webhooks/1"


@dataclass(frozen=True)
class Attempt:
    outcome: str  # "delivered" (2xx), "gone" (410: disable the endpoint), "retry" (anything else)
    status: int | None  # None when no HTTP answer came
    excerpt: str  # the answer's first characters, or what went wrong in one sentence
    latency_ms: int
    retry_after: float | None = None  # seconds the receiver asked for (Retry-After), capped


@functools.cache
def _ssl_context():
    # Loading the CA bundle takes about 30 ms: once per process, not per run (the listener runs often).
    return httpx.create_ssl_context()


class GuardedTransport(httpx.HTTPTransport):
    """httpx's transport whose every connection goes through the SSRF guard, with the webhooks' policy
    unless another is given (the storage nodes' purge gives its own: accounts/nodes/purge.py)."""

    def __init__(self, *, policy: AddressPolicy = WEBHOOKS, **kwargs):
        super().__init__(verify=_ssl_context(), **kwargs)
        limits = kwargs.get("limits", httpx.Limits())
        self._pool = httpcore.ConnectionPool(
            ssl_context=_ssl_context(),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=GuardedBackend(policy),
        )

    def drop_out_of_step_connections(self) -> None:
        """Close a kept-alive connection holding bytes its receiver sent after its answer (a second
        answer, a body longer than its Content-Length): reused, they would be read as the next delivery's
        answer, before that request was even sent. httpcore checks an idle connection's socket, not
        what h11 already read from it (h11's public ``trailing_data``, behind httpcore's attributes)."""
        for connection in self._pool.connections:
            h11_state = getattr(getattr(connection, "_connection", None), "_h11_state", None)
            if h11_state is not None and h11_state.trailing_data[0]:
                connection.close()


def _timeouts() -> dict[str, float]:
    """What httpx's transport takes as a request's ``timeout`` extension."""
    read = settings.WEBHOOKS_TIMEOUT_SECONDS
    return {"connect": settings.WEBHOOKS_CONNECT_TIMEOUT_SECONDS, "read": read, "write": read, "pool": read}


def attempt_seconds() -> float:
    """The most one attempt may take: connecting, then WEBHOOKS_TIMEOUT_SECONDS for the rest."""
    return settings.WEBHOOKS_CONNECT_TIMEOUT_SECONDS + settings.WEBHOOKS_TIMEOUT_SECONDS


def new_transport() -> GuardedTransport:
    """A transport (a pool of keep-alive connections) for one run's attempts; close it when done."""
    limits = httpx.Limits(max_connections=20, max_keepalive_connections=20, keepalive_expiry=30)
    return GuardedTransport(limits=limits)


# URLs parsed once per process: an endpoint's URL is requested once per delivery.
_parsed_url = functools.lru_cache(maxsize=1024)(httpx.URL)


def post(transport: GuardedTransport, url: str, *, body: bytes, headers: dict[str, str]) -> Attempt:
    """POST ``body``; never raises for what the network or the receiver does."""
    started = time.perf_counter()
    deadline = started + attempt_seconds()

    def took() -> int:
        return round((time.perf_counter() - started) * 1000)

    try:
        request = httpx.Request(
            "POST",
            _parsed_url(url),
            content=body,
            headers={**headers, "user-agent": USER_AGENT},
            extensions={"timeout": _timeouts()},
        )
        with attempt_deadline(attempt_seconds()):
            response = transport.handle_request(request)
            try:
                excerpt = _read_excerpt(response, deadline)
            finally:
                response.close()
            transport.drop_out_of_step_connections()
        status = response.status_code
        retry_after = _retry_after(response.headers.get("retry-after"))
        location = response.headers.get("location")
    except httpx.TimeoutException:
        return Attempt(
            "retry", None, f"timed out (WEBHOOKS_TIMEOUT_SECONDS {settings.WEBHOOKS_TIMEOUT_SECONDS})", took()
        )
    except httpx.HTTPError as error:
        return Attempt("retry", None, _describe(error), took())
    except (httpx.InvalidURL, UnicodeError, ValueError) as error:
        # A URL saved before a check refused it, or that httpx cannot encode (an IDNA label): this
        # endpoint's attempt fails, never the run.
        return Attempt("retry", None, _clean(f"the URL cannot be requested: {error}"), took())
    if 300 <= status < 400:
        excerpt = f"redirect to {location or '(no Location)'} not followed; " + excerpt
    if 200 <= status < 300:
        outcome = "delivered"
    elif status == 410:
        outcome = "gone"
    else:
        outcome = "retry"
    return Attempt(outcome, status, excerpt[:EXCERPT_CHARS], took(), retry_after)


def _read_excerpt(response: httpx.Response, deadline: float) -> str:
    read = bytearray()
    for chunk in response.iter_raw(EXCERPT_CHARS):
        read += chunk
        if len(read) >= 4 * EXCERPT_CHARS or time.perf_counter() > deadline:
            break
    return _clean(bytes(read).decode("utf-8", errors="replace"))


def _clean(text: str) -> str:
    """Text PostgreSQL can store: an answer's NUL bytes become U+FFFD (a NUL in the excerpt would make
    the record fail, and with it every run that claimed this delivery)."""
    return text.replace("\x00", "\ufffd")[:EXCERPT_CHARS]


def _describe(error: httpx.HTTPError) -> str:
    text = str(error).strip() or type(error).__name__
    if "refused:" in text:
        return _clean(text[text.index("refused:") :])
    if isinstance(error, httpx.ConnectError):
        return _clean(f"could not connect: {text}")
    return _clean(f"{type(error).__name__}: {text}")


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():  # str.isdigit() takes "²", which float() refuses
        seconds = float(value)
    else:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError, OverflowError):  # OverflowError: an offset past a C int
            return None
        if when is None:
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - datetime.now(UTC)).total_seconds()
    if seconds < 0:
        return None
    return min(seconds, RETRY_AFTER_CAP_SECONDS)


def next_attempt_delay(attempts_made: int, retry_after: float | None) -> float | None:
    """Seconds until the next attempt after ``attempts_made`` failed ones (WEBHOOKS_RETRY_SCHEDULE), at
    least what the receiver asked for; None when the schedule is over (permanently failed)."""
    schedule = settings.WEBHOOKS_RETRY_SCHEDULE
    if attempts_made > len(schedule):
        return None
    delay = float(schedule[attempts_made - 1])
    return max(delay, retry_after) if retry_after is not None else delay
