"""The client API's node assignment (GET and PUT /services/{service}/accounts/{account_id}/node), over
Django's test client: what each answers (tokenserver's token request and its refusals) and what the
database holds after it."""

import io
import json
import threading
import time

import httpx
import pytest
from django.core.management import call_command

from accounts.nodes import services
from accounts.nodes.models import Node
from accounts.nodes.selectors import assignment_records
from accounts.nodes.services import MAX_GENERATION
from lifecycle.demo.factories import AccountFactory
from platform_events.audit.models import AuditEvent
from tests.lifecycle.api.conftest import new_key
from tests.support import connect, connect_as_owner, wait_until_blocked

pytestmark = pytest.mark.django_db

SERVICE = "sync-1.5"
NODE_URL = "https://phx12"
STATE_A, STATE_B, STATE_C = "aa" * 16, "bb" * 16, "cc" * 16


def problem_type(response) -> str:
    assert response["Content-Type"] == "application/problem+json", response.content
    return response.json()["type"].removeprefix("/api/v1/problems/")


def path(account_id: int, service: str = SERVICE) -> str:
    return f"/services/{service}/accounts/{account_id}/node"


@pytest.fixture
def sync_service(db):
    """tokenserver's test set-up: the sync-1.5 service with one node of capacity 100."""
    services.service_add(service=SERVICE, pattern="{node}/1.5/{uid}")
    services.node_add(service=SERVICE, node=NODE_URL, capacity=100, actor=None)


@pytest.fixture
def account_id(sync_service):
    return AccountFactory(active=True).pk


def rows(account_id: int) -> list[tuple]:
    """The account's rows as the database holds them: (uid, node, generation, keys_changed_at,
    client_state, live), oldest first."""
    return [
        (r.uid, r.node, r.generation, r.keys_changed_at, r.client_state, r.replaced_at is None)
        for r in assignment_records(service=SERVICE, account_id=account_id)
    ]


def live_rows(account_id: int) -> list[tuple]:
    return [row for row in rows(account_id) if row[-1]]


# Reading


def test_get_of_an_account_never_seen_is_404_no_assignment_and_writes_nothing(api, account_id):
    """GET never allocates: an account with no assignment is 404 no-assignment, and still has none."""
    response = api.get(path(account_id))

    assert response.status_code == 404
    assert problem_type(response) == "no-assignment"
    assert rows(account_id) == []


def test_put_allocates_on_first_sight_and_get_then_reads_the_same(api, account_id):
    """The first PUT gives the account a node with the report's values (201); GET answers the same body."""
    report = {"generation": 1234, "keys_changed_at": 1200, "client_state": STATE_A}

    made = api.put(path(account_id), report)

    assert made.status_code == 201, made.content
    body = made.json()
    assert {k: body[k] for k in ("service", "account_id", "node", *report)} == {
        "service": SERVICE,
        "account_id": account_id,
        "node": NODE_URL,
        **report,
    }
    assert set(body) == {
        "service",
        "account_id",
        "node",
        "uid",
        "generation",
        "keys_changed_at",
        "client_state",
        "first_seen_at",
    }
    assert api.get(path(account_id)).json() == body
    assert rows(account_id) == [(body["uid"], NODE_URL, 1234, 1200, STATE_A, True)]


def test_the_same_put_twice_leaves_the_same_state(api, account_id):
    """PUT is idempotent by its rules: the same report again is 200 with the same body, and no new row."""
    report = {"generation": 10, "keys_changed_at": 10, "client_state": STATE_A}

    first = api.put(path(account_id), report)
    second = api.put(path(account_id), report)

    assert (first.status_code, second.status_code) == (201, 200)
    assert second.json() == first.json()
    assert len(rows(account_id)) == 1


def test_put_needs_no_idempotency_key(api, account_id):
    """Idempotency-Keys guard POSTs only: a PUT without one is served, and leaves no key row."""
    from platform_events.api.models import IdempotencyKey

    response = api.put(path(account_id), {})

    assert response.status_code == 201
    assert not IdempotencyKey.objects.exists()


def test_an_empty_report_on_first_sight_gives_a_node_with_no_keys(api, account_id):
    """An empty body is a report of nothing: a node, generation 0, no keys_changed_at, empty client state."""
    body = api.put(path(account_id), {}).json()

    assert (body["node"], body["generation"], body["keys_changed_at"], body["client_state"]) == (NODE_URL, 0, None, "")


