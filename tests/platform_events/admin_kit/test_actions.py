"""The admin kit's row actions: confirm first (a GET or an unconfirmed POST never runs anything), ask
why where the action needs a reason, then one service call per row under one context, and a report of
what was done, what was so already and what was skipped, and why."""

from contextlib import contextmanager

import pytest
from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.messages.storage.fallback import FallbackStorage
from django.contrib.sessions.backends.db import SessionStore
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.test import RequestFactory

from accounts.models import Account
from lifecycle.demo.factories import AccountFactory
from platform_events.admin_kit.actions import (
    NAMED_IN_REPORTS,
    NAMED_ON_CONFIRMATION,
    Reason,
    RowAction,
    RowActions,
    skipped_report,
)

pytestmark = pytest.mark.django_db


class Refusal(Exception):
    def __init__(self, message, reason=None):
        super().__init__(message)
        if reason:
            self.reason = reason


class Calls:
    """A service that records its calls and answers as told per login."""

    def __init__(self, answers=None):
        self.calls, self.answers = [], answers or {}

    def __call__(self, account, *, actor, reason):
        self.calls.append((account.login, actor.username, reason))
        answer = self.answers.get(account.login, True)
        if isinstance(answer, Exception):
            raise answer
        return answer


def kit_admin(**actions):
    contexts = []

    @contextmanager
    def acting(**context):
        contexts.append(context)
        yield

    class KitAdmin(RowActions, admin.ModelAdmin):
        row_actions = actions

        @admin.action(permissions=["act"], description="Do it to the selected accounts")
        def act(self, request, queryset):
            return self.confirm_and_run(request, queryset, "act")

        def has_act_permission(self, request):
            return request.user.is_superuser

    KitAdmin.acting = staticmethod(acting)
    KitAdmin.actions = ["act"] if "act" in actions else []
    model_admin = KitAdmin(Account, admin.site)
    model_admin.contexts = contexts
    return model_admin


def row_action(run, **options) -> RowAction:
    defaults = {
        "question": ("Do it to this account?", "Do it to these %(count)d accounts?"),
        "done": ("%(count)d account done: %(names)s.", "%(count)d accounts done: %(names)s."),
        "name": lambda account: account.login,
        "refused": (Refusal,),
    }
    return RowAction("Do it", run=run, **{**defaults, **options})


@pytest.fixture
def staff():
    return get_user_model().objects.create_superuser("boss", password="a-long-password-1")


def request_as(user, method="get", data=None):
    request = getattr(RequestFactory(), method)("/admin/accounts/account/", data or {})
    request.user = user
    request.session = SessionStore()
    request._messages = FallbackStorage(request)
    return request


def reported(request) -> list[tuple[int, str]]:
    return [(message.level, message.message) for message in messages.get_messages(request)]


def accounts(*logins):
    return Account.objects.filter(pk__in=[AccountFactory(login=login).pk for login in logins]).order_by("login")


