"""What an identity provider sends, made an account's state (docs/scim.md, "The mapping"): a User
created, replaced (PUT) or patched (PATCH, applied by scim2-models to the User as shown), each in one
transaction, as the client, through the account services; a refusal leaves everything as it was.

* userName: kept as sent (accounts.ScimUser); the account's login is the userName when that is a
  valid login, and otherwise one derived from it ("ann@example.com" → "ann", "ann-2", ...).
* The address: the primary e-mail, or the only one, or the userName when that is an address and no
  e-mail is sent. Other addresses are accepted and not kept.
* password: set like any other, never shown; left out, the password stays as it is (a new account
  has none: its people sign in through the identity provider).
* active: true activates without an activation e-mail (the provider vouched for the person) and
  lifts a suspension the client made (not one staff made); false suspends, "deactivated by the identity provider"; left out, nothing
  changes (a new account then gets the activation e-mail as any other).
"""

import re
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.db.models import Value
from django.db.models.functions import Lower, Now
from scim2_models import User

from accounts.errors import (
    AlreadyDeprovisioned,
    EmailAlreadyClaimed,
    InvalidEmail,
    InvalidLogin,
    LoginTaken,
    ScimUserRefused,
    UserNameTaken,
)
from accounts.models import Account, AccountPassword, AccountStatus, ScimUser
from accounts.selectors import account_suspension
from accounts.services import (
    account_deprovision,
    account_password_check,
    account_password_hash,
    account_provision,
    account_reprovision,
    account_set_password,
    account_suspend,
    account_unsuspend,
)
from lifecycle.scim.errors import ScimError
from lifecycle.scim.users import SERVED, user_of, version_of
from platform_events.audit.context import audit_context
from platform_events.db.refusals import lifecycle_rules
from tokens.services import token_activate_vouched

# The reasons the trail gives for what an identity provider's active does.
DEACTIVATED = "deactivated by the identity provider"
REACTIVATED = "reactivated by the identity provider"
VOUCHED = "activated by the identity provider, which vouched for the person: no activation e-mail"
RESTORED = "created again by the identity provider"
DELETED = "deleted by the identity provider"

LOGIN = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._+-]*[A-Za-z0-9])?$")
# How many numbered logins ("ann-2" ... ) are tried before a random one.
NUMBERED_LOGINS = 20


@dataclass(frozen=True)
class Wanted:
    """The state a client asks for: what of a User the mapping keeps."""

    user_name: str
    email: str
    external_id: str | None
    active: bool | None
    password: str | None


def wanted_of(user: User) -> Wanted:
    """The state ``user`` asks for; ScimError 400 invalidValue when it names no address, or holds text
    PostgreSQL cannot store (a NUL) or UTF-8 cannot encode (a lone surrogate)."""
    for name, value in (("userName", user.user_name), ("externalId", user.external_id), ("password", user.password)):
        _storable(name, value)
    for email in user.emails or []:
        _storable("emails", email.value)
    user_name = user.user_name or ""
    emails = [email for email in user.emails or [] if email.value]
    primary = [email for email in emails if email.primary]
    if primary:
        email = primary[0].value
    elif len(emails) == 1:
        email = emails[0].value
    elif not emails and "@" in user_name:
        email = user_name
    else:
        raise ScimError(
            400,
            "A User needs its address: emails with one primary value (or one value only).",
            "invalidValue",
        )
    return Wanted(
        user_name=user_name,
        email=str(email).strip(),
        external_id=user.external_id,
        active=user.active,
        password=user.password,
    )


def _storable(name: str, value) -> None:
    if not isinstance(value, str):
        return
    try:
        value.encode()
    except UnicodeEncodeError:
        raise ScimError(400, f"{name} is not valid Unicode text.", "invalidValue") from None
    if "\x00" in value:
        raise ScimError(400, f"{name} must not hold control characters.", "invalidValue")


def scim_user_create(*, client, user: User) -> Account:
    """A new User of ``client``. A userName this client's deleted User had (deprovisioned by this
    client, not yet erased) brings that account back, restored, with the state asked for; any other
    taken userName is 409 uniqueness."""
    wanted = wanted_of(user)
    with _refusals(), transaction.atomic(), audit_context(actor=client):
        # Compared as the unique index compares: PostgreSQL's lower(), not Python's.
        holder = (
            ScimUser.objects.alias(user_name_lower=Lower("user_name"))
            .filter(user_name_lower=Lower(Value(wanted.user_name)))
            .first()
        )
        if holder is not None:
            return _restore(holder, wanted, client=client)
        account = _provision(wanted, client=client)
        ScimUser.objects.create(
            account=account, client=client, user_name=wanted.user_name, external_id=wanted.external_id
        )
        _set_active(account, wanted.active, client=client)
    return account


