"""Reads of accounts: the admin search by prefix uses the indexes and finds nobody for a term no column holds."""

import pytest

from accounts.models import Account

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
