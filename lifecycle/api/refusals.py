"""The lifecycle rules' refusals (LifecycleError, by its ``code``) as the API's problem types."""

from collections.abc import Iterator
from contextlib import contextmanager

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
