"""Attacks on the back-office surfaces of issue 11 (account actions, audit list and export, token
list, declared lookups, lock-out and unlock pages, dashboard). Each test states an attack and asserts
the safe outcome. Its two findings (a queued or failed sign-up task showing its password hash; axes' cleanup
action answering 500) are fixed: platform_events/task_queue/admin.py, platform_events/lockouts/admin.py."""

import csv
import io
import re

import pytest
from axes.models import AccessAttempt
from django.contrib.admin.models import LogEntry
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from accounts.models import Account, AccountStatus
from accounts.services import account_suspend
from lifecycle.demo.factories import AccountFactory
from platform_events.audit.context import audit_context
from platform_events.audit.models import AuditEvent
from tests.support import staff_client
from tokens.links import secret_to_text
from tokens.models import Token

pytestmark = pytest.mark.django_db

AUDIT_LIST = "/admin/platform_events/auditevent/"
EXPORT = "/admin/platform_events/auditevent/export/"
TOKENS = "/admin/tokens/token/"
ACCOUNTS = "/admin/accounts/account/"


def act_url(pk, action="suspend"):
    return f"/admin/accounts/account/{pk}/act/{action}/"


def quiet(client: Client) -> Client:
    client.raise_request_exception = False
    return client


def status_of(account) -> str:
    return Account.objects.get(pk=account.pk).status


def csrf_client(role: str | None, username: str) -> Client:
    """A logged-in client that enforces CSRF, as a browser would be attacked cross-site."""
    if role:
        user = get_user_model().objects.create_user(username, password="x", is_staff=True)
        from django.contrib.auth.models import Group

        user.groups.set([Group.objects.get(name=role)])
    else:
        user = get_user_model().objects.create_superuser(username, password="x")
    client = Client(enforce_csrf_checks=True, raise_request_exception=False)
    client.force_login(user)
    return client


# The act view


def test_act_by_get_with_every_parameter_does_not_act(support):
    account = AccountFactory(active=True)
    response = quiet(support).get(act_url(account.pk), {"confirm": "yes", "reason": "because", "post": "yes"})
    assert response.status_code == 200
    assert status_of(account) == AccountStatus.ACTIVE


def test_act_post_without_csrf_token_is_refused():
    account = AccountFactory(active=True)
    client = csrf_client("Support", "support_csrf")
    response = client.post(act_url(account.pk), {"confirm": "yes", "reason": "cross-site"})
    assert response.status_code == 403
    assert status_of(account) == AccountStatus.ACTIVE


@pytest.mark.parametrize("pk", ["999999", "abc", "1e3", "-1", "99999999999999999999999", "%00", "1%2F..%2F2"])
def test_act_on_missing_or_malformed_id_never_500s(support, pk):
    account = AccountFactory(active=True)
    response = quiet(support).post(act_url(pk), {"confirm": "yes", "reason": "x"})
    assert response.status_code < 500
    assert status_of(account) == AccountStatus.ACTIVE


@pytest.mark.parametrize("action", ["delete_selected", "retry_mail_now", "unlock", "__init__", "get_urls"])
def test_act_with_a_non_staff_action_name_is_refused(support, action):
    account = AccountFactory(active=True)
    response = quiet(support).post(act_url(account.pk, action), {"confirm": "yes", "reason": "x"})
    assert response.status_code == 404
    assert Account.objects.filter(pk=account.pk).exists()


@pytest.mark.parametrize("role", ["Auditor", None])
def test_act_by_auditor_or_plain_staff_is_refused(role):
    account = AccountFactory(active=True)
    if role:
        client = staff_client(role, "attacker")
    else:
        user = get_user_model().objects.create_user("plain", password="x", is_staff=True)
        client = Client()
        client.force_login(user)
    response = quiet(client).post(act_url(account.pk), {"confirm": "yes", "reason": "x"})
    assert response.status_code == 403
    assert status_of(account) == AccountStatus.ACTIVE


@pytest.mark.parametrize("reason", ["x" * 1001, "a\x00b", "   ", "x" * 100_000])
def test_act_with_bad_reason_gets_a_message_and_does_not_act(support, reason):
    account = AccountFactory(active=True)
    response = quiet(support).post(act_url(account.pk), {"confirm": "yes", "reason": reason})
    assert response.status_code == 200
    assert b"errorlist" in response.content
    assert status_of(account) == AccountStatus.ACTIVE


