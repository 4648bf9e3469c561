"""Domain errors, and the translation of the database's refusals into them.

The lifecycle rules live in the database (triggers and indexes), so every client obeys them.
A refusal arrives as a database error carrying our SQLSTATE (class LA for accounts, LT for
tokens) or, when two transactions race past a trigger's check, as a unique violation of a
named index. ``lifecycle_rules()`` turns either into the matching ``LifecycleError``, whose
message is the database's own prefixed sentence ("accounts: e-mail ... is already claimed ...").
"""

from contextlib import contextmanager

from django.db import DatabaseError

_BY_SQLSTATE: dict[str, type["LifecycleError"]] = {}
_BY_CONSTRAINT: dict[str, tuple[type["LifecycleError"], str]] = {}


class LifecycleError(Exception):
    """A move the lifecycle rules refuse. ``str(error)`` is a sentence fit to show a user.

    The fields say it to a program, so that nothing parses the sentence: ``code`` names the kind
    of refusal, ``account_id`` and ``state`` say whose and in which state, when known; ``reason``
    is a few words for a report that groups refusals ("already suspended").
    """

    code = "refused"

    def __init__(self, message: str, *, account_id: int | None = None, state: str | None = None):
        super().__init__(message)
        self.account_id = account_id
        self.state = state

    @property
    def reason(self) -> str:
        return self.code.replace("_", " ")


def raised_as(*, sqlstate: str | None = None, constraint: str | None = None, message: str = ""):
    """Register a LifecycleError subclass for a SQLSTATE and/or a unique index name."""

    def register(cls):
        if sqlstate:
            _BY_SQLSTATE[sqlstate] = cls
        if constraint:
            _BY_CONSTRAINT[constraint] = (cls, message)
        return cls

    return register


def translate(error: DatabaseError) -> LifecycleError | None:
    cause = error.__cause__
    sqlstate = getattr(cause, "sqlstate", None)
    diag = getattr(cause, "diag", None)
    if sqlstate in _BY_SQLSTATE:
        cls = _BY_SQLSTATE[sqlstate]
        if hasattr(cls, "from_diagnostics"):  # a refusal whose kind the database names in its HINT
            return cls.from_diagnostics(diag)
        return cls(diag.message_primary)
    constraint = getattr(diag, "constraint_name", None)
    if constraint in _BY_CONSTRAINT:
        cls, message = _BY_CONSTRAINT[constraint]
        return cls(message)
    return None


@contextmanager
def lifecycle_rules():
    """Raise the database's lifecycle refusals as LifecycleErrors; anything else unchanged.

    Put it outside ``transaction.atomic()`` so the failed block is rolled back first.
    """
    try:
        yield
    except DatabaseError as error:
        translated = translate(error)
        if translated is None:
            raise
        raise translated from error
