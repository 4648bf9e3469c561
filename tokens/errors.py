"""The refusals of tokens/sql/ (SQLSTATE class LT, or a unique index) and of the token services.

The client API has a problem type for ``wrong-account-state`` alone (platform_events/api/problems.py)
and answers the others as the generic ``refused``: its operations only issue tokens, and meet them
at most when two issues race (``token-replaced``). The public pages answer each in their own words
(tokens/views.py).
"""

from platform_events.db.refusals import raised_as
from platform_events.refusals import Refused


class TokenNotFound(Refused):
    code = "token-not-found"


@raised_as(sqlstate="LT001")
class TokenAlreadyUsed(Refused):
    code = "token-used"


@raised_as(
    sqlstate="LT002",
    constraint="tokens_one_live_per_action_key",
    message="tokens: a newer token was issued at the same time; use the newest one",
)
class TokenSuperseded(Refused):
    code = "token-replaced"


@raised_as(sqlstate="LT003")
class TokenBurnt(Refused):
    code = "token-burnt"


@raised_as(sqlstate="LT004")
class TokenExpired(Refused):
    code = "token-expired"


@raised_as(sqlstate="LT005")
class AccountSuspended(Refused):
    code = "account-suspended"


@raised_as(sqlstate="LT009")
class AccountDeprovisioned(Refused):
    """The token's account is deprovisioned: none of its tokens is used or issued (docs/rules.md,
    "Deprovisioning"). The public pages answer it as a link that is not valid."""

    code = "account-deprovisioned"


@raised_as(sqlstate="LT006")
class WrongAccountState(Refused):
    """The account is not in the state the token's action needs (``needed``, when known)."""

    code = "wrong-account-state"

    def __init__(self, message: str, *, account_id: int | None = None, state: str | None = None, needed: str = ""):
        super().__init__(message, account_id=account_id, state=state)
        self.needed = needed

    @property
    def reason(self) -> str:
        if self._reason:
            return self._reason
        if self.state and self.needed:
            return f"{self.state}, not {self.needed}"
        return "not in the state this needs"


@raised_as(sqlstate="LT007")
class TokenIdentityKept(Refused):
    """A token's identity (account, action, secret, code, times) was changed, or its count of wrong codes lowered."""

    code = "token-identity-kept"


@raised_as(sqlstate="LT008")
class TokenNotIssuedUnused(Refused):
    """A token was inserted already used, replaced, with wrong codes or with a mail state."""

    code = "token-not-unused"


@raised_as(sqlstate="LT010")
class TokenIsANotice(Refused):
    """A notice token (a password change's) consumed: it has nothing to use."""

    code = "token-is-a-notice"


@raised_as(sqlstate="LT011")
class AddressUnchanged(Refused):
    """An address change to the address the account has already."""

    code = "address-unchanged"
    status = 422


@raised_as(sqlstate="LT012")
class AddressChangedLately(Refused):
    """The address changed less than the undo's 7 days ago: it does not change again, nor is the
    account deleted by the person, until the undo link mailed to the old address is used or expires."""

    code = "address-changed-lately"


@raised_as(sqlstate="LT013")
class DeletedByProvider(Refused):
    """A restore token for an account its identity provider deleted (accounts/sql/0026_scim_users.sql):
    only the provider, creating the User again, or staff bring it back."""

    code = "deleted-by-provider"


class WrongCode(Refused):
    code = "wrong-code"

    def __init__(self, message: str, *, attempts_left: int):
        super().__init__(message)
        self.attempts_left = attempts_left


class PasswordNeeded(Refused):
    """An activation from the public pages of an account that has no password, without one."""

    code = "password-needed"