def test_act_writes_an_audit_row_with_the_staff_member_and_reason(support):
    account = AccountFactory(active=True)
    response = support.post(act_url(account.pk), {"confirm": "yes", "reason": "fraud report 42"})
    assert response.status_code == 302
    assert status_of(account) == AccountStatus.SUSPENDED
    row = AuditEvent.objects.get(action="account.suspended", resource_id=str(account.pk))
    assert row.reason == "fraud report 42"
    assert row.actor_id.startswith("staff:")


def test_act_that_does_not_apply_is_skipped_not_500(support):
    account = AccountFactory(active=True)
    response = quiet(support).post(act_url(account.pk, "unsuspend"), {"confirm": "yes", "reason": "x"}, follow=True)
    assert response.status_code == 200
    assert status_of(account) == AccountStatus.ACTIVE


# The audit list


@pytest.mark.parametrize(
    "value",
    ["99999999999999999999999", "999999999999999999", "-1", "1e3", "\u0663", "\u00b2", "1\x00", "", " 1", "0"],
)
def test_audit_list_account_parameter_never_500s(support, value):
    response = quiet(support).get(AUDIT_LIST, {"account": value})
    assert response.status_code in (200, 400), response.status_code


@pytest.mark.parametrize("value", ["not-a-uuid", "1", "\x00", "x" * 5000])
@pytest.mark.parametrize("parameter", ["request_id", "correlation_id"])
def test_audit_list_non_uuid_ids_answer_400(support, parameter, value):
    response = quiet(support).get(AUDIT_LIST, {parameter: value})
    assert response.status_code == 400


@pytest.mark.parametrize(
    "query",
    [
        {"occurred_at__range__gte": "9999-12-31"},
        {"occurred_at__range__lte": "9999-12-31"},
        {"occurred_at__range__gte": "0001-01-01"},
        {"occurred_at__range__lte": "0001-01-01"},
        {"occurred_at__range__gte": "0001-01-02"},
        {"occurred_at__range__lte": "9999-12-30"},
        {"occurred_at__range__gte": "garbage"},
        {"occurred_at__range__gte": "2024-02-30"},
        {"occurred_at__range__gte": "2024-01-01"},
        {"occurred_at__range__lte": "2024-01-01"},
        {"occurred_at__range__gte": "2025-01-01", "occurred_at__range__lte": "2024-01-01"},
        {"occurred_at__range__gte_0": "2024-01-01"},
        {"occurred_at__gte": "2024-01-01"},
        {"occurred_at__isnull": "True"},
    ],
)
def test_audit_list_date_range_never_500s(support, query):
    response = quiet(support).get(AUDIT_LIST, query)
    assert response.status_code in (200, 400), response.status_code


@pytest.mark.parametrize(
    "at",
    [
        "0001-01-01T00:00:00+14:00",
        "9999-12-31T23:59:59-14:00",
        "9999-12-31T23:59:59.999999+00:00",
        "2024-13-01T00:00:00+00:00",
        "2024-01-01T00:00:00+99:00",
        "2024-01-01T25:00:00Z",
        "garbage",
        "\x00",
        "2024-01-01T00:00:00",
        "x" * 10_000,
    ],
)
def test_audit_detail_at_parameter_never_500s(support, at):
    account = AccountFactory(active=True)
    row = AuditEvent.objects.filter(resource_id=str(account.pk)).first()
    response = quiet(support).get(f"{AUDIT_LIST}{row.pk}/change/", {"at": at})
    assert response.status_code < 500, response.status_code


def test_audit_detail_wrong_at_still_finds_nothing_else(support):
    """The detail page's ?at= must not let one row be shown under another's id."""
    account = AccountFactory(active=True)
    row = AuditEvent.objects.filter(resource_id=str(account.pk)).first()
    response = quiet(support).get(f"{AUDIT_LIST}{row.pk}/change/", {"at": "2000-01-01T00:00:00+00:00"})
    assert response.status_code in (200, 302, 404)


