from platform_events.db.refusals import LifecycleError, raised_as


class TokenNotFound(LifecycleError):
    pass


@raised_as(sqlstate="LT001")
class TokenAlreadyUsed(LifecycleError):
    pass


@raised_as(
    sqlstate="LT002",
    constraint="tokens_one_live_per_action_key",
    message="tokens: a newer token was issued at the same time; use the newest one",
)
class TokenSuperseded(LifecycleError):
    pass


@raised_as(sqlstate="LT003")
class TokenBurnt(LifecycleError):
    pass


@raised_as(sqlstate="LT004")
class TokenExpired(LifecycleError):
    pass


@raised_as(sqlstate="LT005")
class AccountSuspended(LifecycleError):
    pass


@raised_as(sqlstate="LT006")
class WrongAccountState(LifecycleError):
    """The account is not in the state the token's action needs."""


class WrongCode(LifecycleError):
    def __init__(self, message: str, *, attempts_left: int):
        super().__init__(message)
        self.attempts_left = attempts_left
