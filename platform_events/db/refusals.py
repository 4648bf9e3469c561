"""The database's refusals raised as the product's own (platform_events/refusals.py).

The lifecycle rules live in the database (triggers and indexes), so every client obeys them.
A refusal arrives as a database error carrying our SQLSTATE (class LA for accounts, LT for
tokens, LN for node assignment) or, when two transactions race past a trigger's check, as a unique
violation of a named index. Each app registers its refusal class for either (``raised_as``);
``lifecycle_rules()`` raises the registered class, whose message is the database's own prefixed
sentence ("accounts: e-mail ... is already claimed ..."). The classes are registered, not imported,
so that this machinery imports nothing of the product.
"""

from contextlib import contextmanager

from django.db import DatabaseError

_BY_SQLSTATE: dict[str, type[Exception]] = {}
_BY_CONSTRAINT: dict[str, tuple[type[Exception], str]] = {}


def raised_as(*, sqlstate: str | None = None, constraint: str | None = None, message: str = ""):
    """Register a refusal class for a SQLSTATE and/or a unique index name (with the sentence to say)."""

    def register(cls):
        if sqlstate:
            _BY_SQLSTATE[sqlstate] = cls
        if constraint:
            _BY_CONSTRAINT[constraint] = (cls, message)
        return cls

    return register


def translate(error: DatabaseError) -> Exception | None:
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
    """Raise the database's refusals as their registered classes; anything else unchanged.

    Put it outside ``transaction.atomic()`` so the failed block is rolled back first (within
    platform_events/db/savepoints.py's ``savepoints_skipped()`` there is no savepoint to roll back to:
    the whole transaction is marked for rollback instead).
    """
    try:
        yield
    except DatabaseError as error:
        translated = translate(error)
        if translated is None:
            raise
        raise translated from error
