"""The refusals of tokens/sql/ (SQLSTATE class LT, or a unique index) and of the token services."""

from platform_events.db.refusals import LifecycleError, raised_as


class TokenNotFound(LifecycleError):
    code = "token_not_found"


@raised_as(sqlstate="LT001")
class TokenAlreadyUsed(LifecycleError):
    code = "token_used"


@raised_as(
    sqlstate="LT002",
    constraint="tokens_one_live_per_action_key",
    message="tokens: a newer token was issued at the same time; use the newest one",
)
class TokenSuperseded(LifecycleError):
    code = "token_replaced"


@raised_as(sqlstate="LT003")
class TokenBurnt(LifecycleError):
    code = "token_burnt"


@raised_as(sqlstate="LT004")
class TokenExpired(LifecycleError):
    code = "token_expired"


@raised_as(sqlstate="LT005")
class AccountSuspended(LifecycleError):
    code = "account_suspended"


@raised_as(sqlstate="LT006")
class WrongAccountState(LifecycleError):
    """The account is not in the state the token's action needs (``needed``, when known)."""

    code = "wrong_account_state"

    def __init__(self, message: str, *, account_id: int | None = None, state: str | None = None, needed: str = ""):
        super().__init__(message, account_id=account_id, state=state)
        self.needed = needed

    @property
    def reason(self) -> str:
        if self.state and self.needed:
            return f"{self.state}, not {self.needed}"
        return "not in the state this needs"


@raised_as(sqlstate="LT007")
class TokenIdentityKept(LifecycleError):
    """A token's identity (account, action, secret, code, times) was changed, or its count of wrong codes lowered."""

    code = "token_identity_kept"


@raised_as(sqlstate="LT008")
class TokenNotIssuedUnused(LifecycleError):
    """A token was inserted already used, replaced, with wrong codes or with a mail state."""

    code = "token_not_unused"


class WrongCode(LifecycleError):
    code = "wrong_code"

    def __init__(self, message: str, *, attempts_left: int):
        super().__init__(message)
        self.attempts_left = attempts_left


class PasswordNeeded(LifecycleError):
    """An activation from the public pages of an account that has no password, without one."""

    code = "password_needed"
