"""Tokens and mail runs in the admin: mail state, Retry mailing now, search, state, date ranges, and
never a token's secret or code."""

import base64
import datetime
import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from lifecycle.demo.factories import AccountFactory
from tests.support import max_code_attempts, tokens_in_every_state
from tokens.links import secret_to_text
from tokens.mailroom.drain import drain
from tokens.models import Job, JobType, MailState, MaxCodeAttempts, Token, TokenAction, TokenState
from tokens.selectors import live_token
from tokens.services import token_request_mail

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


@pytest.mark.parametrize("query", [{}, {"q": "jane"}, {"state": "valid"}, {"o": "3"}])
def test_the_token_list_reads_no_credential_nor_the_accounts_other_columns(admin_client, query):
    """Its rows read what its columns show: never a secret, a code or their digests, nor the account's
    address and times; and no query per row for what it left out."""
    live_token(account=AccountFactory(login="jane"))
    with CaptureQueriesContext(connection) as queries:
        response = admin_client.get(reverse("admin:tokens_token_changelist"), query)
    assert response.status_code == 200 and "jane" in response.content.decode()
    (rows,) = [query["sql"] for query in queries if query["sql"].startswith('SELECT "tokens"."id"')]
    selected = rows.partition(" FROM ")[0]
    for column in ("secret", "code", "secret_digest", "code_digest", "mail_claim"):
        assert f'"tokens"."{column}"' not in selected
    assert '"accounts"."login"' in selected and '"accounts"."email"' not in selected
    assert not [query for query in queries if query["sql"].startswith('SELECT "tokens"') and query["sql"] != rows]


@pytest.mark.parametrize(
    "url",
    [
        lambda t: reverse("admin:tokens_token_changelist"),
        lambda t: reverse("admin:tokens_token_change", args=[t.pk]),
        lambda t: reverse("admin:accounts_account_change", args=[t.account_id]),
        lambda t: reverse("admin:platform_events_auditevent_changelist"),
    ],
    ids=["tokens", "token", "account", "trail"],
)
def test_admin_pages_show_no_digest_of_a_mailed_token(admin_client, token, url):
    drain()
    token.refresh_from_db()
    assert token.code_digest is not None
    page = admin_client.get(url(token)).content.decode()
    for digest in (bytes(token.code_digest), bytes(token.secret_digest)):
        assert digest.hex() not in page and base64.b64encode(digest).decode() not in page


class TestMailStateInTheAdmin:
    @pytest.mark.parametrize(
        ("state", "failures", "shown"),
        [
            (MailState.SENT, 0, ">Sent<"),
            (MailState.SENT, 1, ">Sent after 1 failed attempt<"),
            (MailState.SENT, 2, ">Sent after 2 failed attempts<"),
            (MailState.RETRYING, 1, ">Retrying (1 failed attempt)<"),
            (MailState.DEAD, 6, ">Dead (6 failed attempts)<"),
        ],
    )
    def test_the_mail_column_counts_failed_attempts_only(self, admin_client, state, failures, shown):
        """A token sent, however often it was asked for again, is "Sent"; failures are counted as such."""
        token = live_token(account=AccountFactory())
        Token.objects.filter(pk=token.pk).update(mail_state=state, mail_attempts=failures)
        page = admin_client.get(reverse("admin:tokens_token_changelist")).content.decode()
        assert shown in page and "tries" not in page and "(1 try)" not in page

    def test_a_token_mailed_again_on_request_shows_sent(self, admin_client, smtp_server):
        """Asked for three times and mailed three times: "Sent", not three tries."""
        account = AccountFactory()
        token = live_token(account=account)
        for _ in range(3):
            token_request_mail(identifier=account.login, action=TokenAction.ACTIVATION, actor=None)
            drain()
        assert len(smtp_server.messages) == 3
        page = admin_client.get(reverse("admin:tokens_token_changelist")).content.decode()
        assert f'href="{reverse("admin:tokens_token_change", args=[token.pk])}' in page
        assert ">Sent<" in page and "failed" not in page
        detail = admin_client.get(reverse("admin:tokens_token_change", args=[token.pk])).content.decode()
        assert "Failed mail attempts" in detail

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


def dead_token() -> Token:
    token = live_token(account=AccountFactory())
    Token.objects.filter(pk=token.pk).update(mail_state=MailState.DEAD, mail_error="550 5.1.1 No such mailbox")
    return token


def retry(client, token):
    return client.post(
        reverse("admin:tokens_token_changelist"),
        {"action": "retry_mail_now", "_selected_action": [token.pk]},
        follow=True,
    )


