"""A statement sent on Django's connection without waiting for its answer.

The mailroom and the webhook dispatcher record each outcome in PostgreSQL and then wait for the next
SMTP server or receiver: waiting for the record's answer first would put PostgreSQL's time and theirs
end to end. ``UnawaitedStatement.send()`` returns once the statement is wholly written to the socket; the
answer is read by ``collect()``, which the caller runs before the connection does anything else (the
next ``send()`` does it too). At most one statement is unanswered at a time.

A statement on its way is as good as committed for a process killed right after ``send()``:
PostgreSQL runs what it received, client gone or not. The statement is one round of the extended
protocol with its own Sync, as any execute() in autocommit mode; inside a transaction it belongs to
that transaction. Parameters go as text. psycopg documents ``Connection.pgconn`` for commands it does
not wrap; errors come out of ``collect()`` as Django's database errors, like any query's.

``UnawaitedStatement(prepared=True)`` prepares its statement once per connection (a named statement
of the extended protocol) and then sends only its name and parameters: the server skips parsing and
planning it each time (a mail run's sent-marks, about 1.3x as many a second). Not on a connection
Django is told goes through a transaction pooler (``DISABLE_SERVER_SIDE_CURSORS``): PgBouncer in
transaction mode may run the next statement on a server connection that never saw the prepare. A
prepared statement the server refuses as stale (a migration changed its result type, or a reset
deallocated it) never ran: outside a transaction it is sent again at once, whole, and prepared
afresh with the next send; inside one (which the refusal spoiled) it fails as any refused statement.
"""

import secrets
import select
import weakref
from collections.abc import Sequence

from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from psycopg import errors, pq
from psycopg.adapt import Transformer

# The name each statement is prepared under on each psycopg connection (gone with the connection).
_PREPARED: "weakref.WeakKeyDictionary[object, dict[str, bytes]]" = weakref.WeakKeyDictionary()
# A prepared statement the server can no longer run as prepared: its result type changed under it (a
# migration replaced a function or a table it reads), or it was deallocated (DISCARD ALL).
_STALE = {"0A000", "26000"}


