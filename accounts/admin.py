"""The back-office: accounts, their tokens and audit trail, and the staff's actions on them.

Actions ask for a reason on a confirmation page, call one service per account, and report what
happened per account; the database writes the audit rows, with the staff user and the reason.
"""

import re
import uuid
from collections import Counter

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.db import transaction
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html

from accounts.models import Account, AccountStatus
from accounts.selectors import accounts_search
from accounts.services import (
    account_resend_activation,
    account_send_password_recovery,
    account_suspend,
    account_unsuspend,
)
from platform_events.audit import set_audit_context
from platform_events.db.refusals import LifecycleError
from platform_events.read_only_admin import ReadOnlyModelAdmin
from tokens.models import Token

STATUS_COLOURS = {
    AccountStatus.PROVISIONED: "#8a6d00",
    AccountStatus.ACTIVE: "#1b7a1b",
    AccountStatus.SUSPENDED: "#b00020",
}


class ReasonForm(forms.Form):
    reason = forms.CharField(
        label="Reason (kept in the audit trail)", max_length=1000, widget=forms.Textarea(attrs={"rows": 3, "cols": 60})
    )


class TokenInline(admin.TabularInline):
    model = Token
    # Never the secret or the code: they are credentials.
    fields = ["action", "created_at", "expires_at", "consumed_at", "superseded_at", "failed_attempts", "mail_state"]
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Account)
class AccountAdmin(ReadOnlyModelAdmin):
    list_display = ["login", "email", "status_badge", "created_at", "activated_at", "suspended_at"]
    list_filter = ["status", "created_at", "activated_at", "suspended_at"]
    search_fields = ["login", "email"]  # the search itself: get_search_results
    search_help_text = "E-mail or login, or the start of one (not case-sensitive)."
    readonly_fields = [field.name for field in Account._meta.fields] + ["audit_trail"]
    inlines = [TokenInline]
    actions = ["suspend", "unsuspend", "resend_activation", "send_password_recovery"]

    def get_search_results(self, request, queryset, search_term):
        if not search_term.strip():
            return queryset, False
        return accounts_search(queryset, search_term), False

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
        return self._confirm_and_run(request, queryset, "suspend", account_suspend, "suspended")

    @admin.action(permissions=["suspend"], description="Unsuspend selected accounts")
    def unsuspend(self, request, queryset):
        return self._confirm_and_run(request, queryset, "unsuspend", account_unsuspend, "unsuspended")

    @admin.action(permissions=["resend_activation"], description="Resend the activation e-mail")
    def resend_activation(self, request, queryset):
        return self._confirm_and_run(
            request, queryset, "resend_activation", account_resend_activation, "sent an activation e-mail"
        )

    @admin.action(permissions=["send_password_recovery"], description="Send a password-recovery e-mail")
    def send_password_recovery(self, request, queryset):
        return self._confirm_and_run(
            request, queryset, "send_password_recovery", account_send_password_recovery, "sent a recovery e-mail"
        )

    def has_suspend_permission(self, request):
        return request.user.has_perm("accounts.suspend_account")

    def has_resend_activation_permission(self, request):
        return request.user.has_perm("accounts.resend_activation")

    def has_send_password_recovery_permission(self, request):
        return request.user.has_perm("accounts.send_password_recovery")

    def _confirm_and_run(self, request, queryset, action, service, done_label):
        form = ReasonForm(request.POST if request.POST.get("confirm") else None)
        if not form.is_valid():
            return TemplateResponse(
                request,
                "admin/accounts/account/action_confirmation.html",
                {
                    **self.admin_site.each_context(request),
                    "title": self.get_action(action)[2],
                    "question": "These accounts are selected. Why?",
                    "accounts": queryset,
                    "opts": self.model._meta,
                    "action": action,
                    "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
                    "form": form,
                    "button": self.get_action(action)[2],
                },
            )
        done, skipped = 0, Counter()
        request_id = uuid.uuid4()
        for account in queryset:
            try:
                with transaction.atomic():
                    set_audit_context(
                        actor=request.user,
                        reason=form.cleaned_data["reason"],
                        ip=request.META.get("REMOTE_ADDR"),
                        user_agent=request.META.get("HTTP_USER_AGENT"),
                        request_id=request_id,
                    )
                    service(account=account)
                done += 1
            except LifecycleError as error:
                skipped[_why(error)] += 1
        summary = f"{done} {done_label}"
        if skipped:
            summary += "; " + ", ".join(f"{n} skipped: {why}" for why, n in skipped.items())
        self.message_user(request, summary + ".", messages.SUCCESS if not skipped else messages.WARNING)
        return None


def _why(error: LifecycleError) -> str:
    """'accounts: account 7 is already suspended' -> 'already suspended'."""
    match = re.match(r"accounts: account \d+ is (.*)", str(error))
    return match.group(1) if match else str(error)