def test_get_after_the_node_was_unassigned_has_no_node_and_writes_nothing(api, account_id):
    """A replaced assignment is read with node and uid null and its keys (no fresh node given by GET);
    the next PUT gives a fresh node keeping the keys (200: the assignment existed)."""
    first = api.put(path(account_id), {"generation": 5, "client_state": STATE_A}).json()
    services.node_unassign(service=SERVICE, node=NODE_URL, actor=None, reason="disk swap")

    read = api.get(path(account_id))

    assert read.status_code == 200
    assert read.json() == {**first, "node": None, "uid": None}
    assert live_rows(account_id) == []
    again = api.put(path(account_id), {"generation": 5, "client_state": STATE_A})
    assert again.status_code == 200
    assert again.json()["uid"] != first["uid"] and again.json()["node"] == NODE_URL
    assert (again.json()["generation"], again.json()["client_state"]) == (5, STATE_A)
    assert again.json()["first_seen_at"] == first["first_seen_at"]


# The rules (tokenserver's validate and update_user)


def test_a_higher_generation_moves_the_live_row_in_place(api, account_id):
    """Numbers alone update the live row: same uid, the new generation."""
    first = api.put(path(account_id), {"generation": 5}).json()

    moved = api.put(path(account_id), {"generation": 9})

    assert moved.status_code == 200
    assert (moved.json()["uid"], moved.json()["generation"]) == (first["uid"], 9)
    assert len(rows(account_id)) == 1


def test_a_new_keys_changed_at_without_a_generation_moves_the_generation_too(api, account_id):
    """tokenserver: a key change reported with no generation is an authentication change, so the
    generation moves to keys_changed_at when that is above it."""
    api.put(path(account_id), {"generation": 5, "keys_changed_at": 5})

    moved = api.put(path(account_id), {"keys_changed_at": 8})

    assert (moved.json()["generation"], moved.json()["keys_changed_at"]) == (8, 8)


def test_zero_means_not_reported(api, account_id):
    """As tokenserver: generation 0 and keys_changed_at 0 are "not reported", not a step back."""
    api.put(path(account_id), {"generation": 5})

    response = api.put(path(account_id), {"generation": 0})

    assert response.status_code == 200 and response.json()["generation"] == 5


def test_a_lower_generation_is_invalid_generation(api, account_id):
    """A generation below the account's is refused: 409 invalid-generation (tokenserver's code in
    "code"), and the row stays as it was."""
    api.put(path(account_id), {"generation": 10, "client_state": STATE_A})
    before = rows(account_id)

    response = api.put(path(account_id), {"generation": 9, "client_state": STATE_A})

    assert response.status_code == 409
    assert problem_type(response) == "invalid-generation"
    assert response.json()["code"] == "invalid-generation"
    assert rows(account_id) == before


def test_a_lower_keys_changed_at_is_invalid_keys_changed_at(api, account_id):
    """A keys_changed_at below the account's is refused: 409 with tokenserver's invalid-keysChangedAt."""
    api.put(path(account_id), {"generation": 10, "keys_changed_at": 10})
    before = rows(account_id)

    response = api.put(path(account_id), {"generation": 10, "keys_changed_at": 9})

    assert response.status_code == 409
    assert problem_type(response) == "invalid-keys-changed-at"
    assert response.json()["code"] == "invalid-keysChangedAt"
    assert rows(account_id) == before


def test_keys_changed_at_above_the_generation_reported_is_refused(api, account_id):
    """Keys changing is an authentication change: a new keys_changed_at above the generation reported
    with it is refused (invalid-keysChangedAt)."""
    api.put(path(account_id), {"generation": 10, "keys_changed_at": 10})
    before = rows(account_id)

    response = api.put(path(account_id), {"generation": 11, "keys_changed_at": 12, "client_state": STATE_B})

    assert response.status_code == 409
    assert response.json()["code"] == "invalid-keysChangedAt"
    assert rows(account_id) == before


def test_keys_changed_at_cannot_be_left_out_once_the_account_has_one(api, account_id):
    """Once a keys_changed_at was seen, a report without one is refused (invalid-keysChangedAt)."""
    api.put(path(account_id), {"generation": 10, "keys_changed_at": 10})

    response = api.put(path(account_id), {"generation": 11})

    assert response.status_code == 409
    assert response.json()["code"] == "invalid-keysChangedAt"
    assert rows(account_id)[0][2] == 10


