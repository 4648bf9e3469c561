"""Node assignment in the admin (accounts/nodes/admin.py): services and nodes added through the services,
a node's load as a bar, the actions (downed, up, backoff, unassign) each asking why and audited with the
staff member and the reason, the capacity changed through the node's page; an account's assignments on
its page, never with its client_state whole; bad input a form error that changes nothing; the Integrator role
may do it, Support and Auditors may not."""

import re

import pytest
from django.contrib.auth.models import Group, Permission
from django.urls import reverse

from accounts.nodes import services
from accounts.nodes.models import Node, NodeAssignment, Service
from lifecycle.demo.factories import AccountFactory
from platform_events.audit.models import AuditEvent
from tests.accounts.nodes.conftest import NODE_URL, SERVICE
from tests.support import staff_client

pytestmark = pytest.mark.django_db

NODES = reverse("admin:accounts_node_changelist")
ADD_NODE = reverse("admin:accounts_node_add")
SERVICES = reverse("admin:accounts_service_changelist")
ADD_SERVICE = reverse("admin:accounts_service_add")
ASSIGNMENTS = reverse("admin:accounts_nodeassignment_changelist")
TRAIL = reverse("admin:platform_events_auditevent_changelist")
CLIENT_STATE = "aabbccddeeff00112233445566778899"


@pytest.fixture
def integrator(db):
    return staff_client("Integrator", "integrator1")


@pytest.fixture
def loaded(nodes):
    """Three more nodes of sync-1.5 at 10%, 50% and 95% of their capacity, the last one downed."""
    for name, load, downed in (("https://light", 10, False), ("https://half", 50, False), ("https://full", 95, True)):
        services.node_add(service=SERVICE, node=name, capacity=100, current_load=load, downed=downed, actor=None)
    return {node.node: node for node in Node.objects.all()}


def node(url: str = NODE_URL) -> Node:
    return Node.objects.get(node=url)


def act(client, action: str, nodes, reason: str | None = None):
    """Run an action of the node list; without a reason, only its confirmation page."""
    data = {"action": action, "_selected_action": [n.pk for n in nodes]}
    if reason is not None:
        data |= {"confirm": "yes", "reason": reason}
    return client.post(NODES, data, follow=reason is not None)


def reported(response) -> list[str]:
    return [str(message) for message in response.context["messages"]]


def node_rows(action: str, node_id: int):
    return list(AuditEvent.objects.filter(action=action, resource_type="node", resource_id=str(node_id)))


def staff_id(client) -> str:
    return f"staff:{client.session['_auth_user_id']}"


def assign(account_id: int, **kwargs):
    return services.assignment_allocate(service=SERVICE, account_id=account_id, **kwargs)


# The list


def test_the_list_shows_each_nodes_load_as_a_bar_with_its_figures_red_from_90_percent(integrator, loaded):
    html = integrator.get(NODES).content.decode()
    assert "10% · 10 / 100" in html and "50% · 50 / 100" in html and "95% · 95 / 100" in html
    widths = dict(re.findall(r"width: (\d+)%; background: (#[0-9a-f]{6})", html))
    assert widths["10"] == widths["50"] == "#417690"
    assert widths["95"] == "#b00020"


def test_a_node_over_its_capacity_shows_its_percentage_and_a_full_bar(integrator, nodes):
    services.node_add(service=SERVICE, node="https://over", capacity=10, current_load=12, actor=None)
    html = integrator.get(NODES).content.decode()
    assert "120% · 12 / 10" in html and "width: 100%; background: #b00020" in html


@pytest.mark.parametrize(
    ("query", "listed"),
    [
        ("downed__exact=1", {"https://full"}),
        ("backoff__exact=0", {NODE_URL, "https://light", "https://half", "https://full"}),
        ("q=hal", {"https://half"}),
    ],
)
def test_the_list_filters_by_service_downed_and_backoff_and_finds_a_node_by_part_of_its_url(
    integrator, loaded, query, listed
):
    response = integrator.get(f"{NODES}?{query}")
    assert {n.node for n in response.context["cl"].result_list} == listed


