"""The client API's operations (/api/v1/): each checks its input, then calls the services that the
admin calls too; the database's rules decide, and their refusals become problem responses.

Every POST that changes state, and DELETE, runs once per Idempotency-Key (platform_events/api/idempotency.py);
the password check (POST /sessions) takes none, so that its body is never stored.
"""

import json
from datetime import timedelta
from typing import Annotated, Literal

from django.conf import settings
from django.core.exceptions import ValidationError as DjangoValidationError
from ninja import Path, Query, Router
from ninja.responses import NinjaJSONEncoder

from accounts.erasure import account_erase
from accounts.errors import AlreadyDeprovisioned
from accounts.models import Account, AccountStatus
from accounts.selectors import (
    ACCOUNT_BY_ID,
    account_by_id,
    account_from_row,
    accounts_looked_up,
    problem_sentence,
    sign_up_problems,
)
from accounts.services import (
    account_deprovision,
    account_password_check,
    account_password_hash,
    account_provision,
    account_suspend,
    account_unsuspend,
)
from lifecycle.api.auth import ClientKey
from lifecycle.api.refusals import as_problem
from lifecycle.api.schemas import (
    LARGEST_ID,
    LONGEST_NAME,
    NOT_BLANK,
    AccountListOut,
    AccountOut,
    EmailChangeIn,
    MailOut,
    ProblemOut,
    ProvisionIn,
    ReasonIn,
    SessionIn,
    SessionOut,
    Text,
)
from lifecycle.api.session_limits import SessionCheck, api_client, password_checked
from platform_events.api.idempotency import KEY_PATTERN, Outcome, idempotency_key, request_fingerprint, run_once
from platform_events.api.models import ApiScope
from platform_events.api.problems import Problem
from platform_events.audit.context import audit_context
from platform_events.client_ip import address_key
from platform_events.limits.counters import LimitExceeded
from platform_events.refusals import Refused
from tokens.services import token_request_email_change, token_resend_activation, token_send_password_recovery

router = Router(tags=["accounts"])


def _account_by_path(path: dict) -> tuple[str, dict] | None:
    """The account the path's id names, as a read along the key's statement; None for an id written
    other than as plain digits in range (``007`` is one, ``+7`` or ``7.0`` is not), which the view then
    reads itself from ninja's reading of it, or refuses."""
    given = path.get("account_id")
    # The length first: int() refuses more than 4,300 digits with a ValueError (Python's own limit).
    if not (isinstance(given, str) and given.isascii() and given.isdigit() and len(given) <= len(str(LARGEST_ID))):
        return None
    if not 1 <= int(given) <= LARGEST_ID:
        return None
    return ACCOUNT_BY_ID, {"account_id": int(given)}


READ = ClientKey(ApiScope.ACCOUNTS_READ)
READ_ONE = ClientKey(ApiScope.ACCOUNTS_READ, read_along=_account_by_path)
LOOK_UP = ClientKey(ApiScope.ACCOUNTS_READ, query=frozenset({"email", "login"}))
WRITE = ClientKey(ApiScope.ACCOUNTS_WRITE)
DELETE = ClientKey(ApiScope.ACCOUNTS_DELETE, query=frozenset({"reason", "erase"}))
SESSIONS = ClientKey(ApiScope.SESSIONS)

AccountId = Annotated[int, Path(ge=1, le=LARGEST_ID, description="The account's id.")]
# A look-up answers at most this many accounts, the newest.
LOOKED_UP_MAX = 100

IDEMPOTENT = {
    "parameters": [
        {
            "in": "header",
            "name": "Idempotency-Key",
            "required": True,
            "description": "32-128 of A-Z a-z 0-9 _ -, bare or as a quoted string. A retry with the same key"
            " and body gets the first response again (with Idempotent-Replayed: true).",
            "schema": {"type": "string", "pattern": f'^({KEY_PATTERN}|"{KEY_PATTERN}")$'},
        }
    ]
}


