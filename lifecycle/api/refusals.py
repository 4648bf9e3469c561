"""The lifecycle rules' refusals (LifecycleError, by its ``code``) as the API's problem types."""

from collections.abc import Iterator
from contextlib import contextmanager

from accounts.nodes.errors import InvalidUpdate, NoCapacity, NodeError, Retired, UnknownName
from platform_events.api.problems import CATALOGUE, Problem
from platform_events.db.refusals import LifecycleError

# A code whose problem type is not simply the code with dashes.
RENAMED = {"account_gone": "account-gone", "illegal_transition": "refused", "email_claimed": "email-claimed"}


@contextmanager
def as_problem() -> Iterator[None]:
    """Raise a LifecycleError from the services as the Problem of its kind, its sentence the detail."""
    try:
        yield
    except LifecycleError as refusal:
        slug = RENAMED.get(refusal.code, refusal.code.replace("_", "-"))
        extra = {"account_id": refusal.account_id} if refusal.account_id is not None else {}
        if refusal.state:
            extra["state"] = refusal.state
        raise Problem(slug if slug in CATALOGUE else "refused", str(refusal), **extra) from refusal


# tokenserver's codes (accounts/nodes/errors.py: InvalidUpdate.code) as problem types; the code itself
# goes in the member "code", so a client ported from tokenserver branches on what it knows.
NODE_CODES = {
    "invalid-generation": "invalid-generation",
    "invalid-keysChangedAt": "invalid-keys-changed-at",
    "invalid-client-state": "invalid-client-state",
}
# An operator must add a node or release capacity: minutes, not seconds.
NO_CAPACITY_RETRY_AFTER = 300


@contextmanager
def as_node_problem() -> Iterator[None]:
    """Raise node assignment's refusals (accounts/nodes/errors.py) as the Problem of their kind."""
    try:
        yield
    except InvalidUpdate as refusal:
        raise Problem(NODE_CODES.get(refusal.code, "refused"), str(refusal), code=refusal.code) from refusal
    except Retired as refusal:
        raise Problem("assignment-retired", str(refusal)) from refusal
    except NoCapacity as refusal:
        raise Problem("no-capacity", str(refusal), headers={"Retry-After": str(NO_CAPACITY_RETRY_AFTER)}) from refusal
    except UnknownName as refusal:
        # The service and the account were found before the work began: the account went meanwhile.
        raise Problem("account-gone", str(refusal)) from refusal
    except NodeError as refusal:
        raise Problem("refused", str(refusal)) from refusal
