"""Storage-node assignments across deprovisioning and reprovisioning (accounts/sql/0021_deprovision.sql,
accounts/sql/0022_node_unretire.sql): retired with the generation kept, given back only by an audited
reset after reprovisioning; tried through the services and as the runtime role in raw SQL."""

import pytest
from django.core.management import CommandError, call_command

from accounts.models import AccountStatus
from accounts.nodes.errors import Retired
from accounts.nodes.models import MAX_GENERATION, NodeAssignment
from accounts.nodes.sync import assignment_sync
from accounts.services import account_deprovision, account_reprovision
from lifecycle.demo.factories import AccountFactory
from platform_events.audit.models import AuditEvent
from tests.accounts.nodes.conftest import SERVICE
from tests.support import connect, deprovisioning_waits_for
from tokens.models import TokenAction
from tokens.services import token_consume, token_request_mail

pytestmark = pytest.mark.django_db

CLIENT_STATE = "aa" * 16


@pytest.fixture
def synced(nodes):
    """An active account whose client synced at generation 7 (tokenserver's sync: a node and a row)."""
    account = AccountFactory(active=True)
    assignment_sync(service=SERVICE, account_id=account.pk, generation=7, client_state=CLIENT_STATE)
    return account


def rows(account) -> list[tuple]:
    return list(
        NodeAssignment.objects.filter(account_id=account.pk)
        .order_by("uid")
        .values_list("generation", "retired_generation", "replaced_at")
    )


def test_deprovisioning_retires_the_rows_keeping_their_generation_and_the_client_is_refused(synced):
    account_deprovision(account=synced, actor=None)
    ((generation, kept, replaced_at),) = rows(synced)
    assert (generation, kept) == (MAX_GENERATION, 7) and replaced_at is not None
    assert AuditEvent.objects.filter(action="node_assignment.retired", resource_id=str(synced.pk)).count() == 1
    with pytest.raises(Retired):
        assignment_sync(service=SERVICE, account_id=synced.pk, generation=7, client_state=CLIENT_STATE)
    assert len(rows(synced)) == 1  # no new row for a retired account


def test_reprovisioning_gives_the_storage_back_with_the_generation_it_had(synced):
    account_deprovision(account=synced, actor=None)
    account_reprovision(account=synced, actor=None)
    retired, fresh = rows(synced)
    assert retired[:2] == (7, 7) and retired[2] is not None  # given back, and still replaced: its data is purged
    assert fresh == (7, None, None)
    state, made = assignment_sync(service=SERVICE, account_id=synced.pk, generation=7, client_state=CLIENT_STATE)
    assert not made and state.generation == 7
    # An older credential is still refused: the history did not go below what it was.
    with pytest.raises(Exception, match="generation"):
        assignment_sync(service=SERVICE, account_id=synced.pk, generation=6, client_state=CLIENT_STATE)
    reset = AuditEvent.objects.filter(action="node_assignment.changed", resource_id=str(synced.pk))
    assert [event.reason for event in reset] == ["the account was reprovisioned"]


def test_restoring_by_the_persons_link_gives_the_storage_back_too(synced):
    account_deprovision(account=synced, actor=None)
    token = token_request_mail(identifier=synced.email, action=TokenAction.RESTORE, actor=None)
    token_consume(secret=bytes(token.secret), action=TokenAction.RESTORE, actor=None)
    synced.refresh_from_db()
    assert synced.status == AccountStatus.PROVISIONED
    assert rows(synced)[-1] == (7, None, None)


def test_an_operators_reset_of_a_deprovisioned_account_is_refused_in_one_sentence(synced):
    account_deprovision(account=synced, actor=None)
    with pytest.raises(CommandError, match=f"account {synced.pk} is deprovisioned.*reprovision it first"):
        call_command("reset_node_assignment", SERVICE, str(synced.pk), "--reason", "try")
    assert rows(synced)[0][:2] == (MAX_GENERATION, 7)


def test_a_reset_after_a_reprovisioning_made_by_hand_gives_the_storage_back(synced, sql, capsys):
    """Reprovisioned in psql: nothing resets the nodes by itself; the operator's command does."""
    account_deprovision(account=synced, actor=None)
    sql("UPDATE accounts SET status = 'provisioned' WHERE id = %s", [synced.pk])
    assert rows(synced)[0][:2] == (MAX_GENERATION, 7)  # never by itself
    call_command("reset_node_assignment", SERVICE, str(synced.pk), "--reason", "asked by the person")
    assert "1 row retired by its deprovisioning got back the generation they had" in capsys.readouterr().out
    assert rows(synced)[-1] == (7, None, None)