def test_the_list_filters_by_service(integrator, loaded):
    services.service_add(service="other", pattern=None)
    services.node_add(service="other", node="https://elsewhere", capacity=5, actor=None)
    other = Service.objects.get(service="other")
    response = integrator.get(f"{NODES}?service__id__exact={other.pk}")
    assert [n.node for n in response.context["cl"].result_list] == ["https://elsewhere"]


@pytest.mark.parametrize("query", ["capacity=1", "node__startswith=h", "current_load__gte=0", "downed__exact=maybe"])
def test_undeclared_or_impossible_lookups_answer_400(integrator, loaded, query):
    assert integrator.get(f"{NODES}?{query}").status_code == 400


# The actions


@pytest.mark.parametrize("action", ["mark_downed", "mark_up", "set_backoff", "clear_backoff", "unassign"])
def test_an_action_first_asks_why_on_a_confirmation_page_and_changes_nothing(integrator, loaded, action):
    before = list(Node.objects.values())
    response = act(integrator, action, [node()])
    html = response.content.decode()
    assert response.status_code == 200
    assert "Why? (kept in the audit trail)" in html and NODE_URL in html
    assert list(Node.objects.values()) == before
    assert not AuditEvent.objects.filter(action__startswith="node.").exclude(action="node.added").exists()


def test_an_empty_reason_is_refused_and_changes_nothing(integrator, nodes):
    response = act(integrator, "mark_downed", [node()], reason="   ")
    assert "This field is required." in response.content.decode()
    assert node().downed is False


@pytest.mark.parametrize(
    ("action", "start", "field", "value", "message"),
    [
        ("mark_downed", {}, "downed", True, "1 node marked downed."),
        ("mark_up", {"downed": True}, "downed", False, "1 node marked up."),
        ("set_backoff", {}, "backoff", True, "1 node set in backoff."),
        ("clear_backoff", {"backoff": True}, "backoff", False, "1 node out of backoff."),
    ],
)
def test_each_action_changes_the_node_and_is_audited_with_the_staff_member_and_the_reason(
    integrator, nodes, action, start, field, value, message
):
    if start:
        services.node_update(service=SERVICE, node=NODE_URL, actor=None, **start)
    response = act(integrator, action, [node()], reason="disk failing on phx12")
    assert reported(response) == [message]
    assert getattr(node(), field) is value
    (event,) = [e for e in node_rows("node.changed", node().pk) if e.reason]
    assert (event.actor_type, event.actor_id, event.actor_display) == ("USER", staff_id(integrator), "integrator1")
    assert event.reason == "disk failing on phx12"
    assert (event.diff_before, event.diff_after) == ({field: not value}, {field: value})
    assert str(event.actor_ip) == "127.0.0.1"


def test_nodes_already_so_are_counted_and_neither_changed_nor_audited(integrator, loaded):
    response = act(integrator, "mark_downed", [loaded["https://full"], loaded["https://half"]], reason="maintenance")
    assert reported(response) == ["1 node marked downed. 1 was so already."]
    assert node("https://half").downed is True
    assert node_rows("node.changed", loaded["https://full"].pk) == []


def test_the_unassign_confirmation_says_how_many_live_assignments_each_node_holds(integrator, nodes):
    for _ in range(3):
        assign(AccountFactory().id)
    html = act(integrator, "unassign", [node()]).content.decode()
    assert "3 live assignments are on the selected nodes." in html
    assert f"{NODE_URL} (sync-1.5, 3% loaded: 3 / 100, up, 3 live)" in html


def test_unassigning_replaces_every_live_assignment_and_is_audited_once_per_node(integrator, nodes):
    accounts = [AccountFactory().id for _ in range(3)]
    for account_id in accounts:
        assign(account_id)
    response = act(integrator, "unassign", [node()], reason="moving phx12's users off")
    assert reported(response) == ["3 assignments replaced: their accounts get another node at their next sync."]
    assert not NodeAssignment.objects.filter(replaced_at=None).exists()
    (event,) = node_rows("node.unassigned", node().pk)
    assert (event.actor_id, event.reason, event.diff_after) == (
        staff_id(integrator),
        "moving phx12's users off",
        {"assignments": 3},
    )
    # Their next read gives each a live row again (here on the same node, the only one).
    assert services.assignment_current(service=SERVICE, account_id=accounts[0]).node == NODE_URL


