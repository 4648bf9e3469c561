"""Lists never COUNT(*) a large table: exact up to the limit, the estimate (and the page says so) past it."""

import pytest
from django.urls import reverse

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
