"""API clients in the admin (platform_events/api/admin.py): a client's key is shown once, on the page
answering the POST that made it, and nowhere else (no page, URL, session, log or audit row holds it);
its scopes change and it is revoked with a reason, each audited with the staff member; a revoked
client's page is read-only and nobody deletes a client; bad input is a form error that changes
nothing; the Integrator role, not Support or Auditor."""

import hashlib
import logging
import re

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.contrib.sessions.models import Session
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from platform_events.api.admin import ApiClientChangeForm
from platform_events.api.clients import api_client_by_key, api_client_create, api_client_revoke
from platform_events.api.models import ApiClient
from platform_events.audit.models import AuditEvent
from tests.support import pages_as_html, staff_client

pytestmark = pytest.mark.django_db

CLIENTS = reverse("admin:platform_events_apiclient_changelist")
ADD = reverse("admin:platform_events_apiclient_add")
TRAIL = reverse("admin:platform_events_auditevent_changelist")
FORM = {"name": "billing", "scopes": ["accounts:read", "sessions"]}


@pytest.fixture
def integrator(db):
    return staff_client("Integrator", "integrator1")


@pytest.fixture
def maker(db):
    """A superuser: only one may give a client any scope (an Integrator's role reads no accounts)."""
    user = get_user_model().objects.create_superuser("boss", password="x")
    client = Client()
    client.force_login(user)
    return client


def page(url, *args):
    return reverse(f"admin:platform_events_apiclient_{url}", args=args)


def added(client, **changes) -> tuple[ApiClient, str, object]:
    """Add a client through the form; return it, the key its page showed, and that response."""
    response = client.post(ADD, {**FORM, **changes})
    assert response.status_code == 200, response.content.decode()[:2000]
    (key,) = re.findall(r'id="api-key" type="text" value="([^"]+)"', response.content.decode())
    return ApiClient.objects.get(name=changes.get("name", FORM["name"])), key, response


def key_forms(key: str) -> list[str]:
    """The key, its part after the prefix, and its digest as text: none may appear after the key's page."""
    digest = hashlib.sha256(key.encode()).digest()
    return [key, key.removeprefix("lc_"), digest.hex(), "\\x" + digest.hex()]


def assert_nowhere(text: str, key: str) -> None:
    for form in key_forms(key):
        assert form not in text


def every_page_of(client, api_client, *, superuser=False) -> dict[str, str]:
    """Every admin page about the client, as HTML (with its audit trail, a superuser's)."""
    urls = [CLIENTS, f"{CLIENTS}?q={api_client.name}", page("change", api_client.pk), page("history", api_client.pk)]
    urls += [page("revoke", api_client.pk)]
    if superuser:
        urls += [f"{TRAIL}?resource_type=api_client&resource_id={api_client.pk}"]
        urls += [reverse("admin:platform_events_auditevent_change", args=[e.pk]) for e in AuditEvent.objects.all()]
    return pages_as_html(client, urls)


def audit_rows_as_text() -> str:
    return " ".join(str(row) for row in AuditEvent.objects.values())


# Adding: the key shown once


def test_adding_shows_the_key_once_on_a_page_nobody_caches(maker, integrator):
    """The page answering the POST shows the key, warns it is the only time, and is not cached."""
    client, key, response = added(maker)
    html = response.content.decode()
    assert "no-store" in response["Cache-Control"]
    assert "Copy the key now: it will never be shown again." in html
    assert api_client_by_key(key) == client
    assert (client.scopes, client.key_prefix, client.revoked_at) == (["accounts:read", "sessions"], key[:11], None)


def test_the_key_page_has_a_curl_line_with_the_key_for_an_operation_its_scopes_allow(maker, integrator):
    _, key, response = added(maker)
    (curl,) = re.findall(r'<pre class="curl-example" id="curl-example">([^<]+)</pre>', response.content.decode())
    assert (
        curl
        == f"curl -H &quot;Authorization: Bearer {key}&quot; &quot;http://testserver/api/v1/accounts?login=ada&quot;"
    )


