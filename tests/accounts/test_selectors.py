"""Reads of accounts: one by its id, look-ups by e-mail or login, staff's search (exact, then prefix,
then any part, each tier from an index), an account's audit trail, and the figures the dashboard and
/metrics show (accounts by status, sign-ups and activations per day)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.models import Account
from accounts.selectors import (
    account_by_id,
    account_counts_by_status,
    account_deprovisioning,
    account_trail,
    account_trail_latest,
    accounts_by_login,
    accounts_looked_up,
    accounts_search,
    accounts_search_order,
    accounts_search_tiers,
)
from accounts.services import account_deprovision, account_reprovision
from lifecycle.demo.factories import AccountFactory
from platform_events.audit.context import audit_context
from tests.support import analyze

pytestmark = pytest.mark.django_db


def found(term: str) -> list[str]:
    """The logins a search finds, in the order the admin lists them."""
    accounts = accounts_search(Account.objects.all(), term).order_by(*accounts_search_order(term))
    return list(accounts.values_list("login", flat=True))


def plan(sql, queryset) -> str:
    """The plan of ``queryset`` on the runtime role's connection, with sequential scans off (as the
    planner would choose on a large table) and without its order: on a small table the planner may
    walk the primary key backwards and filter, whatever the statistics a test before left."""
    query, params = queryset.order_by().query.sql_with_params()
    sql("SET LOCAL enable_seqscan = off")
    return "\n".join(row[0] for row in sql(f"EXPLAIN {query}", params))


class TestSearch:
    @pytest.fixture
    def accounts(self):
        """Oldest first: each tier below lists them newest first."""
        AccountFactory(login="mary-jane", email="mj@example.org")
        AccountFactory(login="ane", email="ane@example.com")
        AccountFactory(login="jane", email="jane@example.com")
        AccountFactory(login="anette", email="a.nette@acme.test")
        AccountFactory(login="bob", email="bob@example.org")

    def test_the_exact_match_comes_first_then_prefixes_then_any_part(self, accounts):
        assert found("ane") == ["ane", "anette", "jane", "mary-jane"]

    def test_finds_a_domain_by_any_part_of_it(self, accounts):
        assert found("example.org") == ["bob", "mary-jane"]
        assert found("@EXAMPLE") == ["bob", "jane", "ane", "mary-jane"]
        assert found("acme.test") == ["anette"]

    def test_an_exact_e_mail_ignoring_case(self, accounts):
        assert found(" Jane@Example.com ") == ["jane"]

    @pytest.mark.parametrize(
        ("term", "logins"),
        [
            ("ne@example.com", ["jane", "ane"]),  # the end of a local part and a whole domain
            ("ane@exam", ["ane", "jane"]),  # ane@example.com starts with it
            ("tte@acme", ["anette"]),
            ("nette@", ["anette"]),
            ("@acme.test", ["anette"]),
            ("jane@example.org", []),  # each part matches some address, no address both
            ("ane@example.com@x", []),
        ],
    )
    def test_a_part_of_an_address_across_its_at(self, accounts, term, logins):
        assert found(term) == logins

    @pytest.mark.parametrize("term", ["an", "a", "m-", ".ne", "@e"])
    def test_a_term_without_3_letters_or_digits_in_a_row_finds_only_starts(self, accounts, term):
        """A trigram index cannot narrow such a term: it would read every account."""
        newest_first = ["bob", "anette", "jane", "ane", "mary-jane"]
        assert found(term) == [login for login in newest_first if login.startswith(term)]

    def test_the_tiers_are_the_search_in_its_order(self, accounts):
        tiers = accounts_search_tiers(Account.objects.all(), "ane")
        assert [list(tier.values_list("login", flat=True)) for tier in tiers] == [
            ["ane"],
            ["anette"],
            ["jane", "mary-jane"],
        ]

    def test_the_tiers_keep_the_filters_they_were_given(self, accounts):
        suspended = AccountFactory(login="janet", suspended=True)
        tiers = accounts_search_tiers(Account.objects.filter(status="suspended"), "jane")
        assert [list(tier) for tier in tiers] == [[], [suspended], []]


class TestSearchRefusesNothingBadly:
    @pytest.mark.parametrize(
        ("term", "logins"),
        [
            ("a%b", ["pct"]),  # a % is a %, not "anything"
            ("a_b", ["underscore"]),  # a _ is a _, not "one character"
            ("%b@example", ["pct"]),  # the same in a search by any part
            ("_b@example", ["underscore"]),
            ("a\\b", []),
            ("\\", []),
            ("%", []),
            ("_", []),
            ("%%%", []),
            ("___", []),
        ],
    )
    def test_like_wildcards_in_the_term_are_matched_as_themselves(self, term, logins):
        AccountFactory(login="pct", email="a%b@example.com")
        AccountFactory(login="underscore", email="a_b@example.com")
        AccountFactory(login="wild", email="axxb@example.com")
        AccountFactory(login="axb", email="axb@example.com")
        assert found(term) == logins

    def test_a_search_term_holding_a_nul_finds_nobody(self):
        """PostgreSQL text cannot hold NUL: such a term names nobody, and never reaches it as a DataError."""
        AccountFactory(login="jane")
        assert found("ja\x00") == []
        assert found("jane\x00doe") == []

    def test_a_term_longer_than_any_login_or_e_mail_finds_nobody(self):
        account = AccountFactory()
        assert found(account.login + "x" * 254) == []
        assert found("x" * 100_000) == []


class TestSearchIndexes:
    """Each tier reads an index, as the runtime role (the connection the tests' ``sql`` uses)."""

    def test_the_exact_tier_reads_the_lower_case_indexes(self, sql):
        exact = accounts_search_tiers(Account.objects.all(), "jane")[0]
        text = plan(sql, exact)
        # Either index on lower(login) answers an equality: the unique one or the prefix one.
        assert "accounts_email_idx" in text and ("accounts_login_key" in text or "accounts_login_prefix_idx" in text), (
            text
        )
        assert "Seq Scan" not in text, text

    def test_a_prefix_search_can_use_the_indexes(self, sql):
        prefix = accounts_search_tiers(Account.objects.all(), "jane")[1]
        text = plan(sql, prefix)
        assert "accounts_email_idx" in text and "accounts_login_prefix_idx" in text, text

    def test_a_search_by_any_part_reads_the_trigram_indexes(self, sql):
        matches = accounts_search(Account.objects.all(), "example.com").order_by()  # as the page counts them
        text = plan(sql, matches)
        for index in ("accounts_email_local_trgm_idx", "accounts_email_domain_trgm_idx", "accounts_login_trgm_idx"):
            assert index in text, text
        assert "Seq Scan" not in text, text

    def test_a_whole_address_reads_its_local_part_not_every_domain_trigram(self, sql):
        """jane@example.com is a local part ending with jane and a domain starting with example.com:
        the local part's rare trigrams narrow it (the domain's are on every address of example.com)."""
        matches = accounts_search_tiers(Account.objects.all(), "jane@example.com")[-1]
        text = plan(sql, matches)
        assert "accounts_email_local_trgm_idx" in text, text
        assert "accounts_login_trgm_idx" not in text and "Seq Scan" not in text, text

    def test_a_short_term_reads_the_prefix_indexes_not_the_trigram_ones(self, sql):
        text = plan(sql, accounts_search(Account.objects.all(), "ja").order_by())
        assert "accounts_email_idx" in text and "trgm" not in text, text

    def test_pg_trgm_is_installed_by_the_migration_and_the_runtime_role_owns_nothing_of_it(self, sql):
        owner, runtime = sql(
            "SELECT extowner::regrole::text, current_user FROM pg_extension WHERE extname = 'pg_trgm'"
        )[0]
        assert owner != runtime


class TestAccountTrail:
    def test_holds_the_accounts_rows_and_its_tokens_rows(self):
        """An account's trail has its own rows and its tokens' (issued with the account), not another account's."""
        account, other = AccountFactory(), AccountFactory()
        trail = list(account_trail(account.pk).values_list("action", "resource_type"))
        assert ("account.created", "account") in trail
        assert ("token.issued", "token") in trail
        other_token_ids = {str(pk) for pk in other.tokens.values_list("pk", flat=True)}
        assert not account_trail(account.pk).filter(resource_id__in=other_token_ids, resource_type="token").exists()

    def test_keeps_a_deleted_tokens_rows(self):
        """A token deleted by retention keeps its rows in the account's trail (found by the account the row names)."""
        account = AccountFactory()
        token_ids = [str(pk) for pk in account.tokens.values_list("pk", flat=True)]
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM tokens WHERE account = %s", [account.pk])
        tokens_rows = account_trail(account.pk).filter(resource_type="token", resource_id__in=token_ids)
        actions = set(tokens_rows.values_list("action", flat=True))
        assert actions == {"token.issued", "token.deleted"}

    @pytest.fixture
    def other_accounts(self, sql):
        """A thousand other accounts' rows in the trail, tokens' among them, as any real trail has: with
        only the account's own, reading every token's row by type costs the planner what reading the
        account's by the account does (4.15 both), and which index it picks is a tie."""
        sql(
            "INSERT INTO accounts (email, login) SELECT 'other' || g || '@example.com', 'other' || g"
            " FROM generate_series(1, 1000) g"
        )

    def test_reads_both_halves_from_indexes(self, other_accounts):
        """Neither half of the trail's OR scans the audit table (plan read with seq scans off, as on a large table)."""
        account = AccountFactory()
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL enable_seqscan = off")
            sql, params = account_trail(account.pk).query.sql_with_params()
            cursor.execute(f"EXPLAIN {sql}", params)
            plan = "\n".join(row[0] for row in cursor.fetchall())
        assert "coalesce_occurred_at_idx" in plan, plan  # the partitions name their copies of the index so
        assert "Seq Scan" not in plan, plan

    def test_the_newest_rows_are_read_from_the_two_indexes_even_when_sorting_looks_dear(self, sql, other_accounts):
        """With a small LIMIT the planner prefers walking every partition's key backwards and filtering
        (0.86 s at 3,000,000 rows); sorts made dear here, the newest rows still come from the indexes."""
        account = AccountFactory()
        sql("SET LOCAL enable_sort = off")
        sql("SET LOCAL enable_seqscan = off")
        with CaptureQueriesContext(connection) as queries:
            rows = account_trail_latest(account.pk, 15)
        assert {row.action for row in rows} == {"account.created", "token.issued"}
        (query,) = [q["sql"] for q in queries.captured_queries if "audit_events" in q["sql"]]
        with connection.cursor() as cursor:
            cursor.execute(f"EXPLAIN {query}")
            plan = "\n".join(row[0] for row in cursor.fetchall())
        assert "pkey" not in plan and "coalesce_occurred_at_idx" in plan, plan


class TestLookUps:
    def test_an_account_is_read_by_its_id_and_a_missing_one_is_none(self):
        account = AccountFactory()
        assert account_by_id(account.pk) == account
        assert account_by_id(account.pk + 1) is None

    def test_a_login_finds_its_account_ignoring_case_and_spaces_around(self):
        jane = AccountFactory(login="Jane", email="jane@example.com")
        AccountFactory(login="janet", email="janet@example.com")
        assert list(accounts_by_login(" jANE ")) == [jane]

    @pytest.mark.parametrize("login", ["jane@example.com", "jane\x00", ""])
    def test_a_login_finds_no_account_by_its_e_mail_nor_by_text_no_login_holds(self, login):
        AccountFactory(login="jane", email="jane@example.com")
        assert list(accounts_by_login(login)) == []

    def test_a_look_up_by_e_mail_finds_every_sign_up_of_it_newest_first_up_to_the_limit(self):
        first, second, third = (AccountFactory(email="Shared@example.com") for _ in range(3))
        AccountFactory(email="other@example.com")
        assert accounts_looked_up(email="shared@EXAMPLE.com", limit=2) == [third, second]
        assert accounts_looked_up(email="shared@example.com", limit=5) == [third, second, first]

    def test_a_look_up_by_an_e_mail_without_an_at_finds_nobody_even_a_login_of_that_name(self):
        AccountFactory(login="jane")
        assert accounts_looked_up(email="jane", limit=10) == []

    def test_a_look_up_by_login_ignores_case_and_never_reads_an_address(self):
        jane = AccountFactory(login="jane", email="jane@example.com")
        assert accounts_looked_up(login="JANE", limit=10) == [jane]
        assert accounts_looked_up(login="jane@example.com", limit=10) == []


class TestFigures:
    def test_accounts_are_counted_by_status_every_status_named(self):
        AccountFactory.create_batch(2)
        AccountFactory(active=True)
        AccountFactory(deprovisioned=True)
        AccountFactory(erased=True)
        counted = {"provisioned": 2, "active": 1, "suspended": 0, "deprovisioned": 1, "erased": 1}
        assert account_counts_by_status() == (counted, False)

    @pytest.mark.django_db(transaction=True)
    def test_a_table_of_the_limit_or_more_is_estimated_from_the_planners_statistics(self):
        AccountFactory.create_batch(4)
        AccountFactory.create_batch(2, active=True)
        analyze("accounts")
        estimated = {"provisioned": 4, "active": 2, "suspended": 0, "deprovisioned": 0, "erased": 0}
        assert account_counts_by_status(exact_below=6) == (estimated, True)
        assert account_counts_by_status(exact_below=7)[1] is False


def test_account_deprovisioning_is_the_latest_deprovisioning_row_or_none():
    """The account page's "deprovisioned" row: who, when and why of the latest deprovisioning."""
    account = AccountFactory(active=True)
    assert account_deprovisioning(account.pk) is None
    with audit_context(reason="first"):
        account_deprovision(account=account, actor=None)
    account_reprovision(account=account, actor=None)
    with audit_context(reason="second"):
        account_deprovision(account=account, actor=None)
    assert account_deprovisioning(account.pk).reason == "second"
    assert account_deprovisioning(AccountFactory().pk) is None
