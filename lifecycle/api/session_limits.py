"""The limits on failed password checks (POST /api/v1/sessions), all asked before the password is
hashed, so that a refused check costs no hash (docs/api.md, "Password check").

- Per name as typed (any case), whoever it names: after ``API_SESSION_FAILURES_PER_NAME`` failures
  in a day, growing delays (1 s, 2 s, 4 s ... at most ``API_SESSION_LONGEST_DELAY_SECONDS``), never
  a lock: a stranger can keep a name waiting only by failing again, once per delay.
- With the person's address (``client_address``, from a client with the scope
  sessions:client-address; an IPv6 /64 counts as one address): per name and address, locked for the
  rest of the hour after ``API_SESSION_FAILURES_PER_NAME_AND_ADDRESS``, as the admin's lock-out
  counts staff sign-ins; per address, whatever the names, after ``API_SESSION_FAILURES_PER_ADDRESS``.
  An address with no failure on a name in the hour is not held by that name's delays: a stranger
  failing from elsewhere does not keep the person waiting.
- Per client, whatever the names: ``API_SESSION_FAILURES_PER_CLIENT`` an hour.

Not per account: were a login and its address one count, a refusal on one after failures on the
other would tell that both exist and belong together, where a name nobody has answers 403. So a
person's two names give a guesser twice the tries, as on the public pages.
"""

from datetime import timedelta

from django.conf import settings

from platform_events.limits.counters import Limit, LimitExceeded, hits_counted, limits_hit, limits_reached
from platform_events.limits.delays import Delay, delay_failed, delay_pending

HOUR = timedelta(hours=1)


def per_name() -> Delay:
    return Delay(
        name="api-session-name",
        free=settings.API_SESSION_FAILURES_PER_NAME,
        window=timedelta(days=1),
        longest=timedelta(seconds=settings.API_SESSION_LONGEST_DELAY_SECONDS),
    )


def per_name_and_address() -> Limit:
    return Limit(
        name="api-session-per-name-and-address",
        max_hits=settings.API_SESSION_FAILURES_PER_NAME_AND_ADDRESS,
        window=HOUR,
    )


def _limits(*, client_id: int, identifier: str, address: str | None) -> list[tuple[Limit, str]]:
    per_client = Limit(name="api-session-per-client", max_hits=settings.API_SESSION_FAILURES_PER_CLIENT, window=HOUR)
    limits = [(per_client, f"api-client:{client_id}")]
    if address is None:
        return limits
    per_address = Limit(name="api-session-per-address", max_hits=settings.API_SESSION_FAILURES_PER_ADDRESS, window=HOUR)
    # A login or an e-mail address holds no space (SessionIn's pattern): the pair reads back one way only.
    return [(per_name_and_address(), f"{address} {identifier}"), (per_address, address), *limits]


def session_check_allowed(*, client_id: int, identifier: str, address: str | None) -> None:
    """Raise ``LimitExceeded`` when a check of ``identifier`` from ``address`` (an address key, or None
    when the client gave none) is refused now; count nothing."""
    limits_reached(_limits(client_id=client_id, identifier=identifier, address=address))
    try:
        delay_pending(per_name(), identifier)
    except LimitExceeded:
        # The name's delays hold the addresses that failed on it, and every check that names none.
        if address is None or hits_counted(per_name_and_address(), f"{address} {identifier}"):
            raise


def session_check_failed(*, client_id: int, identifier: str, address: str | None) -> None:
    """Count a failed check against every limit and the name's delay; ``LimitExceeded`` when a limit
    was spent meanwhile (a check that raced another)."""
    delay_failed(per_name(), identifier)
    limits_hit(_limits(client_id=client_id, identifier=identifier, address=address))