def offered_actions(client) -> list[str]:
    form = client.get(reverse("admin:tokens_token_changelist")).context["action_form"]
    return [name for name, _ in form.fields["action"].choices] if form else []  # None: no action at all


class TestWhoMayRetryMail:
    """The action needs tokens.retry_mail, not tokens.change_token, which no role has."""

    def test_support_is_offered_retry_mailing_now_and_can_run_it(self, support):
        token = dead_token()
        assert "retry_mail_now" in offered_actions(support)
        assert "1 token will be mailed on the next run." in retry(support, token).content.decode()
        token.refresh_from_db()
        assert token.mail_state == MailState.RETRYING

    def test_an_auditor_can_neither_see_nor_run_it(self, auditor):
        token = dead_token()
        assert auditor.get(reverse("admin:tokens_token_changelist")).status_code == 403
        assert retry(auditor, token).status_code == 403
        token.refresh_from_db()
        assert token.mail_state == MailState.DEAD

    def test_staff_who_may_only_view_tokens_are_not_offered_it(self):
        """The permission gates it, not the token list: view_token alone does not retry."""
        user = get_user_model().objects.create_user("viewer", is_staff=True)
        user.user_permissions.set([Permission.objects.get(content_type__app_label="tokens", codename="view_token")])
        client = Client()
        client.force_login(user)
        token = dead_token()
        assert "retry_mail_now" not in offered_actions(client)
        retry(client, token)
        token.refresh_from_db()
        assert token.mail_state == MailState.DEAD


class TestMailRuns:
    """The jobs table in the admin: called Mail runs, saying what each column means, filtered by age and outcome."""

    def runs(self, client, query=""):
        response = client.get(reverse("admin:tokens_job_changelist") + query)
        assert response.status_code == 200
        return response, list(response.context["cl"].result_list)

    def test_the_list_is_called_mail_runs_and_says_what_each_column_means(self, support):
        Job.objects.create(job_type=JobType.MAILROOM, claimed=3, sent=3, finished_at=timezone.now())
        response, _ = self.runs(support)
        page = response.content.decode()
        assert "<h1>Select mail run to view</h1>" in page
        assert "Mail runs" in support.get(reverse("admin:index")).content.decode()
        for meaning in ("Accepted by the SMTP server.", "Why it stopped early", "no progress for two leases"):
            assert meaning in page

    def test_runs_with_failed_mail_or_an_error_can_be_listed_alone(self, support):
        clean = Job.objects.create(job_type=JobType.MAILROOM, claimed=2, sent=2, finished_at=timezone.now())
        failed = Job.objects.create(job_type=JobType.MAILROOM, claimed=2, sent=1, failed=1, finished_at=timezone.now())
        killed = Job.objects.create(job_type=JobType.MAILROOM, claimed=2, error="stopped before it finished")
        assert set(self.runs(support, "?outcome=trouble")[1]) == {failed, killed}
        assert set(self.runs(support, "?outcome=unfinished")[1]) == {killed}
        assert set(self.runs(support)[1]) == {clean, failed, killed}

    def test_runs_can_be_listed_by_when_they_started(self, support):
        recent = Job.objects.create(job_type=JobType.MAILROOM, claimed=1, sent=1)
        old = Job.objects.create(
            job_type=JobType.MAILROOM, claimed=1, sent=1, started_at=timezone.now() - timedelta(days=3)
        )
        assert self.runs(support, "?started=24h")[1] == [recent]
        assert set(self.runs(support, "?started=7d")[1]) == {recent, old}

    @pytest.mark.parametrize("query", ["?outcome=bogus", "?started=1y", "?started=24h%00", "?failed__gt=0"])
    def test_a_value_the_filters_do_not_offer_answers_400(self, support, query):
        assert support.get(reverse("admin:tokens_job_changelist") + query).status_code == 400

    def test_an_unfinished_run_says_when_it_last_made_progress(self, support):
        """Running, or killed and not closed yet: the list says how long ago it moved."""
        Job.objects.create(job_type=JobType.MAILROOM, claimed=10, sent=4, progress_at=timezone.now())
        response, _ = self.runs(support)
        assert re.search(
            r"not yet <span class=\"quiet\">\(last progress <span class=\"nowrap\">\d{4}-\d\d-\d\d \d\d:\d\d:\d\d",
            response.content.decode(),
        )


TOKENS = reverse("admin:tokens_token_changelist")


def listed_ids(response) -> list[int]:
    return [token.pk for token in response.context["cl"].result_list]


