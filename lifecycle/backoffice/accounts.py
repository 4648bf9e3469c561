"""The account page and list: accounts with their tokens and node assignments, their audit trail,
and the staff's actions on them (suspend, unsuspend, deprovision, reprovision, resend the activation
e-mail, send a password-recovery e-mail; and, on a deprovisioned account's page, erase it now).

Each action asks why on a confirmation page, calls one service per account and reports what happened
per account (platform_events/admin_kit/actions.py); the database writes the audit rows, with the staff
member and the reason.
"""

from django.contrib import admin
from django.contrib.admin.views.main import ORDER_VAR, SEARCH_VAR, ChangeListSearchForm
from django.http import HttpResponseRedirect
from django.urls import reverse
from django.utils.html import format_html
from rangefilter.filters import DateRangeQuickSelectListFilterBuilder

from accounts.erasure import account_erase
from accounts.models import Account, AccountStatus
from accounts.nodes.admin import NodeAssignmentInline
from accounts.selectors import (
    account_deprovisioning,
    account_erasure,
    account_suspension,
    account_trail_latest,
    accounts_search,
    accounts_search_order,
    accounts_search_tiers,
)
from accounts.services import account_deprovision, account_reprovision, account_suspend, account_unsuspend
from platform_events.admin_kit.actions import RowAction
from platform_events.admin_kit.display import Tone, badge, time_column, when
from platform_events.admin_kit.read_only import QuickRowLinks, ReadOnlyModelAdmin
from platform_events.audit.row_actions import AuditedRowActions
from platform_events.db.tiered_pages import TieredPaginator
from platform_events.refusals import Refused
from tokens.admin import TokenInline
from tokens.services import token_resend_activation, token_send_password_recovery

# The account page shows this many of the account's latest audit rows; the rest are a link away.
RECENT_TRAIL_ROWS = 15
STATUS_TONES = {
    AccountStatus.PROVISIONED: Tone.CAUTION,
    AccountStatus.ACTIVE: Tone.GOOD,
    AccountStatus.SUSPENDED: Tone.BAD,
    AccountStatus.DEPROVISIONED: Tone.QUIET,
    AccountStatus.ERASED: Tone.QUIET,
}


def account_line(account) -> str:
    """An account as a confirmation page lists it."""
    return f"{account.login} <{account.email}> — {account.status}"


def account_action(label: str, service, question: tuple[str, str], done: tuple[str, str], applies_to) -> RowAction:
    """One of the things staff do to accounts: a reason asked, the service called per account (it
    decides; the page offers the action only while ``applies_to``), refusals reported by their reason."""
    return RowAction(
        label,
        run=lambda account, actor, reason: service(account=account, actor=actor),
        question=question,
        done=done,
        describe=account_line,
        name=lambda account: account.login,
        applies_to=applies_to,
        refused=(Refused,),
    )