def test_the_audit_trail_lists_and_filters_the_node_actions(integrator, admin_client, nodes):
    act(integrator, "set_backoff", [node()], reason="slow disks")
    response = admin_client.get(f"{TRAIL}?action__exact=node.changed")
    assert response.status_code == 200
    (event,) = response.context["cl"].result_list
    assert (event.action, event.reason) == ("node.changed", "slow disks")
    assert "slow disks" in response.content.decode()
    assert admin_client.get(f"{TRAIL}?resource_type=node&resource_id={node().pk}").status_code == 200


# Adding and changing


def test_adding_a_service(integrator):
    response = integrator.post(ADD_SERVICE, {"service": "sync-1.5", "pattern": "{node}/1.5/{uid}"}, follow=True)
    assert reported(response) == ["The service “sync-1.5” was added."]
    assert Service.objects.get().pattern == "{node}/1.5/{uid}"


@pytest.mark.parametrize(
    ("form", "message"),
    [
        ({"service": "Sync"}, "a service&#x27;s name starts with a lower-case letter or digit"),
        ({"service": "-sync"}, "a service&#x27;s name starts with a lower-case letter or digit"),
        ({"service": "x" * 31}, "Ensure this value has at most 30 characters"),
        ({"service": "sync", "pattern": "/1.5/{uid}"}, "the pattern must hold {node}"),
        ({"service": "sync-1.5"}, "nodes: a service of that name exists"),
    ],
)
def test_a_bad_service_is_a_form_error_and_adds_nothing(integrator, nodes, form, message):
    response = integrator.post(ADD_SERVICE, form)
    assert response.status_code == 200
    assert message in response.content.decode()
    assert list(Service.objects.values_list("service", flat=True)) == [SERVICE]


def test_adding_a_node_goes_through_node_add_and_is_audited(integrator, nodes, settings):
    service = Service.objects.get()
    form = {"service": service.pk, "node": "https://phx13", "capacity": 25, "available": ""}
    response = integrator.post(ADD_NODE, form, follow=True)
    assert reported(response) == ["The node “https://phx13” was added."]
    added = node("https://phx13")
    # tokenserver releases a share of the capacity at first: ceil(25 x 0.1).
    assert (added.capacity, added.available, added.current_load, added.downed) == (25, 3, 0, False)
    (event,) = node_rows("node.added", added.pk)
    assert (event.actor_id, event.diff_after["capacity"]) == (staff_id(integrator), 25)


def test_adding_a_node_with_its_released_slots_given(integrator, nodes):
    form = {"service": Service.objects.get().pk, "node": "https://phx13/storage", "capacity": 25, "available": 25}
    integrator.post(ADD_NODE, form)
    assert node("https://phx13/storage").available == 25


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"capacity": 0}, "A node&#x27;s capacity is at least 1"),
        ({"capacity": -5}, "A node&#x27;s capacity is at least 1"),
        ({"capacity": 2**31}, "Ensure this value is less than or equal to 2147483647."),
        ({"capacity": "many"}, "Enter a whole number."),
        ({"available": -1}, "Ensure this value is greater than or equal to 0."),
        ({"node": "phx13"}, "nodes: a node is a URL"),
        ({"node": "ftp://phx13"}, "nodes: a node is a URL"),
        ({"node": "https://phx13/"}, "nodes: a node is a URL"),
        ({"node": "https://phx13?x=1"}, "nodes: a node is a URL"),
        ({"node": "https://phx 13"}, "nodes: a node is a URL"),
        ({"node": "https://" + "x" * 60}, "Ensure this value has at most 64 characters"),
        ({"node": "https://phx\x0013"}, "Null characters are not allowed."),
        ({"node": NODE_URL}, "nodes: the service already has a node of that name"),
        ({"service": 999999}, "Select a valid choice."),
    ],
)
def test_a_bad_node_is_a_form_error_and_adds_nothing(integrator, nodes, changes, message):
    form = {"service": Service.objects.get().pk, "node": "https://phx13", "capacity": 10, "available": "", **changes}
    response = integrator.post(ADD_NODE, form)
    assert response.status_code == 200
    assert message in response.content.decode()
    assert list(Node.objects.values_list("node", flat=True)) == [NODE_URL]
    assert not AuditEvent.objects.filter(action="node.added", actor_id=staff_id(integrator)).exists()


