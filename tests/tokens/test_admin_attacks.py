"""Attacks on the token list and page (tokens/admin.py): never filtered, ordered or searched by a
credential, never showing one; Retry mailing now is refused to auditors and audited with the staff
member."""

import pytest

from lifecycle.demo.factories import AccountFactory
from platform_events.audit.models import AuditEvent
from tests.support import quiet
from tokens.links import secret_to_text
from tokens.models import Token

pytestmark = [pytest.mark.attack, pytest.mark.django_db]

TOKENS = "/admin/tokens/token/"


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


# Retry mail: a staff action, so in the trail


def test_auditor_cannot_retry_mail(auditor):
    AccountFactory()
    token = Token.objects.latest("id")
    response = quiet(auditor).post(TOKENS, {"action": "retry_mail_now", "_selected_action": [token.pk]})
    assert response.status_code == 403


def test_support_retry_mail_is_audited_with_the_staff_member(support, sql):
    AccountFactory()
    token = Token.objects.latest("id")
    sql("UPDATE tokens SET mail_state = 'dead' WHERE id = %s", [token.pk])
    response = support.post(TOKENS, {"action": "retry_mail_now", "_selected_action": [token.pk]})
    assert response.status_code == 302
    rows = AuditEvent.objects.filter(resource_type="token", resource_id=str(token.pk), actor_id__startswith="staff:")
    assert rows.exists()
