"""The landing pages of the e-mails: a GET never consumes, a POST does, every outcome has a page."""

import pytest
from django.test import Client
from django.urls import reverse

from accounts.models import AccountStatus
from accounts.services import account_suspend
from lifecycle.factories import AccountFactory
from tests.support import expire, in_threads, max_code_attempts, wrong_code
from tokens.links import landing_path, secret_to_text
from tokens.models import Token, TokenAction
from tokens.selectors import live_token
from tokens.services import token_request_password_recovery, token_resend_activation

pytestmark = pytest.mark.django_db


class TestActivationLink:
    def test_get_shows_a_confirm_button_and_consumes_nothing(self, client):
        account = AccountFactory()
        response = client.get(landing_path(live_token(account=account)))
        assert response.status_code == 200
        assert "Activate my account" in response.content.decode()
        account.refresh_from_db()
        assert account.status == AccountStatus.PROVISIONED

    def test_post_activates(self, client):
        account = AccountFactory(login="jane")
        response = client.post(landing_path(live_token(account=account)))
        assert response.status_code == 200
        assert "Your account is active" in response.content.decode()
        account.refresh_from_db()
        assert account.status == AccountStatus.ACTIVE

    def test_a_second_post_says_it_was_used(self, client):
        url = landing_path(live_token(account=AccountFactory()))
        client.post(url)
        response = client.post(url)
        assert response.status_code == 409
        assert "Already used" in response.content.decode()

    @pytest.mark.parametrize(
        ("spoil", "status", "heading"),
        [
            (
                lambda account, token: expire(token),
                410,
                "Expired",
            ),
            (
                lambda account, token: token_resend_activation(account=account, actor=None),
                410,
                "Replaced by a newer e-mail",
            ),
            (lambda account, token: account_suspend(account=account, actor=None), 403, "Account suspended"),
        ],
        ids=["expired", "replaced", "suspended"],
    )
    def test_each_refusal_has_its_page(self, client, spoil, status, heading):
        account = AccountFactory()
        token = live_token(account=account)
        url = landing_path(live_token(account=account))
        spoil(account, token)
        response = client.post(url)
        assert response.status_code == status
        assert heading in response.content.decode()

    @pytest.mark.parametrize("secret", ["nonsense", "A" * 43, "x" * 200])
    def test_an_unknown_link_has_its_page(self, client, secret):
        response = client.post(reverse("activate-link", args=[secret]))
        assert response.status_code == 404
        assert "not valid" in response.content.decode()

    def test_a_recovery_link_does_not_activate(self, client):
        account = AccountFactory(active=True)
        token_request_password_recovery(identifier=account.login, actor=None)
        recovery = live_token(account=account, action=TokenAction.PASSWORD_RECOVERY)
        response = client.post(reverse("activate-link", args=[secret_to_text(recovery.secret)]))
        assert response.status_code == 404
        recovery.refresh_from_db()
        assert recovery.consumed_at is None

    def test_the_claimed_address_page(self, client):
        squatter = AccountFactory(email="owner@example.com")
        AccountFactory(email="owner@example.com", active=True)
        response = client.post(landing_path(live_token(account=squatter)))
        assert response.status_code == 409
        assert "already been activated with this e-mail address" in response.content.decode()

    def test_post_needs_the_csrf_token(self):
        account = AccountFactory()
        response = Client(enforce_csrf_checks=True).post(landing_path(live_token(account=account)))
        assert response.status_code == 403
        account.refresh_from_db()
        assert account.status == AccountStatus.PROVISIONED


