"""Rewriting trigger-kept history, for the owner only: aged rows for the demo data, tests and benches.

The triggers refuse to rewrite an account's status timestamps or a token's identity
(accounts/sql/0009_history_rules.sql, tokens/sql/0008_history_rules.sql) unless the transaction
carries the key kept in ``history_rewrite_key`` (platform_events/sql/0005_history_rules.sql), which
only the owner role can read: the runtime role cannot open this door by itself. Every rewrite is
audited (``account.history_rewritten``, ``token.history_rewritten``).

    with transaction.atomic(), history_rewrite():
        Token.objects.filter(pk=token.pk).update(expires_at=token.created_at)
"""

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from django.db import connections

from platform_events.db.direct_connection import direct_connection

OWNER_ALIAS = "owner"


def history_rewrite_key() -> str:
    """The key, read as the owner on a connection of its own (so it works inside any test or command)."""
    with direct_connection(OWNER_ALIAS, autocommit=True) as owner:
        row = owner.execute("SELECT key FROM history_rewrite_key").fetchone()
    if row is None:
        raise RuntimeError("history_rewrite_key is empty: migrate platform_events (0005_history_rules).")
    return row[0]


@contextmanager
def history_rewrite(*, using: str = "default") -> Iterator[None]:
    """Let the statements of the current transaction on ``using`` rewrite trigger-kept history."""
    connection = connections[using]
    if not connection.in_atomic_block:
        # SET LOCAL outside a transaction would last one statement, and autocommit would end it at once.
        raise RuntimeError("history_rewrite() needs a transaction: open transaction.atomic() first.")
    connection.ensure_connection()
    # Bound server-side (psycopg.Cursor, not Django's client-side cursor): inline, the key would show in
    # pg_stat_activity's query text to every other session of the runtime role.
    with psycopg.Cursor(connection.connection) as cursor:
        cursor.execute("SELECT set_config('lifecycle.rewrite_history', %s, true)", [history_rewrite_key()])
    try:
        yield
    finally:
        if not connection.needs_rollback:
            with connection.cursor() as cursor:
                cursor.execute("SELECT set_config('lifecycle.rewrite_history', '', true)")
