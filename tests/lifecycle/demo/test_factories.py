"""The factories the tests and the demo share make accounts through the real lifecycle."""

import pytest

from accounts.models import AccountStatus
from lifecycle.demo.factories import AccountFactory

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("traits", "status", "activated"),
    [
        ({}, AccountStatus.PROVISIONED, False),
        ({"active": True}, AccountStatus.ACTIVE, True),
        ({"suspended": True}, AccountStatus.SUSPENDED, True),
        ({"suspended": True, "was_activated": False}, AccountStatus.SUSPENDED, False),
    ],
)
def test_factory_traits_live_through_the_real_lifecycle(traits, status, activated):
    account = AccountFactory(**traits)
    assert account.status == status
    assert (account.activated_at is not None) == activated