class TestTokenSearch:
    def test_by_the_accounts_login_e_mail_or_domain(self, support):
        jane = live_token(account=AccountFactory(login="jane", email="jane@acme.test"))
        bob = live_token(account=AccountFactory(login="bob", email="bob@example.com"))
        assert listed_ids(support.get(TOKENS, {"q": "JANE"})) == [jane.pk]
        assert listed_ids(support.get(TOKENS, {"q": "bob@example.com"})) == [bob.pk]
        assert listed_ids(support.get(TOKENS, {"q": "acme.test"})) == [jane.pk]

    def test_by_token_id(self, support):
        token = live_token(account=AccountFactory())
        live_token(account=AccountFactory())
        assert listed_ids(support.get(TOKENS, {"q": f" {token.pk} "})) == [token.pk]

    def test_never_by_its_code_or_secret(self, support):
        """A code or secret typed as a search names no token: the search reads neither column."""
        token = live_token(account=AccountFactory(login="jane"))
        for term in (token.code, secret_to_text(token.secret), bytes(token.secret).hex()):
            assert token.pk not in listed_ids(support.get(TOKENS, {"q": term})), term

    @pytest.mark.parametrize("term", ["%", "_", "\\", "9" * 40, "x" * 5000, "١٢٣"])
    def test_odd_terms_are_no_server_error(self, support, term):
        live_token(account=AccountFactory(login="jane"))
        response = support.get(TOKENS, {"q": term})
        assert response.status_code == 200 and listed_ids(response) == []


class TestTokenState:
    def test_each_token_shows_its_state(self, support):
        tokens = tokens_in_every_state()
        response = support.get(TOKENS)
        shown_states = {token.pk: token.state for token in response.context["cl"].result_list}
        assert {token.pk: state.value for state, token in tokens.items()}.items() <= shown_states.items()
        page = response.content.decode()
        for label in ("Valid", "Used", "Expired", "Replaced", "Code blocked"):
            assert f'<td class="field-state">{label}</td>' in page

    def test_an_expired_token_with_a_blocked_code_is_expired(self, support):
        tokens = tokens_in_every_state()
        Token.objects.filter(pk=tokens[TokenState.EXPIRED].pk).update(failed_attempts=MaxCodeAttempts())
        response = support.get(TOKENS, {"state": "expired"})
        assert listed_ids(response) == [tokens[TokenState.EXPIRED].pk]

    @pytest.mark.parametrize("state", list(TokenState))
    def test_the_state_filter_lists_the_tokens_in_that_state(self, support, state):
        tokens = tokens_in_every_state()
        in_state = {token.pk for token in Token.objects.all() if token_state_of(token) == state}
        assert set(listed_ids(support.get(TOKENS, {"state": state.value}))) == in_state
        assert tokens[state].pk in in_state

    def test_the_state_costs_no_query_per_row(self, support):
        tokens_in_every_state()
        with CaptureQueriesContext(connection) as few:
            support.get(TOKENS)
        AccountFactory.create_batch(5)
        with CaptureQueriesContext(connection) as more:
            support.get(TOKENS)
        assert len(more) == len(few)

    @pytest.mark.parametrize("value", ["bogus", "Valid", "code blocked", "valid%00"])
    def test_a_state_that_is_not_one_answers_400(self, support, value):
        assert support.get(f"{TOKENS}?state={value}").status_code == 400


class TestTokenDateRanges:
    @pytest.mark.parametrize("field", ["created_at", "expires_at"])
    def test_filter_by_a_range(self, support, field):
        token = live_token(account=AccountFactory())
        today = timezone.localdate()
        assert listed_ids(support.get(TOKENS, {f"{field}__range__gte": str(today)})) == [token.pk]
        yesterday = today - datetime.timedelta(days=1)
        assert listed_ids(support.get(TOKENS, {f"{field}__range__lte": str(yesterday)})) == []

    @pytest.mark.parametrize(
        "query",
        [
            "code__range__gte=00000",
            "secret__range__gte=00",
            "code__startswith=1&created_at__range__gte=2026-01-01",
            "failed_attempts__range__gte=0",
            "created_at__range__gte=2026-13-01",
        ],
    )
    def test_no_range_reads_a_credential_or_a_bad_date(self, support, query):
        assert support.get(f"{TOKENS}?{query}").status_code == 400


def token_state_of(token: Token) -> TokenState:
    """The state from the row in Python, as a reader of tokens/sql would tell it (the test's own
    account of the rules, against the SQL expression the admin uses)."""
    if token.consumed_at:
        return TokenState.USED
    if token.superseded_at:
        return TokenState.REPLACED
    if token.expires_at <= timezone.now():
        return TokenState.EXPIRED
    if token.failed_attempts >= max_code_attempts():
        return TokenState.CODE_BLOCKED
    return TokenState.VALID
