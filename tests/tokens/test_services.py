"""Token services: consuming by secret and by code, burning, recovery, and races."""

import pytest

from accounts.errors import EmailAlreadyClaimed, InvalidEmail
from accounts.models import Account, AccountStatus
from accounts.services import account_suspend
from lifecycle.demo.factories import AccountFactory
from platform_events.audit.models import AuditEvent
from tests.support import connect_as_owner, expire, in_threads, max_code_attempts, wait_until_blocked, wrong_code
from tokens.errors import (
    AccountSuspended,
    AddressUnchanged,
    TokenAlreadyUsed,
    TokenBurnt,
    TokenExpired,
    TokenNotFound,
    TokenSuperseded,
    WrongAccountState,
    WrongCode,
)
from tokens.links import secret_from_text, secret_to_text
from tokens.mailroom.drain import drain
from tokens.models import Token, TokenAction
from tokens.selectors import live_token
from tokens.services import (
    token_activate_vouched,
    token_consume,
    token_consume_code,
    token_delete_by_password,
    token_request_email_change,
    token_request_mail,
    token_resend_activation,
    token_send_password_recovery,
)

pytestmark = pytest.mark.django_db


class TestConsumeBySecret:
    def test_the_link_text_of_a_secret_consumes_it(self):
        account = AccountFactory()
        text = secret_to_text(live_token(account=account).secret)
        assert len(text) == 43
        assert token_consume(secret=text, actor=None).account.status == AccountStatus.ACTIVE

    @pytest.mark.parametrize("text", ["", "short", "!" * 43, secret_to_text(bytes(32))])
    def test_a_link_that_is_not_a_token_is_refused(self, text):
        AccountFactory()
        with pytest.raises(TokenNotFound, match="tokens: this link is not valid"):
            token_consume(secret=text, actor=None)

    def test_a_used_link_is_refused(self):
        secret = bytes(live_token(account=AccountFactory()).secret)
        token_consume(secret=secret, actor=None)
        with pytest.raises(TokenAlreadyUsed, match="tokens: token .* has already been used"):
            token_consume(secret=secret, actor=None)

    def test_an_expired_link_is_refused_and_the_account_stays_provisioned(self):
        account = AccountFactory()
        token = live_token(account=account)
        expire(token)
        with pytest.raises(TokenExpired, match="tokens: token .* has expired"):
            token_consume(secret=bytes(token.secret), actor=None)
        account.refresh_from_db()
        assert account.status == AccountStatus.PROVISIONED

    def test_a_link_of_a_suspended_account_is_refused(self):
        account = AccountFactory()
        secret = bytes(live_token(account=account).secret)
        account_suspend(account=account, actor=None)
        with pytest.raises(AccountSuspended, match=f"tokens: account {account.pk} is suspended"):
            token_consume(secret=secret, actor=None)


def test_secret_text_round_trips():
    secret = bytes(range(32))
    assert secret_from_text(secret_to_text(secret)) == secret


