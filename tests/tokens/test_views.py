"""The public pages: a GET never consumes, a POST does; passwords are chosen at sign-up, activation
and recovery; the request forms answer the same for every input; every outcome has a page."""

import datetime
import re

import pytest
from django.contrib.auth.hashers import check_password
from django.core import mail
from django.test import Client
from django.urls import reverse

from accounts.models import Account, AccountPassword, AccountStatus
from accounts.services import account_deprovision, account_suspend
from lifecycle.demo.factories import AccountFactory
from platform_events.audit.models import AuditEvent
from tests.support import (
    NEW_PASSWORD,
    PASSWORD,
    expire,
    in_threads,
    max_code_attempts,
    page_text,
    run_queued_tasks,
    wrong_code,
)
from tokens.links import landing_path, secret_to_text
from tokens.mailroom.drain import drain
from tokens.models import MailState, Token, TokenAction
from tokens.selectors import live_token
from tokens.services import (
    token_request_email_change,
    token_request_mail,
    token_resend_activation,
    token_send_password_recovery,
)
from tokens.views import DELETION_REASON, EMAIL_CHANGE_REASON

pytestmark = pytest.mark.django_db


def statements(queries) -> list[str]:
    """The SQL a request ran, without its values (and savepoint names, numbered per transaction)."""
    return [re.sub(r"'[^']*'|\d+", "?", query["sql"]) for query in queries.captured_queries]


def password_of(account) -> str | None:
    stored = AccountPassword.objects.filter(account=account).first()
    return stored.password if stored else None


def recovery_token(account) -> Token:
    token_send_password_recovery(account=account, actor=None)
    return live_token(account=account, action=TokenAction.PASSWORD_RECOVERY)


class TestActivationLink:
    def test_get_asks_for_a_password_when_the_account_has_none_and_consumes_nothing(self, client):
        account = AccountFactory(login="jane", email="jane.doe@example.com")
        response = client.get(landing_path(live_token(account=account)))
        assert response.status_code == 200
        text = response.content.decode()
        assert "Choose a password to finish." in text
        assert "Account <strong>jane</strong> (j•••e@example.com)" in text
        account.refresh_from_db()
        assert account.status == AccountStatus.PROVISIONED

    def test_post_with_a_password_activates_and_stores_only_its_argon2_hash(self, client):
        account = AccountFactory(login="jane")
        response = client.post(landing_path(live_token(account=account)), NEW_PASSWORD)
        assert response.status_code == 200
        assert "Your account is active" in response.content.decode()
        account.refresh_from_db()
        assert account.status == AccountStatus.ACTIVE
        stored = password_of(account)
        assert stored.startswith("argon2$argon2id$")
        assert check_password(PASSWORD, stored)

    def test_post_without_a_password_is_a_form_error_and_activates_nothing(self, client):
        account = AccountFactory()
        response = client.post(landing_path(live_token(account=account)), {})
        assert response.status_code == 400
        account.refresh_from_db()
        assert (account.status, password_of(account)) == (AccountStatus.PROVISIONED, None)

    def test_a_password_the_validators_refuse_activates_nothing(self, client):
        account = AccountFactory(login="jane")
        response = client.post(landing_path(live_token(account=account)), {"password": "123", "password_again": "123"})
        assert response.status_code == 400
        assert "This password is too short" in response.content.decode()
        assert live_token(account=account).consumed_at is None

    def test_an_account_that_chose_its_password_at_sign_up_is_asked_only_to_confirm(self, client):
        account = AccountFactory()
        AccountPassword.objects.create(account=account, password="argon2$argon2id$x$y")
        url = landing_path(live_token(account=account))
        assert "Choose a password" not in client.get(url).content.decode()
        assert "Your account is active" in client.post(url).content.decode()

    def test_a_second_post_of_ones_own_link_says_the_account_is_active(self, client, settings):
        settings.SIGN_IN_URL = "https://app.example.com/sign-in"
        account = AccountFactory(login="jane")
        url = landing_path(live_token(account=account))
        client.post(url, NEW_PASSWORD)
        response = client.post(url, NEW_PASSWORD)
        assert response.status_code == 409
        text = response.content.decode()
        assert "Already used" in text and "Your account is active: sign in with your login, jane." in text
        assert 'href="https://app.example.com/sign-in">Sign in' in text

    @pytest.mark.parametrize(
        ("spoil", "status", "heading"),
        [
            (lambda account, token: expire(token), 410, "Expired"),
            (
                lambda account, token: token_resend_activation(account=account, actor=None),
                410,
                "Replaced by a newer e-mail",
            ),
            (lambda account, token: account_suspend(account=account, actor=None), 403, "Account suspended"),
        ],
        ids=["expired", "replaced", "suspended"],
    )
    def test_each_refusal_has_its_page_and_a_next_step(self, client, spoil, status, heading):
        account = AccountFactory()
        token = live_token(account=account)
        url = landing_path(token)
        spoil(account, token)
        response = client.post(url, NEW_PASSWORD)
        assert response.status_code == status
        assert heading in response.content.decode()
        assert password_of(account) is None
        if status == 410:
            assert f'href="{reverse("resend")}"' in response.content.decode()

    @pytest.mark.parametrize("secret", ["nonsense", "A" * 43, "x" * 200])
    def test_an_unknown_link_has_its_page(self, client, secret):
        response = client.post(reverse("activate-link", args=[secret]))
        assert response.status_code == 404
        assert "not valid" in response.content.decode()

    @pytest.mark.parametrize("method", ["get", "post"])
    def test_a_deprovisioned_accounts_link_is_answered_as_one_nobody_was_sent(self, client, method):
        """The link's page does not tell that the account exists: the unknown link's 404, nothing consumed."""
        account = AccountFactory(login="jane")
        token = live_token(account=account)
        account_deprovision(account=account, actor=None)
        response = getattr(client, method)(landing_path(token), NEW_PASSWORD if method == "post" else None)
        unknown = client.post(reverse("activate-link", args=["A" * 43]))
        assert (response.status_code, page_text(response)) == (unknown.status_code, page_text(unknown))
        token.refresh_from_db()
        assert token.consumed_at is None
        account.refresh_from_db()
        assert account.status == AccountStatus.DEPROVISIONED

    def test_a_recovery_link_does_not_activate(self, client):
        recovery = recovery_token(AccountFactory(active=True))
        response = client.post(reverse("activate-link", args=[secret_to_text(recovery.secret)]), NEW_PASSWORD)
        assert response.status_code == 404
        recovery.refresh_from_db()
        assert recovery.consumed_at is None

    def test_the_claimed_address_page(self, client):
        squatter = AccountFactory(email="owner@example.com")
        AccountFactory(email="owner@example.com", active=True)
        response = client.post(landing_path(live_token(account=squatter)), NEW_PASSWORD)
        assert response.status_code == 409
        assert "already been activated with this e-mail address" in response.content.decode()
        assert password_of(squatter) is None

    def test_post_needs_the_csrf_token(self):
        account = AccountFactory()
        response = Client(enforce_csrf_checks=True).post(landing_path(live_token(account=account)), NEW_PASSWORD)
        assert response.status_code == 403
        account.refresh_from_db()
        assert account.status == AccountStatus.PROVISIONED

    def test_the_activation_is_audited_as_the_account_from_the_clients_address(self, client):
        account = AccountFactory(login="jane")
        client.post(
            landing_path(live_token(account=account)), NEW_PASSWORD, REMOTE_ADDR="203.0.113.9", HTTP_USER_AGENT="UA/1"
        )
        events = AuditEvent.objects.filter(action__in=["account.activated", "account.password_set"])
        assert {
            (e.action, e.actor_type, e.actor_id, e.actor_display, str(e.actor_ip), e.actor_user_agent) for e in events
        } == {
            (action, "USER", f"account:{account.pk}", "jane", "203.0.113.9", "UA/1")
            for action in ("account.activated", "account.password_set")
        }
        assert len({e.request_id for e in events}) == 1
        assert PASSWORD not in str([(e.diff_before, e.diff_after) for e in AuditEvent.objects.all()])
        assert "argon2" not in str([(e.diff_before, e.diff_after) for e in AuditEvent.objects.all()])


