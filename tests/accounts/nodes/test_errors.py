"""Node assignment's refusals (accounts/nodes/errors.py): the database's refusal of a client's report
is raised as the kind its HINT names, with tokenserver's code; one without a HINT as InvalidUpdate."""

import pytest
from django.db import connection

from accounts.nodes.errors import InvalidGeneration, InvalidKeysChangedAt, InvalidUpdate
from platform_events.db.refusals import lifecycle_rules
from tests.accounts.nodes.conftest import SERVICE

pytestmark = pytest.mark.django_db


def change(uid: int, assignment: str) -> None:
    with lifecycle_rules(), connection.cursor() as cursor:
        cursor.execute(f"UPDATE node_assignments SET {assignment} WHERE uid = %s", [uid])


@pytest.fixture
def uid(nodes, account):
    assigned = nodes.assignment_allocate(service=SERVICE, account_id=account(), generation=10, keys_changed_at=5)
    return assigned.uid


@pytest.mark.parametrize(
    ("assignment", "kind", "tokenserver_code"),
    [
        ("generation = 9", InvalidGeneration, "invalid-generation"),
        ("keys_changed_at = 4", InvalidKeysChangedAt, "invalid-keysChangedAt"),
    ],
)
def test_a_refused_report_is_the_kind_the_database_names_with_tokenserver_s_code(
    uid, assignment, kind, tokenserver_code
):
    with pytest.raises(kind, match="^nodes: ") as refused:
        change(uid, assignment)
    assert refused.value.tokenserver_code == tokenserver_code


def test_a_refused_move_without_a_code_is_an_invalid_update(nodes, uid):
    nodes.node_add(service=SERVICE, node="https://phx13", capacity=100, actor=None)
    with pytest.raises(InvalidUpdate, match="does not move between nodes") as refused:
        change(uid, "node = (SELECT id FROM nodes WHERE node = 'https://phx13')")
    assert type(refused.value) is InvalidUpdate
    assert (refused.value.code, refused.value.tokenserver_code) == ("invalid-update", None)
