"""The audit trail in the admin, as support staff and auditors read it.

In the composition (registered by lifecycle/admin.py), because it reads accounts beside the audit
rows: each row names the account it is about by login and e-mail, a search by login or e-mail finds
that account's whole trail, and ``?account=<id>`` lists an account's rows with its tokens' (the account
page's History links there). platform_events, where the rows live, imports no app.

Read-only like every audit admin; Auditors (and superusers) may also export the list as CSV
(lifecycle/audit_trail/export.py), each export itself audited.
"""

import uuid
from functools import lru_cache
from urllib.parse import urlencode

from django.contrib import admin, messages
from django.contrib.admin.options import IncorrectLookupParameters
from django.contrib.admin.utils import quote
from django.core.exceptions import PermissionDenied
from django.db.models import BooleanField, Q, Value
from django.http import HttpResponseRedirect, StreamingHttpResponse
from django.urls import get_script_prefix, path, reverse
from django.utils.dateparse import parse_datetime
from django.utils.functional import cached_property
from django.utils.html import escape, format_html, format_html_join
from django.utils.safestring import mark_safe
from rangefilter.filters import DateRangeQuickSelectListFilterBuilder

from accounts.selectors import account_trail
from lifecycle.audit_trail import export as audit_export
from lifecycle.audit_trail.diffs import diff_lines
from lifecycle.audit_trail.export import ExportTooLarge, audit_trail_export
from lifecycle.audit_trail.privileges import PRIVILEGE_KINDS, privilege_change, privilege_label, privilege_subject
from lifecycle.audit_trail.selectors import account_names, accounts_named, accounts_trail, with_accounts
from platform_events.admin_kit.display import when
from platform_events.admin_kit.read_only import QuickRowLinks, ReadOnlyModelAdmin
from platform_events.audit.models import ActorType, AuditEvent, ResourceType

# The list shows this many lines of a diff and this many characters of a value or a reason; the
# rest is a click away (the row's detail page, or the "more" under the lines).
CHANGES_SHOWN = 3
VALUE_SHOWN = 40
# A value this short is kept on one line (a time: "2026-11-26 10:48:33 UTC"); a longer one wraps, so that
# the six columns fit 1366 px.
VALUE_KEPT_WHOLE = 24
REASON_SHOWN = 60
PK_PLACEHOLDER = "0pk0"


class AccountFilter(admin.SimpleListFilter):
    """``?account=<id>``: the account's rows and its tokens' rows (accounts.selectors.account_trail),
    for a live or a deleted account. Shown only while it filters."""

    title = "account"
    parameter_name = "account"

    @staticmethod
    def value_fits(value: str) -> bool:
        """An account id: anything else answers 400, "This link does not work"
        (platform_events/admin_kit/lookups.py)."""
        return _is_id(value)

    def lookups(self, request, model_admin):
        if self.value() is None:
            return []
        return [(self.value(), account_label(int(self.value())))]

    def queryset(self, request, queryset):
        if self.value() is None:
            return queryset
        return queryset & account_trail(int(self.value()))