class TestWithoutASignInPage:
    """SIGN_IN_URL unset (the default): the pages lead to this site's own sign-in, the account page's,
    never into the back-office, whose login counts an end user's attempts toward the staff lock-out."""

    def sign_in_link(self, text: str) -> bool:
        return f'href="{reverse("account-sign-in")}">Sign in</a>' in text and "/admin" not in text

    def test_activation_leads_to_the_account_pages_sign_in(self, client, settings):
        settings.SIGN_IN_URL = ""
        account = AccountFactory(login="jane")
        response = client.post(landing_path(live_token(account=account)), NEW_PASSWORD)
        text = response.content.decode()
        assert "Sign in with your login, jane, and your password." in text
        assert self.sign_in_link(text)
        assert f'href="{settings.PUBLIC_BASE_URL}"' not in text and 'href="/"' not in text

    def test_a_password_change_leads_to_the_account_pages_sign_in(self, client, settings):
        settings.SIGN_IN_URL = ""
        account = AccountFactory(active=True, login="jane")
        response = client.post(landing_path(recovery_token(account)), NEW_PASSWORD)
        text = response.content.decode()
        assert "Sign in with your login, jane, and the new password." in text
        assert self.sign_in_link(text)

    def test_a_used_link_says_the_account_is_active_and_leads_to_sign_in(self, client, settings):
        settings.SIGN_IN_URL = ""
        account = AccountFactory(login="jane")
        url = landing_path(live_token(account=account))
        client.post(url, NEW_PASSWORD)
        text = client.post(url, NEW_PASSWORD).content.decode()
        assert "Your account is active: sign in with your login, jane." in text
        assert self.sign_in_link(text)

    @pytest.mark.parametrize("sign_in_url", ["", "https://app.example.com/sign-in"])
    def test_a_used_recovery_link_offers_another_recovery_e_mail(self, client, settings, sign_in_url):
        settings.SIGN_IN_URL = sign_in_url
        url = landing_path(recovery_token(AccountFactory(active=True)))
        client.post(url, NEW_PASSWORD)
        response = client.post(url, NEW_PASSWORD)
        assert response.status_code == 409
        assert f'href="{reverse("recover")}">Ask for a new e-mail' in response.content.decode()

    def test_no_public_page_links_into_the_back_office(self, client, settings):
        settings.SIGN_IN_URL = ""
        pages = ["sign-up", "activate-code", "resend", "recover", "recover-code"]
        for name in pages:
            response = client.get(reverse(name))
            assert "/admin" not in response.content.decode(), name


