"""The refusals of accounts/sql/ (SQLSTATE class LA, or a unique index) and of the account services.

Each code is the client API's problem type for its kind (platform_events/api/problems.py), with its
status; ``history-kept`` has none and is answered as the generic ``refused``.
"""

from platform_events.db.refusals import raised_as
from platform_events.refusals import Refused


@raised_as(sqlstate="LA001")
class InvalidEmail(Refused):
    code = "invalid-email"
    status = 422


@raised_as(sqlstate="LA002")
class InvalidLogin(Refused):
    code = "invalid-login"
    status = 422


@raised_as(
    sqlstate="LA003",
    constraint="accounts_email_claimed_key",
    message="accounts: e-mail is already claimed by an activated account",
)
class EmailAlreadyClaimed(Refused):
    code = "email-claimed"


@raised_as(constraint="accounts_login_key", message="accounts: login is already taken")
class LoginTaken(Refused):
    code = "login-taken"


@raised_as(sqlstate="LA005")
class IllegalTransition(Refused):
    """The account is not in a state this move starts from: the API's generic refusal."""

    code = "refused"
    default_reason = "illegal transition"


@raised_as(sqlstate="LA006")
class HistoryIsKept(Refused):
    """A trigger-kept timestamp (created_at, status_changed_at, activated_at, ...) was set by hand."""

    code = "history-kept"


class AlreadySuspended(IllegalTransition):
    code = "already-suspended"
    default_reason = "already suspended"


class NotSuspended(IllegalTransition):
    code = "not-suspended"
    default_reason = "not suspended"


class AccountGone(Refused):
    """The account was deleted meanwhile (a sweep, or psql)."""

    code = "account-gone"
    status = 404
    default_reason = "deleted meanwhile"


@raised_as(sqlstate="LA007")
class AccountIsDeprovisioned(IllegalTransition):
    """A move of a deprovisioned account other than reprovisioning (the client API's problem type)."""

    code = "account-deprovisioned"
    default_reason = "deprovisioned"


class AlreadyDeprovisioned(IllegalTransition):
    code = "already-deprovisioned"
    default_reason = "already deprovisioned"


class NotDeprovisioned(IllegalTransition):
    code = "not-deprovisioned"
    default_reason = "not deprovisioned"


@raised_as(sqlstate="LA008")
class AccountErased(IllegalTransition):
    """A change to an erased account, or an erasure other than account_erase()'s (docs/rules.md, "Erasure")."""

    code = "account-erased"
    status = 410
    default_reason = "erased"


@raised_as(sqlstate="LA009")
class AccountMissing(AccountGone):
    """The database's word for an account that is not there (account_erase() of an unknown id)."""


@raised_as(sqlstate="LA010")
class NotSignedIn(Refused):
    """A session for an account that is not active (accounts/sql/0025_account_sessions.sql): the
    account changed between the password check and the sign-in."""

    code = "not-signed-in"
    default_reason = "not active"


@raised_as(sqlstate="LA011")
class SessionIsKept(Refused):
    """A session's record rewritten, ended twice, or a live one deleted."""

    code = "session-kept"


@raised_as(sqlstate="LA012")
class ScimUserRefused(Refused):
    """A SCIM User's row the rules refuse (accounts/sql/0026_scim_users.sql): a userName or externalId
    that is empty, too long or holds control characters, a client without the scope scim, an account
    deprovisioned or erased, or a User moved to another account or client."""

    code = "scim-user-refused"
    status = 422


@raised_as(constraint="scim_users_user_name_key", message="accounts: userName is already taken")
class UserNameTaken(Refused):
    code = "user-name-taken"