ACCOUNT_ACTIONS = {
    "suspend": account_action(
        "Suspend",
        account_suspend,
        (
            "Suspend this account? It cannot sign in until it is unsuspended.",
            "Suspend these %(count)d accounts? They cannot sign in until they are unsuspended.",
        ),
        ("%(count)d account suspended.", "%(count)d accounts suspended."),
        # A deprovisioned account is left only by reprovisioning (the database refuses the rest).
        lambda account: account.status in (AccountStatus.PROVISIONED, AccountStatus.ACTIVE),
    ),
    "unsuspend": account_action(
        "Unsuspend",
        account_unsuspend,
        (
            "Unsuspend this account? It goes back to active, or to provisioned if it never activated.",
            "Unsuspend these %(count)d accounts? Each goes back to active, or to provisioned if it never activated.",
        ),
        ("%(count)d account unsuspended.", "%(count)d accounts unsuspended."),
        lambda account: account.status == AccountStatus.SUSPENDED,
    ),
    "resend_activation": account_action(
        "Resend the activation e-mail",
        token_resend_activation,
        (
            "Send this account a new activation e-mail? The link and code it was sent before stop working.",
            "Send these %(count)d accounts a new activation e-mail? The links and codes they were sent before"
            " stop working.",
        ),
        ("%(count)d activation e-mail queued.", "%(count)d activation e-mails queued."),
        lambda account: account.status == AccountStatus.PROVISIONED,
    ),
    "send_password_recovery": account_action(
        "Send a password-recovery e-mail",
        token_send_password_recovery,
        (
            "Send this account a password-recovery e-mail?",
            "Send these %(count)d accounts a password-recovery e-mail?",
        ),
        ("%(count)d password-recovery e-mail queued.", "%(count)d password-recovery e-mails queued."),
        lambda account: account.status == AccountStatus.ACTIVE,
    ),
    "deprovision": account_action(
        "Deprovision",
        account_deprovision,
        (
            "Deprovision this account? It can no longer sign in, the links and codes it was sent stop working,"
            " and its storage node assignments are retired; it keeps its address. Reprovisioning brings it"
            " back, with a fresh activation e-mail.",
            "Deprovision these %(count)d accounts? They can no longer sign in, the links and codes they were sent"
            " stop working, and their storage node assignments are retired; each keeps its address."
            " Reprovisioning brings one back, with a fresh activation e-mail.",
        ),
        ("%(count)d account deprovisioned.", "%(count)d accounts deprovisioned."),
        lambda account: account.status not in (AccountStatus.DEPROVISIONED, AccountStatus.ERASED),
    ),
    "reprovision": account_action(
        "Reprovision",
        account_reprovision,
        (
            "Reprovision this account? It goes back to provisioned and is sent a fresh activation e-mail; it can"
            " sign in once it activates again. Its storage node assignments are reset: its next sync gets a"
            " fresh node, with the generation it had.",
            "Reprovision these %(count)d accounts? Each goes back to provisioned and is sent a fresh activation"
            " e-mail; it can sign in once it activates again. Their storage node assignments are reset: each"
            " one's next sync gets a fresh node, with the generation it had.",
        ),
        ("%(count)d account reprovisioned.", "%(count)d accounts reprovisioned."),
        lambda account: account.status == AccountStatus.DEPROVISIONED,
    ),
    # On a deprovisioned account's page only, never on a selection of the list: the one action that
    # cannot be undone is taken one account at a time, after a page that names what goes.
    "erase": RowAction(
        "Erase now",
        run=lambda account, actor, reason: account_erase(account=account, actor=actor, reason=reason),
        question=lambda accounts: erasure_question(accounts[0]),
        done=("Account erased.", "%(count)d accounts erased."),
        already=("It was erased already.", "%(count)d were erased already."),
        none_done="No account erased.",
        describe=account_line,
        name=lambda account: f"account #{account.pk}",
        applies_to=lambda account: account.status == AccountStatus.DEPROVISIONED,
        refused=(Refused,),
    ),
}


def erasure_question(account) -> str:
    """What the erasure's confirmation page says will go, and what stays."""
    return (
        f"Erase account #{account.pk} now? This cannot be undone. Its address {account.email} and its login"
        f" {account.login} are erased, with its password and its links and codes, and every copy of them in"
        " the audit trail, the events and their webhook deliveries, the API's stored answers, the task queue,"
        " the rate limits, the staff log-in records and the admin's log. Webhook deliveries and Kafka"
        " publications of its events still due are cancelled; endpoints and the event stream are sent"
        f" account.erased. The trail keeps every row, naming it account #{account.pk} (erased); the address"
        " is free for a new sign-up. It would be erased anyway once the erasure delay has passed."
    )


class AccountChangeList(QuickRowLinks):
    def get_queryset(self, request, exclude_parameters=None):
        # The list shows nothing of the password and SCIM rows the account page joins (get_queryset).
        return super().get_queryset(request, exclude_parameters).select_related(None)


