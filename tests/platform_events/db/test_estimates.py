"""Lists never COUNT(*) a large table: exact up to the limit, the estimate (and the page says so) past it."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from accounts.models import Account
from lifecycle.demo.factories import AccountFactory
from tests.support import analyze

pytestmark = pytest.mark.django_db
CHANGELIST = reverse("admin:accounts_account_changelist")


class TestNoFullCounts:
    @pytest.mark.django_db(transaction=True)
    def test_a_long_unfiltered_list_shows_the_estimate_and_says_so(self, support, monkeypatch):
        monkeypatch.setattr("platform_events.db.estimates.EXACT_COUNT_LIMIT", 3)
        AccountFactory.create_batch(5)
        analyze("accounts")
        page = support.get(CHANGELIST).content.decode()
        assert "about 5 accounts (estimated, not counted)" in page

    def test_a_long_filtered_list_says_more_than_the_limit(self, support, monkeypatch):
        monkeypatch.setattr("platform_events.db.estimates.EXACT_COUNT_LIMIT", 3)
        AccountFactory.create_batch(5)
        page = support.get(CHANGELIST, {"status__exact": "provisioned"}).content.decode()
        assert "more than 3 accounts (estimated, not counted)" in page

    def test_a_short_list_is_counted(self, support):
        AccountFactory.create_batch(2)
        assert "2 accounts" in support.get(CHANGELIST).content.decode()

    @pytest.mark.django_db(transaction=True)
    def test_the_estimate_covers_partitions(self):
        from platform_events.db.estimates import estimated_rows

        AccountFactory.create_batch(3)
        analyze("audit_events")
        assert estimated_rows("audit_events") >= 6  # account.created and token.issued for each


class TestFirstRows:
    """Page 1 read with a row more before counting (the admin kit's lists): a short list's rows are its
    count, a longer one is counted as before."""

    def test_fewer_rows_than_asked_are_the_count_and_nothing_is_counted(self):
        from platform_events.db.estimates import EstimatingPaginator

        AccountFactory.create_batch(2)
        paginator = EstimatingPaginator(Account.objects.order_by("pk"), 2)

        with CaptureQueriesContext(connection) as queries:
            rows = paginator.first_rows(3)
            count = paginator.count

        assert [row.pk for row in rows] == sorted(Account.objects.values_list("pk", flat=True))
        assert count == 2 and len(queries) == 1 and "COUNT(" not in queries[0]["sql"].upper()

    def test_as_many_rows_as_asked_leave_the_count_to_be_counted(self):
        from platform_events.db.estimates import EstimatingPaginator

        AccountFactory.create_batch(4)
        paginator = EstimatingPaginator(Account.objects.order_by("pk"), 2)

        assert len(paginator.first_rows(3)) == 3
        with CaptureQueriesContext(connection) as queries:
            assert paginator.count == 4
        assert len(queries) == 1 and "COUNT(" in queries[0]["sql"].upper()