class TestConsumeByCode:
    def test_login_and_code_activate(self):
        account = AccountFactory(login="Jane")
        token = token_consume_code(identifier="jane", code=live_token(account=account).code, actor=None)
        assert token.account.status == AccountStatus.ACTIVE

    def test_email_and_code_activate_the_right_one_of_several_sign_ups(self):
        squatter = AccountFactory(email="shared@example.com")
        owner = AccountFactory(email="shared@example.com")
        token = token_consume_code(identifier=" SHARED@example.com ", code=live_token(account=owner).code, actor=None)
        assert token.account == owner
        squatter.refresh_from_db()
        assert squatter.status == AccountStatus.PROVISIONED

    def test_a_wrong_code_says_how_many_attempts_are_left(self):
        account = AccountFactory(login="jane")
        wrong = wrong_code(live_token(account=account).code)
        with pytest.raises(
            WrongCode, match=f"tokens: wrong code; {max_code_attempts() - 1} attempt\\(s\\) left"
        ) as caught:
            token_consume_code(identifier="jane", code=wrong, actor=None)
        assert caught.value.attempts_left == max_code_attempts() - 1
        assert live_token(account=account).failed_attempts == 1

    def test_five_wrong_codes_block_the_code_even_when_right_afterwards_but_not_the_link(self):
        """Anyone who knows a login can type five wrong codes: they block the code, never the e-mailed
        link."""
        account = AccountFactory(login="jane")
        token = live_token(account=account)
        wrong = wrong_code(token.code)
        for _ in range(max_code_attempts() - 1):
            with pytest.raises(WrongCode, match="attempt"):
                token_consume_code(identifier="jane", code=wrong, actor=None)
        with pytest.raises(WrongCode, match="this code no longer works, use the link in the e-mail"):
            token_consume_code(identifier="jane", code=wrong, actor=None)
        with pytest.raises(TokenBurnt, match="tokens: the code of token .* no longer works .*; its link still does"):
            token_consume_code(identifier="jane", code=token.code, actor=None)
        account.refresh_from_db()
        assert account.status == AccountStatus.PROVISIONED
        assert live_token(account=account).failed_attempts == max_code_attempts()
        consumed = token_consume(secret=bytes(token.secret), actor=None)
        assert (consumed.account.status, consumed.consumed_with) == (AccountStatus.ACTIVE, "link")

    def test_a_guess_is_compared_with_the_newest_token_only(self):
        """A guess meets one code, the most recent e-mail's: compared with every sign-up's, with 20,000
        sign-ups on a victim's address the first random guess would activate one and claim the address."""
        older = [live_token(account=AccountFactory(email="victim@example.com")) for _ in range(5)]
        newest = live_token(account=AccountFactory(email="victim@example.com"))
        guess = next(token.code for token in older if token.code != newest.code)
        with pytest.raises(WrongCode, match=f"{max_code_attempts() - 1} attempt"):
            token_consume_code(identifier="victim@example.com", code=guess, actor=None)
        assert [t.failed_attempts for t in Token.objects.filter(pk__in=[t.pk for t in older])] == [0] * 5
        assert Token.objects.get(pk=newest.pk).failed_attempts == 1
        consumed = token_consume_code(identifier="victim@example.com", code=newest.code, actor=None)
        assert (consumed.pk, consumed.consumed_with) == (newest.pk, "code")

    @pytest.mark.django_db(transaction=True)
    def test_the_database_alone_says_how_many_wrong_codes_burn_a_token(self, sql):
        """Change tokens_max_code_attempts() (the owner's to change) and the services, the consume
        trigger and the audit follow."""
        with connect_as_owner(autocommit=True) as owner:
            (released,) = owner.execute("SELECT pg_get_functiondef('tokens_max_code_attempts'::regproc)").fetchone()
            owner.execute(
                "CREATE OR REPLACE FUNCTION tokens_max_code_attempts() RETURNS smallint LANGUAGE sql IMMUTABLE"
                " AS 'SELECT 2::smallint'"
            )
        try:
            account = AccountFactory(login="jane")
            token = live_token(account=account)
            with pytest.raises(WrongCode, match="1 attempt\\(s\\) left"):
                token_consume_code(identifier="jane", code=wrong_code(token.code), actor=None)
            with pytest.raises(WrongCode, match="this code no longer works"):
                token_consume_code(identifier="jane", code=wrong_code(token.code), actor=None)
            with pytest.raises(TokenBurnt):
                token_consume_code(identifier="jane", code=token.code, actor=None)
            assert sql(
                "SELECT count(*) FROM audit_events WHERE action = 'token.burnt' AND resource_id = %s", [str(token.pk)]
            ) == [(1,)]
        finally:
            with connect_as_owner(autocommit=True) as owner:
                owner.execute(released)

    @pytest.mark.parametrize("code", ["\uff11\uff12\uff13\uff14\uff15", "1234\u00e9"])
    def test_a_code_that_is_not_ascii_is_a_wrong_code_not_a_type_error(self, code):
        """Full-width digits never reach hmac.compare_digest as text, which it refuses when not ASCII."""
        account = AccountFactory(login="jane")
        with pytest.raises(WrongCode, match="attempt"):
            token_consume_code(identifier="jane", code=code, actor=None)
        assert live_token(account=account).consumed_at is None
        assert live_token(account=account).failed_attempts == 1

    def test_an_unknown_login_gets_a_clear_error(self):
        with pytest.raises(TokenNotFound, match="tokens: no code was sent to this login or e-mail"):
            token_consume_code(identifier="nobody", code="12345", actor=None)

    def test_a_used_code_says_so(self):
        account = AccountFactory(login="jane")
        code = live_token(account=account).code
        token_consume_code(identifier="jane", code=code, actor=None)
        with pytest.raises(TokenAlreadyUsed):
            token_consume_code(identifier="jane", code=code, actor=None)

    def test_an_expired_code_says_so_to_the_right_code_only(self):
        """A wrong code learns nothing of the token's state (no oracle); the right one is told why."""
        account = AccountFactory(login="jane")
        token = live_token(account=account)
        expire(token)
        with pytest.raises(TokenNotFound):
            token_consume_code(identifier="jane", code=wrong_code(token.code), actor=None)
        with pytest.raises(TokenExpired, match="has expired"):
            token_consume_code(identifier="jane", code=token.code, actor=None)