def code_form(identifier: str, code: str, **extra) -> dict:
    return {"identifier": identifier, "code": code} | extra


class TestActivationCode:
    def test_login_code_and_password_activate(self, client):
        account = AccountFactory(login="jane")
        code = live_token(account=account).code
        response = client.post(reverse("activate-code"), code_form("jane", code, **NEW_PASSWORD))
        assert "Your account is active" in response.content.decode()
        assert check_password(PASSWORD, password_of(account))

    def test_the_right_code_without_a_password_asks_for_one_and_consumes_nothing(self, client):
        account = AccountFactory(login="jane")
        code = live_token(account=account).code
        response = client.post(reverse("activate-code"), code_form("jane", code))
        assert response.status_code == 400
        assert "Choose a password: this account has none yet." in response.content.decode()
        assert live_token(account=account).consumed_at is None

    def test_anyone_typing_wrong_codes_for_a_login_blocks_the_code_never_the_emailed_link(self, client):
        """The attack: five wrong codes for someone's login, which must not kill their e-mailed link."""
        account = AccountFactory(login="jane")
        token = live_token(account=account)
        attacker = Client()
        for _ in range(max_code_attempts()):
            attacker.post(reverse("activate-code"), code_form("jane", wrong_code(token.code)))
        blocked = attacker.post(reverse("activate-code"), code_form("jane", token.code, **NEW_PASSWORD))
        assert blocked.status_code == 403
        assert "Code blocked" in blocked.content.decode()
        assert "The link in the same e-mail still does" in blocked.content.decode()
        response = client.post(landing_path(token), NEW_PASSWORD)
        assert response.status_code == 200
        assert "Your account is active" in response.content.decode()

    @pytest.mark.parametrize("code", ["", "1234", "123456", "abcde"])
    def test_a_malformed_code_is_refused_by_the_form_and_never_counts_as_a_guess(self, client, code):
        account = AccountFactory(login="jane")
        response = client.post(reverse("activate-code"), code_form("jane", code))
        assert response.status_code == 400
        assert response.context["form"].errors["code"]
        token = live_token(account=account)
        assert (token.failed_attempts, token.consumed_at) == (0, None)

    @pytest.mark.parametrize("field", ["identifier", "code"])
    def test_a_nul_byte_is_a_form_error_never_a_server_error(self, client, field):
        """A NUL reaching the database would be a DataError: the form refuses it."""
        account = AccountFactory(login="jane")
        data = code_form("jane", live_token(account=account).code, **NEW_PASSWORD) | {field: "ja\x00ne"}
        response = client.post(reverse("activate-code"), data)
        assert response.status_code == 400
        assert live_token(account=account).consumed_at is None


def accounts_in_every_state():
    """An identifier per kind: unknown, provisioned, active, suspended, deprovisioned (once active, or never)."""
    AccountFactory(login="waiting", email="waiting@example.com")
    AccountFactory(login="living", email="living@example.com", active=True)
    AccountFactory(login="frozen", email="frozen@example.com", suspended=True)
    AccountFactory(login="leaving", email="leaving@example.com", deprovisioned=True)
    AccountFactory(login="leftearly", email="leftearly@example.com", deprovisioned=True, was_activated=False)
    return ["nobody", "nobody@example.com", "waiting", "waiting@example.com", "living", "living@example.com",
            "frozen", "frozen@example.com", "leaving", "leaving@example.com", "leftearly",
            "leftearly@example.com"]  # fmt: skip