@pytest.mark.parametrize("order", ["4", "5", "99", "-99", "x", "0.1.2.-3", "1.1.1", "\x00", "3.4"])
def test_audit_list_ordering_by_hidden_columns_never_500s(support, order):
    AccountFactory(active=True)
    response = quiet(support).get(AUDIT_LIST, {"o": order})
    assert response.status_code in (200, 302, 400), response.status_code


@pytest.mark.parametrize(
    "term",
    [
        "%",
        "_",
        "\\",
        "x" * 100_000,
        "a\x00b",
        "urn:uuid:12345678-1234-5678-1234-567812345678",
        "{12345678-1234-5678-1234-567812345678}",
        "12345678123456781234567812345678",
        "staff:1",
        "@",
        "a@b@c",
    ],
)
def test_audit_list_search_never_500s(support, term):
    AccountFactory(active=True)
    response = quiet(support).get(AUDIT_LIST, {"q": term})
    assert response.status_code in (200, 400), response.status_code


@pytest.mark.parametrize("raw", ["%ED%A0%80", "%FF%FE", "%C0%80", "%00"])
def test_audit_and_account_search_with_invalid_utf8_never_500s(support, raw):
    AccountFactory(active=True)
    for url in (AUDIT_LIST, ACCOUNTS, TOKENS):
        response = quiet(support).get(f"{url}?q={raw}")
        assert response.status_code in (200, 400), (url, response.status_code)


# The export


def test_export_is_refused_to_support(support):
    AccountFactory(active=True)
    response = quiet(support).post(EXPORT)
    assert response.status_code == 403
    assert not AuditEvent.objects.filter(action="audit.exported").exists()


def test_export_by_get_exports_nothing_and_records_nothing(auditor):
    AccountFactory(active=True)
    response = quiet(auditor).get(EXPORT)
    assert response.status_code == 302
    assert not AuditEvent.objects.filter(action="audit.exported").exists()


def test_export_without_csrf_is_refused():
    AccountFactory(active=True)
    client = csrf_client("Auditor", "auditor_csrf")
    response = client.post(EXPORT)
    assert response.status_code == 403
    assert not AuditEvent.objects.filter(action="audit.exported").exists()


def export_rows(client, query="") -> list[dict]:
    response = client.post(EXPORT + (f"?{query}" if query else ""))
    assert response.status_code == 200, response.status_code
    text = b"".join(response.streaming_content).decode()
    return list(csv.DictReader(io.StringIO(text)))


def test_export_is_itself_audited_with_its_query(auditor):
    account = AccountFactory(active=True)
    rows = export_rows(auditor, f"account={account.pk}")
    assert rows
    exported = AuditEvent.objects.get(action="audit.exported")
    assert exported.diff_after["query"] == f"account={account.pk}"
    assert exported.diff_after["rows"] == len(rows)
    assert exported.actor_id.startswith("staff:")


def test_export_filtered_to_one_account_holds_only_that_account(auditor):
    mine, other = AccountFactory(active=True), AccountFactory(active=True, login="other", email="other@example.com")
    rows = export_rows(auditor, f"account={mine.pk}")
    assert rows and all(row["account_id"] == str(mine.pk) for row in rows)
    assert "other@example.com" not in str(rows)
    assert other


@pytest.mark.parametrize("query", ["q=" + "x" * 100_000, "q=a%00b", "account=1e3", "o=99", "request_id=x"])
def test_export_with_bad_query_never_500s(auditor, query):
    AccountFactory(active=True)
    response = quiet(auditor).post(f"{EXPORT}?{query}")
    assert response.status_code in (200, 302, 400), response.status_code


FORMULAS = ['=HYPERLINK("http://x")', "+1+1", "-2+3", "@SUM(1)", "\t=1", "\r=1"]


@pytest.mark.parametrize("formula", FORMULAS)
def test_export_guards_formulas_in_reason_and_user_agent(auditor, formula):
    account = AccountFactory(active=True)
    client = staff_client("Support", "support_ua")
    client.post(act_url(account.pk), {"confirm": "yes", "reason": f"x{formula}"}, HTTP_USER_AGENT=formula)
    with audit_context(reason=formula):
        account_suspend(account=AccountFactory(active=True), actor=None)
    rows = export_rows(auditor)
    cells = [cell for row in rows for cell in row.values()]
    assert cells
    for cell in cells:
        assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")), repr(cell)