class AuditTrailChangeList(QuickRowLinks):
    def row_url(self, result):
        # The table's key is (occurred_at, id): the time in the link lets the detail page read one
        # partition's key instead of every partition's index on id (get_object).
        return f"{super().row_url(result)}?{urlencode({'at': result.occurred_at.isoformat()})}"

    @cached_property
    def narrowed_to(self) -> list[dict]:
        """What a link narrowed the list to, each with links to widen it again: said out loud above
        the list, as pghistory's object filter says it in its sidebar."""
        narrowings = []
        for spec in self.filter_specs:
            if isinstance(spec, AccountFilter) and spec.value() is not None:
                (_, label), *_ = spec.lookup_choices
                narrowings.append(self._narrowing(f"account {label}", [spec.parameter_name]))
        resource_type, resource_id = self.params.get("resource_type"), self.params.get("resource_id")
        if resource_type == ResourceType.ACCOUNT and resource_id and _is_id(resource_id):
            # ?resource_type=account&resource_id=7: the account's own rows, without its tokens' (links kept in
            # bookmarks and in other systems work; the account page links to ?account=7).
            narrowing = self._narrowing(
                f"account {account_label(int(resource_id))}, its own rows only", ["resource_type", "resource_id"]
            )
            widened = self.get_query_string({"account": resource_id}, remove=["resource_type", "resource_id"])
            narrowing["links"].insert(0, ("with its tokens' rows", widened))
            narrowings.append(narrowing)
        elif resource_type in PRIVILEGE_KINDS and resource_id and _is_id(resource_id):
            # ?resource_type=staff_user&resource_id=3: the login or group by its name, as its rows name it.
            label = privilege_label(resource_type, int(resource_id))
            narrowings.append(self._narrowing(label, ["resource_type", "resource_id"]))
        elif resource_type or resource_id:
            what = " ".join(part for part in (resource_type, resource_id) if part)
            narrowings.append(self._narrowing(what, ["resource_type", "resource_id"]))
        for parameter, kind in (("request_id", "request"), ("correlation_id", "correlation")):
            if self.params.get(parameter):
                narrowings.append(self._narrowing(f"{kind} {self.params[parameter]}", [parameter]))
        return narrowings

    def _narrowing(self, what: str, parameters: list[str]) -> dict:
        return {"what": what, "links": [("show all rows", self.get_query_string(remove=parameters))]}


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyModelAdmin):
    """The audit trail, read-only for everyone (the table itself refuses changes)."""

    list_display = ["occurred", "actor", "action_and_result", "resource", "reason_cut", "changes"]
    list_display_links = ["action_and_result"]  # the detail page: the reason and the diff in full
    list_filter = [
        AccountFilter,
        ("occurred_at", DateRangeQuickSelectListFilterBuilder(title="date")),
        "action",
        "actor_type",
        "resource_type",
        "result",
    ]
    search_fields = ["resource_id", "actor_id"]  # and more, each exactly: get_search_results
    search_help_text = (
        "A login or e-mail (that account's rows and its tokens'), a resource id (7), an actor id"
        " (staff:3, account:7), or a request or correlation id."
    )
    # Links from other pages: the account page's ?resource_type=account&resource_id=7 (kept for old
    # links; ?account=7 adds the tokens' rows) and each row's request and correlation links.
    extra_lookups = frozenset({"resource_type", "resource_id", "correlation_id", "request_id"})
    fieldsets = [
        (None, {"fields": ["occurred_exactly", "action_and_result", "resource", "reason"]}),
        ("Who", {"fields": ["actor", "actor_user_agent"]}),
        ("Changes", {"fields": ["changes_in_full"]}),
        ("Request", {"fields": ["request", "method", "path", "status_code"]}),
        ("Row", {"fields": ["id", "db_user"]}),
    ]
    readonly_fields = [
        "occurred_exactly",
        "action_and_result",
        "resource",
        "reason",
        "actor",
        "actor_user_agent",
        "changes_in_full",
        "request",
        "method",
        "path",
        "status_code",
        "id",
        "db_user",
    ]

    def get_queryset(self, request):
        # Which pages this user may open: the rows link to accounts and tokens only for those who may.
        pages = {
            "links_accounts": request.user.has_perm("accounts.view_account"),
            "links_tokens": request.user.has_perm("tokens.view_token"),
            "links_staff_users": request.user.has_perm("auth.view_user"),
            "links_groups": request.user.has_perm("auth.view_group"),
        }
        annotations = {name: Value(allowed, output_field=BooleanField()) for name, allowed in pages.items()}
        return with_accounts(super().get_queryset(request)).annotate(**annotations)

    def get_changelist(self, request, **kwargs):
        return AuditTrailChangeList

    def get_object(self, request, object_id, from_field=None):
        """The row, read through its partition's key when the link carries its time (``?at=``)."""
        at = _aware_time(request.GET.get("at", ""))
        if at is None or from_field is not None or not _is_uuid(object_id):
            return super().get_object(request, object_id, from_field)
        return self.get_queryset(request).filter(occurred_at=at, pk=object_id).first()

    def get_search_results(self, request, queryset, search_term):
        """A correlation or request id finds its rows; a login or e-mail its accounts' whole trails;
        anything else a resource id or actor id, exactly (the indexes' columns)."""
        term = search_term.strip()
        if not term:
            return queryset, False
        if "\x00" in term:  # no column holds it; PostgreSQL text cannot even take it
            return queryset.none(), False
        if _is_uuid(term):
            return queryset.filter(Q(correlation_id=term) | Q(request_id=term)), False
        # Exact and case-sensitive, as the indexes hold them (Django's "=" search is iexact: upper(),
        # a scan of every row); the resource index leads with the type.
        found = queryset.filter(Q(resource_type__in=ResourceType.values, resource_id=term) | Q(actor_id=term))
        if named := accounts_named(term):
            found = found | (queryset & accounts_trail(named))
        return found, False

    def changelist_view(self, request, extra_context=None):
        context = {"can_export": self.has_export_permission(request), "export_row_limit": audit_export.EXPORT_ROW_LIMIT}
        return super().changelist_view(request, {**(extra_context or {}), **context})

    def get_urls(self):
        export = path(
            "export/",
            self.admin_site.admin_view(self.export_view),
            name=f"{self.opts.app_label}_{self.opts.model_name}_export",
        )
        return [export, *super().get_urls()]

    def has_export_permission(self, request) -> bool:
        return self.has_view_permission(request) and request.user.has_perm("platform_events.export_auditevent")

    def export_view(self, request):
        """POST: the list's rows as filtered and searched (the same query string) as a CSV download,
        at most EXPORT_ROW_LIMIT of them, audited before it is sent."""
        if not self.has_export_permission(request):
            raise PermissionDenied
        back = reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_changelist")
        query = request.GET.urlencode()
        back_to_list = HttpResponseRedirect(f"{back}?{query}" if query else back)
        if request.method != "POST":  # an export writes an audit row: only the list's button (with CSRF) starts one
            return back_to_list
        try:
            changelist = self.get_changelist_instance(request)
        except IncorrectLookupParameters:
            self.message_user(request, "This list's filters do not work; nothing was exported.", messages.ERROR)
            return HttpResponseRedirect(back)
        try:
            export = audit_trail_export(queryset=changelist.queryset, query=query, actor=request.user, request=request)
        except ExportTooLarge as refusal:
            self.message_user(request, str(refusal), messages.ERROR)
            return back_to_list
        return StreamingHttpResponse(
            export.lines,
            content_type="text/csv; charset=utf-8",
            headers={"Content-Disposition": f'attachment; filename="{export.file_name}"'},
        )

    # The columns

    @admin.display(description="time, request", ordering="occurred_at")
    def occurred(self, event):
        """The time to the second (exactly, on hover), and the request and correlation ids below it."""
        at = format_html('<span title="{}">{}</span>', event.occurred_at.isoformat(), when(event.occurred_at))
        if not (links := self._id_links(event)):
            return at
        return format_html(
            '{}<br><span class="ids">{}</span>', at, format_html_join(" ", "{}", ((link,) for link in links))
        )

    @admin.display(description="time")
    def occurred_exactly(self, event):
        return f"{when(event.occurred_at)} (exactly {event.occurred_at.isoformat()})"

    @admin.display(description="actor", ordering="actor_id")
    def actor(self, event):
        """Who the row says acted, and the database role that wrote it: a claimed actor is only a
        claim (docs/security.md, "What a leaked runtime URL can still do"), the role is not."""
        where = f" from {event.actor_ip}" if event.actor_ip else ""
        name = event.actor_display or event.actor_id
        role = f", as {event.db_user}" if event.db_user and event.db_user != name else ""
        return format_html('{}<br><span class="quiet">{}{}{}</span>', name, _actor_kind(event), where, role)

    @admin.display(description="action", ordering="action")
    def action_and_result(self, event):
        # A long name may wrap after its dot (account.<wbr>history_rewritten): the six columns then fit 1366 px.
        action = mark_safe(escape(event.action).replace(".", ".<wbr>"))
        if event.result == "SUCCESS":
            return action
        return format_html("{} <strong>{}</strong>", action, event.result)

    @admin.display(description="about")
    def resource(self, event):
        """The account a row is about, by login and e-mail, linked to its page (for those who may open it)."""
        if event.resource_type == ResourceType.AUDIT_TRAIL:
            return f"export {event.resource_id}"
        if event.resource_type == ResourceType.STAFF_USER:
            name = privilege_subject(event) or f"#{event.resource_id}"
            return format_html(
                "staff user {}", _link(event.links_staff_users, "admin:auth_user_change", event.resource_id, name)
            )
        if event.resource_type == ResourceType.GROUP:
            name = privilege_subject(event) or f"#{event.resource_id}"
            return format_html(
                "group {}", _link(event.links_groups, "admin:auth_group_change", event.resource_id, name)
            )
        kind = event.resource_type
        if kind == ResourceType.TOKEN:
            kind = _link(
                event.links_tokens, "admin:tokens_token_change", event.resource_id, f"token {event.resource_id}"
            )
            kind = format_html("{} of account", kind)
        names = event.account_names
        if not names:
            return format_html("{} {}", kind, event.account_ref or event.resource_id)
        login = _link(
            event.links_accounts and not names["deleted"],
            "admin:accounts_account_change",
            event.account_ref,
            names["login"] or f"#{event.account_ref}",
        )
        deleted = " (deleted)" if names["deleted"] else ""
        email = names["email"] or ("e-mail erased" if names.get("erased") else "no e-mail known")
        return format_html('{} {}{}<br><span class="quiet">{}</span>', kind, login, deleted, email)

    @admin.display(description="reason")
    def reason_cut(self, event):
        if not event.reason:
            return "—"
        return mark_safe(_cut(event.reason, REASON_SHOWN))

    @admin.display(description="changes")
    def changes(self, event):
        if (sentence := privilege_change(event)) is not None:  # a staff login's, a group's: one sentence
            return sentence
        # A time set twice within a second reads "x → x" to the second: the detail page has it exactly.
        lines = [_line_html(line) for line in diff_lines(event, context=False) if not line.within_a_second]
        if not lines:
            return "—"
        shown = "<br>".join(lines[:CHANGES_SHOWN])
        if len(lines) > CHANGES_SHOWN:
            more = len(lines) - CHANGES_SHOWN
            shown += f"<details><summary>{more} more</summary>{'<br>'.join(lines[CHANGES_SHOWN:])}</details>"
        return mark_safe(shown)  # every piece escaped by _line_html

    @admin.display(description="changes")
    def changes_in_full(self, event):
        lines = diff_lines(event)
        sentence = privilege_change(event)
        if not lines:
            return sentence or "—"
        rows = format_html_join(
            "",
            "<tr><th>{}</th><td>{}</td><td>{}</td></tr>",
            ((line.label, line.before if line.before is not None else "", line.after or "") for line in lines),
        )
        table = format_html(
            '<table class="audit-diff"><thead><tr><th>field</th><th>before</th><th>after</th></tr></thead>'
            "<tbody>{}</tbody></table>",
            rows,
        )
        return format_html("<p>{}</p>{}", sentence, table) if sentence else table

    @admin.display(description="request")
    def request(self, event):
        """The request and correlation ids, each linked to every row it wrote."""
        links = self._id_links(event)
        return format_html_join(mark_safe("<br>"), "{}", ((link,) for link in links)) if links else "—"

    def _id_links(self, event) -> list[str]:
        changelist = _admin_url(f"admin:{self.opts.app_label}_{self.opts.model_name}_changelist")
        return [
            format_html(
                '<a href="{}?{}" title="All rows of {} {}">{} {}</a>',
                changelist,
                urlencode({parameter: value}),
                kind,
                value,
                kind,
                str(value)[:8],
            )
            for parameter, kind, value in (
                ("request_id", "request", event.request_id),
                ("correlation_id", "correlation", event.correlation_id),
            )
            if value
        ]