class TestNoOracle:
    """Every public form answers the same status and page for any identifier: answers such as 404 /
    400 "4 attempt(s) left" / 409 for unknown / provisioned / active logins would tell them apart."""

    @pytest.mark.parametrize(
        ("page", "data"),
        [
            ("activate-code", {"code": "00000"} | NEW_PASSWORD),
            ("recover-code", {"code": "00000"} | NEW_PASSWORD),
            ("recover", {}),
            ("resend", {}),
            ("delete-account", {}),
        ],
    )
    def test_every_identifier_gets_the_same_status_and_page(self, client, page, data):
        answers = {
            identifier: client.post(reverse(page), {"identifier": identifier} | data)
            for identifier in accounts_in_every_state()
        }
        pages = {(response.status_code, page_text(response, identifier)) for identifier, response in answers.items()}
        assert len(pages) == 1, {identifier: response.status_code for identifier, response in answers.items()}

    def test_a_known_and_an_unknown_address_cost_the_same_statements(self, client):
        """The recovery request does the same work for any input: heavy work (issuing a token) is queued."""
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        accounts_in_every_state()
        shapes = []
        for identifier in ["living@example.com", "nobody@example.com"]:
            with CaptureQueriesContext(connection) as queries:
                client.post(reverse("recover"), {"identifier": identifier})
            shapes.append(statements(queries))
        assert shapes[0] == shapes[1]

    def test_a_wrong_code_costs_the_same_statements_for_a_known_and_an_unknown_login(self, client):
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        accounts_in_every_state()
        shapes = []
        for identifier in ["waiting", "nobody"]:
            with CaptureQueriesContext(connection) as queries:
                client.post(reverse("activate-code"), code_form(identifier, "00000"))
            shapes.append(statements(queries))
        assert shapes[0] == shapes[1]

    def test_sign_up_answers_the_same_for_a_new_an_unclaimed_and_a_claimed_address(self, client):
        AccountFactory(email="squatted@example.com")
        AccountFactory(email="claimed@example.com", active=True)
        answers = [
            client.post(reverse("sign-up"), {"email": email, "login": f"new{number}"} | NEW_PASSWORD)
            for number, email in enumerate(["fresh@example.com", "squatted@example.com", "claimed@example.com"])
        ]
        assert {(response.status_code, page_text(response)) for response in answers} == {
            (answers[0].status_code, page_text(answers[0]))
        }
        assert answers[0].status_code == 200
        run_queued_tasks()
        # A claimed address gets no second account; the others do (unactivated sign-ups may share one).
        assert set(Account.objects.filter(login__startswith="new").values_list("login", flat=True)) == {"new0", "new1"}


class TestRestore:
    """A sign-up with the address a deprovisioned account keeps: answered like any other, and the address
    is mailed a link that restores the earlier account instead."""

    def test_a_sign_up_with_a_closed_accounts_address_mails_a_restore_link_that_reprovisions_it(self, client):
        closed = AccountFactory(login="jane", email="jane@example.com", deprovisioned=True)
        fresh = client.post(reverse("sign-up"), {"email": "fresh@example.com", "login": "fresh"} | NEW_PASSWORD)
        again = client.post(reverse("sign-up"), {"email": "JANE@example.com", "login": "jane2"} | NEW_PASSWORD)
        assert (again.status_code, page_text(again)) == (fresh.status_code, page_text(fresh))
        run_queued_tasks()
        assert not Account.objects.filter(login="jane2").exists()
        token = live_token(account=closed, action=TokenAction.RESTORE)
        assert token is not None

        page = client.get(landing_path(token))
        assert page.status_code == 200
        assert "Restore my account" in page.content.decode()
        closed.refresh_from_db()
        assert closed.status == AccountStatus.DEPROVISIONED  # a GET changes nothing

        done = client.post(landing_path(token))
        assert "Your account is restored" in done.content.decode()
        closed.refresh_from_db()
        assert closed.status == AccountStatus.PROVISIONED
        actor = AuditEvent.objects.get(action="account.reprovisioned", resource_id=str(closed.pk)).actor_id
        assert actor == f"account:{closed.pk}"  # the person, through the link
        assert live_token(account=closed) is not None  # the activation e-mail that follows

        used = client.post(landing_path(token))
        assert used.status_code == 409 and "Already used" in used.content.decode()

    def test_an_active_accounts_address_gets_no_restore_e_mail(self, client):
        """Not even for a closed sign-up beside it that never activated: that one holds nothing to restore."""
        early = AccountFactory(email="jane@example.com", deprovisioned=True, was_activated=False)
        AccountFactory(email="jane@example.com", active=True)
        client.post(reverse("sign-up"), {"email": "jane@example.com", "login": "jane2"} | NEW_PASSWORD)
        run_queued_tasks()
        assert not Token.objects.filter(action=TokenAction.RESTORE).exists()
        early.refresh_from_db()
        assert early.status == AccountStatus.DEPROVISIONED

    def test_a_closed_account_that_never_activated_gets_no_restore_e_mail_and_the_sign_up_is_made(self, client):
        early = AccountFactory(email="jane@example.com", deprovisioned=True, was_activated=False)
        client.post(reverse("sign-up"), {"email": "jane@example.com", "login": "jane2"} | NEW_PASSWORD)
        run_queued_tasks()
        assert Account.objects.filter(login="jane2", status=AccountStatus.PROVISIONED).exists()
        assert not Token.objects.filter(account=early, action=TokenAction.RESTORE).exists()

    def test_an_account_deprovisioned_while_suspended_gets_no_restore_e_mail(self, client):
        """Staff suspended it, then closed it: the person cannot lift the suspension by signing up."""
        closed = AccountFactory(email="jane@example.com", suspended=True)
        account_deprovision(account=closed, actor=None)
        client.post(reverse("sign-up"), {"email": "jane@example.com", "login": "jane2"} | NEW_PASSWORD)
        run_queued_tasks()
        assert not Token.objects.filter(account=closed, action=TokenAction.RESTORE).exists()
        assert not Account.objects.filter(login="jane2").exists()

    def test_an_activation_or_recovery_page_never_takes_a_restore_link(self, client):
        closed = AccountFactory(deprovisioned=True)
        token = token_request_mail(identifier=closed.email, action=TokenAction.RESTORE, actor=None)
        secret = secret_to_text(token.secret)
        for page in ("activate-link", "recover-link"):
            assert client.post(reverse(page, args=[secret]), NEW_PASSWORD).status_code == 404
        closed.refresh_from_db()
        assert closed.status == AccountStatus.DEPROVISIONED