class TestConfirmation:
    def test_a_get_asks_and_runs_nothing(self, staff):
        run = Calls()
        model_admin = kit_admin(act=row_action(run))
        page = model_admin.confirm_and_run(request_as(staff), accounts("ann", "bob"), "act")
        assert page.context_data["question"] == "Do it to these 2 accounts?"
        assert page.context_data["title"] == "Do it to the selected accounts"
        assert page.context_data["action"] == "act"
        assert run.calls == [] and model_admin.contexts == []

    def test_the_page_asks_about_the_rows_then_why(self, staff):
        """One row or many, the question is the action's (in its form for the count), the rows follow,
        and the reason's field asks why; an optional reason says it is optional."""
        for logins, question in [(["ann"], "Do it to this account?"), (["bob", "cy"], "Do it to these 2 accounts?")]:
            page = kit_admin(act=row_action(Calls())).confirm_and_run(request_as(staff), accounts(*logins), "act")
            html = page.render().content.decode()
            asked = html.index(question)
            assert asked < html.index(logins[-1], asked) < html.index("Why? (kept in the audit trail)", asked)
        optional = kit_admin(act=row_action(Calls(), reason=Reason.OPTIONAL))
        page = optional.confirm_and_run(request_as(staff), accounts("dee"), "act")
        assert page.context_data["form"]["reason"].label == "Why? (optional; kept in the audit trail)"

    def test_a_post_without_the_confirmation_asks_and_runs_nothing(self, staff):
        run = Calls()
        request = request_as(staff, "post", {"reason": "because"})
        page = kit_admin(act=row_action(run)).confirm_and_run(request, accounts("ann"), "act")
        assert page.status_code == 200 and run.calls == []

    def test_a_required_reason_left_out_asks_again_with_the_error(self, staff):
        run = Calls()
        request = request_as(staff, "post", {"confirm": "yes", "reason": ""})
        page = kit_admin(act=row_action(run)).confirm_and_run(request, accounts("ann"), "act")
        assert page.context_data["form"].errors == {"reason": ["This field is required."]}
        assert run.calls == []

    def test_the_confirmation_names_the_first_rows_and_counts_the_rest(self, staff):
        logins = [f"user{n:02}" for n in range(NAMED_ON_CONFIRMATION + 3)]
        action = row_action(Calls(), describe=lambda account: f"<{account.login}>")
        page = kit_admin(act=action).confirm_and_run(request_as(staff), accounts(*logins), "act")
        assert page.context_data["items"] == [f"<{login}>" for login in logins[:NAMED_ON_CONFIRMATION]]
        assert page.context_data["more"] == 3

    def test_an_action_without_a_reason_has_no_field_and_records_none(self, staff):
        run = Calls()
        model_admin, ann = kit_admin(act=row_action(run, reason=Reason.NONE)), accounts("ann")
        assert model_admin.confirm_and_run(request_as(staff), ann, "act").context_data["form"] is None
        request = request_as(staff, "post", {"confirm": "yes", "reason": "slipped in"})
        assert model_admin.confirm_and_run(request, ann, "act") is None
        assert run.calls == [("ann", "boss", None)]
        assert model_admin.contexts[0]["reason"] is None

    def test_an_optional_reason_may_be_left_out(self, staff):
        run = Calls()
        request = request_as(staff, "post", {"confirm": "yes"})
        assert (
            kit_admin(act=row_action(run, reason=Reason.OPTIONAL)).confirm_and_run(request, accounts("ann"), "act")
            is None
        )
        assert run.calls == [("ann", "boss", None)]


class TestRun:
    def confirmed(self, staff, action, rows, reason="fraud"):
        request = request_as(staff, "post", {"confirm": "yes", "reason": reason})
        model_admin = kit_admin(act=action)
        assert model_admin.confirm_and_run(request, rows, "act") is None
        return model_admin, request

    def test_each_row_is_run_once_under_one_context_with_the_reason_and_request(self, staff):
        run = Calls()
        model_admin, request = self.confirmed(staff, row_action(run), accounts("ann", "bob"))
        assert run.calls == [("ann", "boss", "fraud"), ("bob", "boss", "fraud")]
        assert model_admin.contexts == [{"reason": "fraud", "request": request}]
        assert reported(request) == [(messages.SUCCESS, "2 accounts done: ann, bob.")]

    def test_rows_so_already_and_refused_rows_are_reported_apart(self, staff):
        answers = {"bob": False, "cy": Refusal("accounts: 3 is gone", reason="deleted meanwhile"), "dee": Refusal("no")}
        action = row_action(Calls(answers), already=("%(count)d was so already.", "%(count)d were so already."))
        _, request = self.confirmed(staff, action, accounts("ann", "bob", "cy", "dee"))
        assert reported(request) == [
            (messages.SUCCESS, "1 account done: ann. 1 was so already."),
            (messages.WARNING, "1 account skipped (deleted meanwhile): cy."),
            (messages.WARNING, "1 account skipped (no): dee."),
        ]

    def test_nothing_done_says_so(self, staff):
        action = row_action(Calls({"ann": False}), done=("%(count)d account done.", "%(count)d accounts done."))
        ann = accounts("ann")
        _, request = self.confirmed(staff, action, ann)
        assert reported(request) == [(messages.INFO, "0 accounts done.")]
        _, request = self.confirmed(staff, row_action(Calls({"ann": False}), none_done="Nothing done."), ann)
        assert reported(request) == [(messages.INFO, "Nothing done.")]

    def test_counts_returned_by_the_runs_add_up(self, staff):
        action = row_action(Calls({"ann": 3, "bob": 0, "cy": 2}))
        _, request = self.confirmed(staff, action, accounts("ann", "bob", "cy"))
        assert reported(request) == [(messages.SUCCESS, "5 accounts done: ann, cy.")]

    def test_an_exception_that_is_no_refusal_is_a_bug_not_a_skip(self, staff):
        with pytest.raises(ZeroDivisionError):
            self.confirmed(staff, row_action(Calls({"ann": ZeroDivisionError()})), accounts("ann"))

    def test_the_action_runs_on_the_rows_given_when_not_the_selection(self, staff):
        run = Calls()
        request = request_as(staff, "post", {"confirm": "yes", "reason": "x"})
        rows = [Account(login="one"), Account(login="two")]
        assert kit_admin(act=row_action(run)).confirm_and_run(request, accounts("ann"), "act", rows=rows) is None
        assert [login for login, _, _ in run.calls] == ["one", "two"]