class TestIssuing:
    def test_resending_activation_supersedes_the_old_token(self):
        account = AccountFactory()
        old_secret = bytes(live_token(account=account).secret)
        new_token = token_resend_activation(account=account, actor=None)
        assert new_token.action == TokenAction.ACTIVATION
        with pytest.raises(TokenSuperseded, match="tokens: token .* was replaced by a newer one"):
            token_consume(secret=old_secret, actor=None)
        assert token_consume(secret=bytes(new_token.secret), actor=None).account.status == AccountStatus.ACTIVE

    def test_resending_activation_to_an_active_account_is_refused_with_its_state(self):
        account = AccountFactory(active=True)
        with pytest.raises(WrongAccountState, match="activation e-mails go to provisioned accounts only") as caught:
            token_resend_activation(account=account, actor=None)
        refusal = caught.value
        assert (refusal.code, refusal.account_id, refusal.state, refusal.reason) == (
            "wrong-account-state",
            account.pk,
            AccountStatus.ACTIVE,
            "active, not provisioned",
        )
        assert Token.objects.filter(account=account).count() == 1  # only the consumed activation token

    def test_recovery_goes_to_active_accounts_only(self):
        account = AccountFactory()
        with pytest.raises(WrongAccountState, match="password recovery e-mails go to active accounts only"):
            token_send_password_recovery(account=account, actor=None)
        active = AccountFactory(active=True)
        assert token_send_password_recovery(account=active, actor=None).action == TokenAction.PASSWORD_RECOVERY


class TestPasswordRecovery:
    def test_an_active_account_gets_a_recovery_token(self):
        account = AccountFactory(active=True, email="jane@example.com")
        token_request_mail(identifier="JANE@example.com", action=TokenAction.PASSWORD_RECOVERY, actor=None)
        token = live_token(account=account, action=TokenAction.PASSWORD_RECOVERY)
        assert token_consume(secret=bytes(token.secret), actor=None).account.status == AccountStatus.ACTIVE

    @pytest.mark.parametrize("traits", [{}, {"suspended": True}])
    def test_an_inactive_or_unknown_account_gets_nothing_and_nothing_is_written(self, traits, sql):
        AccountFactory(email="jane@example.com", **traits)
        trail = sql("SELECT count(*) FROM audit_events")
        token_request_mail(identifier="jane@example.com", action=TokenAction.PASSWORD_RECOVERY, actor=None)
        token_request_mail(identifier="nobody@example.com", action=TokenAction.PASSWORD_RECOVERY, actor=None)
        assert not Token.objects.filter(action=TokenAction.PASSWORD_RECOVERY).exists()
        assert sql("SELECT count(*) FROM audit_events") == trail

    @pytest.mark.django_db(transaction=True)
    def test_an_address_finds_the_account_of_that_address_not_a_login_spelled_like_it(self):
        """The attack: an account whose login is another person's address would take that person's
        recovery e-mail. Logins cannot hold @ (BAD_LOGINS); a row stored before that rule (written here
        by the owner, who alone can lift it) is still never found by an address."""
        victim = AccountFactory(active=True, email="victim@example.com", login="victim")
        with connect_as_owner() as owner:
            owner.execute("ALTER TABLE accounts DISABLE TRIGGER before_account_validate")
            owner.execute(
                "INSERT INTO accounts (email, login, status)"
                " VALUES ('attacker@example.net', 'victim@example.com', 'active')"
            )
            owner.execute("ALTER TABLE accounts ENABLE TRIGGER before_account_validate")
        token_request_mail(identifier="victim@example.com", action=TokenAction.PASSWORD_RECOVERY, actor=None)
        (token,) = Token.objects.filter(action=TokenAction.PASSWORD_RECOVERY)
        assert token.account_id == victim.pk

    def test_a_recovery_token_of_a_since_suspended_account_is_refused(self):
        account = AccountFactory(active=True)
        token_request_mail(identifier=account.login, action=TokenAction.PASSWORD_RECOVERY, actor=None)
        token = live_token(account=account, action=TokenAction.PASSWORD_RECOVERY)
        account_suspend(account=account, actor=None)
        with pytest.raises(AccountSuspended):
            token_consume(secret=bytes(token.secret), actor=None)

    def test_an_activation_token_of_an_active_account_is_refused(self, sql):
        account = AccountFactory(active=True)
        token_id = sql("INSERT INTO tokens (account, action) VALUES (%s, 'activation') RETURNING id", [account.pk])[0][
            0
        ]
        with pytest.raises(WrongAccountState, match=f"tokens: account {account.pk} is already active"):
            token_consume(secret=bytes(Token.objects.get(pk=token_id).secret), actor=None)


