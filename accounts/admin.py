"""The back-office: accounts, their tokens and audit trail, and the staff's actions on them.

Actions ask for a reason on a confirmation page, call one service per account, and report what
happened per account; the database writes the audit rows, with the staff user and the reason.
"""

from collections import defaultdict

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.views.main import ORDER_VAR, SEARCH_VAR, ChangeListSearchForm
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html
from django.utils.translation import ngettext
from rangefilter.filters import DateRangeQuickSelectListFilterBuilder

from accounts.models import Account, AccountStatus
from accounts.selectors import accounts_search, accounts_search_order, accounts_search_tiers
from accounts.services import account_suspend, account_unsuspend
from platform_events.audit import audit_context
from platform_events.db.refusals import LifecycleError
from platform_events.db.tiered_pages import TieredPaginator
from platform_events.read_only_admin import ReadOnlyModelAdmin

# This admin page composes accounts and tokens (their inline, the e-mail actions): the one place
# where accounts imports tokens (README, "Layout").
from tokens.admin import TokenInline
from tokens.services import token_resend_activation, token_send_password_recovery

# Reports name this many skipped accounts, then count the rest.
NAMED_IN_REPORTS = 5

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
    list_display = ["login", "email", "status_badge", "created_at", "activated_at", "suspended_at"]
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
    readonly_fields = [field.name for field in Account._meta.fields] + ["audit_trail"]
    inlines = [TokenInline]
    actions = ["suspend", "unsuspend", "resend_activation", "send_password_recovery"]

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

    @admin.display(description="audit trail")
    def audit_trail(self, account):
        url = reverse("admin:platform_events_auditevent_changelist")
        return format_html(
            '<a href="{}?resource_type=account&amp;resource_id={}">Audit events of this account</a>', url, account.pk
        )

    @admin.action(permissions=["suspend"], description="Suspend selected accounts")
    def suspend(self, request, queryset):
        done = ("%(count)d account suspended.", "%(count)d accounts suspended.")
        return self._confirm_and_run(request, queryset, "suspend", account_suspend, done)

    @admin.action(permissions=["suspend"], description="Unsuspend selected accounts")
    def unsuspend(self, request, queryset):
        done = ("%(count)d account unsuspended.", "%(count)d accounts unsuspended.")
        return self._confirm_and_run(request, queryset, "unsuspend", account_unsuspend, done)

    @admin.action(permissions=["resend_activation"], description="Resend the activation e-mail")
    def resend_activation(self, request, queryset):
        done = ("%(count)d activation e-mail queued.", "%(count)d activation e-mails queued.")
        return self._confirm_and_run(request, queryset, "resend_activation", token_resend_activation, done)

    @admin.action(permissions=["send_password_recovery"], description="Send a password-recovery e-mail")
    def send_password_recovery(self, request, queryset):
        done = ("%(count)d password-recovery e-mail queued.", "%(count)d password-recovery e-mails queued.")
        return self._confirm_and_run(request, queryset, "send_password_recovery", token_send_password_recovery, done)

    def has_suspend_permission(self, request):
        return request.user.has_perm("accounts.suspend_account")

    def has_resend_activation_permission(self, request):
        return request.user.has_perm("accounts.resend_activation")

    def has_send_password_recovery_permission(self, request):
        return request.user.has_perm("accounts.send_password_recovery")

    def _confirm_and_run(self, request, queryset, action, service, done):
        """The confirmation page asking why; once answered, the service on each account (one transaction
        each, under one audit context) and a report of what was done and what was skipped, and why."""
        _, _, description = self.get_action(action)
        form = ReasonForm(request.POST if request.POST.get("confirm") else None)
        if not form.is_valid():
            return TemplateResponse(
                request,
                "admin/accounts/account/action_confirmation.html",
                {
                    **self.admin_site.each_context(request),
                    "title": description,
                    "question": "These accounts are selected. Why?",
                    "accounts": queryset,
                    "opts": self.model._meta,
                    "action": action,
                    "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
                    "form": form,
                    "button": description,
                },
            )
        done_count, skipped = 0, defaultdict(list)
        with audit_context(reason=form.cleaned_data["reason"], request=request):
            for account in queryset:
                try:
                    service(account=account, actor=request.user)
                except LifecycleError as refusal:
                    skipped[refusal.reason].append(account)
                else:
                    done_count += 1
        level = messages.SUCCESS if done_count else messages.INFO
        self.message_user(request, ngettext(*done, done_count) % {"count": done_count}, level)
        for reason, accounts in skipped.items():
            self.message_user(request, skipped_report(reason, accounts), messages.WARNING)
        return None


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