class TestSignUp:
    def test_sign_up_makes_a_provisioned_account_with_its_password_and_an_activation_e_mail(self, client):
        data = {"email": "jane@example.com", "login": "jane"} | NEW_PASSWORD
        response = client.post(reverse("sign-up"), data, REMOTE_ADDR="198.51.100.4")
        assert response.status_code == 200
        assert "Check your e-mail" in response.content.decode()
        assert run_queued_tasks() == 1
        account = Account.objects.get(login="jane")
        assert (account.email, account.status) == ("jane@example.com", AccountStatus.PROVISIONED)
        assert check_password(PASSWORD, password_of(account))
        assert live_token(account=account).mail_state == MailState.QUEUED
        created = AuditEvent.objects.get(action="account.created", resource_id=str(account.pk))
        assert (created.actor_id, str(created.actor_ip)) == (f"account:{account.pk}", "198.51.100.4")

    def test_a_password_of_ten_spaces_is_refused_and_nothing_is_queued(self, client):
        spaces = {"password": " " * 10, "password_again": " " * 10}
        response = client.post(reverse("sign-up"), {"email": "x@example.com", "login": "xavier"} | spaces)
        assert response.status_code == 400
        assert "fewer than 8 visible characters" in response.content.decode()
        assert run_queued_tasks() == 0

    def test_a_taken_login_is_said_logins_are_public(self, client):
        AccountFactory(login="Jane")
        response = client.post(reverse("sign-up"), {"email": "x@example.com", "login": "jane"} | NEW_PASSWORD)
        assert response.status_code == 400
        assert "Login is taken." in response.content.decode()
        assert run_queued_tasks() == 0

    @pytest.mark.parametrize(
        ("field", "value", "message"),
        [
            ("login", "jane@home", "Login must not contain @"),
            ("login", "-jane", "Login may only hold ASCII letters"),
            ("email", "jané@example.com", "Enter a valid email address."),
            ("email", "jane@localhost", "E-mail is not a valid address (name@example.com)."),
            ("password_again", "something else 42", "The two passwords differ."),
            ("password", "password", "This password is too common."),
        ],
    )
    def test_bad_input_is_a_form_error_and_makes_nothing(self, client, field, value, message):
        data = {"email": "jane@example.com", "login": "jane"} | NEW_PASSWORD | {field: value}
        if field == "password":
            data["password_again"] = value
        response = client.post(reverse("sign-up"), data)
        assert response.status_code == 400
        assert message in response.content.decode()
        assert run_queued_tasks() == 0
        assert not Account.objects.exists()

    def test_sign_up_can_be_turned_off(self, client, settings):
        settings.PUBLIC_SIGN_UP = False
        response = client.post(reverse("sign-up"), {"email": "jane@example.com", "login": "jane"} | NEW_PASSWORD)
        assert response.status_code == 404
        assert "Sign-up is closed" in response.content.decode()
        assert run_queued_tasks() == 0