@pytest.mark.parametrize(
    ("action", "traits"), [(TokenAction.ACTIVATION, {}), (TokenAction.PASSWORD_RECOVERY, {"active": True})]
)
def test_asking_again_after_a_blocked_code_issues_a_new_token_and_supersedes_the_old(action, traits):
    """A code blocked by wrong codes is never mailed again: the person gets a new link and a new code."""
    account = AccountFactory(login="jane", **traits)
    if action == TokenAction.PASSWORD_RECOVERY:
        token_send_password_recovery(account=account, actor=None)
    old = live_token(account=account, action=action)
    Token.objects.filter(pk=old.pk).update(failed_attempts=max_code_attempts())
    new = token_request_mail(identifier="jane", action=action, actor=None)
    old.refresh_from_db()
    assert new.pk != old.pk and bytes(new.secret) != bytes(old.secret)
    assert old.superseded_at is not None
    assert token_consume_code(identifier="jane", code=new.code, action=action, actor=None).consumed_at is not None


@pytest.mark.django_db(transaction=True)
class TestRaces:
    def test_two_concurrent_consumptions_of_one_token_exactly_one_succeeds(self, psql):
        account = AccountFactory()
        secret = bytes(live_token(account=account).secret)
        # A third session holds the row so that both consumers are waiting when it lets go.
        with psql.transaction():
            psql.execute("SELECT 1 FROM tokens WHERE account = %s FOR UPDATE", [account.pk])
            threads, results = in_threads(
                lambda: token_consume(secret=secret, actor=None), lambda: token_consume(secret=secret, actor=None)
            )
            wait_until_blocked(psql, 2)
        for thread in threads:
            thread.join()
        assert sorted(ok for ok, _ in results) == [False, True]
        (error,) = [value for ok, value in results if not ok]
        assert isinstance(error, TokenAlreadyUsed)
        assert Account.objects.get(pk=account.pk).status == AccountStatus.ACTIVE

    def test_two_concurrent_consumptions_of_one_mailed_link_by_its_digest_activate_once(self, psql):
        """The row keeps only the secret's digest once mailed: both consumers find it by that digest."""
        account = AccountFactory()
        secret = bytes(live_token(account=account).secret)
        assert drain().sent == 1
        assert live_token(account=account).secret is None
        with psql.transaction():
            psql.execute("SELECT 1 FROM tokens WHERE account = %s FOR UPDATE", [account.pk])
            threads, results = in_threads(
                lambda: token_consume(secret=secret, actor=None), lambda: token_consume(secret=secret, actor=None)
            )
            wait_until_blocked(psql, 2)
        for thread in threads:
            thread.join()
        assert sorted(ok for ok, _ in results) == [False, True]
        (error,) = [value for ok, value in results if not ok]
        assert isinstance(error, TokenAlreadyUsed)
        assert Account.objects.get(pk=account.pk).status == AccountStatus.ACTIVE
        assert Token.objects.filter(account=account, consumed_at__isnull=False).count() == 1

    def test_activations_of_one_address_racing_past_the_trigger_check_leave_one_owner(self, psql):
        """Both pass the trigger's check (neither sees the other); the unique index decides."""
        first = AccountFactory(email="race@example.com")
        second = AccountFactory(email="RACE@example.com")
        with psql.transaction():
            psql.execute("UPDATE tokens SET consumed_at = now() WHERE account = %s", [first.pk])
            threads, results = in_threads(
                lambda: token_consume(secret=bytes(live_token(account=second).secret), actor=None)
            )
            wait_until_blocked(psql, 1)
        threads[0].join()
        ((ok, error),) = results
        assert not ok and isinstance(error, EmailAlreadyClaimed)
        assert str(error) == "accounts: e-mail is already claimed by an activated account"
        assert Account.objects.get(pk=first.pk).status == AccountStatus.ACTIVE
        assert Account.objects.get(pk=second.pk).status == AccountStatus.PROVISIONED
        assert live_token(account=second).consumed_at is None

    def test_concurrent_wrong_codes_are_all_counted(self):
        account = AccountFactory(login="jane")
        wrong = wrong_code(live_token(account=account).code)
        threads, results = in_threads(*[lambda: token_consume_code(identifier="jane", code=wrong, actor=None)] * 4)
        for thread in threads:
            thread.join()
        assert all(isinstance(value, WrongCode) for _, value in results)
        assert live_token(account=account).failed_attempts == 4


