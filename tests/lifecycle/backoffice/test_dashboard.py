"""The admin's index page: accounts by status, a 30-day chart, the mail (due, retrying, dead), the mail
runs, the last staff actions; each figure linked to the list it counts, for staff allowed to open it."""

import re
from datetime import timedelta

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.db import transaction
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from accounts.models import Account
from accounts.services import account_suspend
from lifecycle.backoffice.dashboard import Chart, Links, accounts_by_status
from lifecycle.demo.factories import AccountFactory
from platform_events.audit.context import audit_context
from tests.support import admin_action, analyze
from tokens.models import Job, JobType, MailState, Token
from tokens.selectors import live_token
from tokens.services import token_consume

pytestmark = pytest.mark.django_db
INDEX = reverse("admin:index")


def test_the_dashboard_shows_each_figure(admin_client, admin_user):
    AccountFactory.create_batch(2)
    AccountFactory(active=True)
    with audit_context(reason="test run"):
        account_suspend(account=AccountFactory(active=True), actor=admin_user)
    response = admin_client.get(INDEX)
    dashboard = response.context["dashboard"]
    assert dashboard["accounts_by_status"] == {
        "provisioned": 2,
        "active": 1,
        "suspended": 1,
        "deprovisioned": 0,
        "erased": 0,
    }
    assert dashboard["accounts_estimated"] is False
    assert sum(dashboard["chart"].signups) == 4 and sum(dashboard["chart"].activations) == 2
    assert dashboard["mail_queue"]["depth"] == 2
    assert [e.reason for e in dashboard["staff_actions"]] == ["test run"]
    page = response.content.decode()
    assert "<svg" in page and "<polyline" in page
    assert [(f.label, f.value) for f in dashboard["mail"]] == [("due now", 2), ("retrying", 0), ("dead", 0)]
    assert "account.suspended user" in page  # the account by its login (the factory's user<n>)


@pytest.mark.django_db(transaction=True)
def test_a_large_table_is_estimated_and_the_page_says_so(admin_client, monkeypatch):
    monkeypatch.setattr("lifecycle.backoffice.dashboard.EXACT_COUNT_LIMIT", 3)
    AccountFactory.create_batch(4)
    AccountFactory.create_batch(2, active=True)
    AccountFactory.create_batch(2, suspended=True)
    analyze("accounts")
    figures, estimated = accounts_by_status()
    assert estimated and figures == {"provisioned": 4, "active": 2, "suspended": 2, "deprovisioned": 0, "erased": 0}
    assert "estimated from table statistics, not counted" in admin_client.get(INDEX).content.decode()


def test_an_auditor_sees_only_the_staff_actions():
    user = get_user_model().objects.create_user("auditor1", is_staff=True)
    user.groups.set([Group.objects.get(name="Auditor")])
    client = Client()
    client.force_login(user)
    dashboard = client.get(INDEX).context["dashboard"]
    assert set(dashboard) == {"staff_actions", "staff_rows", "audit_url"}


def test_an_account_acting_for_itself_is_not_a_staff_action(admin_client, admin_user):
    """End users' own actions are audited as users too; the staff list leaves them out."""
    account = AccountFactory()
    token_consume(secret=bytes(live_token(account=account).secret), actor=account)
    with audit_context(reason="test run"):
        account_suspend(account=account, actor=admin_user)
    staff_actions = admin_client.get(INDEX).context["dashboard"]["staff_actions"]
    assert [(e.action, e.actor_id) for e in staff_actions] == [("account.suspended", f"staff:{admin_user.pk}")]


def test_a_long_mail_queue_is_not_counted_to_the_end(admin_client, monkeypatch):
    monkeypatch.setattr("lifecycle.backoffice.dashboard.EXACT_COUNT_LIMIT", 2)
    AccountFactory.create_batch(3)
    response = admin_client.get(INDEX)
    assert response.context["dashboard"]["mail_queue"]["more"] is True
    assert response.context["dashboard"]["mail"][0].more is True
    assert re.search(r'<td class="figure">more than 2</td>', response.content.decode())


def dashboard_links(client) -> list[str]:
    """The links of the dashboard's figures (not of the app list below them)."""
    page = client.get(INDEX).content.decode()
    figures = page[page.index('<div id="dashboard">') : page.index('<div id="content-main">')]
    return [href.replace("&amp;", "&") for href in re.findall(r'href="([^"]+)"', figures)]


def listed(client, url: str) -> list:
    response = client.get(url)
    assert response.status_code == 200, url
    return list(response.context["cl"].result_list)


def figure(figures, label: str):
    (found,) = [f for f in figures if f.label == label]
    return found


