"""Tokens and mail runs in the admin: mail state, Retry mailing now, and never a token's secret or code."""

import pytest
from django.urls import reverse

from lifecycle.factories import AccountFactory
from tokens.links import secret_to_text
from tokens.models import MailState, Token
from tokens.selectors import live_token

pytestmark = pytest.mark.django_db


@pytest.fixture
def token(admin_client):
    account = AccountFactory()
    return live_token(account=account)


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


class TestMailStateInTheAdmin:
    def test_tokens_can_be_filtered_by_mail_state(self, admin_client):
        sent, dead = (live_token(account=AccountFactory()) for _ in range(2))
        Token.objects.filter(pk=sent.pk).update(mail_state=MailState.SENT)
        Token.objects.filter(pk=dead.pk).update(mail_state=MailState.DEAD, mail_error="550 5.1.1 No such mailbox")
        response = admin_client.get(reverse("admin:tokens_token_changelist") + "?mail_state__exact=dead")
        assert list(response.context["cl"].result_list) == [dead]
        assert "550 5.1.1 No such mailbox" in response.content.decode()

    def test_retry_now_reports_what_it_did(self, admin_client):
        dead, sent = (live_token(account=AccountFactory()) for _ in range(2))
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