class TestRecovery:
    def test_a_request_queues_the_work_and_an_active_account_gets_a_token(self, client):
        account = AccountFactory(active=True, email="jane@example.com")
        response = client.post(reverse("recover"), {"identifier": "jane@example.com"})
        assert response.status_code == 200
        assert not Token.objects.filter(action=TokenAction.PASSWORD_RECOVERY).exists()  # not in the request
        run_queued_tasks()
        assert live_token(account=account, action=TokenAction.PASSWORD_RECOVERY) is not None

    def test_a_deprovisioned_account_gets_no_recovery_e_mail(self, client):
        account = AccountFactory(deprovisioned=True, email="jane@example.com")
        response = client.post(reverse("recover"), {"identifier": "jane@example.com"})
        assert response.status_code == 200
        run_queued_tasks()
        assert not Token.objects.filter(account=account, action=TokenAction.PASSWORD_RECOVERY).exists()

    def test_asking_again_re_sends_the_live_link_instead_of_cancelling_it(self, client):
        """The attack: POSTs to /recover/ that would each cancel the person's previous link (410)."""
        account = AccountFactory(active=True, login="jane")
        token = recovery_token(account)
        Token.objects.filter(pk=token.pk).update(mail_state=MailState.SENT)
        client.post(reverse("recover"), {"identifier": "jane"})
        run_queued_tasks()
        token.refresh_from_db()
        assert (token.superseded_at, token.mail_state) == (None, MailState.QUEUED)  # mailed again, still valid
        response = client.post(landing_path(token), NEW_PASSWORD)
        assert "Your password is changed" in response.content.decode()

    def test_the_link_sets_a_new_password_and_ends_the_token(self, client):
        account = AccountFactory(active=True, login="jane")
        token = recovery_token(account)
        url = landing_path(token)
        get = client.get(url)
        assert "Choose a new password" in get.content.decode()
        token.refresh_from_db()
        assert token.consumed_at is None
        response = client.post(url, NEW_PASSWORD)
        assert "Your password is changed" in response.content.decode()
        assert check_password(PASSWORD, password_of(account))
        token.refresh_from_db()
        assert token.consumed_at is not None
        assert client.post(url, NEW_PASSWORD).status_code == 409

    def test_the_code_sets_a_new_password(self, client):
        account = AccountFactory(active=True, login="jane")
        token = recovery_token(account)
        response = client.post(reverse("recover-code"), code_form("jane", token.code, **NEW_PASSWORD))
        assert "Your password is changed" in response.content.decode()
        assert check_password(PASSWORD, password_of(account))

    def test_a_refused_password_leaves_the_code_usable(self, client):
        account = AccountFactory(active=True, login="jane")
        token = recovery_token(account)
        response = client.post(
            reverse("recover-code"), code_form("jane", token.code, password="jane1", password_again="jane1")
        )
        assert response.status_code == 400
        assert "This password is too short" in response.content.decode()
        token.refresh_from_db()
        assert (token.consumed_at, token.failed_attempts, password_of(account)) == (None, 0, None)

    def test_a_nul_byte_is_a_form_error_never_a_server_error(self, client):
        assert client.post(reverse("recover"), {"identifier": "ja\x00ne@example.com"}).status_code == 400

    def test_an_empty_form_is_refused(self, client):
        assert client.post(reverse("recover"), {"identifier": "  "}).status_code == 400


class TestResend:
    def test_a_live_activation_link_is_re_sent_not_replaced(self, client):
        account = AccountFactory(login="jane")
        token = live_token(account=account)
        Token.objects.filter(pk=token.pk).update(mail_state=MailState.SENT)
        client.post(reverse("resend"), {"identifier": "jane"})
        run_queued_tasks()
        assert live_token(account=account).pk == token.pk
        assert live_token(account=account).mail_state == MailState.QUEUED

    def test_an_expired_one_is_replaced_by_a_new_token(self, client):
        account = AccountFactory(login="jane")
        old = live_token(account=account)
        expire(old)
        client.post(reverse("resend"), {"identifier": "jane"})
        run_queued_tasks()
        assert live_token(account=account).pk != old.pk

    def test_after_a_blocked_code_asking_again_mails_a_new_link_and_code_that_activate(self, client):
        """The path a person takes: wrong codes until the code is blocked, "Ask for a new e-mail", then the
        new e-mail's code activates; the blocked e-mail is replaced, never mailed again."""
        client.post(reverse("sign-up"), {"email": "jane.doe@example.com", "login": "jane"} | NEW_PASSWORD)
        first_link, first_code = delivered_link_and_code()
        for _ in range(max_code_attempts()):
            client.post(reverse("activate-code"), code_form("jane", wrong_code(first_code)))
        blocked = client.post(reverse("activate-code"), code_form("jane", first_code))
        assert blocked.status_code == 403 and "Code blocked" in blocked.content.decode()
        ask_again_url = re.search(r'href="([^"]*)">Ask for a new e-mail', blocked.content.decode()).group(1)

        asked = client.post(ask_again_url, {"identifier": "jane"})
        assert "Check your e-mail" in asked.content.decode()
        link, code = delivered_link_and_code()
        assert link != first_link  # a new token (its code is new too, though it may repeat by chance)

        assert client.post(first_link).status_code == 410  # the blocked e-mail's link is replaced
        response = client.post(reverse("activate-code"), code_form("jane", code))
        assert "Your account is active" in response.content.decode()
        assert Account.objects.get(login="jane").status == AccountStatus.ACTIVE


def delivered_link_and_code() -> tuple[str, str]:
    """Run the queued public requests and the mailroom; the link (as a path) and the code of the one new
    e-mail."""
    before = len(mail.outbox)
    run_queued_tasks()
    drain()
    assert len(mail.outbox) == before + 1
    body = mail.outbox[-1].body
    link = re.search(r"https?://[^/\s]+(/activate/[A-Za-z0-9_-]{43})", body).group(1)
    code = re.search(r"enter this code [^:]*: (\d{5})", body).group(1)
    return link, code