def problems(*statuses: int) -> dict[int, type[ProblemOut]]:
    """The problem responses an operation documents: its own and every operation's (400: a body that
    is not JSON; 401, 403, 413, 422, 429)."""
    return dict.fromkeys(sorted({400, 401, 403, 413, 422, 429, *statuses}), ProblemOut)


def _account(account_id: int) -> Account:
    return _found(account_id, account_by_id(account_id))


def _found(account_id: int, account: Account | None) -> Account:
    if account is None:
        raise Problem("not-found", f"there is no account {account_id}")
    return account


def _as_json(body) -> dict:
    """A body as the API's renderer writes it (times to the millisecond, as a GET answers them), for
    an answer made by hand and stored for replays."""
    return json.loads(json.dumps(body.model_dump(), cls=NinjaJSONEncoder))


def _account_out(account: Account) -> dict:
    return _as_json(AccountOut.from_orm(account))


def _once(request, work, *, savepoints: bool = True) -> Outcome:
    """Run ``work`` once per the request's Idempotency-Key, as the client, with the audit trail told
    who and from where; ``savepoints=False`` when it never goes on after a refusal (run_once's)."""
    key = idempotency_key(request.headers.get("Idempotency-Key"))
    # The query is part of the request (DELETE's reason): the same key with another one is another request.
    fingerprint = request_fingerprint(method=request.method, path=request.get_full_path(), body=request.body)

    def as_the_client() -> Outcome:
        with as_problem():
            return work()

    # Entered outside the key's transaction, the context is applied by each service inside it, with
    # what the service adds, in the statement the service runs for its own: none set and reset here.
    with audit_context(actor=request.auth, request=request):
        return run_once(
            client_id=request.auth.pk,
            key=key,
            fingerprint=fingerprint,
            work=as_the_client,
            lease=timedelta(seconds=settings.API_IDEMPOTENCY_LEASE_SECONDS),
            ttl=timedelta(hours=settings.API_IDEMPOTENCY_HOURS),
            savepoints=savepoints,
        )


@router.post(
    "/accounts",
    auth=WRITE,
    response={201: AccountOut, **problems(400, 409)},
    openapi_extra=IDEMPOTENT,
    summary="Provision an account",
)
def provision_account(request, body: ProvisionIn):
    """A provisioned account; the database issues its activation token and the mailroom sends the
    e-mail. With a password, the account has it at once (the person still activates)."""
    email, login = body.email, body.login
    # What the rules refuse whatever the state (the address's or the login's form, a weak password)
    # is refused before the key is taken: such an answer is not stored, and a corrected retry may
    # use the same key. The database's address rules, in the public pages' sentences.
    form_problems = {
        field: problem
        for field, problem in sign_up_problems(email=email, login=login).items()
        if problem != "login is taken"
    }
    if form_problems:
        field, problem = next(iter(form_problems.items()))
        sentence = problem_sentence(problem)
        errors = [{"in": "body", "loc": [field], "field": field, "msg": sentence, "type": f"invalid-{field}"}]
        raise Problem(f"invalid-{field}", sentence, field=field, errors=errors)
    password_hash = None
    if body.password is not None:
        try:
            account_password_check(body.password, login=login, email=email)
        except DjangoValidationError as refusal:
            raise Problem("password-rejected", " ".join(refusal.messages), field="password") from None
        password_hash = account_password_hash(body.password)

    def provision() -> Outcome:
        account = account_provision(email=email, login=login, actor=request.auth, password_hash=password_hash)
        return Outcome(201, _account_out(account))

    # A refusal of the provisioning is its answer, nothing read after it: no savepoint for the service.
    return _once(request, provision, savepoints=False)


@router.get(
    "/accounts/{account_id}", auth=READ_ONE, response={200: AccountOut, **problems(404)}, summary="Read an account"
)
def read_account(request, account_id: AccountId):
    params, row = getattr(request, "read_along", (None, None))
    if params != {"account_id": account_id}:  # the path's id as ninja reads it was not the one read along
        return _account(account_id)
    return _found(account_id, None if row is None else account_from_row(row))


