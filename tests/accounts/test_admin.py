"""The plain admin shows accounts, tokens and mail runs, and never a token's secret or code."""

import io

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from accounts.models import Account, AccountStatus
from lifecycle.factories import AccountFactory
from tokens.models import MailState, Token, secret_to_text

pytestmark = pytest.mark.django_db


@pytest.fixture
def token(admin_client):
    account = AccountFactory()
    return Token.objects.get(account=account)


@pytest.mark.parametrize(
    "url",
    [
        lambda t: reverse("admin:accounts_account_changelist"),
        lambda t: reverse("admin:accounts_account_change", args=[t.account_id]),
        lambda t: reverse("admin:tokens_token_changelist"),
        lambda t: reverse("admin:tokens_token_change", args=[t.pk]),
        lambda t: reverse("admin:accounts_account_changelist") + f"?q={t.account.login}",
    ],
    ids=["accounts", "account", "tokens", "token", "search"],
)
def test_admin_pages_show_no_secret_or_code(admin_client, token, url):
    response = admin_client.get(url(token))
    assert response.status_code == 200
    page = response.content.decode()
    assert token.code not in page
    assert secret_to_text(token.secret) not in page
    assert bytes(token.secret).hex() not in page


def test_the_admin_cannot_change_state_behind_the_services(admin_client, token):
    response = admin_client.post(
        reverse("admin:accounts_account_change", args=[token.account_id]), {"status": "active"}
    )
    assert response.status_code == 403
    assert Account.objects.get(pk=token.account_id).status == AccountStatus.PROVISIONED


def test_anonymous_users_are_sent_to_login(client):
    response = client.get(reverse("admin:accounts_account_changelist"))
    assert response.status_code == 302
    assert reverse("admin:login") in response["Location"]


class TestSeedDemo:
    def test_refuses_to_run_with_debug_off(self, settings):
        settings.DEBUG = False
        with pytest.raises(CommandError, match="runs only with DEBUG on"):
            call_command("seed_demo", stdout=io.StringIO())
        assert not Account.objects.exists()

    def test_loads_accounts_in_every_state_once_and_prints_the_admin_login(self, settings, monkeypatch):
        settings.DEBUG = True
        monkeypatch.setenv("DEMO_ADMIN_PASSWORD", "demo-pass-123")
        out = io.StringIO()
        call_command("seed_demo", stdout=out)
        call_command("seed_demo", stdout=out)
        assert "Loaded 150 demo accounts." in out.getvalue()
        assert "Demo accounts already loaded." in out.getvalue()
        assert "Admin login: admin / demo-pass-123" in out.getvalue()
        assert "Support login: support / demo-pass-123" in out.getvalue()
        assert "Auditor login: auditor / demo-pass-123" in out.getvalue()
        statuses = set(Account.objects.values_list("status", flat=True))
        assert statuses == {AccountStatus.PROVISIONED, AccountStatus.ACTIVE, AccountStatus.SUSPENDED}
        assert Account.objects.count() == 150
        assert Account.objects.dates("created_at", "day").count() > 10  # spread for the dashboard's chart


def test_the_admin_says_whose_it_is(admin_client):
    response = admin_client.get(reverse("admin:index"))
    assert "Lifecycle back-office" in response.content.decode()


class TestMailStateInTheAdmin:
    def test_tokens_can_be_filtered_by_mail_state(self, admin_client):
        sent, dead = (Token.objects.get(account=AccountFactory()) for _ in range(2))
        Token.objects.filter(pk=sent.pk).update(mail_state=MailState.SENT)
        Token.objects.filter(pk=dead.pk).update(mail_state=MailState.DEAD, mail_error="550 5.1.1 No such mailbox")
        response = admin_client.get(reverse("admin:tokens_token_changelist") + "?mail_state__exact=dead")
        assert list(response.context["cl"].result_list) == [dead]
        assert "550 5.1.1 No such mailbox" in response.content.decode()

    def test_retry_now_reports_what_it_did(self, admin_client):
        dead, sent = (Token.objects.get(account=AccountFactory()) for _ in range(2))
        Token.objects.filter(pk=dead.pk).update(mail_state=MailState.DEAD)
        Token.objects.filter(pk=sent.pk).update(mail_state=MailState.SENT)
        response = admin_client.post(
            reverse("admin:tokens_token_changelist"),
            {"action": "retry_mail_now", "_selected_action": [dead.pk, sent.pk]},
            follow=True,
        )
        page = response.content.decode()
        assert "1 token will be mailed on the next run." in page
        assert "1 skipped: not dead or retrying" in page
        dead.refresh_from_db()
        assert dead.mail_state == MailState.RETRYING
