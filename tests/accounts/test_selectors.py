"""Reads of accounts: the admin search by prefix can use the indexes."""

import pytest

from accounts.models import Account

pytestmark = pytest.mark.django_db


def test_a_prefix_search_can_use_the_indexes(sql):
    from accounts.selectors import accounts_search

    query, params = accounts_search(Account.objects.all(), "jane").query.sql_with_params()
    sql("SET LOCAL enable_seqscan = off")
    plan = "\n".join(row[0] for row in sql(f"EXPLAIN {query}", params))
    assert "accounts_email_idx" in plan and "accounts_login_prefix_idx" in plan
