import pytest
from django.db import connection, transaction
from django.db.transaction import TransactionManagementError
from django.test.utils import CaptureQueriesContext

from accounts.models import Account
from lifecycle.demo.factories import AccountFactory
from platform_events.db.savepoints import savepoints_skipped

pytestmark = pytest.mark.django_db(transaction=True)


def _savepoint_statements(queries) -> list[str]:
    return [query["sql"] for query in queries.captured_queries if "SAVEPOINT" in query["sql"].upper()]


def test_atomic_blocks_within_make_no_savepoint():
    """An atomic block opened within savepoints_skipped() sends neither SAVEPOINT nor RELEASE SAVEPOINT."""
    with transaction.atomic(), savepoints_skipped(), CaptureQueriesContext(connection) as queries:
        with transaction.atomic():
            AccountFactory()

    assert _savepoint_statements(queries) == []
    assert Account.objects.count() == 1


def test_blocks_opened_after_it_make_savepoints_again():
    """Once savepoints_skipped() is left, a nested atomic block makes its savepoint as Django's does."""
    with transaction.atomic():
        with savepoints_skipped():
            pass
        with CaptureQueriesContext(connection) as queries, transaction.atomic():
            AccountFactory()

    assert _savepoint_statements(queries)[0].startswith("SAVEPOINT")


def test_a_failure_within_rolls_the_whole_transaction_back():
    """A block that failed without a savepoint spoils the whole transaction: a statement after it is
    refused, and nothing of the transaction stays, the rows written before the block included."""
    with pytest.raises(TransactionManagementError), transaction.atomic(), savepoints_skipped():
        AccountFactory()
        try:
            with transaction.atomic():
                AccountFactory()
                raise ValueError("the block fails")
        except ValueError:
            pass
        Account.objects.count()

    assert not Account.objects.exists()


def test_outside_a_transaction_it_is_refused():
    """Outside an atomic block there is no transaction to roll back whole: refused."""
    with pytest.raises(TransactionManagementError, match="inside an atomic block"), savepoints_skipped():
        pass
