"""The services' refusals (platform_events/refusals.py) as the API's problem types.

A refusal's code is its problem type where the catalogue has one (platform_events/api/problems.py):
nothing renames it. A code the catalogue does not have is answered as the generic ``refused``.
"""

from collections.abc import Iterator
from contextlib import contextmanager

from accounts.nodes.errors import InvalidUpdate, NoCapacity, NodeError, Retired, UnknownName
from platform_events.api.problems import CATALOGUE, Problem
from platform_events.refusals import Refused


@contextmanager
def as_problem() -> Iterator[None]:
    """Raise a refusal of the account and token services as its Problem, its sentence the detail, with
    the account and its state as members when the refusal names them."""
    try:
        yield
    except Refused as refusal:
        members = {"account_id": refusal.account_id} if refusal.account_id is not None else {}
        if refusal.state:
            members["state"] = refusal.state
        slug = refusal.code if refusal.code in CATALOGUE else "refused"
        raise Problem(slug, str(refusal), **members) from refusal


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
