"""Atomic blocks without savepoints, inside a transaction that a failure rolls back whole.

Django makes a savepoint for every atomic block nested in a transaction (SAVEPOINT, then RELEASE
SAVEPOINT or ROLLBACK TO SAVEPOINT: two round trips on the way of a success), so that a caller may go
on after the block failed. Work whose failure ends the whole transaction anyway (the client API's
provisioning, under its Idempotency-Key) needs none of them.
"""

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.transaction import TransactionManagementError


@contextmanager
def savepoints_skipped(using: str = DEFAULT_DB_ALIAS) -> Iterator[None]:
    """Inside an atomic block: the atomic blocks opened within make no savepoint, as
    ``atomic(savepoint=False)`` (a failure inside one marks the whole transaction for rollback).

    Only around work that never goes on after a failed statement: code within that caught a database
    error and carried on would get TransactionManagementError at its next statement (loudly, as
    Django's savepoint=False does), and the whole transaction is rolled back. Code that calls
    ``transaction.savepoint()`` itself gets none (its id is None, and rolling back to it does nothing):
    its next statement fails, the transaction being aborted."""
    connection = connections[using]
    if not connection.in_atomic_block:
        raise TransactionManagementError("savepoints_skipped() belongs inside an atomic block")
    skipped = connection.savepoints_skipped
    connection.savepoints_skipped = True
    try:
        yield
    finally:
        connection.savepoints_skipped = skipped
