"""The limits on failed password checks, all asked before the password is hashed, so that a refused
check costs no hash (docs/api.md, "Password check"). Two ways check a password: the client API's POST
/api/v1/sessions, and the account pages' sign-in (lifecycle/my_account/), whose every check gives the
visitor's address and which has no count of its own beyond: its visitors are the whole world, and a
stranger spending one count for all would keep out everyone who mistyped once this hour. Both count
on the same counters: a name's failures count once, whichever way they came.

- Per name as typed (any case), whoever it names: after ``API_SESSION_FAILURES_PER_NAME`` failures
  in a day, growing delays (1 s, 2 s, 4 s ... at most ``API_SESSION_LONGEST_DELAY_SECONDS``), never
  a lock: a stranger can keep a name waiting only by failing again, once per delay.
- With the person's address (``client_address``, from a client with the scope
  sessions:client-address; an IPv6 /64 counts as one address): per name and address, refused for
  the rest of the hour after ``API_SESSION_FAILURES_PER_NAME_AND_ADDRESS``, as the admin's lock-out
  counts staff sign-ins; per address, whatever the names, after ``API_SESSION_FAILURES_PER_ADDRESS``.
  An address that has not failed on a name this hour is let through that name's delays, so that a
  stranger failing from elsewhere does not keep the person waiting; but only
  ``API_SESSION_NEW_ADDRESS_FAILURES_PER_NAME`` failures an hour come that way: past them (many
  addresses, or a client passing on addresses a guesser chose), the delays hold every address.
- Per API client, whatever the names: ``API_SESSION_FAILURES_PER_CLIENT`` an hour. With addresses, one
  that has not failed this hour is let through it (as through a name's delays): a stranger's failures
  on made-up names hold the addresses they came from, not the person signing in from their own; a
  guesser spreading out gets one try per fresh address, then meets the limit like the rest.

Checks of one name are taken one at a time (``one_at_a_time()``, an advisory lock held over the
reading, the hash and the counting): checks sent at once each see the others' failures, instead of
all passing the reading before any is counted.

Not per account: were a login and its address one count, a refusal on one after failures on the
other would tell that both exist and belong together, where a name nobody has answers 403. So a
person's two names give a guesser twice the tries, as on the public pages.
"""

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import timedelta

from django.conf import settings
from django.db import connection, transaction

from accounts.models import Account
from accounts.services import PasswordVerdict, account_password_verdict
from platform_events.limits.counters import Limit, LimitExceeded, hits_counted, limits_hit, limits_reached
from platform_events.limits.delays import Delay, delay_failed, delay_refusal, delay_remaining

HOUR = timedelta(hours=1)


def per_name() -> Delay:
    return Delay(
        name="api-session-name",
        free=settings.API_SESSION_FAILURES_PER_NAME,
        window=timedelta(days=1),
        longest=timedelta(seconds=settings.API_SESSION_LONGEST_DELAY_SECONDS),
    )


def api_client(client_id: int) -> str:
    return f"api-client:{client_id}"


@dataclass
class SessionCheck:
    """One password check: ``identifier`` as typed, by ``client`` (``api_client()``; None for the account
    pages, counted per visitor's address instead), from ``address`` (an address key,
    ``platform_events.client_ip.address_key``; None when the client gave none)."""

    client: str | None
    identifier: str
    address: str | None
    # Let through the name's delays as an address that had not failed on it: its failure counts so.
    through_delay: bool = False

    def one_at_a_time(self) -> None:
        """Wait for any other check of this name to be counted (until the caller's transaction ends)."""
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended('api-session:' || lower(%s), 0))", [self.identifier]
            )

    def refuse_if_limited(self) -> None:
        """Raise ``LimitExceeded`` when this check is refused now; count nothing."""
        limits = self._limits()
        if self.client is not None and self._address_clean():
            limits = limits[:-1]  # not held by the client's limit: it is the strangers' addresses' to meet
        limits_reached(limits)
        delay = per_name()
        held = delay_remaining(delay, self.identifier)
        if not held:
            return
        # The name's delays hold every check that gives no address, the addresses that failed on it,
        # and every address once the new addresses' failures are spent.
        if self.address is None or hits_counted(*self._per_name_and_address()) or self._new_addresses_spent():
            raise delay_refusal(delay, held)
        self.through_delay = True

    def count_failure(self) -> None:
        """Count a failed check against every limit and the name's delay; ``LimitExceeded`` when a
        limit was spent meanwhile (a check that raced another)."""
        delay_failed(per_name(), self.identifier)
        limits_hit(self._limits() + ([self._new_addresses()] if self.through_delay else []))

    def _address_clean(self) -> bool:
        """An address given that no check failed from this hour."""
        if self.address is None:
            return False
        limit, key = self._limits()[1]
        return hits_counted(limit, key) == 0

    def _new_addresses_spent(self) -> bool:
        limit, key = self._new_addresses()
        return hits_counted(limit, key) >= limit.max_hits

    def _per_name_and_address(self) -> tuple[Limit, str]:
        limit = Limit(
            name="api-session-per-name-and-address",
            max_hits=settings.API_SESSION_FAILURES_PER_NAME_AND_ADDRESS,
            window=HOUR,
        )
        # A login or an e-mail address holds no space (SessionIn's pattern): the pair reads back one way only.
        return limit, f"{self.address} {self.identifier}"

    def _new_addresses(self) -> tuple[Limit, str]:
        limit = Limit(
            name="api-session-name-new-addresses",
            max_hits=settings.API_SESSION_NEW_ADDRESS_FAILURES_PER_NAME,
            window=HOUR,
        )
        return limit, self.identifier

    def _limits(self) -> list[tuple[Limit, str]]:
        per_client = Limit(
            name="api-session-per-client", max_hits=settings.API_SESSION_FAILURES_PER_CLIENT, window=HOUR
        )
        # The client's own count comes last: refuse_if_limited() lets a clean address through it.
        limits = [] if self.client is None else [(per_client, self.client)]
        if self.address is None:
            return limits
        per_address = Limit(
            name="api-session-per-address", max_hits=settings.API_SESSION_FAILURES_PER_ADDRESS, window=HOUR
        )
        return [self._per_name_and_address(), (per_address, self.address), *limits]


def password_checked(
    check: SessionCheck, password: str, *, accepted: Callable[[Account], bool] = lambda account: True
) -> PasswordVerdict:
    """The account ``check.identifier`` names and whether ``password`` signs in to it: the limits
    asked first (``LimitExceeded``, raised once the counts are committed), a failure counted. A right
    password for an account ``accepted`` refuses counts as a failure too, so that the counts do not
    tell it apart from a wrong one."""
    refused = None
    with transaction.atomic():
        check.one_at_a_time()
        try:
            check.refuse_if_limited()
            verdict = account_password_verdict(identifier=check.identifier, password=password)
            if verdict.right and not accepted(verdict.account):
                verdict = replace(verdict, right=False)
            if not verdict.right:
                check.count_failure()
        except LimitExceeded as refusal:
            refused = refusal  # raised once the counts are committed
    if refused is not None:
        raise refused
    return verdict