@pytest.mark.parametrize(
    ("scopes", "call"),
    [
        (["accounts:write"], "-X POST"),
        (["accounts:delete"], "-X DELETE"),
        (["accounts:delete", "sessions"], "/api/v1/accounts/1?reason="),
        (["sessions"], "/api/v1/sessions"),
        (["scim"], "/scim/v2/Users?filter="),
    ],
)
def test_a_client_without_the_read_scope_gets_a_curl_line_it_may_run(maker, integrator, scopes, call):
    _, key, response = added(maker, scopes=scopes)
    (curl,) = re.findall(r'id="curl-example">([^<]+)</pre>', response.content.decode())
    assert call in curl and f"Bearer {key}" in curl


def test_the_key_is_in_no_url_page_session_log_or_audit_row_afterwards(
    maker, integrator, admin_client, caplog, settings
):
    settings.DEBUG = True  # every SQL statement logged too, with its parameters
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="django")
    client, key, response = added(maker)
    for link in re.findall(r'(?:href|action|src)="([^"]*)"', response.content.decode()):
        assert_nowhere(link, key)
    api_client_revoke(client=client, reason="rotated", actor=None)
    for browser, superuser in ((integrator, False), (admin_client, True)):
        for html in every_page_of(browser, client, superuser=superuser).values():
            assert_nowhere(html, key)
    assert_nowhere(" ".join(str(session.get_decoded()) for session in Session.objects.all()), key)
    assert_nowhere(audit_rows_as_text(), key)
    assert "INSERT INTO" in caplog.text and key.removeprefix("lc_") not in caplog.text


def test_adding_is_audited_with_the_staff_member_and_never_the_key(maker, integrator):
    client, key, _ = added(maker)
    created = AuditEvent.objects.get(action="api_client.created")
    user_id = get_user_model().objects.get(username="boss").pk
    assert (created.resource_type, created.resource_id) == ("api_client", str(client.pk))
    assert (created.actor_type, created.actor_id, created.actor_display) == ("USER", f"staff:{user_id}", "boss")
    assert created.actor_ip is not None
    assert created.diff_after == {
        "name": "billing",
        "key_prefix": key[:11],
        "scopes": ["accounts:read", "sessions"],
        "created_by": "boss",
    }
    assert_nowhere(audit_rows_as_text(), key)


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"name": ""}, "name", "This field is required."),
        ({"name": "   "}, "name", "This field is required."),
        ({"name": "bad/name"}, "name", "api: a client's name starts with a letter or digit"),
        ({"name": "-billing"}, "name", "api: a client's name starts with a letter or digit"),
        ({"name": "b" * 101}, "name", "at most 100 characters"),
        ({"name": "bill\x00ing"}, "name", "Null characters are not allowed."),
        ({"scopes": []}, "scopes", "Choose at least one scope"),
        ({"scopes": ["accounts:read", "admin"]}, "scopes", "Select a valid choice."),
    ],
)
def test_a_refused_form_says_why_beside_the_field_and_writes_nothing(maker, changes, field, message):
    response = maker.post(ADD, {**FORM, **changes})
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert list(errors) == [field] and message in errors[field][0]
    assert 'id="api-key"' not in response.content.decode()
    assert not ApiClient.objects.exists() and not AuditEvent.objects.filter(resource_type="api_client").exists()


def test_a_name_taken_in_another_case_is_refused_beside_the_name(maker, integrator):
    added(maker)
    response = maker.post(ADD, {**FORM, "name": "  BILLING "})
    assert response.context["adminform"].form.errors == {
        "name": ["api: there is already an API client named 'BILLING'"]
    }
    assert ApiClient.objects.count() == 1 and AuditEvent.objects.filter(resource_type="api_client").count() == 1


# Changing the scopes


def test_the_client_page_shows_the_key_prefix_only_and_changes_the_scopes_audited(maker, integrator):
    client, key, _ = added(maker)
    html = integrator.get(page("change", client.pk)).content.decode()
    assert f"<code>{key[:11]}…</code>" in html and 'name="name"' not in html and 'name="key' not in html
    assert "boss" in html  # who made it
    response = maker.post(page("change", client.pk), {"scopes": ["accounts:write"]})
    assert response.status_code == 302
    client.refresh_from_db()
    assert client.scopes == ["accounts:write"] and api_client_by_key(key) == client  # the same key
    changed = AuditEvent.objects.get(action="api_client.changed")
    assert changed.actor_display == "boss"
    assert (changed.diff_before, changed.diff_after) == (
        {"scopes": ["accounts:read", "sessions"]},
        {"scopes": ["accounts:write"]},
    )


