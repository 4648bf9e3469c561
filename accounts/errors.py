from platform_events.db.refusals import LifecycleError, raised_as


@raised_as(sqlstate="LA001")
class InvalidEmail(LifecycleError):
    pass


@raised_as(sqlstate="LA002")
class InvalidLogin(LifecycleError):
    pass


@raised_as(
    sqlstate="LA003",
    constraint="accounts_email_claimed_key",
    message="accounts: e-mail is already claimed by an activated account",
)
class EmailAlreadyClaimed(LifecycleError):
    pass


@raised_as(constraint="accounts_login_key", message="accounts: login is already taken")
class LoginTaken(LifecycleError):
    pass


@raised_as(sqlstate="LA005")
class IllegalTransition(LifecycleError):
    """The account is not in a state this move starts from."""
