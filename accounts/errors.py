"""The refusals of accounts/sql/ (SQLSTATE class LA, or a unique index) and of the account services."""

from platform_events.db.refusals import LifecycleError, raised_as


@raised_as(sqlstate="LA001")
class InvalidEmail(LifecycleError):
    code = "invalid_email"


@raised_as(sqlstate="LA002")
class InvalidLogin(LifecycleError):
    code = "invalid_login"


@raised_as(
    sqlstate="LA003",
    constraint="accounts_email_claimed_key",
    message="accounts: e-mail is already claimed by an activated account",
)
class EmailAlreadyClaimed(LifecycleError):
    code = "email_claimed"


@raised_as(constraint="accounts_login_key", message="accounts: login is already taken")
class LoginTaken(LifecycleError):
    code = "login_taken"


@raised_as(sqlstate="LA005")
class IllegalTransition(LifecycleError):
    """The account is not in a state this move starts from."""

    code = "illegal_transition"


@raised_as(sqlstate="LA006")
class HistoryIsKept(LifecycleError):
    """A trigger-kept timestamp (created_at, status_changed_at, activated_at, ...) was set by hand."""

    code = "history_kept"


class AlreadySuspended(IllegalTransition):
    code = "already_suspended"


class NotSuspended(IllegalTransition):
    code = "not_suspended"


class AccountGone(LifecycleError):
    """The account was deleted meanwhile (a sweep, or psql)."""

    code = "account_gone"
    reason = "deleted meanwhile"
