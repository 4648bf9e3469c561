"""The back-office: accounts, their tokens and audit trail, and the staff's actions on them.

Actions ask for a reason on a confirmation page, call one service per account, and report what
happened per account; the database writes the audit rows, with the staff user and the reason.
"""

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.views.main import ORDER_VAR, SEARCH_VAR, ChangeListSearchForm
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.formats import date_format
from django.utils.html import format_html
from django.utils.timezone import localtime
from django.utils.translation import ngettext
from rangefilter.filters import DateRangeQuickSelectListFilterBuilder

from accounts.models import Account, AccountStatus

# Services, nodes and assignments register their admins on import (Django discovers only this module);
# an account's assignments are on its page.
from accounts.nodes.admin import NodeAssignmentInline
from accounts.selectors import (
    account_suspension,
    account_trail_latest,
    accounts_search,
    accounts_search_order,
    accounts_search_tiers,
)
from accounts.services import account_suspend, account_unsuspend
from platform_events.admin_kit.read_only import ReadOnlyModelAdmin
from platform_events.audit.context import audit_context
from platform_events.db.tiered_pages import TieredPaginator
from platform_events.refusals import Refused

# This admin page composes accounts and tokens (their inline, the e-mail actions): the one place
# where accounts imports tokens (README, "Layout").
from tokens.admin import TokenInline
from tokens.services import token_resend_activation, token_send_password_recovery

# Reports name this many skipped accounts, then count the rest.
NAMED_IN_REPORTS = 5
# The account page shows this many of the account's latest audit rows; the rest are a link away.
RECENT_TRAIL_ROWS = 15


@dataclass(frozen=True)
class StaffAction:
    """One of the four things staff do to an account: its button on the account page, the service that
    does it, the report once done, and the status it applies to (the page offers it only then; the
    service decides)."""

    label: str
    service: Callable
    done: tuple[str, str]
    applies_to: Callable[[Account], bool]


STAFF_ACTIONS = {
    "suspend": StaffAction(
        "Suspend",
        account_suspend,
        ("%(count)d account suspended.", "%(count)d accounts suspended."),
        lambda account: account.status != AccountStatus.SUSPENDED,
    ),
    "unsuspend": StaffAction(
        "Unsuspend",
        account_unsuspend,
        ("%(count)d account unsuspended.", "%(count)d accounts unsuspended."),
        lambda account: account.status == AccountStatus.SUSPENDED,
    ),
    "resend_activation": StaffAction(
        "Resend the activation e-mail",
        token_resend_activation,
        ("%(count)d activation e-mail queued.", "%(count)d activation e-mails queued."),
        lambda account: account.status == AccountStatus.PROVISIONED,
    ),
    "send_password_recovery": StaffAction(
        "Send a password-recovery e-mail",
        token_send_password_recovery,
        ("%(count)d password-recovery e-mail queued.", "%(count)d password-recovery e-mails queued."),
        lambda account: account.status == AccountStatus.ACTIVE,
    ),
}

STATUS_COLOURS = {
    AccountStatus.PROVISIONED: "#8a6d00",
    AccountStatus.ACTIVE: "#1b7a1b",
    AccountStatus.SUSPENDED: "#b00020",
}


class ReasonForm(forms.Form):
    reason = forms.CharField(
        label="Reason (kept in the audit trail)", max_length=1000, widget=forms.Textarea(attrs={"rows": 3, "cols": 60})
    )