def test_export_holds_no_credential(auditor):
    account = AccountFactory()
    token = Token.objects.filter(account=account).latest("id")
    rows = export_rows(auditor)
    text = str(rows)
    assert secret_to_text(token.secret) not in text
    assert bytes(token.secret).hex() not in text
    assert f'"code": "{token.code}"' not in text


# The token list: never filter, order or search by a credential


@pytest.mark.parametrize(
    "parameter",
    [
        "secret",
        "code",
        "secret__startswith",
        "code__startswith",
        "code__range__gte",
        "code__range__lte",
        "secret__range__gte",
        "code__gte",
        "code__in",
        "code__isnull",
        "code__regex",
        "account__tokens__code",
        "account__tokens__secret__startswith",
        "created_at__range__gte_code",
        "code_0",
        "code__range__gte_0",
        "secret__range__lte_1",
        "state__code",
        "mail_state__code",
    ],
)
def test_token_list_refuses_credential_lookups(support, parameter):
    account = AccountFactory()
    token = Token.objects.filter(account=account).latest("id")
    value = token.code if "code" in parameter else secret_to_text(token.secret)[:5]
    response = quiet(support).get(TOKENS, {parameter: value})
    assert response.status_code == 400, (parameter, response.status_code)


@pytest.mark.parametrize("order", [str(i) for i in range(0, 12)] + ["-3", "3.4.5", "99"])
def test_token_list_ordering_never_500s(support, order):
    AccountFactory()
    response = quiet(support).get(TOKENS, {"o": order})
    assert response.status_code in (200, 302, 400)


def test_token_list_search_does_not_find_by_code_or_secret(support):
    AccountFactory(login="codeowner", email="codeowner@example.com")
    token = Token.objects.filter(account__login="codeowner").latest("id")
    secret = secret_to_text(token.secret)
    for term in (token.code, secret, secret[:10], bytes(token.secret).hex()):
        response = quiet(support).get(TOKENS, {"q": term})
        assert response.status_code == 200
        if str(token.pk) != term:
            assert b"codeowner" not in response.content.split(b'id="result_list"')[-1]


@pytest.mark.parametrize("state", ["valid", "bogus", "", "\x00", "VALID"])
def test_token_state_filter_values(support, state):
    AccountFactory()
    response = quiet(support).get(TOKENS, {"state": state})
    assert response.status_code in (200, 400)


def test_token_to_field_popup_does_not_reveal_secret(support):
    AccountFactory()
    token = Token.objects.latest("id")
    response = quiet(support).get(TOKENS, {"_to_field": "secret", "_popup": "1"})
    assert response.status_code in (400, 403)
    assert secret_to_text(token.secret).encode() not in response.content
    assert bytes(token.secret).hex().encode() not in response.content


def test_token_page_shows_no_credential(support):
    AccountFactory()
    token = Token.objects.latest("id")
    response = support.get(f"{TOKENS}{token.pk}/change/")
    assert response.status_code == 200
    assert secret_to_text(token.secret).encode() not in response.content
    assert bytes(token.secret).hex().encode() not in response.content
    assert f">{token.code}<".encode() not in response.content


# Lock-out page


def fail_logins(client, username, times):
    response = None
    for _ in range(times):
        response = client.post("/admin/login/", {"username": username, "password": "wrong"})
    return response


def normalised(response, username):
    text = response.content.decode().replace(username, "LOGIN")
    text = re.sub(r'name="csrfmiddlewaretoken" value="[^"]*"', "", text)
    return re.sub(r"\d", "0", text)


def test_lockout_page_reads_the_same_for_existing_and_unknown_logins():
    get_user_model().objects.create_user("realstaff", password="right password", is_staff=True)
    existing = fail_logins(Client(REMOTE_ADDR="192.0.2.7"), "realstaff", 6)
    unknown = fail_logins(Client(REMOTE_ADDR="192.0.2.7"), "ghoststaf", 6)
    assert existing.status_code == unknown.status_code == 429
    assert existing.get("Retry-After") == unknown.get("Retry-After")
    assert existing.get("Retry-After")
    assert normalised(existing, "realstaff") == normalised(unknown, "ghoststaf")


