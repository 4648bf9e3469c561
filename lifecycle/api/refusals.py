"""The services' refusals (platform_events/refusals.py) as the API's problem types.

A refusal's code is its problem type where the catalogue has one (platform_events/api/problems.py):
nothing renames it. A code the catalogue does not have is answered as the generic ``refused``.
"""

from collections.abc import Iterator
from contextlib import contextmanager

from accounts.nodes.errors import InvalidUpdate
from platform_events.api.problems import CATALOGUE, Problem
from platform_events.refusals import Refused


def problem_of(refusal: Refused, **members) -> Problem:
    """The Problem of the refusal's kind, its sentence the detail, with ``Retry-After`` when the
    refusal says when to try again."""
    slug = refusal.code if refusal.code in CATALOGUE else "refused"
    headers = {"Retry-After": str(refusal.retry_after)} if refusal.retry_after is not None else None
    return Problem(slug, str(refusal), headers=headers, **members)


@contextmanager
def as_problem() -> Iterator[None]:
    """Raise a refusal of the account and token services as its Problem, with the account and its
    state as members when the refusal names them."""
    try:
        yield
    except Refused as refusal:
        members = {"account_id": refusal.account_id} if refusal.account_id is not None else {}
        if refusal.state:
            members["state"] = refusal.state
        raise problem_of(refusal, **members) from refusal


@contextmanager
def as_node_problem() -> Iterator[None]:
    """Raise node assignment's refusals (accounts/nodes/errors.py) as their Problem. A refused report
    carries tokenserver's code in the member ``code`` (ours for a move tokenserver has no code for)."""
    try:
        yield
    except InvalidUpdate as refusal:
        raise problem_of(refusal, code=refusal.tokenserver_code or refusal.code) from refusal
    except Refused as refusal:
        raise problem_of(refusal) from refusal