@admin.register(Account)
class AccountAdmin(ReadOnlyModelAdmin):
    # Five columns fit 1366 px beside the filters; each status's own time is on the account page.
    list_display = ["login", "email", "status_badge", "status_since", "created_at"]
    # Dates by range (from, to) besides the presets; the never-set ones are "No date".
    list_filter = [
        "status",
        ("created_at", DateRangeQuickSelectListFilterBuilder()),
        ("activated_at", DateRangeQuickSelectListFilterBuilder()),
        ("suspended_at", DateRangeQuickSelectListFilterBuilder()),
    ]
    search_fields = ["login", "email"]  # the search itself: get_search_results
    search_help_text = (
        "E-mail or login, not case-sensitive: the exact one first, then those that start with it, then those"
        " that hold it (example.com, @example). A term without 3 letters or digits in a row finds only starts."
    )
    fieldsets = [
        (None, {"fields": ["login", "email", "status_badge", "suspension", "password_state"]}),
        ("Dates", {"fields": ["created_at", "activated_at", "suspended_at", "unsuspended_at", "status_changed_at"]}),
    ]
    readonly_fields = [field.name for field in Account._meta.fields] + ["status_badge", "suspension", "password_state"]
    inlines = [TokenInline, NodeAssignmentInline]
    actions = list(STAFF_ACTIONS)

    def get_urls(self):
        act = self.admin_site.admin_view(self.act_view)
        return [path("<path:object_id>/act/<str:action>/", act, name="accounts_account_act"), *super().get_urls()]

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("password")

    def change_view(self, request, object_id, form_url="", extra_context=None):
        """The account page: the actions that apply to it now as buttons, and its latest audit rows."""
        account = self.get_object(request, object_id)
        if account is None:  # Django's own page says it does not exist
            return super().change_view(request, object_id, form_url, extra_context)
        allowed = self.get_actions(request)
        buttons = [
            (
                reverse("admin:accounts_account_act", args=[account.pk, name]),
                action.label,
            )
            for name, action in STAFF_ACTIONS.items()
            if name in allowed and action.applies_to(account)
        ]
        context = {
            "action_buttons": buttons,
            "trail_url": self._trail_url(request, account),
            "events_url": self._events_url(request, account),
        }
        if context["trail_url"]:
            context["recent_trail"] = account_trail_latest(account.pk, RECENT_TRAIL_ROWS)
        return super().change_view(request, object_id, form_url, {**(extra_context or {}), **context})

    def history_view(self, request, object_id, extra_context=None):
        """The audit trail of the account and its tokens, in place of Django's LogEntry history (which
        stays empty: staff change accounts through the services, never by saving the form)."""
        account = self.get_object(request, object_id)
        trail_url = account and self._trail_url(request, account)
        if not trail_url:
            return super().history_view(request, object_id, extra_context)
        return HttpResponseRedirect(trail_url)

    def act_view(self, request, object_id, action):
        """One action on this account from its page: the same confirmation, reason and audit as the list's."""
        if action not in STAFF_ACTIONS:
            raise Http404(f"No such action: {action}")
        if action not in self.get_actions(request):
            raise PermissionDenied
        account = self.get_object(request, object_id)
        if account is None:
            return self._get_obj_does_not_exist_redirect(request, self.model._meta, object_id)
        answer = self._confirm_and_run(request, Account.objects.filter(pk=account.pk), action, page_of=account)
        return answer or HttpResponseRedirect(reverse("admin:accounts_account_change", args=[account.pk]))

    def _trail_url(self, request, account) -> str | None:
        if not request.user.has_perm("platform_events.view_auditevent"):
            return None
        return f"{reverse('admin:platform_events_auditevent_changelist')}?account={account.pk}"

    def _events_url(self, request, account) -> str | None:
        """The account's published events (platform_events' outbox), for those who may read them."""
        if not request.user.has_perm("platform_events.view_outboxevent"):
            return None
        return f"{reverse('admin:platform_events_outboxevent_changelist')}?aggregate_id={account.pk}"

    def get_search_results(self, request, queryset, search_term):
        if not search_term.strip():
            return queryset, False
        return accounts_search(queryset, search_term), False

    def get_ordering(self, request):
        """A search's results in its own order (exact, prefix, then the rest), unless staff sort by a column."""
        term = search_term(request)
        return accounts_search_order(term) if term.strip() else super().get_ordering(request)

    def get_paginator(self, request, queryset, per_page, orphans=0, allow_empty_first_page=True):
        """A search's pages read tier by tier (accounts_search_tiers), never sorting every match."""
        term = search_term(request)
        if not term.strip() or request.GET.get(ORDER_VAR):
            return super().get_paginator(request, queryset, per_page, orphans, allow_empty_first_page)
        tiers = accounts_search_tiers(queryset, term)
        return TieredPaginator(
            queryset, per_page, tiers=tiers, orphans=orphans, allow_empty_first_page=allow_empty_first_page
        )

    @admin.display(description="status", ordering="status")
    def status_badge(self, account):
        return format_html(
            '<span style="color: #fff; background: {}; padding: 1px 8px; border-radius: 8px;">{}</span>',
            STATUS_COLOURS[account.status],
            account.status,
        )

    @admin.display(description="status since", ordering="status_changed_at")
    def status_since(self, account):
        return _when(account.status_changed_at or account.created_at)

    @admin.display(description="suspension")
    def suspension(self, account):
        """Why, by whom and since when the account is suspended, from the audit row that suspended it."""
        if account.status != AccountStatus.SUSPENDED:
            return "—"
        event = account_suspension(account.pk)
        if event is None:  # suspended before the audit trail existed
            return f"since {_when(account.suspended_at)}"
        return format_html(
            "since {} by {}<br>reason: {}",
            _when(event.occurred_at),
            event.actor_display or event.actor_id,
            event.reason or "—",
        )

    @admin.display(description="password")
    def password_state(self, account):
        """Whether the account has a password, and since when (never the hash)."""
        password = getattr(account, "password", None)
        return (
            f"set {_when(password.changed_at)}" if password else "none (the account cannot sign in with a password yet)"
        )

    @admin.action(permissions=["suspend"], description="Suspend selected accounts")
    def suspend(self, request, queryset):
        return self._confirm_and_run(request, queryset, "suspend")

    @admin.action(permissions=["suspend"], description="Unsuspend selected accounts")
    def unsuspend(self, request, queryset):
        return self._confirm_and_run(request, queryset, "unsuspend")

    @admin.action(permissions=["resend_activation"], description="Resend the activation e-mail")
    def resend_activation(self, request, queryset):
        return self._confirm_and_run(request, queryset, "resend_activation")

    @admin.action(permissions=["send_password_recovery"], description="Send a password-recovery e-mail")
    def send_password_recovery(self, request, queryset):
        return self._confirm_and_run(request, queryset, "send_password_recovery")

    def has_suspend_permission(self, request):
        return request.user.has_perm("accounts.suspend_account")

    def has_resend_activation_permission(self, request):
        return request.user.has_perm("accounts.resend_activation")

    def has_send_password_recovery_permission(self, request):
        return request.user.has_perm("accounts.send_password_recovery")

    def _confirm_and_run(self, request, queryset, action, *, page_of=None):
        """The confirmation page asking why; once answered, the service on each account (one transaction
        each, under one audit context) and a report of what was done and what was skipped, and why.
        ``page_of`` is the account whose page the action started on ("No, take me back" returns there)."""
        _, _, description = self.get_action(action)
        staff_action = STAFF_ACTIONS[action]
        if page_of:
            description = f"{staff_action.label}: {page_of.login}"
        form = ReasonForm(request.POST if request.POST.get("confirm") else None)
        if not form.is_valid():
            return TemplateResponse(
                request,
                "admin/accounts/account/action_confirmation.html",
                {
                    **self.admin_site.each_context(request),
                    "title": description,
                    "question": ngettext("This account is selected.", "These accounts are selected.", len(queryset))
                    + " Why?",
                    "accounts": queryset,
                    "opts": self.model._meta,
                    "action": action,
                    "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
                    "form": form,
                    "button": staff_action.label if page_of else description,
                    "page_of": page_of,
                    "back": reverse("admin:accounts_account_change", args=[page_of.pk])
                    if page_of
                    else reverse("admin:accounts_account_changelist"),
                },
            )
        done_count, skipped = 0, defaultdict(list)
        with audit_context(reason=form.cleaned_data["reason"], request=request):
            for account in queryset:
                try:
                    staff_action.service(account=account, actor=request.user)
                except Refused as refusal:
                    skipped[refusal.reason].append(account)
                else:
                    done_count += 1
        level = messages.SUCCESS if done_count else messages.INFO
        self.message_user(request, ngettext(*staff_action.done, done_count) % {"count": done_count}, level)
        for reason, accounts in skipped.items():
            self.message_user(request, skipped_report(reason, accounts), messages.WARNING)
        return None


def _when(moment) -> str:
    """A time as the back-office shows it: in the admin's zone, as its DATETIME_FORMAT says (to the second)."""
    return date_format(localtime(moment), "DATETIME_FORMAT") if moment else "—"


def search_term(request) -> str:
    """The list's search term as Django's ChangeList reads it: none when its form refuses the term
    (a NUL: "Null characters are not allowed."), so the order and the pages follow the same list."""
    form = ChangeListSearchForm(request.GET)
    return form.cleaned_data.get(SEARCH_VAR) or "" if form.is_valid() else ""


def skipped_report(reason: str, accounts: list[Account]) -> str:
    """'2 accounts skipped (already suspended): jane, joe.', naming the first few and counting the rest."""
    names = ", ".join(account.login for account in accounts[:NAMED_IN_REPORTS])
    if len(accounts) > NAMED_IN_REPORTS:
        names += f" and {len(accounts) - NAMED_IN_REPORTS} more"
    return ngettext(
        "%(count)d account skipped (%(reason)s): %(names)s.",
        "%(count)d accounts skipped (%(reason)s): %(names)s.",
        len(accounts),
    ) % {"count": len(accounts), "reason": reason, "names": names}