def test_a_new_client_state_with_new_numbers_replaces_the_assignment_on_the_same_node(api, account_id):
    """New keys: a new row (new uid) on the same node with the new numbers; the old row is replaced;
    one live row."""
    first = api.put(path(account_id), {"generation": 10, "keys_changed_at": 10, "client_state": STATE_A}).json()

    changed = api.put(path(account_id), {"generation": 20, "keys_changed_at": 20, "client_state": STATE_B})

    assert changed.status_code == 200
    body = changed.json()
    assert body["uid"] != first["uid"] and body["node"] == first["node"]
    assert (body["generation"], body["keys_changed_at"], body["client_state"]) == (20, 20, STATE_B)
    assert body["first_seen_at"] == first["first_seen_at"]
    assert rows(account_id) == [
        (first["uid"], NODE_URL, 10, 10, STATE_A, False),
        (body["uid"], NODE_URL, 20, 20, STATE_B, True),
    ]


@pytest.mark.parametrize(
    ("report", "why"),
    [
        ({"generation": 20, "keys_changed_at": 20, "client_state": STATE_A}, "used before"),
        ({"generation": 10, "client_state": STATE_C}, "no generation change"),
        ({"generation": 20, "keys_changed_at": 10, "client_state": STATE_C}, "no keys_changed_at change"),
        ({"generation": 20, "keys_changed_at": 20, "client_state": ""}, "emptied"),
    ],
)
def test_a_client_state_that_does_not_follow_the_history_is_invalid_client_state(api, account_id, report, why):
    """A client state used before, emptied, or new without a higher generation or keys_changed_at is
    refused: 409 invalid-client-state, and nothing changes."""
    api.put(path(account_id), {"generation": 5, "keys_changed_at": 5, "client_state": STATE_A})
    api.put(path(account_id), {"generation": 10, "keys_changed_at": 10, "client_state": STATE_B})
    before = rows(account_id)

    response = api.put(path(account_id), report)

    assert response.status_code == 409, why
    assert problem_type(response) == "invalid-client-state"
    assert response.json()["code"] == "invalid-client-state"
    assert rows(account_id) == before


def test_a_report_refused_after_a_fresh_node_was_due_leaves_no_fresh_node(api, account_id):
    """The fresh node an unassigned account would get is given in the same transaction as the check:
    a refused report leaves the account without one."""
    api.put(path(account_id), {"generation": 10})
    services.node_unassign(service=SERVICE, node=NODE_URL, actor=None)
    before = rows(account_id)

    response = api.put(path(account_id), {"generation": 9})

    assert response.status_code == 409
    assert rows(account_id) == before and live_rows(account_id) == []


def test_a_clients_allocation_and_unchanged_reports_are_not_in_the_audit_trail(api, account_id):
    """A client's first report (its allocation) and reports that change nothing are routine: no audit row."""
    api.put(path(account_id), {"generation": 1, "client_state": STATE_A})
    api.put(path(account_id), {"generation": 1, "client_state": STATE_A})

    assert not AuditEvent.objects.filter(action__startswith="node_assignment.").exists()


def test_new_keys_and_a_raised_generation_are_audited_as_the_client(api, account_id):
    """A client's new keys and a generation it raises: one compact row each, as the API client (SERVICE),
    without the client state."""
    api.put(path(account_id), {"generation": 1, "client_state": STATE_A})
    api.put(path(account_id), {"generation": 2, "client_state": STATE_B})
    api.put(path(account_id), {"generation": 9, "client_state": STATE_B})

    keys = AuditEvent.objects.get(action="node_assignment.keys_changed")
    raised = AuditEvent.objects.get(action="node_assignment.generation_raised")
    assert {(e.actor_type, e.actor_id, e.resource_id) for e in (keys, raised)} == {
        ("SERVICE", f"api-client:{api.api_client.pk}", str(account_id))
    }
    assert (keys.diff_before["generation"], keys.diff_after["generation"]) == (1, 2)
    assert (raised.diff_before["generation"], raised.diff_after["generation"]) == (2, 9)
    assert STATE_A not in str(keys.diff_before) and STATE_B not in str(keys.diff_after)


# Bounds on what one client can do: the node's room, the numbers' clock, the key changes' pace


def now_ms() -> int:
    return int(time.time() * 1000)