class TestLimits:
    def test_mailbox_bombing_is_stopped_by_the_per_identifier_limit(self, client):
        """The attack: 50 anonymous POSTs to /recover/ for one person; three pass, the rest are 429."""
        AccountFactory(active=True, login="jane")
        statuses = [client.post(reverse("recover"), {"identifier": "jane"}).status_code for _ in range(50)]
        assert statuses == [200] * 3 + [429] * 47
        run_queued_tasks()
        assert Token.objects.filter(action=TokenAction.PASSWORD_RECOVERY).count() == 1  # re-sent, never replaced

    def test_the_429_page_says_when_to_try_again(self, client):
        for _ in range(3):
            client.post(reverse("resend"), {"identifier": "nobody"})
        response = client.post(reverse("resend"), {"identifier": "nobody"})
        assert response.status_code == 429
        assert 0 < int(response["Retry-After"]) <= 3600
        assert "Too many attempts" in response.content.decode()
        assert "minute" in response.content.decode()

    def test_one_client_is_limited_across_identifiers(self, client):
        statuses = {
            client.post(reverse("recover"), {"identifier": f"person{n}"}, REMOTE_ADDR="192.0.2.1").status_code
            for n in range(31)
        }
        assert 429 in statuses
        assert client.post(reverse("recover"), {"identifier": "other"}, REMOTE_ADDR="192.0.2.2").status_code == 200

    @pytest.mark.parametrize(
        ("kind", "page", "form"),
        [
            ("sign-up", "sign-up", lambda n: {"email": f"person{n}@example.com", "login": f"person{n}"} | NEW_PASSWORD),
            ("mail", "recover", lambda n: {"identifier": f"person{n}"}),
            ("mail", "resend", lambda n: {"identifier": f"person{n}"}),
            ("code", "activate-code", lambda n: code_form(f"person{n}", "00000")),
            ("code", "recover-code", lambda n: code_form(f"person{n}", "00000", **NEW_PASSWORD)),
        ],
    )
    def test_an_ipv6_client_is_its_slash_64(self, client, settings, kind, page, form):
        """One host holds a whole /64: its addresses share one count, another /64 has its own."""
        settings.PUBLIC_LIMITS_PER_HOUR = {**settings.PUBLIC_LIMITS_PER_HOUR, f"{kind}-per-client": 3}
        statuses = [
            client.post(reverse(page), form(n), REMOTE_ADDR=f"2001:db8:1:2:{n:x}::{n + 1:x}").status_code
            for n in range(4)
        ]
        assert statuses[:3] != [429] * 3 and statuses[3] == 429
        assert client.post(reverse(page), form(9), REMOTE_ADDR="2001:db8:1:3::1").status_code != 429

    def test_code_guesses_are_limited_per_identifier_whoever_guesses(self, client):
        AccountFactory(login="jane")
        statuses = [
            client.post(reverse("activate-code"), code_form("jane", "00000"), REMOTE_ADDR=f"192.0.2.{n}").status_code
            for n in range(1, 12)
        ]
        assert statuses[-1] == 429


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("known", [True, False])
def test_concurrent_recovery_requests_all_get_the_same_answer(known):
    """The attack: 8 concurrent POSTs for a real account, which a unique violation on the live-token
    index would answer 500 in most (never for an unknown address: an oracle). All answer alike, and
    the queued work leaves one live token."""
    AccountFactory(active=True, email="jane@example.com")
    identifier = "jane@example.com" if known else "nobody@example.com"

    def ask():
        return Client().post(reverse("recover"), {"identifier": identifier}, REMOTE_ADDR="192.0.2.7").status_code

    threads, results = in_threads(*[ask] * 8)
    for thread in threads:
        thread.join()
    assert sorted(results) == [(True, 200)] * 3 + [(True, 429)] * 5
    run_queued_tasks()
    live = Token.objects.filter(action=TokenAction.PASSWORD_RECOVERY, superseded_at__isnull=True)
    assert live.count() == int(known)


class TestDeletion:
    """A person deletes their own account: the page mails a link to an active account's address; the
    link's page says what happens and when; its button deprovisions the account, and the restore
    e-mail follows."""

    def test_the_link_deprovisions_the_account_as_the_person_and_the_restore_e_mail_follows(self, client, settings):
        settings.ERASURE_DELAY_DAYS = 30
        account = AccountFactory(login="jane", email="jane@example.com", active=True)
        asked = client.post(reverse("delete-account"), {"identifier": "JANE@example.com"})
        assert asked.status_code == 200 and "Check your e-mail" in asked.content.decode()
        run_queued_tasks()
        token = live_token(account=account, action=TokenAction.DELETION)
        assert token is not None
        drain()
        assert mail.outbox[-1].subject == "Delete your account jane?"
        assert landing_path(token) in mail.outbox[-1].body and "30 days later" in mail.outbox[-1].body

        page = client.get(landing_path(token))
        text = page.content.decode()
        assert page.status_code == 200 and "Delete my account" in text and "30 days later it is erased" in text
        assert Account.objects.get(pk=account.pk).status == AccountStatus.ACTIVE  # a GET changes nothing

        done = client.post(landing_path(token))
        account.refresh_from_db()
        assert account.status == AccountStatus.DEPROVISIONED
        erased_on = f"{account.deprovisioned_at + datetime.timedelta(days=30):%Y-%m-%d}"
        assert "Your account is closed" in done.content.decode() and erased_on in done.content.decode()
        row = AuditEvent.objects.get(action="account.deprovisioned", resource_id=str(account.pk))
        assert (row.actor_id, row.reason) == (f"account:{account.pk}", DELETION_REASON)
        restore = live_token(account=account, action=TokenAction.RESTORE)
        assert restore is not None
        drain()
        message = mail.outbox[-1]
        assert message.subject == f"Your account jane is closed and is erased on {erased_on}"
        assert "was closed at your request" in message.body and landing_path(restore) in message.body

        used = client.post(landing_path(token))
        assert used.status_code == 404  # the account is nobody's on these pages now

    @pytest.mark.parametrize("kind", ["waiting", "frozen", "leaving", "nobody"])
    def test_only_an_active_account_is_mailed_a_link(self, client, kind):
        accounts_in_every_state()
        client.post(reverse("delete-account"), {"identifier": kind})
        run_queued_tasks()
        assert not Token.objects.filter(action=TokenAction.DELETION).exists()

    def test_a_deletion_link_opens_no_other_page_and_no_other_link_opens_it(self, client):
        account = AccountFactory(active=True)
        deletion = token_request_mail(identifier=account.login, action=TokenAction.DELETION, actor=None)
        secret = secret_to_text(deletion.secret)
        for other in ("activate-link", "recover-link", "restore-link"):
            assert client.post(reverse(other, args=[secret])).status_code == 404, other
        recovery = token_send_password_recovery(account=account, actor=None)
        assert client.post(reverse("delete-link", args=[secret_to_text(recovery.secret)])).status_code == 404
        assert Account.objects.get(pk=account.pk).status == AccountStatus.ACTIVE


