"""How the back-office shows a state, a time and a document: one badge, one time format, one JSON block."""

import enum
import json
from datetime import datetime

from django.contrib import admin
from django.utils.html import format_html
from django.utils.timezone import localtime


class Tone(enum.StrEnum):
    """A badge's colour, by what the state means to staff (white text on each passes WCAG AA)."""

    GOOD = "#1b7a1b"
    CAUTION = "#8a6d00"
    BAD = "#b00020"
    QUIET = "#555"


def badge(label: str, tone: Tone) -> str:
    return format_html(
        '<span style="color: #fff; background: {}; padding: 1px 8px; border-radius: 8px; white-space: nowrap;">{}</span>',
        tone,
        label,
    )


def when(moment: datetime | None, *, exact: bool = False) -> str:
    """A time in the site's zone, to the second with its zone (the site's DATETIME_FORMAT: 2026-11-23
    11:17:05 UTC), or to the microsecond (``exact``) where two times within a second must read apart;
    a dash for none. strftime, not date_format: an audit page shows some 300 times, and date_format
    costs several times more (tests/platform_events/admin_kit/test_display.py holds the two equal)."""
    if moment is None:
        return "—"
    return localtime(moment).strftime("%Y-%m-%d %H:%M:%S.%f %Z" if exact else "%Y-%m-%d %H:%M:%S %Z")


def time_column(field: str, description: str | None = None):
    """A list column showing the time in ``field`` through when(), sortable by it. Django's own column
    for a DateTimeField formats through date_format: some 100 rows of one take ~0.1 ms each more."""

    @admin.display(description=description or field.replace("_", " "), ordering=field)
    def column(obj):
        return when(getattr(obj, field))

    column.__name__ = field  # the column's CSS class, field-<name>, as for the field itself
    return column


def preformatted(text: str) -> str:
    """Text as it was received (a receiver's answer, a document), wrapped to the column."""
    return format_html("<pre style='white-space: pre-wrap;'>{}</pre>", text)


def pretty_json(value) -> str:
    return preformatted(json.dumps(value, indent=2, sort_keys=True))