def account_label(account_id: int) -> str:
    """'jane (jane@example.com)', '... , deleted', or '#7, not known' for an id nothing names."""
    names = account_names(account_id)
    if not names:
        return f"#{account_id}, not known"
    if names.get("erased"):
        return names["login"]  # "#7 (erased)"
    label = f"{names['login'] or f'#{account_id}'} ({names['email'] or 'no e-mail known'})"
    return f"{label}, deleted" if names["deleted"] else label


def _line_html(line) -> str:
    """One diff line as escaped HTML (plain strings, not format_html: a page has some 300 of them)."""
    label = escape(line.label)
    if line.is_change:
        return f"{label}: {_cut(line.before)} → {_cut(line.after)}"
    return f"{label}: {_cut(line.after if line.after is not None else line.before)}"


def _cut(text: str, limit: int = VALUE_SHOWN) -> str:
    """``text`` as escaped HTML, cut to ``limit`` characters with the whole of it on hover; kept on one
    line when short (VALUE_KEPT_WHOLE), else free to wrap ("value wraps")."""
    shown = text if len(text) <= limit else text[: limit - 1] + "…"
    kind = "value" if len(shown) <= VALUE_KEPT_WHOLE else "value wraps"
    if shown == text:
        return f'<span class="{kind}">{escape(text)}</span>'
    return f'<span class="{kind}" title="{escape(text)}">{escape(shown)}</span>'