@router.get("/accounts", auth=LOOK_UP, response={200: AccountListOut, **problems()}, summary="Look up accounts")
def look_up_accounts(
    request,
    email: Annotated[Text | None, Query(max_length=LONGEST_NAME, description="An e-mail address, any case.")] = None,
    login: Annotated[Text | None, Query(max_length=LONGEST_NAME, description="A login, any case.")] = None,
):
    """The accounts with this e-mail address or login (give one of the two), ignoring case, newest
    first. Several unactivated sign-ups may share an address; only one account can have activated it."""
    if (email is None) == (login is None):
        raise Problem("validation-failed", "give one of email and login", errors=[])
    return {"items": accounts_looked_up(email=email, login=login, limit=LOOKED_UP_MAX)}


def _refused_if_deprovisioned(account_id: int, act):
    """``act()``; a refusal of it for an account that is deprovisioned or erased is answered as that,
    whatever the service's own sentence (a deprovisioned account takes no change but reprovisioning,
    an erased one none)."""
    try:
        return act()
    except Refused as refusal:
        account = account_by_id(account_id)
        if account is not None and account.status == AccountStatus.ERASED:
            raise Problem(
                "account-erased", f"account {account_id} was erased: it takes no change", account_id=account_id
            ) from refusal
        if account is None or account.status != AccountStatus.DEPROVISIONED:
            raise
        raise Problem(
            "account-deprovisioned",
            f"account {account_id} is deprovisioned: it takes no change until it is reprovisioned",
            account_id=account_id,
            state=AccountStatus.DEPROVISIONED.value,
        ) from refusal


def _status_change(request, account_id: int, reason: str, change) -> Outcome:
    def work() -> Outcome:
        account = _account(account_id)
        with audit_context(reason=reason.strip()):
            changed = _refused_if_deprovisioned(account_id, lambda: change(account=account, actor=request.auth))
        return Outcome(200, _account_out(changed))

    return _once(request, work)


@router.post(
    "/accounts/{account_id}/suspend",
    auth=WRITE,
    response={200: AccountOut, **problems(400, 404, 409)},
    openapi_extra=IDEMPOTENT,
    summary="Suspend an account",
)
def suspend_account(request, account_id: AccountId, body: ReasonIn):
    return _status_change(request, account_id, body.reason, account_suspend)


@router.post(
    "/accounts/{account_id}/unsuspend",
    auth=WRITE,
    response={200: AccountOut, **problems(400, 404, 409)},
    openapi_extra=IDEMPOTENT,
    summary="Lift an account's suspension",
)
def unsuspend_account(request, account_id: AccountId, body: ReasonIn):
    """Back to active, or to provisioned if it never activated."""
    return _status_change(request, account_id, body.reason, account_unsuspend)


@router.delete(
    "/accounts/{account_id}",
    auth=DELETE,
    response={200: AccountOut, **problems(400, 404, 409)},
    openapi_extra=IDEMPOTENT,
    summary="Deprovision an account (or erase it at once)",
)
def deprovision_account(
    request,
    account_id: AccountId,
    reason: Annotated[
        Text | None,
        Query(min_length=1, max_length=1000, pattern=NOT_BLANK, description="Optional: why, kept in the audit trail."),
    ] = None,
    erase: Annotated[
        Literal["now"] | None,
        Query(
            description="now: erase it at once rather than after the erasure delay (needs the scope accounts:erase)."
        ),
    ] = None,
):
    """Deprovision the account, from any state: its links and codes stop working, its node assignments
    are retired, and its address stays its own until it is erased, ERASURE_DELAY_DAYS later. Answers the
    account, deprovisioned; a repeated DELETE of a deprovisioned account answers the same and changes
    nothing. With ``erase=now`` it is also erased at once: its address, login and password and every
    copy of them are gone, and it answers with status erased and a null address and login (as it does
    from then on, to every DELETE and GET)."""
    if erase and ApiScope.ACCOUNTS_ERASE not in request.auth.scopes:
        raise Problem(
            "insufficient-scope",
            f"erase=now needs the scope {ApiScope.ACCOUNTS_ERASE}; this client has {', '.join(request.auth.scopes)}",
        )

    def work() -> Outcome:
        account = _account(account_id)
        with audit_context(reason=reason.strip() if reason else None):
            if account.status != AccountStatus.ERASED:
                try:
                    account = account_deprovision(account=account, actor=request.auth)
                except AlreadyDeprovisioned:
                    pass  # the deprovisioning asked for is there already: answered as the first was
            if erase and account.status != AccountStatus.ERASED:
                account_erase(account=account, actor=request.auth, reason=reason.strip() if reason else None)
        return Outcome(200, _account_out(account))

    return _once(request, work)