# The account pages' services


def test_an_address_change_is_a_token_for_the_new_address_as_the_actor_says():
    account = AccountFactory(active=True, email="jane@example.com")
    token = token_request_email_change(account=account, email="jane.new@example.net", actor=account)
    assert (token.action, token.email, token.account) == (TokenAction.EMAIL_CHANGE, "jane.new@example.net", account)
    issued = AuditEvent.objects.get(action="token.issued", resource_id=str(token.pk))
    assert issued.actor_id == f"account:{account.pk}"


@pytest.mark.parametrize(("email", "refusal"), [("jane@example.com", AddressUnchanged), ("no-at-sign", InvalidEmail)])
def test_an_address_change_refused_issues_nothing(email, refusal):
    account = AccountFactory(active=True, email="jane@example.com")
    with pytest.raises(refusal):
        token_request_email_change(account=account, email=email, actor=None)
    assert not Token.objects.filter(action=TokenAction.EMAIL_CHANGE).exists()


def test_a_deletion_by_password_is_a_deletion_token_consumed_at_once_as_the_person():
    account = AccountFactory(active=True)
    token = token_delete_by_password(account=account)
    assert (token.action, token.consumed_with, token.mail_state) == (TokenAction.DELETION, "password", "skipped")
    account.refresh_from_db()
    assert account.status == AccountStatus.DEPROVISIONED
    assert Token.objects.filter(account=account, action=TokenAction.RESTORE, consumed_at__isnull=True).exists()


def test_an_activation_vouched_for_is_an_activation_token_consumed_at_once_and_never_mailed(smtp_server):
    account = AccountFactory()
    first = live_token(account=account)
    token = token_activate_vouched(account=account, actor=None)
    assert (token.action, token.consumed_with, token.mail_state) == (
        TokenAction.ACTIVATION,
        "identity_provider",
        "skipped",
    )
    first.refresh_from_db()
    assert first.superseded_at is not None
    account.refresh_from_db()
    assert account.status == AccountStatus.ACTIVE and account.activated_at is not None
    assert drain().claimed == 0 and smtp_server.messages == []


def test_an_activation_vouched_for_claims_the_address_or_changes_nothing():
    account = AccountFactory(email="jane@example.com")
    AccountFactory(active=True, email="jane@example.com")
    with pytest.raises(EmailAlreadyClaimed):
        token_activate_vouched(account=account, actor=None)
    account.refresh_from_db()
    assert account.status == AccountStatus.PROVISIONED
    assert not Token.objects.filter(account=account, consumed_with="identity_provider").exists()


def test_only_a_provisioned_account_is_activated_so():
    account = AccountFactory(suspended=True)
    with pytest.raises(WrongAccountState):
        token_activate_vouched(account=account, actor=None)
