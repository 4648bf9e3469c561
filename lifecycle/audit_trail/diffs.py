"""An audit row's diff as people read it: field labels, times in the admin's time zone to the
second, "—" for nothing.

The triggers store only what changed (``diff_before`` / ``diff_after``), plus, in a token row's
``diff_after``, the token's account and action for context. A key on both sides is a change
(before → after); a key on one side only is a value the row records (a created or deleted row's
fields, a token row's context).
"""

import json
from dataclasses import dataclass, replace
from datetime import datetime

from django.contrib.auth import get_user_model
from django.core.exceptions import FieldDoesNotExist
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from accounts.models import Account
from platform_events.admin_kit.display import when
from platform_events.audit.models import ResourceType
from tokens.models import Token

EMPTY = "—"
# Never shown, whatever row holds them (the triggers write "(hidden)" already: tokens/sql/0008).
CREDENTIAL_KEYS = frozenset({"secret", "code", "password", "password_hash"})
HIDDEN = "(hidden)"
# Whose field names label a row's keys.
MODEL_OF_RESOURCE = {
    ResourceType.ACCOUNT: Account,
    ResourceType.TOKEN: Token,
    ResourceType.STAFF_USER: get_user_model(),
}


@dataclass(frozen=True)
class DiffLine:
    key: str
    label: str
    before: str | None  # None: the key is not on that side (a recorded value, not a change)
    after: str | None
    # Two times within one second (a status set twice in a request): shown to the microsecond.
    within_a_second: bool = False

    @property
    def is_change(self) -> bool:
        return self.before is not None and self.after is not None


def diff_lines(event, *, context: bool = True) -> list[DiffLine]:
    """The row's diff, one line per key in the model's field order (then the others by name).
    ``context=False`` leaves out a token row's account when it is only context (shown beside the row)."""
    before, after = event.diff_before or {}, event.diff_after or {}
    model = MODEL_OF_RESOURCE.get(event.resource_type)
    lines = []
    for key in _ordered(model, set(before) | set(after)):
        if not context and event.resource_type == ResourceType.TOKEN and key == "account" and key not in before:
            continue
        line = DiffLine(
            key=key,
            label=field_label(model, key),
            before=readable(key, before[key]) if key in before else None,
            after=readable(key, after[key]) if key in after else None,
        )
        if line.is_change and line.before == line.after and before[key] != after[key]:
            exact_before, exact_after = readable(key, before[key], exact=True), readable(key, after[key], exact=True)
            line = replace(line, before=exact_before, after=exact_after, within_a_second=True)
        lines.append(line)
    return lines


def field_label(model, key: str) -> str:
    """The model field's verbose name ("suspended at"), or the key made readable."""
    try:
        return str(model._meta.get_field(key).verbose_name) if model else key.replace("_", " ")
    except FieldDoesNotExist:
        return key.replace("_", " ")


def readable(key: str, value, *, exact: bool = False) -> str:
    """A diff value as text: a time in the admin's time zone to the second (``exact``: to the
    microsecond), "—" for null or empty."""
    if key in CREDENTIAL_KEYS:
        return HIDDEN
    if value is None or value == "":
        return EMPTY
    if isinstance(value, str):
        moment = _parse_time(value)
        return when(moment, exact=exact) if moment else value
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def without_credentials(diff: dict | None) -> dict | None:
    """The diff with any credential's value replaced by "(hidden)" (for the export)."""
    if not diff:
        return diff
    return {key: HIDDEN if key in CREDENTIAL_KEYS else value for key, value in diff.items()}


def _parse_time(text: str) -> datetime | None:
    # Timestamps in a diff are PostgreSQL's JSON: "2026-11-23T10:15:03.123456+00:00".
    if len(text) < 19 or text[4] != "-" or text[10] != "T":
        return None
    try:
        moment = parse_datetime(text)
    except ValueError:
        return None
    return moment if moment and timezone.is_aware(moment) else None


def _ordered(model, keys: set[str]) -> list[str]:
    order = {field.name: index for index, field in enumerate(model._meta.fields)} if model else {}
    return sorted(keys, key=lambda key: (order.get(key, len(order)), key))