def _restore(holder: ScimUser, wanted: Wanted, *, client) -> Account:
    """The account of ``holder``, a User this client deleted, reprovisioned and made what ``wanted``
    says; 409 uniqueness for any other holder of the userName. Locked as a change locks (the account,
    then its User), so that a creation sent twice restores once and a change never deadlocks with it."""
    taken = f"userName {wanted.user_name!r} is already taken"
    account = Account.objects.select_for_update(of=("self",)).filter(pk=holder.account_id).first()
    holder = ScimUser.objects.select_for_update().filter(pk=holder.pk).first()
    if account is None or holder is None or holder.client_id != client.pk:
        raise ScimError(409, f"{taken}.", "uniqueness")
    if account.status != AccountStatus.DEPROVISIONED:
        raise ScimError(409, f"{taken}.", "uniqueness")
    if holder.deleted_at is None:
        raise ScimError(409, f"{taken}: staff deprovisioned its account, and only staff restore it.", "uniqueness")
    if account.suspended_at is not None and not _made_by(client, account_suspension(account.pk)):
        # Reprovisioning would lift the suspension with it.
        raise ScimError(
            409, f"{taken}: staff suspended its account before it was deleted, and only staff restore it.", "uniqueness"
        )
    with audit_context(reason=RESTORED):
        account_reprovision(account=account, actor=client)
    account.scim_user = holder
    # A new User to the provider: a password the account had before is not kept unless sent again.
    return _apply(account, holder, wanted, client=client, remove_password=True)


def scim_user_delete(*, client, account: Account) -> None:
    """Delete ``client``'s User ``account``: the account deprovisioned, as the client, with DELETED (erased
    after ERASURE_DELAY_DAYS), and the User marked deleted by its provider, so that only the provider,
    creating it again, or staff restore it. Already deprovisioned meanwhile: gone all the same."""
    with transaction.atomic(), audit_context(actor=client, reason=DELETED):
        try:
            account_deprovision(account=account, actor=client)
        except AlreadyDeprovisioned:
            return
        ScimUser.objects.filter(account=account, client=client).update(deleted_at=Now())


def scim_user_change(
    *, client, account_id: int, change, if_match: str | None, remove_password: bool = False
) -> Account:
    """Change ``client``'s User ``account_id``: ``change`` turns the User as shown into the User wanted
    (a PUT's body, or the User patched). ``if_match`` (an If-Match header) must name its version.
    The account's row is locked from the read to the last write: two changes never interleave."""
    with _refusals(), transaction.atomic(), audit_context(actor=client):
        account = (
            Account.objects.select_for_update(of=("self",))
            .filter(pk=account_id, status__in=SERVED, scim_user__client=client)
            .first()
        )
        if account is None:
            raise ScimError(404, f"There is no User {str(account_id)!r}.")
        account.scim_user = link = ScimUser.objects.select_for_update().get(account=account)
        shown = user_of(account, location="")
        if if_match is not None and not _matches(if_match, version_of(shown)):
            raise ScimError(412, "The User changed since the version If-Match names; read it again.")
        wanted = wanted_of(change(shown))
        return _apply(account, link, wanted, client=client, remove_password=remove_password)


def _matches(if_match: str, version: str) -> bool:
    names = [name.strip() for name in if_match.split(",")]
    return "*" in names or version in names or version.removeprefix("W/") in names


def _apply(account: Account, link: ScimUser, wanted: Wanted, *, client, remove_password: bool = False) -> Account:
    """Make ``account`` and its User ``link`` what ``wanted`` says, as far as they differ; with
    ``remove_password`` and no password wanted, the account's password removed (audited)."""
    changed = []
    if wanted.user_name != link.user_name:
        link.user_name = wanted.user_name
        changed.append("user_name")
        login = _as_login(wanted.user_name)
        if login is not None and login != account.login:
            _update_account(account, login=login)
    if wanted.external_id != link.external_id:
        link.external_id = wanted.external_id
        changed.append("external_id")
    moved = wanted.email != account.email
    if moved:
        _update_account(account, email=wanted.email)
    if changed or moved:
        # The database sets updated_at on every update: the User's lastModified, beside the account's
        # changes of state (lifecycle/scim/users.py).
        link.save(update_fields=changed or ["updated_at"])
    if wanted.password is not None:
        account_set_password(account=account, password_hash=_password_hash(wanted, login=account.login), actor=client)
    elif remove_password:
        AccountPassword.objects.filter(account=account).delete()
    _set_active(account, wanted.active, client=client)
    return account