@pytest.mark.parametrize(
    ("form", "field", "problem"),
    [
        ({"service": "Sync"}, "service", services.service_name_problem("Sync")),
        ({"service": "sync", "pattern": "/1.5/{uid}"}, "pattern", services.pattern_problem("/1.5/{uid}")),
    ],
)
def test_the_service_form_refuses_with_the_services_own_sentence(integrator, nodes, form, field, problem):
    """The form asks the services' checks: its error is the sentence the service itself refuses with."""
    response = integrator.post(ADD_SERVICE, form)
    assert response.context["adminform"].form.errors == {field: [problem]}


def test_the_node_form_refuses_with_the_services_own_sentence(integrator, nodes):
    form = {"service": Service.objects.get().pk, "node": "https://phx13/", "capacity": 10, "available": ""}
    response = integrator.post(ADD_NODE, form)
    assert response.context["adminform"].form.errors == {"node": [services.node_url_problem("https://phx13/")]}


def test_changing_the_capacity_goes_through_node_update_and_is_audited_with_the_reason(integrator, nodes):
    page = reverse("admin:accounts_node_change", args=[node().pk])
    response = integrator.post(page, {"capacity": 250, "reason": "new disks"}, follow=True)
    assert response.status_code == 200
    assert node().capacity == 250
    (event,) = [e for e in node_rows("node.changed", node().pk) if e.actor_id == staff_id(integrator)]
    assert (event.reason, event.diff_before, event.diff_after) == ("new disks", {"capacity": 100}, {"capacity": 250})


@pytest.mark.parametrize(("capacity", "message"), [(0, "capacity is at least 1"), ("", "This field is required.")])
def test_a_bad_capacity_on_the_nodes_page_is_a_form_error_and_changes_nothing(integrator, nodes, capacity, message):
    page = reverse("admin:accounts_node_change", args=[node().pk])
    response = integrator.post(page, {"capacity": capacity, "reason": ""})
    assert response.status_code == 200
    assert message in response.content.decode()
    assert node().capacity == 100


def test_the_nodes_page_shows_its_state_read_only_and_nobody_deletes_a_node(integrator, admin_client, nodes):
    page = reverse("admin:accounts_node_change", args=[node().pk])
    html = integrator.get(page).content.decode()
    assert 'name="capacity"' in html and 'name="downed"' not in html and 'name="node"' not in html
    assert "0% · 0 / 100" in html
    for client in (integrator, admin_client):
        assert client.get(reverse("admin:accounts_node_delete", args=[node().pk])).status_code == 403
    assert Node.objects.count() == 1


# Who may do what


def test_integrators_have_the_node_permissions_and_no_other_role_has_any():
    granted = {
        group.name: {
            p.codename for p in group.permissions.all() if p.content_type.model in {"service", "node", "nodeassignment"}
        }
        for group in Group.objects.all()
    }
    assert granted == {
        "Support": set(),
        "Auditor": set(),
        "Privacy": set(),
        "Integrator": {
            "view_service",
            "add_service",
            "view_node",
            "add_node",
            "change_node",
            "manage_node",
            "view_nodeassignment",
        },
    }


@pytest.mark.parametrize("role", ["Support", "Auditor"])
def test_support_and_auditors_have_no_node_pages(role, nodes):
    staff = staff_client(role)
    for url in (
        NODES,
        ADD_NODE,
        SERVICES,
        ADD_SERVICE,
        ASSIGNMENTS,
        reverse("admin:accounts_node_change", args=[node().pk]),
    ):
        assert staff.get(url).status_code == 403, url
    assert act(staff, "mark_downed", [node()], reason="x").status_code == 403
    assert node().downed is False


def test_a_role_that_may_view_nodes_but_not_manage_them_gets_no_action_and_cannot_run_one(nodes):
    viewers = Group.objects.create(name="Node viewers")
    viewers.permissions.set([Permission.objects.get(codename="view_node")])
    staff = staff_client("Node viewers", "viewer1")
    response = staff.get(NODES)
    assert response.status_code == 200
    assert "mark_downed" not in response.content.decode()
    response = act(staff, "mark_downed", [node()], reason="x")
    assert node().downed is False
    assert not AuditEvent.objects.filter(action="node.changed").exists()