def test_lockout_holds_even_with_the_right_password():
    get_user_model().objects.create_user("realstaff2", password="right password", is_staff=True)
    client = Client(REMOTE_ADDR="192.0.2.8")
    fail_logins(client, "realstaff2", 5)
    response = client.post("/admin/login/", {"username": "realstaff2", "password": "right password"})
    assert response.status_code == 429
    assert "_auth_user_id" not in client.session


def test_failed_sign_in_passwords_are_not_shown_to_staff(admin_client):
    fail_logins(Client(REMOTE_ADDR="192.0.2.9"), "someone", 1)
    Client(REMOTE_ADDR="192.0.2.9").post("/admin/login/", {"username": "someone", "password": "Typo0fMyPassword"})
    attempt = AccessAttempt.objects.get(username="someone")
    response = admin_client.get(f"/admin/axes/accessattempt/{attempt.pk}/change/")
    assert b"Typo0fMyPassword" not in response.content


# Unlocking


def lock(username):
    fail_logins(Client(REMOTE_ADDR="192.0.2.10"), username, 5)
    return list(AccessAttempt.objects.filter(username=username).values_list("pk", flat=True))


def test_support_cannot_unlock(support):
    pks = lock("victim")
    data = {"action": "unlock", "_selected_action": pks, "confirm": "yes"}
    response = quiet(support).post("/admin/axes/accessattempt/", data)
    assert response.status_code == 403
    assert AccessAttempt.objects.filter(username="victim").exists()


def test_unlock_without_csrf_is_refused():
    pks = lock("victim2")
    client = csrf_client(None, "root_csrf")
    response = client.post(
        "/admin/axes/accessattempt/", {"action": "unlock", "_selected_action": pks, "confirm": "yes"}
    )
    assert response.status_code == 403
    assert AccessAttempt.objects.filter(username="victim2").exists()


def test_unlock_asks_first_then_records(admin_client):
    pks = lock("victim3")
    response = admin_client.post("/admin/axes/accessattempt/", {"action": "unlock", "_selected_action": pks})
    assert response.status_code == 200
    assert AccessAttempt.objects.filter(username="victim3").exists()
    admin_client.post("/admin/axes/accessattempt/", {"action": "unlock", "_selected_action": pks, "confirm": "yes"})
    assert not AccessAttempt.objects.filter(username="victim3").exists()
    assert LogEntry.objects.filter(object_repr__startswith="victim3").exists()


def test_plain_delete_of_attempts_is_not_offered(admin_client):
    pks = lock("victim4")
    admin_client.post(
        "/admin/axes/accessattempt/", {"action": "delete_selected", "_selected_action": pks, "post": "yes"}
    )
    quiet(admin_client).post(f"/admin/axes/accessattempt/{pks[0]}/delete/", {"post": "yes"})
    assert AccessAttempt.objects.filter(username="victim4").exists()


def test_cleanup_action_does_not_lift_a_live_lockout_unrecorded(admin_client):
    pks = lock("victim5")
    response = quiet(admin_client).post(
        "/admin/axes/accessattempt/", {"action": "cleanup_expired_attempts", "_selected_action": pks}
    )
    assert response.status_code < 500
    admin_client.post("/admin/axes/accessattempt/", {"action": "cleanup_expired_attempts", "_selected_action": pks})
    assert AccessAttempt.objects.filter(username="victim5").exists()


# 403 pages


def test_403_page_for_anonymous_leaks_nothing():
    AccountFactory(login="secretlogin")
    client = Client(raise_request_exception=False)
    response = client.get(act_url(1))
    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]
    response = client.post(EXPORT)
    assert response.status_code == 302


def test_staff_403_page_is_in_the_back_office_look_and_escapes_the_path(auditor):
    response = quiet(auditor).get(ACCOUNTS + "?<script>alert(1)</script>")
    assert response.status_code == 403
    assert b"<script>alert(1)</script>" not in response.content


def test_csrf_failure_on_login_page_does_not_tell_whether_a_login_exists():
    get_user_model().objects.create_user("realstaff3", password="x", is_staff=True)
    client = Client(enforce_csrf_checks=True)
    a = client.post("/admin/login/", {"username": "realstaff3", "password": "x"})
    b = client.post("/admin/login/", {"username": "nobodyhere", "password": "x"})
    assert a.status_code == b.status_code == 403
    assert a.content.replace(b"realstaff3", b"") == b.content.replace(b"nobodyhere", b"")