def _update_account(account: Account, **fields) -> None:
    """One UPDATE of the account's login or address: the database's rules check it (the claim rule
    for an address, uniqueness for a login) and its triggers write the trail and the outbox."""
    ((column, value),) = fields.items()
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE accounts SET {column} = %s WHERE id = %s", [value, account.pk])
    setattr(account, column, value)


def _set_active(account: Account, active: bool | None, *, client) -> None:
    account.refresh_from_db(fields=["status", "activated_at"])
    if active is True:
        if account.status == AccountStatus.SUSPENDED:
            _lifted_by(client, account)
            with audit_context(reason=REACTIVATED):
                account_unsuspend(account=account, actor=client)
            account.refresh_from_db(fields=["status", "activated_at"])
        if account.status == AccountStatus.PROVISIONED:
            with audit_context(reason=VOUCHED):
                token_activate_vouched(account=account, actor=client)
    elif active is False and account.status in (AccountStatus.PROVISIONED, AccountStatus.ACTIVE):
        with audit_context(reason=DEACTIVATED):
            account_suspend(account=account, actor=client)
    account.refresh_from_db(fields=["status", "status_changed_at", "activated_at", "email", "login"])


def _lifted_by(client, account: Account) -> None:
    """A client lifts only the suspensions it made: one staff made (for abuse, say) stays until staff
    lift it, and so does one the trail no longer shows the maker of. ScimError 400 mutability."""
    if not _made_by(client, account_suspension(account.pk)):
        raise ScimError(
            400,
            "This account was suspended by staff, not by this identity provider: only staff lift that suspension.",
            "mutability",
        )


def _made_by(client, move) -> bool:
    """Whether the trail's row ``move`` (a suspension, a deprovisioning) was made by ``client``."""
    return move is not None and move.actor_id == f"{client.audit_kind}:{client.pk}"


def _provision(wanted: Wanted, *, client) -> Account:
    """The account, with a login free at the time: the userName itself when it is a valid login
    (taken: 409), else the first free of the logins derived from it."""
    own = _as_login(wanted.user_name)
    candidates = [own] if own is not None else _derived_logins(wanted.user_name)
    password_hash = None
    for login in candidates:
        if password_hash is None and wanted.password is not None:
            password_hash = _password_hash(wanted, login=login)
        try:
            with transaction.atomic():
                return account_provision(email=wanted.email, login=login, actor=client, password_hash=password_hash)
        except LoginTaken:
            if own is not None:
                raise ScimError(
                    409, f"userName {wanted.user_name!r} is another account's login: choose another.", "uniqueness"
                ) from None
    raise AssertionError("the derived logins never end")


def _as_login(user_name: str) -> str | None:
    return user_name if len(user_name) <= 254 and LOGIN.match(user_name) else None


def _derived_logins(user_name: str) -> Iterator[str]:
    """Logins for a userName that is not one: its part before any @ with what a login cannot hold made
    dashes, then that numbered, then random, skipping those taken now (a login taken meanwhile is
    refused by the unique index, and the next is tried)."""
    base = re.sub(r"[^A-Za-z0-9._+-]+", "-", user_name.split("@", 1)[0])
    base = re.sub(r"^[^A-Za-z0-9]+|[^A-Za-z0-9]+$", "", base)[:64] or "user"
    numbered = [base] + [f"{base}-{n}" for n in range(2, NUMBERED_LOGINS + 1)]
    taken = set(
        Account.objects.annotate(login_lower=Lower("login"))
        .filter(login_lower__in=[login.lower() for login in numbered])
        .values_list("login_lower", flat=True)
    )
    yield from (login for login in numbered if login.lower() not in taken)
    while True:
        yield f"{base}-{secrets.token_hex(3)}"


def _password_hash(wanted: Wanted, *, login: str) -> str:
    try:
        account_password_check(wanted.password, login=login, email=wanted.email)
    except ValidationError as error:
        raise ScimError(400, f"password: {' '.join(error.messages)}", "invalidValue") from None
    return account_password_hash(wanted.password)


@contextmanager
def _refusals() -> Iterator[None]:
    """The rules' refusals as SCIM errors, each with the rule's own sentence: a taken name or address
    409 uniqueness, a value the rules refuse 400 invalidValue. Outside the transaction, which is
    then rolled back whole."""
    try:
        with lifecycle_rules():
            yield
    except (EmailAlreadyClaimed, LoginTaken, UserNameTaken) as refusal:
        raise ScimError(409, _sentence(refusal), "uniqueness") from None
    except (InvalidEmail, InvalidLogin, ScimUserRefused) as refusal:
        raise ScimError(400, _sentence(refusal), "invalidValue") from None


def _sentence(refusal: Exception) -> str:
    text = str(refusal).split(": ", 1)[-1]
    return f"{text[:1].upper()}{text[1:]}."