def test_an_integrator_narrows_a_clients_scopes_but_adds_none_it_may_not_give(maker, integrator):
    """Every scope acts on accounts, which the Integrator role may not read or change: taking a scope
    away is theirs, giving one is refused beside the scopes, and the client stays as it was."""
    client, _, _ = added(maker)
    refused = integrator.post(page("change", client.pk), {"scopes": ["accounts:read", "accounts:write"]})
    assert refused.status_code == 200
    assert refused.context["adminform"].form.errors == {
        "scopes": ["api: you may not give a client the scope accounts:write: its key could do what your role may not"]
    }
    client.refresh_from_db()
    assert client.scopes == ["accounts:read", "sessions"]
    assert not AuditEvent.objects.filter(action="api_client.changed").exists()
    narrowed = integrator.post(page("change", client.pk), {"scopes": ["accounts:read"]})
    assert narrowed.status_code == 302
    client.refresh_from_db()
    assert client.scopes == ["accounts:read"]


@pytest.mark.parametrize("role", ["Integrator", "Support", "Auditor"])
def test_no_staff_role_makes_an_api_client(role):
    """Making a client is a superuser's: the Add page is refused to every role, its button absent."""
    browser = staff_client(role)
    assert browser.post(ADD, FORM).status_code == 403
    assert ADD not in browser.get(CLIENTS).content.decode()
    assert not ApiClient.objects.exists()


def test_saving_the_same_scopes_writes_no_audit_row(maker, integrator):
    client, _, _ = added(maker)
    integrator.post(page("change", client.pk), {"scopes": ["sessions", "accounts:read"]})
    assert not AuditEvent.objects.filter(action="api_client.changed").exists()


def test_no_scope_on_the_client_page_is_a_form_error(maker, integrator):
    client, _, _ = added(maker)
    response = integrator.post(page("change", client.pk), {"scopes": []})
    assert response.status_code == 200 and "Choose at least one scope" in response.content.decode()
    client.refresh_from_db()
    assert client.scopes == ["accounts:read", "sessions"]


def test_scopes_saved_as_another_tab_revokes_the_client_are_refused_with_a_warning(maker, integrator, monkeypatch):
    """Revoked between the page's permission check and the save: the service refuses, the page says
    why, and nothing changes (a revoked client's page is read-only, so only this moment is left)."""
    client, _, _ = added(maker)
    checked = ApiClientChangeForm.clean_scopes

    def revoked_meanwhile(form):
        ApiClient.objects.filter(pk=client.pk).update(revoked_at=timezone.now(), revoked_reason="other tab")
        return checked(form)

    monkeypatch.setattr(ApiClientChangeForm, "clean_scopes", revoked_meanwhile)
    response = integrator.post(page("change", client.pk), {"scopes": ["sessions"]}, follow=True)
    assert response.status_code == 200
    assert [str(m) for m in response.context["messages"]] == [
        "api: client 'billing' is revoked; its scopes cannot change"
    ]
    client.refresh_from_db()
    assert client.scopes == ["accounts:read", "sessions"]


# Revoking


def test_revoking_from_the_page_asks_why_then_revokes_once_audited(maker, integrator):
    client, key, _ = added(maker)
    assert page("revoke", client.pk) in integrator.get(page("change", client.pk)).content.decode()
    confirm = integrator.get(page("revoke", client.pk))
    assert confirm.status_code == 200 and "stop working at once" in confirm.content.decode().replace("stops", "stop")
    assert api_client_by_key(key) == client  # a GET changes nothing
    response = integrator.post(page("revoke", client.pk), {"confirm": "yes", "reason": "key pasted in a ticket"})
    assert response.status_code == 302 and response["Location"] == page("change", client.pk)
    assert api_client_by_key(key) is None
    client.refresh_from_db()
    assert client.revoked_reason == "key pasted in a ticket"
    revoked = AuditEvent.objects.get(action="api_client.revoked")
    assert (revoked.actor_display, revoked.reason) == ("integrator1", "key pasted in a ticket")
    assert revoked.actor_id.startswith("staff:")