# What the account's page says beside its columns, each from a method of AccountAdmin.
ACCOUNT_FACTS = ["status_badge", "suspension", "deprovisioning", "erasure", "password_state", "identity_provider"]


@admin.register(Account)
class AccountAdmin(AuditedRowActions, ReadOnlyModelAdmin):
    # Five columns fit 1366 px beside the filters; each status's own time is on the account page.
    list_display = ["login", "email", "status_badge", "status_since", time_column("created_at")]
    # Dates by range (from, to) besides the presets; the never-set ones are "No date".
    list_filter = [
        "status",
        ("created_at", DateRangeQuickSelectListFilterBuilder()),
        ("activated_at", DateRangeQuickSelectListFilterBuilder()),
        ("suspended_at", DateRangeQuickSelectListFilterBuilder()),
        ("deprovisioned_at", DateRangeQuickSelectListFilterBuilder()),
    ]
    search_fields = ["login", "email"]  # the search itself: get_search_results
    search_help_text = (
        "E-mail or login, not case-sensitive: the exact one first, then those that start with it, then those"
        " that hold it (example.com, @example). A term without 3 letters or digits in a row finds only starts."
    )
    fieldsets = [
        (
            None,
            {"fields": ["login", "email", *ACCOUNT_FACTS]},
        ),
        (
            "Dates",
            {
                "fields": [
                    "created_at",
                    "activated_at",
                    "suspended_at",
                    "unsuspended_at",
                    "deprovisioned_at",
                    "reprovisioned_at",
                    "status_changed_at",
                ]
            },
        ),
    ]
    readonly_fields = [field.name for field in Account._meta.fields] + ACCOUNT_FACTS
    inlines = [TokenInline, NodeAssignmentInline]
    row_actions = ACCOUNT_ACTIONS
    actions = list(ACCOUNT_ACTIONS)

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("password", "scim_user__client")

    def get_changelist(self, request, **kwargs):
        return AccountChangeList

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        """The account page: its actions as buttons (AuditedRowActions), links to its trail and events,
        and its latest audit rows; the account as the page read it, not read again."""
        if obj is not None:
            context = {
                "trail_url": self._trail_url(request, obj),
                "events_url": self._events_url(request, obj),
                **context,
            }
            if context["trail_url"]:
                context["recent_trail"] = account_trail_latest(obj.pk, RECENT_TRAIL_ROWS)
        return super().render_change_form(request, context, add, change, form_url, obj)

    def history_view(self, request, object_id, extra_context=None):
        """The audit trail of the account and its tokens, in place of Django's LogEntry history (which
        stays empty: staff change accounts through the services, never by saving the form)."""
        account = self.get_object(request, object_id)
        trail_url = account and self._trail_url(request, account)
        if not trail_url:
            return super().history_view(request, object_id, extra_context)
        return HttpResponseRedirect(trail_url)

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
        return badge(account.status, STATUS_TONES[account.status])

    @admin.display(description="status since", ordering="status_changed_at")
    def status_since(self, account):
        return when(account.status_changed_at or account.created_at)

    @admin.display(description="suspension")
    def suspension(self, account):
        """Why, by whom and since when the account is suspended, from the audit row that suspended it."""
        if account.status != AccountStatus.SUSPENDED:
            return "—"
        # No row: suspended before the audit trail existed.
        return since_by_whom_why(account_suspension(account.pk), account.suspended_at)

    @admin.display(description="deprovisioned")
    def deprovisioning(self, account):
        """Since when, by whom and why the account is (or was, before its erasure) deprovisioned, from the
        audit row that deprovisioned it."""
        if account.status not in (AccountStatus.DEPROVISIONED, AccountStatus.ERASED):
            return "—"
        # No row: the trail's row has aged out with its partition.
        word = "on" if account.status == AccountStatus.ERASED else "since"
        return since_by_whom_why(account_deprovisioning(account.pk), account.deprovisioned_at, word=word)

    @admin.display(description="erased")
    def erasure(self, account):
        """When, by whom and why the account was erased, from the audit row that erased it."""
        if account.status != AccountStatus.ERASED:
            return "—"
        return since_by_whom_why(account_erasure(account.pk), account.status_changed_at, word="on")

    @admin.display(description="password")
    def password_state(self, account):
        """Whether the account has a password, and since when (never the hash)."""
        if account.status == AccountStatus.ERASED:
            return "none (erased with the account)"
        password = getattr(account, "password", None)
        return (
            f"set {when(password.changed_at)}" if password else "none (the account cannot sign in with a password yet)"
        )

    @admin.display(description="identity provider")
    def identity_provider(self, account):
        """The API client whose SCIM User the account is, and the userName it gave it (docs/scim.md); the
        externalId is the provider's own and is not shown."""
        link = getattr(account, "scim_user", None)
        if link is None:
            return "—"
        shown = f"{link.client.name}, as {link.user_name} (SCIM, since {when(link.created_at)})"
        return f"{shown}; deleted by the provider on {when(link.deleted_at)}" if link.deleted_at else shown

    @admin.action(permissions=["suspend"], description="Suspend selected accounts")
    def suspend(self, request, queryset):
        return self.confirm_and_run(request, queryset, "suspend")

    @admin.action(permissions=["suspend"], description="Unsuspend selected accounts")
    def unsuspend(self, request, queryset):
        return self.confirm_and_run(request, queryset, "unsuspend")

    @admin.action(permissions=["deprovision"], description="Deprovision selected accounts")
    def deprovision(self, request, queryset):
        return self.confirm_and_run(request, queryset, "deprovision")

    @admin.action(permissions=["reprovision"], description="Reprovision selected accounts")
    def reprovision(self, request, queryset):
        return self.confirm_and_run(request, queryset, "reprovision")

    @admin.action(permissions=["resend_activation"], description="Resend the activation e-mail")
    def resend_activation(self, request, queryset):
        return self.confirm_and_run(request, queryset, "resend_activation")

    @admin.action(permissions=["send_password_recovery"], description="Send a password-recovery e-mail")
    def send_password_recovery(self, request, queryset):
        return self.confirm_and_run(request, queryset, "send_password_recovery")

    def may_run(self, request, name: str, allowed=None) -> bool:
        """Erasing is no list action: the Privacy role's (erase_account), from the account's page."""
        if name == "erase":
            return request.user.has_perm("accounts.erase_account")
        return super().may_run(request, name, allowed)

    def has_suspend_permission(self, request):
        return request.user.has_perm("accounts.suspend_account")

    def has_deprovision_permission(self, request):
        return request.user.has_perm("accounts.deprovision_account")

    def has_reprovision_permission(self, request):
        return request.user.has_perm("accounts.reprovision_account")

    def has_resend_activation_permission(self, request):
        return request.user.has_perm("accounts.resend_activation")

    def has_send_password_recovery_permission(self, request):
        return request.user.has_perm("accounts.send_password_recovery")


def since_by_whom_why(event, since, *, word: str = "since") -> str:
    """A status's audit row as the account page says it: since (``word``) when, by whom and why; only
    ``since`` (the account's own timestamp) when the trail has no row of it."""
    if event is None:
        return f"{word} {when(since)}"
    return format_html(
        "{} {} by {}<br>reason: {}",
        word,
        when(event.occurred_at),
        event.actor_display or event.actor_id,
        event.reason or "—",
    )


def search_term(request) -> str:
    """The list's search term as Django's ChangeList reads it: none when its form refuses the term
    (a NUL: "Null characters are not allowed."), so the order and the pages follow the same list."""
    form = ChangeListSearchForm(request.GET)
    return form.cleaned_data.get(SEARCH_VAR) or "" if form.is_valid() else ""