def key_change(number: int) -> dict:
    """The report of a client whose keys changed for the ``number``-th time: new numbers, a new state."""
    return {"generation": 1000 + number, "keys_changed_at": 1000 + number, "client_state": f"{number:02x}" * 16}


@pytest.fixture
def small_node(db):
    """A service whose one node takes 5 accounts."""
    services.service_add(service="small", pattern="{node}/1.5/{uid}")
    services.node_add(service="small", node="https://small1", capacity=5, available=5, actor=None)


def test_one_accounts_key_changes_leave_its_node_room_for_other_accounts(api, small_node, settings):
    """Each key change replaces the account's row on its node, and a replaced row holds no slot: after
    17 key changes of one account, the node of capacity 5 serves 1 account and takes 4 more."""
    settings.NODE_KEY_CHANGES_PER_HOUR = 100
    changer = AccountFactory(active=True).pk
    for number in range(18):
        assert api.put(path(changer, "small"), key_change(number)).status_code in (200, 201)

    node = Node.objects.get(node="https://small1")
    assert (node.current_load, node.capacity) == (1, 5)
    others = [api.put(path(AccountFactory(active=True).pk, "small"), {}) for _ in range(4)]
    assert [response.status_code for response in others] == [201] * 4


def test_key_changes_past_the_hourly_bound_are_429_with_retry_after_and_change_nothing(api, account_id, settings):
    """NODE_KEY_CHANGES_PER_HOUR new client states an hour per account and service; the next is 429
    too-many-key-changes, with Retry-After, and the account's rows stay as they were."""
    settings.NODE_KEY_CHANGES_PER_HOUR = 3
    assert api.put(path(account_id), key_change(0)).status_code == 201
    for number in (1, 2, 3):
        assert api.put(path(account_id), key_change(number)).status_code == 200
    before = rows(account_id)

    response = api.put(path(account_id), key_change(4))

    assert response.status_code == 429, response.content
    assert problem_type(response) == "too-many-key-changes"
    assert 0 < int(response["Retry-After"]) <= 3600
    assert rows(account_id) == before
    # Numbers alone still move: the bound is on new keys, not on syncs.
    assert api.put(path(account_id), {"generation": 2000, "keys_changed_at": 1003}).status_code == 200


@pytest.mark.parametrize("name", ["generation", "keys_changed_at"])
@pytest.mark.parametrize("ahead", [2**63 - 2, "margin"])
def test_a_number_far_in_the_future_is_422_and_the_real_client_is_served_after_it(
    api, account_id, settings, name, ahead
):
    """A generation or keys_changed_at more than NODE_CLOCK_MARGIN_SECONDS ahead of the clock (2^63-2,
    or just past the margin) is refused: 422, and the account is not wedged: its real client's next
    report is served."""
    settings.NODE_CLOCK_MARGIN_SECONDS = 300
    api.put(path(account_id), {"generation": now_ms() - 1000, "keys_changed_at": now_ms() - 1000})
    before = rows(account_id)
    value = ahead if ahead != "margin" else now_ms() + 301_000
    report = {"keys_changed_at": now_ms() - 1000} | {name: value}

    response = api.put(path(account_id), report)

    assert response.status_code == 422, response.content
    assert problem_type(response) == f"{name.replace('_', '-')}-in-future"
    assert "in the future" in response.json()["detail"]
    assert rows(account_id) == before
    real = now_ms()
    assert api.put(path(account_id), {"generation": real, "keys_changed_at": real}).status_code == 200
    assert rows(account_id)[-1][2:4] == (real, real)