class TestMailFigures:
    def test_dead_and_retrying_mail_are_shown_beside_due_mail_each_linked_to_its_tokens(self, support):
        """Mail that is stuck shows beside due mail. Each number is the count of the list its link opens."""
        due, retrying, dead, other_dead = (live_token(account=AccountFactory()) for _ in range(4))
        Token.objects.filter(pk=retrying.pk).update(
            mail_state=MailState.RETRYING, mail_next_attempt_at=timezone.now() + timedelta(minutes=5)
        )
        Token.objects.filter(pk__in=[dead.pk, other_dead.pk]).update(mail_state=MailState.DEAD)
        mail = support.get(INDEX).context["dashboard"]["mail"]
        assert [(f.label, f.value) for f in mail] == [("due now", 1), ("retrying", 1), ("dead", 2)]
        assert figure(mail, "dead").url == "/admin/tokens/token/?mail_state__exact=dead"
        assert listed(support, figure(mail, "due now").url) == [due]
        assert listed(support, figure(mail, "retrying").url) == [retrying]
        assert set(listed(support, figure(mail, "dead").url)) == {dead, other_dead}
        assert figure(mail, "dead").url in dashboard_links(support)


class TestAccountFigures:
    def test_each_status_links_to_the_accounts_in_it(self, support):
        AccountFactory.create_batch(2)
        AccountFactory(active=True)
        AccountFactory(deprovisioned=True)
        AccountFactory(erased=True)
        accounts = support.get(INDEX).context["dashboard"]["accounts"]
        for status in ("provisioned", "active", "suspended", "deprovisioned", "erased"):
            found = figure(accounts, status)
            assert found.url == f"/admin/accounts/account/?status__exact={status}"
            assert len(listed(support, found.url)) == found.value
        assert figure(accounts, "deprovisioned").value == figure(accounts, "erased").value == 1
        assert (figure(accounts, "all").value, len(listed(support, figure(accounts, "all").url))) == (5, 5)


class TestStaffActions:
    def test_a_staff_action_links_to_its_own_audit_rows(self, admin_client):
        """A bulk action's rows share its request id: the link finds them all, and nothing else."""
        jane, john = AccountFactory(active=True), AccountFactory(active=True)
        AccountFactory(active=True)
        admin_action(admin_client, "suspend", [jane, john], reason="chargeback")
        event, url = admin_client.get(INDEX).context["dashboard"]["staff_rows"][0]
        assert url == f"/admin/platform_events/auditevent/?q={event.request_id}"
        rows = listed(admin_client, url)
        assert {(row.action, row.resource_id) for row in rows} == {
            ("account.suspended", str(jane.pk)),
            ("account.suspended", str(john.pk)),
        }

    def test_an_action_without_a_request_links_to_the_trail_of_what_it_acted_on(self, admin_client, admin_user):
        account = AccountFactory(active=True)
        with audit_context(reason="by hand"):
            account_suspend(account=account, actor=admin_user)
        event, url = admin_client.get(INDEX).context["dashboard"]["staff_rows"][0]
        assert url == f"/admin/platform_events/auditevent/?resource_type=account&resource_id={account.pk}"
        assert event in listed(admin_client, url)

    def test_the_audit_trail_is_linked_for_an_auditor(self, auditor):
        assert dashboard_links(auditor) == ["/admin/platform_events/auditevent/?actor_type__exact=USER"]


class TestMailRunFigures:
    def test_the_mail_run_figures_link_to_the_mail_runs_they_count(self, support):
        now = timezone.now()
        Job.objects.create(job_type=JobType.MAILROOM, claimed=3, sent=3, finished_at=now)
        failed = Job.objects.create(job_type=JobType.MAILROOM, claimed=2, sent=1, failed=1, finished_at=now)
        two_days_ago = now - timedelta(days=2)
        Job.objects.create(
            job_type=JobType.MAILROOM, claimed=5, sent=5, started_at=two_days_ago, finished_at=two_days_ago
        )
        running = Job.objects.create(job_type=JobType.MAILROOM, claimed=4, sent=1)
        runs = support.get(INDEX).context["dashboard"]["mail_runs"]
        assert [(f.label, f.value) for f in runs["figures"]] == [
            ("runs", 3),
            ("e-mails sent", 5),
            ("with failed mail or an error", 1),
        ]
        assert len(listed(support, figure(runs["figures"], "runs").url)) == 3
        assert listed(support, figure(runs["figures"], "with failed mail or an error").url) == [failed]
        assert (runs["unfinished"].value, listed(support, runs["unfinished"].url)) == (1, [running])
        assert runs["last"] == running
        assert support.get(runs["last_url"]).status_code == 200

    def test_no_run_yet_is_said(self, support):
        runs = support.get(INDEX).context["dashboard"]["mail_runs"]
        assert runs["last"] is None
        assert "No run has claimed mail yet." in support.get(INDEX).content.decode()


