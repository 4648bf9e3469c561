"""The client API's node assignment (docs/nodes.md): which storage node holds an account's
data for a service, and the client's report that gives it one and moves its history forwards
(tokenserver's token request, accounts/nodes/sync.py).

GET only reads: tokenserver's token request allocates on first sight, but a GET that writes would
surprise every cache, crawler and retry, so here PUT is that request. PUT is idempotent by its rules
(the same report twice leaves the same state), so it takes no Idempotency-Key: those guard POSTs.
"""

from dataclasses import asdict
from typing import Annotated

from ninja import Path, Router, Status

from accounts.nodes.errors import UnknownName
from accounts.nodes.models import SERVICE_NAME_MAX
from accounts.nodes.selectors import AssignmentState, assignment_state, service_id
from accounts.nodes.sync import assignment_sync
from accounts.selectors import account_by_id
from lifecycle.api.refusals import as_node_problem
from lifecycle.api.schemas import SERVICE_PATTERN, AssignmentOut, NodeReportIn
from lifecycle.api.views import READ, WRITE, AccountId, problems
from platform_events.api.problems import Problem
from platform_events.audit.context import audit_context

router = Router(tags=["nodes"])

ServiceName = Annotated[
    str,
    Path(
        min_length=1,
        max_length=SERVICE_NAME_MAX,
        pattern=SERVICE_PATTERN,
        description="The service's name.",
        examples=["sync-1.5"],
    ),
]
PATH = "/services/{service}/accounts/{account_id}/node"


def _known(service: str, account_id: int) -> None:
    """404 for a service or an account that does not exist: for a deleted account, whatever its
    assignments, the same answer as GET /accounts/{id} gives (nothing more is told about it)."""
    try:
        service_id(service)
    except UnknownName:
        raise Problem("not-found", f"there is no service {service!r}") from None
    if account_by_id(account_id) is None:
        raise Problem("not-found", f"there is no account {account_id}")


def _out(state: AssignmentState) -> dict:
    if state.retired:
        raise Problem(
            "assignment-retired", f"account {state.account_id}'s assignments for {state.service} were retired"
        )
    return asdict(state)


@router.get(PATH, auth=READ, response={200: AssignmentOut, **problems(404, 410)}, summary="Read an account's node")
def read_node(request, service: ServiceName, account_id: AccountId):
    """The account's current assignment for the service. Changes nothing: an account never seen is
    404 no-assignment (PUT allocates), one whose node was unassigned or removed has node and uid
    null (the next PUT gives it a fresh node with its keys), and a retired one is 410."""
    _known(service, account_id)
    state = assignment_state(service=service, account_id=account_id)
    if state is None:
        raise Problem("no-assignment", f"account {account_id} has no node for {service} yet; PUT gives it one")
    return _out(state)


@router.put(
    PATH,
    auth=WRITE,
    response={200: AssignmentOut, 201: AssignmentOut, **problems(404, 409, 410, 503)},
    summary="Report a client's credentials; get the account's node",
)
def report_node(request, service: ServiceName, account_id: AccountId, body: NodeReportIn):
    """tokenserver's token request: the account gets a node if it has none (201 when it had no
    assignment, 200 otherwise), then the report is checked against the account's history and
    applied. Refused with 409 and tokenserver's code in ``code``: a generation below the account's
    (invalid-generation); a keys_changed_at below the account's, above the generation reported with
    it, or left out once the account has one (invalid-keys-changed-at); a client_state used before,
    emptied, or new without a higher generation or keys_changed_at (invalid-client-state). A refused
    report changes nothing. Refused before anything else with 422: a generation or keys_changed_at more
    than NODE_CLOCK_MARGIN_SECONDS ahead of the clock (generation-in-future, keys-changed-at-in-future;
    the numbers never go back, so one from the far future would lock the account's real client out).
    429 too-many-key-changes with Retry-After: new keys past NODE_KEY_CHANGES_PER_HOUR for the account
    and service. 503 with Retry-After when no node can take the account."""
    _known(service, account_id)
    with audit_context(actor=request.auth, request=request), as_node_problem():
        try:
            state, made = assignment_sync(
                service=service,
                account_id=account_id,
                generation=body.generation,
                keys_changed_at=body.keys_changed_at,
                client_state=body.client_state,
            )
        except UnknownName as refusal:
            # The service and the account were found above: the account was deleted meanwhile.
            raise Problem("account-gone", str(refusal)) from refusal
    return Status(201 if made else 200, _out(state))