@pytest.mark.django_db(transaction=True)  # the owner's ALTER TABLE waits for every open transaction on the table
def test_an_account_wedged_by_a_number_from_the_future_is_freed_by_reset_node_assignment(api, account_id):
    """An account whose generation was set to 2^63-2 before the rules refused it (here by the owner,
    the rule switched off) refuses its real client; reset_node_assignment lowers the number to its
    highest real one and gives it fresh storage, after which the real client is served."""
    real = now_ms() - 60_000
    api.put(path(account_id), {"generation": real, "keys_changed_at": real, "client_state": STATE_A})
    with connect_as_owner(autocommit=True) as owner:
        owner.execute("ALTER TABLE node_assignments DISABLE TRIGGER before_node_assignment_clock")
        try:
            owner.execute("UPDATE node_assignments SET generation = %s WHERE account = %s", [2**63 - 2, account_id])
        finally:
            owner.execute("ALTER TABLE node_assignments ENABLE TRIGGER before_node_assignment_clock")
    assert api.put(path(account_id), {"generation": now_ms(), "keys_changed_at": real}).status_code == 409

    output = io.StringIO()
    call_command("reset_node_assignment", SERVICE, str(account_id), "--reason", "wedged", stdout=output)

    assert "numbers from the future lowered on 1 row" in output.getvalue()
    later = now_ms()
    served = api.put(path(account_id), {"generation": later, "keys_changed_at": real})
    assert served.status_code == 200, served.content
    assert (served.json()["generation"], served.json()["client_state"]) == (later, STATE_A)
    # The old row kept no real generation (it was overwritten): lowered to 0; the fresh row has the report's.
    assert [row[2] for row in rows(account_id)] == [0, later]


def test_a_number_within_the_clock_margin_is_taken(api, account_id, settings):
    """A client whose numbers are a little ahead of this server's clock (within the margin) is served."""
    settings.NODE_CLOCK_MARGIN_SECONDS = 300
    ahead = now_ms() + 200_000

    response = api.put(path(account_id), {"generation": ahead, "keys_changed_at": ahead})

    assert response.status_code == 201 and response.json()["generation"] == ahead


# Capacity, unknown names, retirement


def test_no_capacity_is_503_with_retry_after_and_writes_nothing(api, account_id):
    """No node can take the account (the only one is down): 503 no-capacity with Retry-After."""
    services.node_update(service=SERVICE, node=NODE_URL, downed=True, actor=None)

    response = api.put(path(account_id), {"generation": 1})

    assert response.status_code == 503
    assert problem_type(response) == "no-capacity"
    assert int(response["Retry-After"]) > 0
    assert rows(account_id) == []


def test_an_unknown_service_is_404(api, account_id):
    """A service nobody added is 404 not-found, for GET and PUT, and nothing is written."""
    for response in (api.get(path(account_id, "mail")), api.put(path(account_id, "mail"), {})):
        assert response.status_code == 404
        assert problem_type(response) == "not-found"
    assert rows(account_id) == []


def test_an_unknown_account_is_404_as_the_account_endpoint_says(api, sync_service):
    """An account that does not exist is 404 not-found, with the same detail GET /accounts/{id} gives."""
    account_answer = api.get("/accounts/999999")

    for response in (api.get(path(999999)), api.put(path(999999), {})):
        assert response.status_code == 404
        assert response.json() == account_answer.json()


def test_a_deleted_and_retired_account_is_404_like_one_that_never_was(api, account_id, sql):
    """A deleted account's retired rows stay (until purged) but tell nothing: the same 404 as an id
    nobody had, for GET and PUT, and no row is added."""
    api.put(path(account_id), {"generation": 3, "client_state": STATE_A})
    sql("DELETE FROM accounts WHERE id = %s", [account_id])
    services.assignments_retire(account_id=account_id)
    before = rows(account_id)

    for response in (api.get(path(account_id)), api.put(path(account_id), {"generation": 4})):
        assert response.status_code == 404
        assert response.json() == {**api.get("/accounts/999999").json(), "detail": f"there is no account {account_id}"}
    assert rows(account_id) == before


def test_the_database_refuses_an_assignment_for_a_deleted_account(account_id, sql):
    """Whoever writes, an assignment is only made for an account that exists (the API's 404 account-gone,
    when the account goes between the API's check and the insert: see the concurrency tests below)."""
    from accounts.nodes.errors import UnknownName
    from accounts.nodes.sync import assignment_sync

    sql("DELETE FROM accounts WHERE id = %s", [account_id])

    with pytest.raises(UnknownName, match=f"nodes: account {account_id} does not exist"):
        assignment_sync(service=SERVICE, account_id=account_id, generation=1)
    assert rows(account_id) == []


def test_a_retired_account_that_still_exists_is_410(api, account_id):
    """An account whose assignments were retired (the tombstone generation) is served no node again:
    410 assignment-retired for GET and PUT, and nothing changes."""
    api.put(path(account_id), {"generation": 3})
    services.assignments_retire(account_id=account_id)
    before = rows(account_id)

    for response in (api.get(path(account_id)), api.put(path(account_id), {"generation": 4})):
        assert response.status_code == 410
        assert problem_type(response) == "assignment-retired"
    assert rows(account_id) == before and before[0][2] == MAX_GENERATION


