"""SCIM filters as queries (lifecycle/scim/filters.py): each comparison on the expression the accounts'
indexes are built on, and the bounds that keep a filter from being built to be slow."""

import pytest
from django.db import connection
from django.db.models import Value
from django.db.models.functions import Lower

from accounts.models import Account, ScimUser
from lifecycle.scim.errors import ScimError
from lifecycle.scim.filters import LONGEST_FILTER, MOST_EXPRESSIONS, users_filter
from lifecycle.scim.users import scim_accounts
from platform_events.api.clients import api_client_create

pytestmark = pytest.mark.django_db


def plan(query) -> str:
    sql, params = query.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN {sql}", params)
        return "\n".join(row[0] for row in cursor.fetchall())


@pytest.mark.parametrize(
    ("table", "condition"),
    [
        ("scim_users", "Index Cond: (lower(user_name) = 'ada'::text)"),
        ("accounts", "Index Cond: (lower(email) = 'ada@example.com'::text)"),
    ],
)
@pytest.mark.django_db(transaction=True)
def test_an_equality_as_the_filters_write_it_is_read_through_a_lower_case_index(sql, table, condition):
    """What a filter's equality compiles to (below: lower(column) = lower(value)), on each table alone:
    the join the planner picks around it depends on statistics, the index condition does not."""
    client, _ = api_client_create(name="okta", scopes=["scim"], actor=None)
    # Enough rows, and their statistics, that the planner prefers an index to reading them all; committed,
    # so that an autovacuum's ANALYZE meanwhile counts them too (one once saw an empty table).
    sql(
        "INSERT INTO accounts (email, login) SELECT 'user' || g || '@example.com', 'user' || g"
        " FROM generate_series(1, 5000) g"
    )
    sql(
        "INSERT INTO scim_users (account, client, user_name) SELECT id, %s, login || '@corp.example' FROM accounts",
        [client.pk],
    )
    sql("ANALYZE accounts")
    sql("ANALYZE scim_users")
    if table == "scim_users":
        query = (
            ScimUser.objects.alias(lowered=Lower("user_name"))
            .filter(lowered=Lower(Value("Ada")))
            .order_by()
            .values("pk")
        )
    else:
        query = (
            Account.objects.alias(lowered=Lower("email"))
            .filter(lowered=Lower(Value("Ada@Example.com")))
            .order_by()
            .values("pk")
        )
    assert condition in plan(query)


def test_an_equality_compares_in_lower_case():
    sql = str(scim_accounts(None).filter(users_filter('userName eq "Ada"')).query)
    assert 'LOWER("scim_users"."user_name") = (LOWER(Ada))' in sql
    sql = str(scim_accounts(None).filter(users_filter('emails.value eq "Ada@Example.com"')).query)
    assert 'LOWER("accounts"."email") = (LOWER(Ada@Example.com))' in sql


def test_external_id_is_compared_as_it_is():
    sql = str(scim_accounts(None).filter(users_filter('externalId eq "Ada"')).query)
    assert '"scim_users"."external_id" = Ada' in sql


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