class TestSkippedReport:
    """The report of rows an action skipped: named, the first few only, singular or plural."""

    def report(self, reason, names):
        return skipped_report(reason, names, singular="account", plural="accounts")

    def test_one_account(self):
        assert self.report("already suspended", ["jane"]) == "1 account skipped (already suspended): jane."

    def test_two_accounts(self):
        assert self.report("already suspended", ["jane", "joe"]) == "2 accounts skipped (already suspended): jane, joe."

    def test_as_many_as_are_named_are_all_named(self):
        logins = [f"user{n}" for n in range(1, NAMED_IN_REPORTS + 1)]
        assert self.report("not suspended", logins) == (
            f"{NAMED_IN_REPORTS} accounts skipped (not suspended): {', '.join(logins)}."
        )

    def test_past_that_the_rest_are_counted(self):
        logins = [f"user{n}" for n in range(1, NAMED_IN_REPORTS + 4)]
        named = ", ".join(logins[:NAMED_IN_REPORTS])
        assert self.report("not suspended", logins) == (
            f"{NAMED_IN_REPORTS + 3} accounts skipped (not suspended): {named} and 3 more."
        )

    def test_one_more(self):
        logins = [f"user{n}" for n in range(1, NAMED_IN_REPORTS + 2)]
        assert self.report("not suspended", logins).endswith(" and 1 more.")


class TestOnItsPage:
    def test_the_buttons_are_the_actions_that_apply_and_are_shown_on_pages(self, staff):
        model_admin = kit_admin(
            act=row_action(Calls()),
            later=row_action(Calls(), applies_to=lambda account: account.login != "ann"),
            hidden=row_action(Calls(), on_page=False),
        )
        (ann,) = accounts("ann")
        assert model_admin.action_buttons(request_as(staff), ann) == [
            (f"/admin/accounts/account/{ann.pk}/act/act/", "Do it")
        ]

    def test_a_run_from_the_page_asks_then_returns_to_the_page(self, staff):
        run = Calls()
        model_admin = kit_admin(act=row_action(run))
        (ann,) = accounts("ann")
        page = model_admin.row_action_view(request_as(staff), str(ann.pk), "act")
        assert (page.context_data["title"], page.context_data["back"]) == (
            "Do it: ann",
            f"/admin/accounts/account/{ann.pk}/change/",
        )
        done = model_admin.row_action_view(
            request_as(staff, "post", {"confirm": "yes", "reason": "x"}), str(ann.pk), "act"
        )
        assert done.status_code == 302 and done.url == f"/admin/accounts/account/{ann.pk}/change/"
        assert run.calls == [("ann", "boss", "x")]

    def test_an_unknown_action_is_a_404_and_a_forbidden_one_a_403(self, staff):
        model_admin = kit_admin(act=row_action(Calls()))
        (ann,) = accounts("ann")
        with pytest.raises(Http404):
            model_admin.row_action_view(request_as(staff), str(ann.pk), "nope")
        clerk = get_user_model().objects.create_user("clerk", password="a-long-password-1", is_staff=True)
        with pytest.raises(PermissionDenied):
            model_admin.row_action_view(request_as(clerk), str(ann.pk), "act")

    def test_an_answer_replaces_the_report_with_a_page_of_its_own(self, staff):
        from django.http import HttpResponse

        model_admin = kit_admin(act=row_action(Calls({"ann": "shown once"}), answer="shown"))
        model_admin.shown = lambda request, row, result: HttpResponse(f"{row.login}: {result}")
        (ann,) = accounts("ann")
        request = request_as(staff, "post", {"confirm": "yes", "reason": "x"})
        assert model_admin.row_action_view(request, str(ann.pk), "act").content == b"ann: shown once"
        assert reported(request) == []