def _link(allowed: bool, url_name: str, pk, text: str) -> str:
    if not allowed or not _is_id(str(pk)):
        return text
    return format_html('<a href="{}">{}</a>', _admin_url(url_name, pk), text)


def _admin_url(url_name: str, pk=None) -> str:
    """reverse(), once per page kind: a list of 100 rows links each two or three times, and
    reverse() each time takes a third of the list's rendering time."""
    if pk is None:
        return _reversed(url_name, get_script_prefix())
    return _reversed(url_name, get_script_prefix(), with_pk=True).replace(PK_PLACEHOLDER, quote(str(pk)))


@lru_cache(maxsize=32)
def _reversed(url_name: str, script_prefix: str, *, with_pk: bool = False) -> str:
    return reverse(url_name, args=[PK_PLACEHOLDER] if with_pk else None)


def _actor_kind(event) -> str:
    """staff or account for a user, from the id's prefix; user for a row written before ids had one."""
    kind, _, _ = event.actor_id.rpartition(":")
    return kind if event.actor_type == ActorType.USER and kind else event.actor_type.lower()


def _is_id(text: str) -> bool:
    # An id of accounts or tokens: a bigint, in ASCII digits (str.isdigit takes "²" too).
    return text.isascii() and text.isdigit() and len(text) <= 18


def _aware_time(text: str):
    """The time a link carries, or None for one that is not a time with its offset."""
    try:
        moment = parse_datetime(text) if "\x00" not in text else None
    except ValueError:  # well formed, not a time (month 13)
        return None
    return moment if moment and moment.tzinfo else None


def _is_uuid(text: str) -> bool:
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True