# Scopes and bad input


def test_each_operation_needs_its_scope(make_api, account_id):
    """GET needs accounts:read and PUT accounts:write: a read-only key cannot PUT (403 insufficient-scope,
    nothing written), a write-only key cannot GET."""
    reader, writer, checker = make_api("accounts:read"), make_api("accounts:write"), make_api("sessions")

    for refused in (reader.put(path(account_id), {"generation": 1}), checker.put(path(account_id), {})):
        assert refused.status_code == 403 and problem_type(refused) == "insufficient-scope"
    assert rows(account_id) == []
    for refused in (writer.get(path(account_id)), checker.get(path(account_id))):
        assert refused.status_code == 403 and problem_type(refused) == "insufficient-scope"
    assert writer.put(path(account_id), {"generation": 1}).status_code == 201
    assert reader.get(path(account_id)).status_code == 200


def test_no_key_is_401(client, account_id):
    """Without a key, both operations are 401 with WWW-Authenticate."""
    for response in (client.get(f"/api/v1{path(account_id)}"), client.put(f"/api/v1{path(account_id)}", {})):
        assert response.status_code == 401 and response["WWW-Authenticate"].startswith("Bearer")


@pytest.mark.parametrize(
    "body",
    [
        {"client_state": "not hex"},
        {"client_state": "AB" * 4},  # the database holds lowercase hex only
        {"client_state": "abc"},  # half a byte
        {"client_state": "ab" * 17},  # over 16 bytes
        {"client_state": "ab\n"},
        {"client_state": 12},
        {"generation": -1},
        {"generation": "5"},
        {"generation": True},
        {"generation": 1.5},
        {"generation": MAX_GENERATION},  # the tombstone: a client would retire itself
        {"generation": 2**63},
        {"keys_changed_at": -1},
        {"keys_changed_at": 2**63},
        {"generation": 1, "node": "https://evil"},  # an extra field is refused, not ignored
        [],
    ],
)
def test_a_bad_body_is_422_and_writes_nothing(api, account_id, body):
    """A body the schema refuses is 422 validation-failed, and the account gets no node."""
    response = api.put(path(account_id), body)

    assert response.status_code == 422, (body, response.content)
    assert problem_type(response) == "validation-failed"
    assert rows(account_id) == []


@pytest.mark.parametrize("service", ["Sync", "sync 1.5", "-sync", "s" * 31])
def test_a_bad_service_name_is_422(api, account_id, service):
    """A service name the database could not hold is refused by the schema (422), not looked up."""
    response = api.put(path(account_id, service), {})

    assert response.status_code == 422 and problem_type(response) == "validation-failed"


@pytest.mark.parametrize("service", ["sync-2", "a", "0.x_y-z", "s" * 30, "s" * 31, "Sync", "-sync", ".sync", "ſync"])
def test_the_path_checks_a_service_name_by_the_services_own_rule(api, account_id, service):
    """A name the services' check refuses is 422 before any look-up; one it allows is looked up (404
    when no service has it). The path's pattern and length are the services' rule, not a copy."""
    response = api.get(path(account_id, service))

    assert response.status_code == (422 if services.service_name_problem(service) else 404), response.content


@pytest.mark.parametrize("raw", [b"{not json", b"[" * 5000 + b"]" * 5000, b""])
def test_a_body_that_is_not_a_json_object_is_a_problem_not_a_500(api, account_id, raw):
    """Not JSON, nested past Python's limit, or empty: a 4xx problem, and nothing written."""
    response = api.put(path(account_id), raw=raw)

    assert 400 <= response.status_code < 500, response.content
    assert response["Content-Type"] == "application/problem+json"
    assert rows(account_id) == []


def test_a_wrong_method_is_405(api, account_id):
    """DELETE and POST are not node operations: 405 method-not-allowed naming GET and PUT."""
    for method in ("DELETE", "POST"):
        response = api.client.generic(method, f"/api/v1{path(account_id)}", headers=api.headers(new_key()))
        assert response.status_code == 405 and problem_type(response) == "method-not-allowed"
        assert set(response["Allow"].replace(" ", "").split(",")) == {"GET", "PUT"}


# Schema and problem types


