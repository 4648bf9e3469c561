"""A statement sent without waiting for its answer (platform_events/db/unawaited.py)."""

import uuid

import pytest
from django.db import DatabaseError, connection, transaction

from platform_events.db.unawaited import UnawaitedStatement


def a_statement() -> str:
    """A statement no earlier test prepared on this session."""
    return f'SELECT $1::int + $2::int AS "{uuid.uuid4()}"'


def prepared(statement: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_prepared_statements WHERE statement = %s", [statement])
        return cursor.fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_a_prepared_statement_is_prepared_once_per_connection_and_runs_by_name():
    statement, text = UnawaitedStatement(prepared=True), a_statement()
    for n in range(3):
        statement.send(text, [str(n), "1"])
        assert statement.collect() == 1
    assert prepared(text) == 1
    connection.close()  # a new connection has none: the statement is prepared there again
    statement.send(text, ["2", "2"])
    assert statement.collect() == 1
    assert prepared(text) == 1


@pytest.mark.django_db
def test_a_statement_refused_at_its_preparing_raises_as_any_query():
    statement = UnawaitedStatement(prepared=True)
    with pytest.raises(DatabaseError, match="no_such_table"):
        statement.send("SELECT * FROM no_such_table WHERE x = $1", ["1"])


@pytest.mark.django_db
def test_behind_a_transaction_pooler_nothing_is_prepared():
    """DISABLE_SERVER_SIDE_CURSORS says the connection goes through PgBouncer in transaction mode, where
    the next statement may reach a server connection that never saw the prepare."""
    statement, text = UnawaitedStatement(prepared=True), a_statement()
    connection.settings_dict["DISABLE_SERVER_SIDE_CURSORS"] = True
    try:
        statement.send(text, ["1", "1"])
        assert statement.collect() == 1
    finally:
        connection.settings_dict["DISABLE_SERVER_SIDE_CURSORS"] = False
    assert prepared(text) == 0


@pytest.mark.django_db
def test_an_unprepared_statement_is_sent_whole():
    statement, text = UnawaitedStatement(), a_statement()
    statement.send(text, ["1", "1"])
    assert statement.collect() == 1
    assert prepared(text) == 0


STALE = pytest.mark.parametrize(
    "change",
    ["ALTER TABLE unawaited_rows ADD COLUMN b int", "DEALLOCATE ALL"],
    ids=["its result type changed", "deallocated"],
)
# Counts its own runs, and returns the row (so a column added changes its result type).
BUMP = "UPDATE unawaited_rows SET runs = runs + 1 WHERE a = $1::int RETURNING *"


def runs() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT runs FROM unawaited_rows")
        return cursor.fetchone()[0]


def stale_after(change: str) -> UnawaitedStatement:
    """A statement prepared and run once on a temporary table, then made stale by ``change`` (a migration
    replacing what it reads, or a session reset)."""
    with connection.cursor() as cursor:
        cursor.execute("CREATE TEMP TABLE unawaited_rows (a int, runs int)")
        cursor.execute("INSERT INTO unawaited_rows VALUES (1, 0)")
    statement = UnawaitedStatement(prepared=True)
    statement.send(BUMP, ["1"])
    assert statement.collect() == 1
    with connection.cursor() as cursor:
        cursor.execute(change)
    return statement


@pytest.mark.django_db(transaction=True)
@STALE
def test_a_prepared_statement_gone_stale_is_sent_again_whole_and_runs_once(change):
    """PostgreSQL refuses a stale prepared statement before running it; outside a transaction it is sent
    again at once, whole, so the caller sees it succeed (a sent-mark after a deploy's migration, not a
    failed run and an e-mail sent twice), and the next send prepares it afresh."""
    statement = stale_after(change)
    statement.send(BUMP, ["1"])
    assert statement.collect() == 1
    assert runs() == 2
    statement.send(BUMP, ["1"])
    assert statement.collect() == 1
    assert runs() == 3


@pytest.mark.django_db(transaction=True)
@STALE
def test_inside_a_transaction_a_stale_prepared_statement_fails_as_any_refused_one(change):
    """There the refusal spoils the transaction, so nothing can be sent again: it raises, and the next
    statement (after the transaction) is prepared again."""
    statement = stale_after(change)
    with pytest.raises(DatabaseError), transaction.atomic():
        statement.send(BUMP, ["1"])
        statement.collect()
    assert runs() == 1
    statement.send(BUMP, ["1"])
    assert statement.collect() == 1
    assert runs() == 2


@pytest.mark.django_db
def test_collect_rows_gives_the_rows_typed_as_a_cursors_are():
    """The answer to a statement that returns rows is read as the rows a cursor would give: a uuid as a
    UUID, an int as an int, text as str; None when no answer is due."""
    statement = UnawaitedStatement()
    assert statement.collect_rows() is None
    made = uuid.uuid4()
    statement.send("SELECT $1::uuid, n, 'row ' || n FROM generate_series(1, $2::int) n", [str(made), "2"])
    assert statement.collect_rows() == [(made, 1, "row 1"), (made, 2, "row 2")]
    assert statement.collect_rows() is None
    with connection.cursor() as cursor:  # the connection in step for what runs next
        cursor.execute("SELECT 1")
        assert cursor.fetchone() == (1,)
