"""A view-only tabular inline written by the admin kit (platform_events/admin_kit/inlines.py): Django's
own HTML, element for element (blank lines aside)."""

import copy

import pytest
from django.test.html import parse_html
from django.urls import reverse

from accounts.nodes import services
from lifecycle.demo.factories import AccountFactory
from platform_events.admin_kit.inlines import hidden_input_html, tabular_inline_html
from tests.support import as_shown, djangos_admin_template, staff_client
from tokens.admin import TokenInline
from tokens.models import MailState, Token

pytestmark = pytest.mark.django_db

SERVICE = "sync-1.5"


def account_page(client, account):
    response = client.get(reverse("admin:accounts_account_change", args=[account.pk]))
    assert response.status_code == 200
    return response


def assert_inlines_are_djangos(response) -> int:
    """Each inline on the page is the kit's, and the same HTML as Django's tabular.html; how many."""
    page = response.content.decode()
    formsets = response.context["inline_admin_formsets"]
    for index, formset in enumerate(formsets):
        last = index == len(formsets) - 1
        ours = tabular_inline_html(formset, last=last, current_app="admin")
        context = {"inline_admin_formset": formset, "forloop": {"last": last}, "request": response.wsgi_request}
        theirs = djangos_admin_template("edit_inline/tabular.html", context)
        assert ours is not None and ours in page
        assert parse_html(ours) == parse_html(theirs)
        assert as_shown(ours) == as_shown(theirs)
    return len(formsets)


@pytest.fixture
def account_with_rows(db):
    """An account with two tokens (one whose mail failed with an error that needs escaping) and two node
    assignments (one replaced)."""
    account = AccountFactory(login="jane")
    services.service_add(service=SERVICE, pattern="{node}/1.5/{uid}")
    services.node_add(service=SERVICE, node="https://phx12", capacity=100, actor=None)
    first = services.assignment_allocate(
        service=SERVICE, account_id=account.pk, client_state="aabbcc", keys_changed_at=1
    )
    services.assignment_update(first, client_state="ddeeff", keys_changed_at=2, generation=7)
    Token.objects.filter(account=account).update(
        mail_state=MailState.DEAD, mail_attempts=3, mail_error='550 <b>"no"</b> & gone'
    )
    return account


def test_the_account_pages_inlines_are_djangos(admin_client, account_with_rows):
    """Tokens (with the link to each token's page) and node assignments, for a superuser."""
    assert assert_inlines_are_djangos(account_page(admin_client, account_with_rows)) == 2


def test_supports_inlines_are_djangos(account_with_rows):
    """Support sees the tokens and not the node assignments: Django decides which inlines there are."""
    response = account_page(staff_client("Support"), account_with_rows)
    assert assert_inlines_are_djangos(response) == 1
    assert 'id="node_assignments-group"' not in response.content.decode()


def test_an_inline_without_rows_is_djangos(admin_client):
    """An account without tokens or assignments (an erased one): the inlines' headers and empty bodies."""
    account = AccountFactory(erased=True)
    Token.objects.filter(account=account).delete()
    assert assert_inlines_are_djangos(account_page(admin_client, account)) == 2


def test_an_inline_that_takes_input_is_left_to_django(admin_client, account_with_rows):
    """An inline staff may change, add to or delete from is Django's to write (its widgets and errors)."""
    response = account_page(admin_client, account_with_rows)
    for permission in ("has_add_permission", "has_change_permission", "has_delete_permission"):
        formset = copy.copy(response.context["inline_admin_formsets"][0])
        setattr(formset, permission, True)
        assert tabular_inline_html(formset, last=True, current_app="admin") is None


def test_hidden_inputs_are_djangos(admin_client, account_with_rows):
    """The management forms' inputs and each row's key inputs, as Django's widget writes them; any other
    widget is left to Django."""
    response = account_page(admin_client, account_with_rows)
    for formset in response.context["inline_admin_formsets"]:
        fields = list(formset.formset.management_form.hidden_fields())
        for form in formset:
            fields += [form.pk_field().field, form.fk_field().field]
        assert len(fields) > 4
        for field in fields:
            assert hidden_input_html(field) == str(field)
    account_form = response.context["adminform"].form
    visible = Token._meta.get_field("mail_error").formfield().get_bound_field(account_form, "mail_error")
    assert hidden_input_html(visible) is None


EVIL = "<script>alert(\"x\")</script> & 'q' %41 é"


def test_an_inlines_names_and_labels_are_escaped_as_djangos(admin_client, monkeypatch):
    """A row's name, the inline's heading and a column's label written with what HTML would read as markup."""
    account = AccountFactory(login="jane")
    monkeypatch.setattr(Token, "__str__", lambda token: EVIL)
    monkeypatch.setattr(TokenInline, "verbose_name_plural", EVIL)
    monkeypatch.setattr(Token._meta.get_field("action"), "verbose_name", EVIL)

    response = account_page(admin_client, account)

    assert assert_inlines_are_djangos(response) == 2
    assert "<script>" not in response.content.decode()