def test_the_schema_has_both_operations_and_their_problems(client):
    """The OpenAPI schema lists GET and PUT on the node path, each with its scope's bearer auth and its
    problem responses as application/problem+json."""
    schema = client.get("/api/v1/openapi.json").json()

    operations = schema["paths"]["/api/v1/services/{service}/accounts/{account_id}/node"]
    assert set(operations) == {"get", "put"}
    assert {"200", "404", "410"} <= set(operations["get"]["responses"])
    assert {"200", "201", "404", "409", "410", "422", "503"} <= set(operations["put"]["responses"])
    assert "application/problem+json" in operations["put"]["responses"]["409"]["content"]
    assert "Idempotency-Key" not in json.dumps(operations["put"].get("parameters", []))


@pytest.mark.parametrize(
    ("slug", "status"),
    [
        ("no-assignment", 404),
        ("invalid-generation", 409),
        ("invalid-keys-changed-at", 409),
        ("invalid-client-state", 409),
        ("assignment-retired", 410),
        ("generation-in-future", 422),
        ("keys-changed-at-in-future", 422),
        ("too-many-key-changes", 429),
        ("no-capacity", 503),
    ],
)
def test_the_node_problem_types_are_served(client, slug, status):
    """Each node problem type answers at its URI with its status and title."""
    problem = client.get(f"/api/v1/problems/{slug}").json()

    assert problem["type"] == f"/api/v1/problems/{slug}" and problem["status"] == status and problem["title"]


# Concurrency: real requests to a server in its own process, each on its own connection


@pytest.fixture
def served(server):
    """A server, the sync service with a node, an account, and a writer's key (all committed)."""
    from platform_events.api.clients import api_client_create

    services.service_add(service=SERVICE)
    services.node_add(service=SERVICE, node=NODE_URL, capacity=100, actor=None)
    account = AccountFactory(active=True).pk
    _, key = api_client_create(name="sync", scopes=["accounts:read", "accounts:write"], actor=None)
    url = f"{server().url}/api/v1{path(account)}"

    def put(body: dict) -> httpx.Response:
        return httpx.put(url, json=body, headers={"Authorization": f"Bearer {key}"}, timeout=60)

    return account, put


def racing(bodies: list[dict], put) -> list[httpx.Response]:
    """PUT each body from its own thread. The assignments table is locked by another session until
    every request waits (on it, or on its turn), so that they really arrive together."""
    answers: list = [None] * len(bodies)

    def run(index):
        answers[index] = put(bodies[index])

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(bodies))]
    with connect_as_owner() as blocker:
        blocker.execute("LOCK TABLE node_assignments IN EXCLUSIVE MODE")
        for thread in threads:
            thread.start()
        with connect(autocommit=True) as watcher:
            wait_until_blocked(watcher, len(bodies))
        blocker.rollback()
    for thread in threads:
        thread.join(timeout=60)
    return answers


@pytest.mark.django_db(transaction=True)
def test_two_racing_new_client_states_end_with_one_live_row_and_one_refusal(served):
    """Two clients report different new keys with the same new generation at once: they take turns,
    so the first replaces the assignment (200) and the second, checked against it, is refused
    (409 invalid-client-state); one live row, holding the winner's client state."""
    account, put = served
    assert put({"generation": 10, "keys_changed_at": 10, "client_state": STATE_A}).status_code == 201

    answers = racing(
        [
            {"generation": 20, "keys_changed_at": 20, "client_state": STATE_B},
            {"generation": 20, "keys_changed_at": 20, "client_state": STATE_C},
        ],
        put,
    )

    assert sorted(a.status_code for a in answers) == [200, 409], [a.content for a in answers]
    won = next(a for a in answers if a.status_code == 200).json()
    lost = next(a for a in answers if a.status_code == 409).json()
    assert lost["type"] == "/api/v1/problems/invalid-client-state" and lost["code"] == "invalid-client-state"
    assert live_rows(account) == [(won["uid"], NODE_URL, 20, 20, won["client_state"], True)]
    assert len(rows(account)) == 2


@pytest.mark.django_db(transaction=True)
def test_racing_generations_never_go_down(served):
    """Eight reports of generations 1 to 8 at once, in whatever order they get their turn: each is
    applied (200, its own generation) or refused as below what is stored (409 invalid-generation);
    the account ends at 8, in its one row."""
    account, put = served
    assert put({"generation": 0}).status_code == 201

    answers = racing([{"generation": g} for g in range(1, 9)], put)

    for generation, answer in zip(range(1, 9), answers, strict=True):
        if answer.status_code == 200:
            assert answer.json()["generation"] == generation
        else:
            assert answer.status_code == 409 and answer.json()["code"] == "invalid-generation", answer.content
    assert any(a.status_code == 200 for a in answers)
    assert [(r[2], r[-1]) for r in rows(account)] == [(8, True)]


