"""The audit trail exported as CSV, for auditors: the rows of a list as filtered, bounded,
streamed, and audited itself before a byte leaves.

The export is recorded first (``audit.exported``: who, the list's query, how many rows, up to when),
in its own committed transaction, then streamed: a file cannot leave without its row, even if the
download is cut or the worker dies. The rows are those that occurred before the export began; the
count is taken then (a row written by a transaction that commits during the export, with an earlier
time, may be in the file and not in the count).
"""

import csv
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime

from django.db import connection, transaction
from django.db.models import QuerySet
from django.utils import timezone

from lifecycle.audit_trail.diffs import without_credentials
from platform_events.audit.context import audit_context
from platform_events.audit.models import AuditEvent
from platform_events.refusals import Refused

# At most this many rows in one file (a month of a busy trail is more; narrow it by date or account).
EXPORT_ROW_LIMIT = 100_000
# Rows read from the database at a time (a server-side cursor): memory stays flat whatever the size.
CHUNK_ROWS = 2_000
COLUMNS = [
    "occurred_at",
    "action",
    "result",
    "actor_type",
    "actor_id",
    "actor_display",
    "db_user",
    "actor_ip",
    "actor_user_agent",
    "resource_type",
    "resource_id",
    "account_id",
    "account_login",
    "account_email",
    "reason",
    "request_id",
    "correlation_id",
    "method",
    "path",
    "status_code",
    "diff_before",
    "diff_after",
    "id",
]
# A spreadsheet runs a cell that starts with one of these as a formula (OWASP, "CSV Injection").
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
# ... and, opening the file with another list separator (";" in much of Europe, a tab), a cell that starts
# after one of those inside a value: "Mozilla/5.0;=3+4" is two cells there, the second a formula. A line
# break too: read with the wrong separator, the quotes no longer hold it inside its cell, and it starts
# a row.
FORMULA_AFTER_SEPARATOR = re.compile(r"(?<=.)([,;\t|\r\n])(?=[=+\-@\r])", re.DOTALL)  # the start: FORMULA_STARTS


class ExportTooLarge(Refused):
    """The filter holds more rows than one export may."""

    code = "export-too-large"
    status = 422

    def __init__(self, limit: int):
        super().__init__(
            f"An export holds at most {limit:,} rows, and this list has more."
            " Narrow it (a date range, an account, an action) and export again."
        )
        self.limit = limit


@dataclass(frozen=True)
class Export:
    file_name: str
    rows: int
    up_to: datetime
    lines: Iterator[str]


def audit_trail_export(*, queryset: QuerySet[AuditEvent], query: str, actor, request=None) -> Export:
    """Record the export of ``queryset`` (the list's rows; ``query`` its query string, as the audit row
    keeps it) by ``actor`` from ``request``, and return the CSV lines to stream. Refuses
    (ExportTooLarge) past EXPORT_ROW_LIMIT rows, recording nothing."""
    limit = EXPORT_ROW_LIMIT
    with connection.cursor() as cursor:
        cursor.execute("SELECT clock_timestamp()")
        (up_to,) = cursor.fetchone()
    rows_of_export = queryset.filter(occurred_at__lt=up_to)
    rows = rows_of_export.order_by()[: limit + 1].count()
    if rows > limit:
        raise ExportTooLarge(limit)
    file_name = f"audit-trail-{timezone.localtime(up_to):%Y%m%d-%H%M%S}.csv"
    with transaction.atomic(), audit_context(actor=actor, request=request):
        with connection.cursor() as cursor:
            cursor.execute("SELECT audit_record_export(%s, %s, %s, %s)", [file_name, query, rows, up_to])
    lines = csv_lines(rows_of_export.iterator(chunk_size=CHUNK_ROWS))
    return Export(file_name=file_name, rows=rows, up_to=up_to, lines=lines)


def csv_lines(events: Iterable[AuditEvent]) -> Iterator[str]:
    """The header, then one CSV line per row (rows annotated by selectors.with_accounts name their account)."""
    writer = csv.writer(_Line(), quoting=csv.QUOTE_ALL)  # every cell quoted: a separator inside stays inside
    yield writer.writerow(COLUMNS)
    for event in events:
        yield writer.writerow([guarded(cell) for cell in _cells(event)])


def guarded(value) -> str:
    """A cell as text, with a ' where a spreadsheet would take what follows for a formula: at its start,
    and after a separator within it."""
    text = FORMULA_AFTER_SEPARATOR.sub(r"\1'", "" if value is None else str(value))
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def _cells(event) -> list:
    names = getattr(event, "account_names", None) or {}
    return [
        timezone.localtime(event.occurred_at).isoformat(),
        event.action,
        event.result,
        event.actor_type,
        event.actor_id,
        event.actor_display,
        event.db_user,
        event.actor_ip,
        event.actor_user_agent,
        event.resource_type,
        event.resource_id,
        getattr(event, "account_ref", None),
        names.get("login"),
        names.get("email"),
        event.reason,
        event.request_id,
        event.correlation_id,
        event.method,
        event.path,
        event.status_code,
        _json(without_credentials(event.diff_before)),
        _json(without_credentials(event.diff_after)),
        event.id,
    ]


def _json(value) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False, sort_keys=True)


class _Line:
    """csv.writer's file: each writerow returns the line instead of keeping it (Django's streaming CSV recipe)."""

    def write(self, line: str) -> str:
        return line
