"""The one base of the product's refusals: every app's refusals subclass ``Refused``.

A refusal says the same thing twice: ``str(refusal)`` is the one sentence shown to a person, and its
fields say it to a program, so that nothing parses the sentence. The database's refusals are raised
as these classes by platform_events/db/refusals.py, where each app registers its own.
"""


class Refused(Exception):
    """A move the rules refuse.

    ``code`` names the kind of refusal in kebab-case; where the client API has a problem type for
    that kind, the code is its name (platform_events/api/problems.py), so that no layer renames it.
    ``status`` is the HTTP status that answers it, the problem type's where it has one. Both are the
    class's unless an instance is given its own.

    The other fields say whose and what, when known: ``account_id`` and ``state`` the account and the
    state it was in, ``field`` the input refused, ``retry_after`` the seconds after which the same
    request may succeed. ``reason`` is a few words that group refusals in a report ("already
    suspended"): the instance's own, or its kind's ``default_reason``, or its code in words.
    """

    code = "refused"
    default_reason: str | None = None  # a kind's own words for ``reason``, where its code's would not do
    status = 409  # the request is sound; the rules, or the state of what it changes, refuse it
    retry_after: int | None = None

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        status: int | None = None,
        field: str | None = None,
        account_id: int | None = None,
        state: str | None = None,
        reason: str | None = None,
        retry_after: int | None = None,
    ):
        super().__init__(message)
        self._reason = reason
        if retry_after is not None:
            self.retry_after = retry_after
        if code is not None:
            self.code = code
        if status is not None:
            self.status = status
        self.field = field
        self.account_id = account_id
        self.state = state

    @property
    def reason(self) -> str:
        return self._reason or self.default_reason or self.code.replace("-", " ")