@pytest.mark.django_db(transaction=True)
def test_racing_first_reports_make_one_live_row(served):
    """Six first reports at once, each with its own client state: one allocates (201), the others
    follow it in turn (200, each a new client state with no generation reported); one live row."""
    account, put = served

    answers = racing([{"client_state": f"{i:02x}" * 16} for i in range(6)], put)

    assert sorted(a.status_code for a in answers) == [200] * 5 + [201], [a.content for a in answers]
    assert len(live_rows(account)) == 1 and len(rows(account)) == 6


@pytest.mark.django_db(transaction=True)
def test_an_account_deleted_during_the_request_is_404_account_gone(served):
    """The account goes after the API found it and before its assignment is made: the database refuses
    the row (nodes: account N does not exist), answered 404 account-gone, not 500; no row is left."""
    account, put = served
    threads_answer: list = []
    with connect_as_owner() as blocker:
        blocker.execute("LOCK TABLE node_assignments IN EXCLUSIVE MODE")
        thread = threading.Thread(target=lambda: threads_answer.append(put({"generation": 1})))
        thread.start()
        with connect(autocommit=True) as watcher:
            wait_until_blocked(watcher, 1)
            watcher.execute("DELETE FROM accounts WHERE id = %s", [account])
        blocker.rollback()
    thread.join(timeout=60)

    (answer,) = threads_answer
    assert answer.status_code == 404, answer.content
    assert answer.json()["type"] == "/api/v1/problems/account-gone"
    assert rows(account) == []


@pytest.mark.parametrize("state", ["provisioned", "suspended"])
def test_an_account_in_any_state_gets_a_node(make_api, sync_service, state):
    """Node assignment does not look at the account's status (the calling service decides what a
    suspended account may do, as with the password check): a provisioned or suspended account gets a node."""
    api = make_api("accounts:write")
    account = AccountFactory(**({"suspended": True} if state == "suspended" else {}))

    assert api.put(path(account.pk), {"generation": 1}).status_code == 201


# Deprovisioned and reprovisioned accounts (docs/nodes.md, "Deprovisioning and reprovisioning")


def test_a_deprovisioned_accounts_client_is_410_retired_and_given_no_node(api, account_id, sql):
    """A deprovisioned account is answered as a retired one (410 assignment-retired, never a 500), for
    GET and PUT, whether it had a node or not; no row is made."""
    other = AccountFactory(active=True).pk
    api.put(path(account_id), {"generation": 3, "client_state": STATE_A})
    sql("UPDATE accounts SET status = 'deprovisioned' WHERE id IN (%s, %s)", [account_id, other])
    before = rows(account_id)

    for response in (
        api.get(path(account_id)),
        api.put(path(account_id), {"generation": 3, "client_state": STATE_A}),
        api.put(path(other), {"generation": 3, "client_state": STATE_A}),
    ):
        assert response.status_code == 410 and problem_type(response) == "assignment-retired"
    assert rows(account_id) == before and before[-1][2] == MAX_GENERATION
    assert rows(other) == []


@pytest.mark.django_db(transaction=True)
def test_after_reprovisioning_the_client_syncs_again_with_its_old_credentials(api, account_id, admin_user):
    """Deprovisioned, then reprovisioned by staff: the account's client PUTs its old generation and keys
    and is served (200) on a fresh node, its numbers the real ones."""
    from accounts.models import Account
    from accounts.services import account_deprovision, account_reprovision

    api.put(path(account_id), {"generation": 3, "keys_changed_at": 2, "client_state": STATE_A})
    account = Account.objects.get(pk=account_id)
    account_deprovision(account=account, actor=admin_user)
    account_reprovision(account=account, actor=admin_user)

    response = api.put(path(account_id), {"generation": 3, "keys_changed_at": 2, "client_state": STATE_A})

    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["generation"], body["keys_changed_at"], body["client_state"]) == (3, 2, STATE_A)
    assert body["uid"] is not None and len(live_rows(account_id)) == 1
