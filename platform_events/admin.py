import uuid

from django.contrib import admin
from django.db.models import Q
from django.utils.html import format_html_join
from django.utils.safestring import mark_safe

from platform_events.models import ActorType, AuditEvent
from platform_events.read_only_admin import ReadOnlyModelAdmin


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyModelAdmin):
    """The audit trail, read-only for everyone (the table itself refuses changes)."""

    list_display = ["occurred_at", "actor", "action", "resource", "result", "reason", "changes"]
    list_filter = ["actor_type", "action", "resource_type", "result", "occurred_at"]
    list_display_links = None  # everything is on the list; no detail page
    search_fields = ["=resource_id", "=actor_id"]
    # Actor ids say their kind (platform_events/audit.py); a bare number is a resource id.
    search_help_text = "A resource id (7), an actor id (staff:3, account:7), or a correlation or request id."

    # Links from an account's page filter by ?resource_type=account&resource_id=7.
    extra_lookups = frozenset({"resource_type", "resource_id", "correlation_id"})

    def get_search_results(self, request, queryset, search_term):
        term = search_term.strip()
        if _is_uuid(term):  # a correlation or request id
            return queryset.filter(Q(correlation_id=term) | Q(request_id=term)), False
        return super().get_search_results(request, queryset, term)

    @admin.display(description="actor", ordering="actor_id")
    def actor(self, event):
        """Who the row says acted, and the database role that wrote it: a claimed actor is only a
        claim (README, "Security"), the role is not."""
        where = f" from {event.actor_ip}" if event.actor_ip else ""
        name = event.actor_display or event.actor_id
        role = f", as {event.db_user}" if event.db_user and event.db_user != name else ""
        return f"{name} ({_actor_kind(event)}{where}{role})"

    @admin.display(description="resource")
    def resource(self, event):
        return f"{event.resource_type} {event.resource_id}"

    @admin.display(description="changes")
    def changes(self, event):
        before, after = event.diff_before or {}, event.diff_after or {}
        rows = [(key, before.get(key, ""), after.get(key, "")) for key in sorted(set(before) | set(after))]
        return format_html_join(mark_safe("<br>"), "{}: {} → {}", rows) if rows else "—"


def _actor_kind(event) -> str:
    """staff or account for a user, from the id's prefix; user for a row written before ids had one."""
    kind, _, _ = event.actor_id.rpartition(":")
    return kind if event.actor_type == ActorType.USER and kind else event.actor_type.lower()


def _is_uuid(text: str) -> bool:
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True