class UnawaitedStatement:
    def __init__(self, *, prepared: bool = False):
        self._answer_due = False
        self._prepared = prepared
        # The statement sent last, when it went as a prepared one, and its parameters as sent.
        self._sent_prepared: str | None = None
        self._sent_values: list[bytes | None] = []

    def send(self, statement: str, params: Sequence[str | None]) -> None:
        """Send ``statement`` ($1, $2... for ``params``) after reading the answer to the last one."""
        self.collect()
        db = _this_threads_connection()
        db.ensure_connection()
        with db.wrap_database_errors:
            pgconn = db.connection.pgconn
            values = [None if p is None else p.encode() for p in params]
            if name := self._prepared_name(db, statement):
                pgconn.send_query_prepared(name, values)
            else:
                pgconn.send_query_params(statement.encode(), values)
            self._sent_prepared = statement if name else None
            self._sent_values = values
            self._answer_due = True
            while pgconn.flush():  # the socket took part of it: wait until it takes the rest
                _wait(pgconn.socket, select.POLLOUT)

    def _prepared_name(self, db: BaseDatabaseWrapper, statement: str) -> bytes | None:
        """The name ``statement`` is prepared under on this connection, preparing it first if need be
        (one round trip, once per connection); None when it is sent whole."""
        if not self._prepared or db.settings_dict.get("DISABLE_SERVER_SIDE_CURSORS"):
            return None
        prepared = _PREPARED.setdefault(db.connection, {})
        if statement not in prepared:
            # A new name each time: one that went stale may still be taken on the server.
            name = f"unawaited_{secrets.token_hex(8)}".encode()
            answer = db.connection.pgconn.prepare(name, statement.encode())
            if answer.status != pq.ExecStatus.COMMAND_OK:
                raise errors.error_from_result(answer, encoding=db.connection.info.encoding)
            prepared[statement] = name
        return prepared[statement]

    def collect(self) -> int | None:
        """Read the answer to the statement sent last: the rows it changed (or returned, for a SELECT), or
        None when no answer was due. Raises what the statement raised."""
        answer = self._answer()
        return None if answer is None else answer.command_tuples

    def collect_rows(self) -> list[tuple] | None:
        """``collect()`` for a statement that returns rows (a SELECT, a RETURNING): the rows, typed as a
        cursor's are; None when no answer was due."""
        answer = self._answer()
        if answer is None:
            return None
        loader = Transformer(connection.connection)
        loader.set_pgresult(answer)
        return loader.load_rows(0, answer.ntuples, tuple)

    def _answer(self) -> pq.abc.PGresult | None:
        if not self._answer_due:
            return None
        db = _this_threads_connection()
        with db.wrap_database_errors:
            pgconn = db.connection.pgconn
            try:
                answers = _answers(pgconn)
            except BaseException:
                # As psycopg does on Ctrl-C: cancel the statement and read its answer, so that what runs
                # next (the drain recording its run) finds the connection in step.
                self._settle(pgconn)
                raise
            finally:
                self._answer_due = pgconn.status == pq.ConnStatus.OK and pgconn.is_busy()
            for answer in answers:
                if answer.status not in (pq.ExecStatus.COMMAND_OK, pq.ExecStatus.TUPLES_OK):
                    error = errors.error_from_result(answer, encoding=connection.connection.info.encoding)
                    if self._sent_prepared and error.sqlstate in _STALE:
                        _PREPARED.get(connection.connection, {}).pop(self._sent_prepared, None)
                        if not connection.in_atomic_block:
                            return self._again_unprepared(pgconn)
                    raise error
        return answers[0]

    def _again_unprepared(self, pgconn: pq.abc.PGconn) -> pq.abc.PGresult:
        """Send the statement refused as stale again, whole, and read its answer. The refusal came before
        it ran, and outside a transaction nothing else went with it: sent again, it runs once."""
        statement, self._sent_prepared = self._sent_prepared, None
        pgconn.send_query_params(statement.encode(), self._sent_values)
        self._answer_due = True
        while pgconn.flush():
            _wait(pgconn.socket, select.POLLOUT)
        return self._answer()

    def settle(self) -> None:
        """Cancel the statement whose answer is due, if any, and read what is left of it: for a caller
        leaving on an exception (Ctrl-C during an HTTP request), so the connection is in step again."""
        if self._answer_due:
            self._answer_due = False
            self._settle(connection.connection.pgconn)

    @staticmethod
    def _settle(pgconn: pq.abc.PGconn) -> None:
        if pgconn.status != pq.ConnStatus.OK:
            return  # the connection is gone: Django replaces it
        try:
            connection.connection.cancel_safe()
            _answers(pgconn)
        except Exception:
            pass  # the exception on its way says what went wrong first


def _answers(pgconn: pq.abc.PGconn) -> list[pq.abc.PGresult]:
    answers = []
    while True:
        while pgconn.is_busy():
            _wait(pgconn.socket, select.POLLIN)
            pgconn.consume_input()
        answer = pgconn.get_result()
        if answer is None:
            return answers
        answers.append(answer)


def _this_threads_connection() -> BaseDatabaseWrapper:
    """Django's connection of this thread, looked up once per call: each attribute read through
    ``django.db.connection`` looks it up again in asgiref's Local, about 10 µs of a sent-mark's 60."""
    return connections[DEFAULT_DB_ALIAS]


def _wait(fd: int, events: int) -> None:
    # poll(), not select(): a busy process's socket may be past FD_SETSIZE (1024); one call, where a
    # selector object would open and close an epoll descriptor on every wait.
    waiting = select.poll()
    waiting.register(fd, events)
    waiting.poll()