# Assignments: on the account's page, and listed


@pytest.fixture
def history(nodes):
    """An account with a replaced and a live assignment for sync-1.5, and a retired one for another
    service; the account id and its rows."""
    services.service_add(service="other", pattern=None)
    services.node_add(service="other", node="https://elsewhere", capacity=5, actor=None)
    account = AccountFactory()
    first = assign(account.id, client_state=CLIENT_STATE, keys_changed_at=1000)
    services.assignment_update(first, client_state="0123456789abcdef", keys_changed_at=2000, generation=7)
    services.assignment_allocate(service="other", account_id=account.id)
    services.assignments_retire(account_id=account.id)  # both live rows: retired
    return account


def test_the_account_page_lists_its_assignments_per_service_with_their_state(admin_client, nodes):
    account = AccountFactory()
    first = assign(account.id, client_state=CLIENT_STATE, keys_changed_at=1000)
    services.assignment_update(first, client_state="0123456789abcdef", keys_changed_at=2000, generation=7)
    response = admin_client.get(reverse("admin:accounts_account_change", args=[account.pk]))
    html = response.content.decode()
    assert "node assignments" in html.lower()
    rows = re.findall(r'<tr class="form-row[^"]*"[^>]*>(.*?)</tr>', html, re.S)
    texts = [re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", row)).strip() for row in rows]
    assignment_rows = [text for text in texts if SERVICE in text]
    assert len(assignment_rows) == 2
    live, replaced = assignment_rows
    assert NODE_URL in live and " 7 " in f" {live} " and "2000" in live and "live" in live and "012345…" in live
    assert "replaced" in replaced and "aabbcc…" in replaced and "1000" in replaced


def test_a_retired_account_shows_its_rows_retired(admin_client, history):
    html = admin_client.get(reverse("admin:accounts_account_change", args=[history.pk])).content.decode()
    assert html.count("retired (max)") == 2  # the live rows of both services


def test_no_page_shows_a_client_state_whole(admin_client, history):
    uids = NodeAssignment.objects.filter(account=history).values_list("uid", flat=True)
    pages = [
        reverse("admin:accounts_account_change", args=[history.pk]),
        ASSIGNMENTS,
        f"{ASSIGNMENTS}?q={history.pk}",
        *(reverse("admin:accounts_nodeassignment_change", args=[uid]) for uid in uids),
    ]
    for url in pages:
        response = admin_client.get(url)
        assert response.status_code == 200, url
        html = response.content.decode()
        assert CLIENT_STATE not in html and "0123456789abcdef" not in html
        assert CLIENT_STATE[:12] not in html


def test_support_sees_the_account_page_without_its_assignments(support, nodes):
    account = AccountFactory()
    assign(account.id)
    html = support.get(reverse("admin:accounts_account_change", args=[account.pk])).content.decode()
    assert NODE_URL not in html


@pytest.mark.parametrize(
    ("query", "count"),
    [("state=live", 0), ("state=replaced", 1), ("state=retired", 2), ("q=", 3), ("q=abc", 0), ("q=%C2%B2", 0)],
)
def test_the_assignment_list_filters_by_state_and_finds_an_account_by_id(integrator, history, query, count):
    response = integrator.get(f"{ASSIGNMENTS}?{query}")
    assert response.status_code == 200
    assert len(response.context["cl"].result_list) == count


def test_the_assignment_list_finds_an_accounts_rows_by_its_id_and_links_them_only_for_those_who_may(
    integrator, admin_client, history
):
    response = integrator.get(f"{ASSIGNMENTS}?q={history.pk}")
    assert {a.account_id for a in response.context["cl"].result_list} == {history.pk}
    account_page = reverse("admin:accounts_account_change", args=[history.pk])
    assert account_page not in response.content.decode()
    assert account_page in admin_client.get(f"{ASSIGNMENTS}?q={history.pk}").content.decode()


@pytest.mark.parametrize("query", ["client_state=aa", "client_state__startswith=a", "account=1", "state=bogus"])
def test_the_assignment_list_refuses_undeclared_lookups(integrator, history, query):
    assert integrator.get(f"{ASSIGNMENTS}?{query}").status_code == 400