class TestLinksOnlyForTheAllowed:
    def test_support_gets_a_link_for_every_figure(self, support):
        links = dashboard_links(support)
        for target in (
            "/admin/accounts/account/",
            "/admin/tokens/token/",
            "/admin/tokens/job/",
            "/admin/platform_events/",
        ):
            assert any(link.startswith(target) for link in links), target

    def test_an_auditor_gets_no_link_to_accounts_tokens_or_mail_runs(self, auditor):
        assert not [link for link in dashboard_links(auditor) if not link.startswith("/admin/platform_events/")]

    def test_staff_who_may_view_tokens_only_see_the_mail_and_links_to_tokens_only(self):
        user = get_user_model().objects.create_user("mail-viewer", is_staff=True)
        user.user_permissions.set([Permission.objects.get(content_type__app_label="tokens", codename="view_token")])
        client = Client()
        client.force_login(user)
        assert set(client.get(INDEX).context["dashboard"]) == {"mail_queue", "mail"}
        links = dashboard_links(client)
        assert links and all(link.startswith("/admin/tokens/token/") for link in links)

    def test_a_link_is_made_only_where_the_target_admin_lets_the_viewer_in(self, rf):
        """The figures are gated by the same permissions today; the links ask the target's own admin."""
        user = get_user_model().objects.create_user("mail-viewer", is_staff=True)
        user.user_permissions.set([Permission.objects.get(content_type__app_label="tokens", codename="view_token")])
        request = rf.get(INDEX)
        request.user = get_user_model().objects.get(pk=user.pk)  # a fresh permission cache
        links = Links(request, admin.site)
        assert links.changelist(Token, mail_state__exact="dead") == "/admin/tokens/token/?mail_state__exact=dead"
        assert links.changelist(Account) is None
        assert links.changelist(Job) is None
        assert links.change(Job, 1) is None


class TestChart:
    @pytest.mark.parametrize(
        ("peak", "ticks"),
        [(0, [0, 1]), (1, [0, 1]), (4, [0, 1, 2, 3, 4]), (11, [0, 5, 10, 15]), (37, [0, 10, 20, 30, 40])],
    )
    def test_the_y_axis_has_a_few_round_ticks_from_zero_past_the_peak(self, peak, ticks):
        chart = Chart(days=[timezone.localdate()], signups=[peak], activations=[0])
        assert [value for value, _ in chart.y_ticks] == ticks

    def test_each_day_has_its_values_on_hover_and_in_a_table(self, admin_client):
        AccountFactory.create_batch(3)
        AccountFactory(active=True)
        page = admin_client.get(INDEX).content.decode()
        today = timezone.localdate()
        assert f"<title>{today:%a %b} {today.day}: 4 sign-ups, 1 activation</title>" in page
        assert "<summary>Show as a table</summary>" in page
        assert re.search(rf"<th scope=\"row\">{today:%a %b} {today.day}</th><td>4</td><td>1</td>", page)

    def test_days_are_labelled_a_week_apart_ending_today(self, admin_client):
        chart = admin_client.get(INDEX).context["dashboard"]["chart"]
        today = timezone.localdate()
        assert [day for day, _ in chart.x_labels] == [today - timedelta(days=n) for n in (28, 21, 14, 7, 0)]


def test_a_staff_action_names_the_account_by_its_login(admin_client, admin_user):
    """A row names the account by its login ("account.suspended account 40" would say nothing), and a
    token's row its account."""
    account = AccountFactory(active=True, login="jane")
    with audit_context(reason="chargeback"):
        account_suspend(account=account, actor=admin_user)
    page = admin_client.get(INDEX).content.decode()
    assert "account.suspended jane</a>" in page
    assert f"account {account.pk}<" not in page


def test_a_staff_action_on_a_login_names_it_and_says_what_changed(admin_client, admin_user):
    """ "staff_user.changed staff_user 40" would say nothing: the row names the login and the change."""
    sam = get_user_model().objects.create_user("sam", is_staff=True)
    with audit_context(actor=admin_user), transaction.atomic():
        get_user_model().objects.filter(pk=sam.pk).update(is_superuser=True)
    page = admin_client.get(INDEX).content.decode()
    assert "staff_user.changed staff user sam: made superuser</a>" in page


def test_the_chart_says_how_its_days_are_counted(admin_client):
    """Days that are over are kept counts (accounts/daily_counts.py): the page says so."""
    assert "each day before as it was counted once it was over" in admin_client.get(INDEX).content.decode()
