"""A client's routine moves are not audited, and that stays within the service call that made them: an
operator's change later in the same transaction (a request's, a test's) is audited all the same."""

import pytest

from accounts.nodes import services
from lifecycle.demo.factories import AccountFactory
from platform_events.audit.models import AuditEvent
from tests.accounts.nodes.conftest import NODE_URL, SERVICE

pytestmark = pytest.mark.django_db


def test_an_operators_unassign_after_a_routine_allocation_in_the_same_transaction_is_audited(nodes, sql):
    services.assignment_allocate(service=SERVICE, account_id=AccountFactory().id)
    assert not AuditEvent.objects.filter(action="node_assignment.created").exists()
    assert services.node_unassign(service=SERVICE, node=NODE_URL, actor=None, reason="moving") == 1
    (event,) = AuditEvent.objects.filter(action="node.unassigned")
    assert (event.reason, event.diff_after) == ("moving", {"assignments": 1})
    assert sql("SELECT coalesce(current_setting('lifecycle.node_routine', true), '')") == [("",)]