# Dashboard


def test_dashboard_for_auditor_links_no_account_token_or_job_list(auditor):
    AccountFactory(suspended=True)
    response = auditor.get("/admin/")
    assert response.status_code == 200
    for path in (ACCOUNTS, TOKENS, "/admin/tokens/job/"):
        assert path.encode() not in response.content, path


def test_dashboard_for_support_offers_no_export(support):
    AccountFactory(suspended=True)
    response = support.get("/admin/")
    assert EXPORT.encode() not in response.content


def test_support_audit_list_has_no_export_button(support):
    response = support.get(AUDIT_LIST)
    assert EXPORT.encode() not in response.content


# Account search and its tiered pages


@pytest.mark.parametrize("page", ["0", "-1", "abc", "99999", "99999999999999999999999", "1.5", "\x00"])
@pytest.mark.parametrize("term", ["user", "example.com", ""])
def test_account_search_pages_never_500(support, term, page):
    for _ in range(3):
        AccountFactory()
    response = quiet(support).get(ACCOUNTS, {"q": term, "p": page})
    assert response.status_code in (200, 302, 400, 404), response.status_code


@pytest.mark.parametrize("term", ["%", "_", "\\", "x" * 100_000, "a\x00b", "%%%_"])
def test_account_search_odd_terms_never_500(support, term):
    AccountFactory()
    response = quiet(support).get(ACCOUNTS, {"q": term})
    assert response.status_code in (200, 400), response.status_code


def test_account_search_percent_does_not_match_everything(support):
    AccountFactory(login="alpha")
    response = support.get(ACCOUNTS, {"q": "%"})
    assert b"alpha" not in response.content.split(b'id="result_list"')[-1]


# Retry mail: a staff action, so in the trail


def test_auditor_cannot_retry_mail(auditor):
    AccountFactory()
    token = Token.objects.latest("id")
    response = quiet(auditor).post(TOKENS, {"action": "retry_mail_now", "_selected_action": [token.pk]})
    assert response.status_code == 403


# django-q2's admin (registered on this site): the public forms' queued work carries a password hash


def test_queued_sign_up_does_not_show_its_password_hash(admin_client):
    from django_q.models import OrmQ

    from tests.attack.helpers import NEW_PASSWORD

    Client().post(reverse("sign-up"), {"email": "new@example.com", "login": "newbie"} | NEW_PASSWORD)
    queued = OrmQ.objects.get()
    password_hash = next(arg for arg in queued.args() if isinstance(arg, str) and "$" in arg)
    response = admin_client.get(f"/admin/django_q/ormq/{queued.pk}/change/")
    assert response.status_code in (200, 403, 404)
    assert password_hash.encode() not in response.content
    assert password_hash.split("$")[-1].encode() not in response.content


def test_support_retry_mail_is_audited_with_the_staff_member(support, sql):
    AccountFactory()
    token = Token.objects.latest("id")
    sql("UPDATE tokens SET mail_state = 'dead' WHERE id = %s", [token.pk])
    response = support.post(TOKENS, {"action": "retry_mail_now", "_selected_action": [token.pk]})
    assert response.status_code == 302
    rows = AuditEvent.objects.filter(resource_type="token", resource_id=str(token.pk), actor_id__startswith="staff:")
    assert rows.exists()


def test_a_failed_sign_up_task_does_not_show_its_password_hash(admin_client):
    """django-q2 keeps a failed task with its arguments; its pages show neither them nor the result."""
    from django_q.models import Failure

    password_hash = "argon2$argon2id$v=19$m=102400,t=2,p=8$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA"
    failure = Failure.objects.create(
        id="f" * 32,
        name="failed-sign-up",
        func="tokens.tasks.sign_up",
        args=("new@example.com", "newbie", password_hash, {}),
        kwargs={},
        result="boom",
        started=timezone.now(),
        stopped=timezone.now(),
        success=False,
    )
    for url in ("/admin/django_q/failure/", f"/admin/django_q/failure/{failure.pk}/change/"):
        response = admin_client.get(url)
        assert response.status_code == 200 and b"tokens.tasks.sign_up" in response.content
        assert password_hash.split("$")[-1].encode() not in response.content