def test_revoking_again_from_a_second_tab_says_so_and_writes_nothing(maker, integrator):
    client, _, _ = added(maker)
    integrator.post(page("revoke", client.pk), {"confirm": "yes", "reason": "first tab"}, follow=True)
    response = integrator.post(page("revoke", client.pk), {"confirm": "yes", "reason": "second tab"}, follow=True)
    assert [str(m) for m in response.context["messages"]] == ["No client revoked. 1 was revoked already."]
    assert list(AuditEvent.objects.filter(action="api_client.revoked").values_list("reason", flat=True)) == [
        "first tab"
    ]


@pytest.mark.parametrize("reason", ["", "   ", "a\x00b", "x" * 1001])
def test_a_revocation_without_a_fit_reason_is_a_form_error_and_revokes_nothing(maker, integrator, reason):
    client, key, _ = added(maker)
    response = integrator.post(page("revoke", client.pk), {"confirm": "yes", "reason": reason})
    assert response.status_code == 200 and b"errorlist" in response.content
    assert api_client_by_key(key) == client
    assert not AuditEvent.objects.filter(action="api_client.revoked").exists()


def test_the_revoke_action_revokes_the_selected_and_says_which_were_revoked_already(integrator):
    clients = [api_client_create(name=name, scopes=["sessions"], actor=None)[0] for name in ("a", "b", "c")]
    api_client_revoke(client=clients[2], reason="earlier", actor=None)
    data = {"action": "revoke", "_selected_action": [c.pk for c in clients]}
    confirm = integrator.post(CLIENTS, data)
    assert confirm.status_code == 200 and "c (key" in confirm.content.decode()
    response = integrator.post(CLIENTS, {**data, "confirm": "yes", "reason": "partner left"}, follow=True)
    assert [str(m) for m in response.context["messages"]] == [
        "2 clients revoked: a, b; their keys no longer work. 1 was revoked already."
    ]
    rows = AuditEvent.objects.filter(action="api_client.revoked", reason="partner left")
    assert {row.resource_id for row in rows} == {str(clients[0].pk), str(clients[1].pk)}
    assert {row.actor_display for row in rows} == {"integrator1"}


def test_a_revoked_clients_page_is_read_only(maker, integrator):
    client, _, _ = added(maker)
    api_client_revoke(client=client, reason="done", actor=None)
    html = integrator.get(page("change", client.pk)).content.decode()
    assert 'name="scopes"' not in html and 'name="_save"' not in html and page("revoke", client.pk) not in html
    assert "done" in html
    assert integrator.post(page("change", client.pk), {"scopes": ["accounts:write"]}).status_code == 403
    client.refresh_from_db()
    assert client.scopes == ["accounts:read", "sessions"]


def test_nobody_deletes_a_client_not_even_a_superuser(admin_client):
    client, _ = api_client_create(name="billing", scopes=["sessions"], actor=None)
    assert admin_client.get(page("delete", client.pk)).status_code == 403
    assert admin_client.post(page("delete", client.pk), {"post": "yes"}).status_code == 403
    response = admin_client.post(CLIENTS, {"action": "delete_selected", "_selected_action": [client.pk], "post": "yes"})
    assert ApiClient.objects.filter(pk=client.pk).exists()
    assert "delete_selected" not in response.content.decode()


# The list


def test_the_list_shows_the_prefix_scopes_use_and_revocation(maker, integrator):
    client, key, _ = added(maker)
    api_client_revoke(client=client, reason="partner left", actor=None)
    html = integrator.get(CLIENTS).content.decode()
    for text in (
        "Key starts with",
        f"<code>{key[:11]}…</code>",
        "accounts:read, sessions",
        "never",
        "partner left",
    ):
        assert text in html


@pytest.mark.parametrize(
    ("query", "names"),
    [
        ("revoked=yes", {"old"}),
        ("revoked=no", {"billing", "crm"}),
        ("scope=sessions", {"billing", "old"}),
        ("q=bil", {"billing"}),
    ],
)
def test_the_list_filters_by_revocation_and_scope_and_searches_names(integrator, query, names):
    api_client_create(name="billing", scopes=["sessions"], actor=None)
    api_client_create(name="crm", scopes=["accounts:read"], actor=None)
    old, _ = api_client_create(name="old", scopes=["sessions", "accounts:write"], actor=None)
    api_client_revoke(client=old, reason="gone", actor=None)
    response = integrator.get(f"{CLIENTS}?{query}")
    assert {client.name for client in response.context["cl"].result_list} == names


