"""SCIM filters as queries (lifecycle/scim/filters.py): each comparison on the expression the accounts'
indexes are built on, and the bounds that keep a filter from being built to be slow."""

import pytest
from django.db import connection

from lifecycle.scim.errors import ScimError
from lifecycle.scim.filters import LONGEST_FILTER, MOST_EXPRESSIONS, users_filter
from lifecycle.scim.users import scim_accounts

pytestmark = pytest.mark.django_db


def plan(expression: str) -> str:
    query = scim_accounts().filter(users_filter(expression)).order_by().values("pk")
    sql, params = query.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN {sql}", params)
        return "\n".join(row[0] for row in cursor.fetchall())


@pytest.mark.parametrize(
    ("expression", "condition"),
    [
        ('userName eq "Ada"', "Index Cond: (lower(login) = 'ada'::text)"),
        ('emails.value eq "Ada@Example.com"', "Index Cond: (lower(email) = 'ada@example.com'::text)"),
    ],
)
def test_an_equality_is_read_through_the_accounts_lower_case_index(sql, expression, condition):
    # Enough accounts, and their statistics, that the planner prefers an index to reading them all.
    sql(
        "INSERT INTO accounts (email, login) SELECT 'user' || g || '@example.com', 'user' || g"
        " FROM generate_series(1, 5000) g"
    )
    sql("ANALYZE accounts")
    assert condition in plan(expression)


def test_an_equality_compares_in_lower_case():
    sql = str(scim_accounts().filter(users_filter('userName eq "Ada"')).query)
    assert 'LOWER("accounts"."login") = ada' in sql


def test_the_bounds():
    with pytest.raises(ScimError, match=f"at most {LONGEST_FILTER} characters"):
        users_filter('userName eq "' + "a" * LONGEST_FILTER + '"')
    nested = " and ".join(["userName pr"] * (MOST_EXPRESSIONS + 1))
    with pytest.raises(ScimError, match=f"at most {MOST_EXPRESSIONS} expressions"):
        users_filter(nested)
    users_filter(" and ".join(["userName pr"] * MOST_EXPRESSIONS))  # the most is allowed


def test_deep_nesting_counts_every_comparison():
    deep = "userName pr"
    for _ in range(MOST_EXPRESSIONS):
        deep = f"not ({deep} or active eq true)"
    with pytest.raises(ScimError, match="expressions"):
        users_filter(deep)