class TestTheRuntimeRoleInRawSQL:
    def test_no_tombstone_is_lowered_while_the_account_is_deprovisioned(self, synced, refused):
        account_deprovision(account=synced, actor=None)
        refused(
            "UPDATE node_assignments SET generation = retired_generation WHERE account = %s",
            [synced.pk],
            match="generation never goes backwards",
        )

    def test_a_tombstone_goes_back_only_to_the_generation_it_had(self, synced, sql, refused):
        account_deprovision(account=synced, actor=None)
        sql("UPDATE accounts SET status = 'provisioned' WHERE id = %s", [synced.pk])
        refused(
            "UPDATE node_assignments SET generation = 3 WHERE account = %s",
            [synced.pk],
            match="generation never goes backwards",
        )

    def test_retired_generation_is_the_databases_to_write(self, synced, sql, refused):
        account_deprovision(account=synced, actor=None)
        sql("UPDATE accounts SET status = 'provisioned' WHERE id = %s", [synced.pk])
        refused(
            "UPDATE node_assignments SET retired_generation = 2 WHERE account = %s",
            [synced.pk],
            match="retired_generation is the generation a row had",
        )
        other = AccountFactory(active=True)
        refused(
            "INSERT INTO node_assignments (service, account, generation, retired_generation)"
            " SELECT id, %s, 0, 0 FROM services LIMIT 1",
            [other.pk],
            match="retired_generation is the generation a row had",
        )

    def test_a_clients_tombstone_is_never_lifted(self, synced, sql, refused):
        """Retired by the node consumer (a deleted account's way) or the client: no retired_generation."""
        sql("SELECT node_routine_retire(%s)", [synced.pk])
        account_deprovision(account=synced, actor=None)
        sql("UPDATE accounts SET status = 'provisioned' WHERE id = %s", [synced.pk])
        refused(
            "UPDATE node_assignments SET generation = 7 WHERE account = %s",
            [synced.pk],
            match="generation never goes backwards",
        )
        with pytest.raises(CommandError, match="were retired"):
            call_command("reset_node_assignment", SERVICE, str(synced.pk), "--reason", "try")

    def test_a_lift_by_hand_after_reprovisioning_is_audited_in_full(self, synced, sql):
        account_deprovision(account=synced, actor=None)
        sql("UPDATE accounts SET status = 'provisioned' WHERE id = %s", [synced.pk])
        sql("UPDATE node_assignments SET generation = retired_generation WHERE account = %s", [synced.pk])
        (event,) = AuditEvent.objects.filter(action="node_assignment.changed", resource_id=str(synced.pk))
        assert (event.diff_before["generation"], event.diff_after["generation"]) == (MAX_GENERATION, 7)

    @pytest.mark.attack
    def test_no_row_is_made_for_a_deprovisioned_account_whoever_writes(self, nodes, refused):
        """Typed as the runtime role, or a client's routine allocation: refused, with or without rows before."""
        account = AccountFactory(active=True)
        account_deprovision(account=account, actor=None)
        refused(
            "INSERT INTO node_assignments (service, account, node, generation)"
            " SELECT s.id, %s, n.id, 30 FROM services s JOIN nodes n ON n.service = s.id",
            [account.pk],
            match=f"account {account.pk} is deprovisioned; it gets no node",
        )
        refused(
            "SELECT node_routine_allocate(s.id, %s, 0, '', NULL, 0.1) FROM services s",
            [account.pk],
            match=f"account {account.pk} is deprovisioned; it gets no node",
        )
        assert rows(account) == []


@pytest.mark.django_db(transaction=True)
def test_a_deprovisioning_waits_for_a_row_being_made_and_retires_it_too(nodes):
    """The row's insert holds the account FOR SHARE until it commits: the deprovisioning waits, then
    retires the new row as well. (FOR KEY SHARE let the status change pass, and the row stayed live.)"""
    account = AccountFactory(active=True)
    with connect() as allocating:
        allocating.execute("SELECT node_routine_allocate(s.id, %s, 0, '', NULL, 0.1) FROM services s", [account.pk])
        deprovisioning_waits_for(allocating, account.pk)
    assert [(generation, kept) for generation, kept, _ in rows(account)] == [(MAX_GENERATION, 0)]