def _mail(request, account_id: int, issue) -> Outcome:
    def work() -> Outcome:
        account = _account(account_id)
        token = _refused_if_deprovisioned(account_id, lambda: issue(account=account, actor=request.auth))
        body = {"account_id": token.account_id, "action": token.action, "expires_at": token.expires_at}
        return Outcome(202, _as_json(MailOut(**body)))

    return _once(request, work)


@router.post(
    "/accounts/{account_id}/activation-email",
    auth=WRITE,
    response={202: MailOut, **problems(400, 404, 409)},
    openapi_extra=IDEMPOTENT,
    summary="Send a new activation e-mail",
)
def resend_activation(request, account_id: AccountId):
    """A fresh activation link and code for a provisioned account; the older ones stop working."""
    return _mail(request, account_id, token_resend_activation)


@router.post(
    "/accounts/{account_id}/recovery-email",
    auth=WRITE,
    response={202: MailOut, **problems(400, 404, 409)},
    openapi_extra=IDEMPOTENT,
    summary="Send a password-recovery e-mail",
)
def send_recovery(request, account_id: AccountId):
    """A password-recovery link and code for an active account."""
    return _mail(request, account_id, token_send_password_recovery)


@router.post(
    "/accounts/{account_id}/email-change",
    auth=WRITE,
    response={202: MailOut, **problems(400, 404, 409)},
    openapi_extra=IDEMPOTENT,
    summary="Change the address, verified by a link to the new one",
)
def email_change(request, account_id: AccountId, body: EmailChangeIn):
    """A link to the new address that makes it the account's (an active account's); until it is used
    the old address stays in force, and a newer request replaces this one. Once used, the old address
    is told, with a link that puts it back within 7 days. Whether another account holds the new
    address is found when the link is used (the address is then refused, without saying whose)."""
    return _mail(
        request,
        account_id,
        lambda account, actor: token_request_email_change(account=account, email=body.email, actor=actor),
    )


@router.post(
    "/sessions", auth=SESSIONS, response={200: SessionOut, **problems()}, tags=["sessions"], summary="Check a password"
)
def check_password(request, body: SessionIn):
    """The account a login or e-mail and password sign in to: its id and status (the caller decides
    what a suspended account may do). A wrong password and a name nobody has get the same answer,
    after the same work. Failures are limited per name as typed (growing delays), per name and
    ``client_address`` when the client may give it, and per client: a refusal (429 with Retry-After)
    comes before the password is hashed."""
    if body.client_address is not None and ApiScope.SESSIONS_CLIENT_ADDRESS not in request.auth.scopes:
        raise Problem(
            "insufficient-scope",
            f"client_address needs the scope {ApiScope.SESSIONS_CLIENT_ADDRESS}; this client has"
            f" {', '.join(request.auth.scopes)}",
        )
    address = None if body.client_address is None else address_key(body.client_address)
    check = SessionCheck(client=api_client(request.auth.pk), identifier=body.identifier, address=address)
    try:
        verdict = password_checked(check, body.password)
    except LimitExceeded as refused:
        raise Problem(
            "rate-limited",
            "too many failed password checks; retry later",
            headers={"Retry-After": str(refused.retry_after)},
        ) from None
    if not verdict.right:
        raise Problem("invalid-credentials", "wrong login, e-mail or password")
    return {"account_id": verdict.account.pk, "status": verdict.account.status}