class TestEmailChange:
    """The links of a change of address (tokens/views.py, email_change_link and email_undo_link)."""

    def change(self, account, email="jane.new@example.net"):
        return token_request_email_change(account=account, email=email, actor=None)

    def test_the_link_shows_which_address_becomes_whose_and_a_get_changes_nothing(self, client):
        account = AccountFactory(active=True, login="jane", email="jane@example.com")
        response = client.get(landing_path(self.change(account)))
        text = page_text(response)
        assert "Make jane.new@example.net the address of the account jane?" in text
        account.refresh_from_db()
        assert account.email == "jane@example.com"

    def test_its_button_changes_the_address_as_the_person_and_the_old_address_is_told(self, client, smtp_server):
        account = AccountFactory(active=True, login="jane", email="jane@example.com")
        response = client.post(landing_path(self.change(account)))
        assert response.status_code == 200 and "Your address is changed" in page_text(response)
        account.refresh_from_db()
        assert account.email == "jane.new@example.net"
        audit = AuditEvent.objects.get(resource_id=str(account.pk), diff_after__email="jane.new@example.net")
        assert (audit.actor_id, audit.reason) == (f"account:{account.pk}", EMAIL_CHANGE_REASON)
        drain()
        (told,) = [m for m in smtp_server.messages if m["To"] == "jane@example.com"]
        assert told["Subject"] == "The address of your account jane was changed"
        body = told.get_body(("plain",)).get_content()
        assert "to jane.new@example.net" in body and "/email/undo/" in body

    def test_an_address_another_account_holds_is_refused_without_saying_whose(self, client):
        AccountFactory(active=True, login="someone", email="taken@example.net")
        account = AccountFactory(active=True, login="jane", email="jane@example.com")
        response = client.post(landing_path(self.change(account, "taken@example.net")))
        assert response.status_code == 409
        text = page_text(response)
        assert "E-mail address already in use" in text and "someone" not in text
        account.refresh_from_db()
        assert account.email == "jane@example.com"

    def test_the_undo_puts_the_old_address_back_and_leads_to_a_new_password(self, client):
        account = AccountFactory(active=True, login="jane", email="jane@example.com")
        client.post(landing_path(self.change(account)))
        undo = live_token(account=account, action=TokenAction.EMAIL_CHANGE_UNDO)
        assert "Put jane@example.com back?" in page_text(client.get(landing_path(undo)))
        response = client.post(landing_path(undo))
        assert "Your address is back" in page_text(response)
        assert f'href="{reverse("recover")}"' in response.content.decode()
        account.refresh_from_db()
        assert account.email == "jane@example.com"

    def test_a_used_link_or_another_actions_secret_finds_nothing_to_do(self, client):
        account = AccountFactory(active=True, login="jane", email="jane@example.com")
        token = self.change(account)
        client.post(landing_path(token))
        assert client.post(landing_path(token)).status_code == 409
        recovery = token_send_password_recovery(account=account, actor=None)
        assert client.get(f"/email/{secret_to_text(recovery.secret)}").status_code == 404
        assert client.get(f"/email/undo/{secret_to_text(token.secret)}").status_code == 404


def test_every_public_page_carries_the_organisations_brand(client, settings):
    settings.SITE_NAME = "Example Org"
    settings.SITE_ACCENT_COLOUR = "#7a1f5c"
    for name in ("sign-up", "recover", "account-sign-in"):
        page = client.get(reverse(name)).content.decode()
        assert "· Example Org</title>" in page and "<span>Example Org</span>" in page, name
        assert 'style="--accent: #7a1f5c"' in page and 'src="/static/lifecycle/logo.svg"' in page, name
