"""Reads of accounts: the admin search by prefix uses the indexes and finds nobody for a term no column holds."""

import pytest
from django.db import connection

from accounts.models import Account
from accounts.selectors import account_trail
from lifecycle.factories import AccountFactory

pytestmark = pytest.mark.django_db


def test_a_prefix_search_can_use_the_indexes(sql):
    from accounts.selectors import accounts_search

    query, params = accounts_search(Account.objects.all(), "jane").query.sql_with_params()
    sql("SET LOCAL enable_seqscan = off")
    plan = "\n".join(row[0] for row in sql(f"EXPLAIN {query}", params))
    assert "accounts_email_idx" in plan and "accounts_login_prefix_idx" in plan


def test_a_search_term_holding_a_nul_finds_nobody():
    """Issue 8, Low list: PostgreSQL text cannot hold NUL, so the term reached it as a DataError."""
    from accounts.selectors import accounts_search
    from lifecycle.factories import AccountFactory

    AccountFactory(login="jane")
    assert list(accounts_search(Account.objects.all(), "ja\x00")) == []


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

    def test_reads_both_halves_from_indexes(self):
        """Neither half of the trail's OR scans the audit table (plan read with seq scans off, as on a large table)."""
        account = AccountFactory()
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL enable_seqscan = off")
            sql, params = account_trail(account.pk).query.sql_with_params()
            cursor.execute(f"EXPLAIN {sql}", params)
            plan = "\n".join(row[0] for row in cursor.fetchall())
        assert "coalesce_occurred_at_idx" in plan, plan  # the partitions name their copies of the index so
        assert "Seq Scan" not in plan, plan