@pytest.mark.parametrize(
    "query",
    ["key_hash=x", "key_prefix__startswith=lc_", "scopes__contains=%7Bsessions%7D", "scope=admin", "revoked=maybe"],
)
def test_undeclared_or_impossible_lookups_answer_400(admin_client, query):
    assert admin_client.get(f"{CLIENTS}?{query}").status_code == 400


# Roles


def test_integrators_may_view_and_change_api_clients_and_no_other_role_may():
    granted = {
        group.name: {p.codename for p in group.permissions.all() if p.content_type.model == "apiclient"}
        for group in Group.objects.all()
    }
    assert granted == {
        "Support": set(),
        "Auditor": set(),
        "Privacy": set(),
        "Integrator": {"view_apiclient", "change_apiclient"},
    }


@pytest.mark.parametrize("role", ["Support", "Auditor"])
def test_support_and_auditors_have_no_api_client_page(role):
    staff = staff_client(role)
    client, key = api_client_create(name="billing", scopes=["sessions"], actor=None)
    for url in (CLIENTS, ADD, page("change", client.pk), page("revoke", client.pk)):
        assert staff.get(url).status_code == 403, url
    assert staff.post(page("revoke", client.pk), {"confirm": "yes", "reason": "x"}).status_code == 403
    assert staff.post(ADD, FORM).status_code == 403
    assert "API client" not in staff.get(reverse("admin:index")).content.decode()
    assert api_client_by_key(key) == client and ApiClient.objects.count() == 1


@pytest.mark.parametrize(
    "path", ["/admin/platform_events/apiclient/add/", "/admin/platform_events/webhooksubscription/add/"]
)
def test_the_add_forms_load_the_admins_jquery_before_the_script_that_needs_it(admin_client, path):
    """change_form.html runs prepopulate_init.js, which reads django.jQuery: without the admin's media
    the page would throw "$ is not a function" in the browser."""
    scripts = re.findall(r'<script[^>]*src="([^"]+)"', admin_client.get(path).content.decode())
    jquery_init = next(i for i, src in enumerate(scripts) if "admin/js/jquery.init" in src)
    assert jquery_init < next(i for i, src in enumerate(scripts) if "prepopulate_init" in src)


def test_the_form_gives_accounts_delete_to_whoever_may_deprovision_and_refuses_anyone_else(maker, integrator):
    """A superuser adds a client with accounts:delete; an Integrator, who may not deprovision, is refused
    adding it beside the scopes; the same Integrator given the power to deprovision (and to view
    accounts) may add it: the permissions decide, not the role's name."""
    client, _, _ = added(maker, scopes=["accounts:delete"])
    assert client.scopes == ["accounts:delete"]
    other, _, _ = added(maker, name="crm", scopes=["accounts:read"])

    refused = integrator.post(page("change", other.pk), {"scopes": ["accounts:read", "accounts:delete"]})
    assert refused.context["adminform"].form.errors == {
        "scopes": ["api: you may not give a client the scope accounts:delete: its key could do what your role may not"]
    }
    other.refresh_from_db()
    assert other.scopes == ["accounts:read"]

    user = get_user_model().objects.get(username="integrator1")
    user.user_permissions.set(
        Permission.objects.filter(
            content_type__app_label="accounts", codename__in=["view_account", "deprovision_account"]
        )
    )
    given = integrator.post(page("change", other.pk), {"scopes": ["accounts:read", "accounts:delete"]})
    assert given.status_code == 302
    other.refresh_from_db()
    assert other.scopes == ["accounts:delete", "accounts:read"]


def test_every_scope_a_client_may_hold_first_has_a_curl_line():
    """The key page shows a line for the client's first scope; every scope but sessions:client-address
    (which goes with sessions) can be that one."""
    from platform_events.api.admin import CURL_EXAMPLES
    from platform_events.api.models import ApiScope

    assert set(ApiScope) - set(CURL_EXAMPLES) == {ApiScope.SESSIONS_CLIENT_ADDRESS}
