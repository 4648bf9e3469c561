"""Pages of results in tiers (a search's exact matches, then prefixes, then the rest): each page holds
the rows of the tiers taken one after another, and reads only the rows it shows."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.models import Account
from lifecycle.demo.factories import AccountFactory
from platform_events.db.tiered_pages import TieredPaginator

pytestmark = pytest.mark.django_db


@pytest.fixture
def tiers():
    """Three disjoint tiers of 3, 0 and 4 accounts, the first ordered by login, the others newest first."""
    AccountFactory.create_batch(7)
    ids = sorted(Account.objects.values_list("pk", flat=True))
    everyone = Account.objects.all()
    return [
        everyone.filter(pk__in=ids[4:]).order_by("login"),
        everyone.none(),
        everyone.filter(pk__in=ids[:4]).order_by("-id"),
    ]


def rows_of(tiers) -> list[Account]:
    return [row for tier in tiers for row in tier]


@pytest.mark.parametrize("per_page", [1, 2, 3, 4, 7, 10])
def test_every_page_holds_the_tiers_rows_one_tier_after_another(tiers, per_page):
    paginator = TieredPaginator(Account.objects.all(), per_page, tiers=tiers)
    pages = [list(paginator.page(number).object_list) for number in paginator.page_range]
    expected = rows_of(tiers)
    assert pages == [expected[start : start + per_page] for start in range(0, len(expected), per_page)]
    assert paginator.count == 7


def test_orphans_join_the_last_page(tiers):
    paginator = TieredPaginator(Account.objects.all(), 3, tiers=tiers, orphans=1)
    assert [len(paginator.page(number).object_list) for number in paginator.page_range] == [3, 4]
    assert list(paginator.page(2).object_list) == rows_of(tiers)[3:]


def test_a_page_reads_no_row_past_its_own(tiers):
    """The first page of 2 is read with LIMIT 2 from the first tier alone: no other tier is asked."""
    paginator = TieredPaginator(Account.objects.all(), 2, tiers=tiers)
    paginator.count  # noqa: B018 (counted apart, as the admin does)
    with CaptureQueriesContext(connection) as queries:
        list(paginator.page(1).object_list)
    assert len(queries) == 1 and "LIMIT 2" in queries[0]["sql"]


def test_no_tiers_is_one_empty_page():
    paginator = TieredPaginator(Account.objects.none(), 100, tiers=[])
    assert list(paginator.page(1).object_list) == [] and paginator.count == 0


def test_the_first_rows_are_the_tiers_rows_and_a_short_list_is_its_count(tiers):
    """first_rows() reads page 1 as a page does (the tiers one after another, no row past those asked);
    fewer than asked are the whole list, so its count is not read."""
    paginator = TieredPaginator(Account.objects.all(), 2, tiers=tiers)
    assert paginator.first_rows(3) == rows_of(tiers)[:3]

    short = TieredPaginator(Account.objects.all(), 10, tiers=tiers)
    with CaptureQueriesContext(connection) as queries:
        assert short.first_rows(11) == rows_of(tiers) and short.count == 7
    assert not any("COUNT(" in query["sql"].upper() for query in queries.captured_queries)