class TestActivationCode:
    def test_login_and_code_activate(self, client):
        account = AccountFactory(login="jane")
        code = live_token(account=account).code
        response = client.post(reverse("activate-code"), {"identifier": "jane", "code": code})
        assert "Your account is active" in response.content.decode()

    def test_a_wrong_code_says_how_many_attempts_are_left(self, client):
        account = AccountFactory(login="jane")
        wrong = wrong_code(live_token(account=account).code)
        response = client.post(reverse("activate-code"), {"identifier": "jane", "code": wrong})
        assert response.status_code == 400
        assert f"Wrong code: {max_code_attempts() - 1} attempt(s) left." in response.content.decode()

    def test_anyone_typing_wrong_codes_for_a_login_blocks_the_code_never_the_emailed_link(self, client):
        """Issue 10, the attack: five wrong codes for someone's login also killed their e-mailed link."""
        account = AccountFactory(login="jane")
        token = live_token(account=account)
        attacker = Client()
        for _ in range(max_code_attempts()):
            attacker.post(reverse("activate-code"), {"identifier": "jane", "code": wrong_code(token.code)})
        blocked = attacker.post(reverse("activate-code"), {"identifier": "jane", "code": token.code})
        assert blocked.status_code == 403
        assert "Code blocked" in blocked.content.decode()
        assert "The link in the same e-mail still does" in blocked.content.decode()
        response = client.post(landing_path(token))
        assert response.status_code == 200
        assert "Your account is active" in response.content.decode()

    @pytest.mark.parametrize("code", ["", "1234", "123456", "abcde"])
    def test_a_malformed_code_is_refused_by_the_form_and_never_counts_as_a_guess(self, client, code):
        account = AccountFactory(login="jane")
        response = client.post(reverse("activate-code"), {"identifier": "jane", "code": code})
        assert response.status_code == 400
        assert response.context["form"].errors["code"]
        token = live_token(account=account)
        assert (token.failed_attempts, token.consumed_at) == (0, None)

    def test_an_unknown_login_has_its_page(self, client):
        response = client.post(reverse("activate-code"), {"identifier": "nobody", "code": "12345"})
        assert response.status_code == 404

    @pytest.mark.parametrize("field", ["identifier", "code"])
    def test_a_nul_byte_is_a_form_error_never_a_server_error(self, client, field):
        """Issue 8, Low list: a NUL reaching the database was a DataError."""
        account = AccountFactory(login="jane")
        data = {"identifier": "jane", "code": live_token(account=account).code} | {field: "ja\x00ne"}
        response = client.post(reverse("activate-code"), data)
        assert response.status_code == 400
        assert live_token(account=account).consumed_at is None


class TestRecovery:
    @pytest.mark.parametrize("known", [True, False])
    def test_the_answer_is_the_same_whether_or_not_the_account_exists(self, client, known):
        AccountFactory(active=True, email="jane@example.com")
        identifier = "jane@example.com" if known else "nobody@example.com"
        response = client.post(reverse("recover"), {"identifier": identifier})
        assert response.status_code == 200
        assert "If an active account has this login or e-mail, we sent it a link." in response.content.decode()
        assert Token.objects.filter(action=TokenAction.PASSWORD_RECOVERY).count() == int(known)

    def test_the_recovery_link_confirms_on_post_only(self, client):
        account = AccountFactory(active=True)
        token_request_password_recovery(identifier=account.login, actor=None)
        url = landing_path(live_token(account=account, action=TokenAction.PASSWORD_RECOVERY))
        assert "Yes, this is my account" in client.get(url).content.decode()
        assert Token.objects.get(account=account, action=TokenAction.PASSWORD_RECOVERY).consumed_at is None
        assert "Recovery confirmed" in client.post(url).content.decode()
        assert Token.objects.get(account=account, action=TokenAction.PASSWORD_RECOVERY).consumed_at is not None

    def test_a_nul_byte_is_a_form_error_never_a_server_error(self, client):
        response = client.post(reverse("recover"), {"identifier": "ja\x00ne@example.com"})
        assert response.status_code == 400

    def test_an_empty_form_is_refused(self, client):
        assert client.post(reverse("recover"), {"identifier": "  "}).status_code == 400


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("known", [True, False])
def test_concurrent_recovery_requests_all_get_the_same_answer(known):
    """The attack: 8 concurrent POSTs for a real account answered 500 in most (a unique violation on
    the live-token index), never for an unknown address: an oracle. Each request now waits for the
    account's row lock and replaces the previous token."""
    AccountFactory(active=True, email="jane@example.com")
    identifier = "jane@example.com" if known else "nobody@example.com"

    def ask():
        return Client().post(reverse("recover"), {"identifier": identifier}).status_code

    threads, results = in_threads(*[ask] * 8)
    for thread in threads:
        thread.join()
    assert results == [(True, 200)] * 8
    live = Token.objects.filter(action=TokenAction.PASSWORD_RECOVERY, superseded_at__isnull=True)
    assert live.count() == int(known)
